//go:build amd64 && !purego

#include "textflag.h"
#include "interleave_amd64.h"

// Base-3 interleaved kernels (see Interleaved3 in interleave3.go for the layout). A
// step is 64 code bytes: dword L holds four columns of the rows L, 16+L, 32+L, 48+L,
// 64+L, byte c holding their trits u₀ … u₄ as PTQ1_0 does, uₙ = (uint8(c·3ⁿ)·3) >> 8.
//
// With x₀ = c and xₙ₊₁ = 3·xₙ mod 256 (two VPADDB), 3·xₙ = 256·uₙ + xₙ₊₁, so with
// Pₙ = Σ xₙ·a over the block (VPDPBUSD: x unsigned, the activation a signed) the row
// sums are Sₙ = Σ uₙ·a = (3Pₙ − Pₙ₊₁)/256, an exact division (the arithmetic shift by
// 8 is exact on multiples of 256) whatever byte c is. Per step: one load, one
// broadcast, five triplings and six VPDPBUSD for 320 products. |Pₙ| ≤ 255·128·128,
// so 3Pₙ fits an int32 for any activation, −128 included.
//
// Two accumulator sets (even steps: Z0..Z5, odd steps: Z6..Z11) keep two independent
// VPDPBUSD chains per Pₙ in flight; dword L of Sₙ is row 16n+L, so after the −1 fold
// the block's 80 row integers lie in row order in Z0..Z4.

// ILV3PREFETCH prefetches the line ILV3PF bytes past off(AX): every line of the tiles
// once (the 32 steps and the 3 lines of scales of each tile × block). Streaming
// 5120×17408 (BenchmarkIlv3Stream, an AVX-512 Xeon VM shared with other work, median
// share of the read loop over three alternated runs each) it ran at 72–77% of the read
// loop without prefetch, 84–91% one tile × block ahead (2240), 80–83% at four (8960)
// and 71–87% at eight on one thread; on two, 81–94% at one, 77–95% at two and 67–85%
// at four. The kernel is nearer its compute limit than the 2-bit one (see
// ilvTilesVNNI), so a short distance suffices. PREFETCHT1 (at one and four) did no
// better within the noise, PREFETCHNTA worse (37–80%). A build may try another
// distance or instruction: go test -asmflags=github.com/bonsai-go/sdk/ternary=-D=ILV3PF=4480
// (or -D=ILV3PFOP=PREFETCHT1, or -D=ILV3NOPF for none).
#ifndef ILV3PF
#define ILV3PF 2240
#endif
#ifdef ILV3NOPF
#define ILV3PREFETCH(off)
#else
#ifndef ILV3PFOP
#define ILV3PFOP PREFETCHT0
#endif
#define ILV3PREFETCH(off) ILV3PFOP (off+ILV3PF)(AX)
#endif

// ILV3STEP multiplies the step at woff(AX) with the activation dword at qoff(BX) into
// the accumulators p0..p5, with x, a, t as scratch.
#define ILV3STEP(woff, qoff, p0, p1, p2, p3, p4, p5, x, a, t) \
	ILV3PREFETCH(woff); \
	VMOVDQU64 (woff)(AX), x; \
	VPBROADCASTD (qoff)(BX), a; \
	VPDPBUSD a, x, p0; \
	VPADDB x, x, t; \
	VPADDB t, x, x; \
	VPDPBUSD a, x, p1; \
	VPADDB x, x, t; \
	VPADDB t, x, x; \
	VPDPBUSD a, x, p2; \
	VPADDB x, x, t; \
	VPADDB t, x, x; \
	VPDPBUSD a, x, p3; \
	VPADDB x, x, t; \
	VPADDB t, x, x; \
	VPDPBUSD a, x, p4; \
	VPADDB x, x, t; \
	VPADDB t, x, x; \
	VPDPBUSD a, x, p5

// ILV3TWO runs two consecutive steps, one per accumulator set.
#define ILV3TWO(woff, qoff) \
	ILV3STEP(woff, qoff, Z0, Z1, Z2, Z3, Z4, Z5, Z16, Z17, Z18); \
	ILV3STEP(woff+64, qoff+4, Z6, Z7, Z8, Z9, Z10, Z11, Z19, Z20, Z21)

// ILV3PLANE runs the eight steps of plane p: code bytes at bo+192+512p, activations
// at qo+64p.
#define ILV3PLANE(wo, qo) \
	ILV3TWO(wo, qo); \
	ILV3TWO(wo+128, qo+8); \
	ILV3TWO(wo+256, qo+16); \
	ILV3TWO(wo+384, qo+24)

// ILV3ROW turns Pₙ in Zn and Pₙ₊₁ in Zm into Sₙ − Sum (sum broadcast in Z17) in Zn.
#define ILV3ROW(Zn, Zm) \
	VPADDD Zn, Zn, Z12; \
	VPADDD Z12, Zn, Zn; \
	VPSUBD Zm, Zn, Zn; \
	VPSRAD $8, Zn, Zn; \
	VPSUBD Z17, Zn, Zn

// ILV3SUMS leaves in Z0..Z4 the 80 row integers Σ u·Q − Sum of the tile × block at
// bo(AX), whose activations are at qo(BX) and activation sum at so(DI).
#define ILV3SUMS(bo, qo, so) \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7; \
	VPXORD Z8, Z8, Z8; \
	VPXORD Z9, Z9, Z9; \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11; \
	ILV3PLANE(bo+192, qo); \
	ILV3PLANE(bo+704, qo+64); \
	ILV3PLANE(bo+1216, qo+128); \
	ILV3PLANE(bo+1728, qo+192); \
	VPADDD Z6, Z0, Z0; \
	VPADDD Z7, Z1, Z1; \
	VPADDD Z8, Z2, Z2; \
	VPADDD Z9, Z3, Z3; \
	VPADDD Z10, Z4, Z4; \
	VPADDD Z11, Z5, Z5; \
	VPBROADCASTD (so)(DI), Z17; \
	ILV3ROW(Z0, Z1); \
	ILV3ROW(Z1, Z2); \
	ILV3ROW(Z2, Z3); \
	ILV3ROW(Z3, Z4); \
	ILV3ROW(Z4, Z5)

// ILV3FOLD1 adds row group g's integers Zi, scaled by fp16(d_w)·D (scales at
// bo+32g(AX), D in Z28), into its lane of the accumulators at lo(R11)(R12): as the Q8
// kernels do, one VMULPS for the scale and one FMA.
#define ILV3FOLD1(bo, lo, g, Zi, Zs, Za) \
	VCVTPH2PS (bo+32*g)(AX), Zs; \
	VMULPS Z28, Zs, Zs; \
	VCVTDQ2PS Zi, Zi; \
	VMOVUPS (lo+64*g)(R11)(R12*1), Za; \
	VFMADD231PS Zi, Zs, Za; \
	VMOVUPS Za, (lo+64*g)(R11)(R12*1)

// ILV3BLOCK folds the tile × block at bo(AX) (activations qo(BX), sum and D at so(DI)
// and so(DX)) into the accumulator lane at lo(R11)(R12).
#define ILV3BLOCK(bo, qo, so, lo) \
	ILV3PREFETCH(bo); \
	ILV3PREFETCH(bo+64); \
	ILV3PREFETCH(bo+128); \
	ILV3SUMS(bo, qo, so); \
	VBROADCASTSS (so)(DX), Z28; \
	ILV3FOLD1(bo, lo, 0, Z0, Z20, Z24); \
	ILV3FOLD1(bo, lo, 1, Z1, Z21, Z25); \
	ILV3FOLD1(bo, lo, 2, Z2, Z22, Z26); \
	ILV3FOLD1(bo, lo, 3, Z3, Z23, Z27); \
	ILV3FOLD1(bo, lo, 4, Z4, Z20, Z24)

// ILV3TREE stores row group g's y: its eight lanes (320 bytes apart in the
// accumulators at R11) added as ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
#define ILV3TREE(g) \
	LANETREE(64*g, 320, Z0, Z1, Z2, Z3); \
	VMOVUPS Z0, (64*g)(R14)

// AVX-VNNI base-3 kernels: ilv3TilesVNNI's arithmetic at half its width, with the
// AVX2 family's float fold (ilvTilesAVX2's ILV2FOLD1 and ILV2TREE for 80 rows), so
// their outputs are the AVX2 Q8 kernel's over the PTQ1_0 file (q8RowsPTQ1AVX2). A
// 64-byte step is two halves of 32 (dwords L = 0…7, then 8…15); per half, the code
// bytes and their five triplings meet the broadcast activation dword (Y13) in six
// VPDPBUSD, into P₀…P₅ (Y0…Y5 for the first half, Y6…Y11 for the second), from which
// ILV3YROW recovers Sₙ as ILV3ROW does. A step is 2 loads, a broadcast, 20 VPADDB and
// 12 VPDPBUSD: 35 instructions per 320 weights. After the recovery Sₙ of half h (rows
// 16n+8h … +7) is in Y_{6h+n}, row group i = 2n+h. In cache on one Zen 4 core the EVEX
// twin ran 77–109 G weights/s (the AVX-512 kernel 103–117, the 2-bit AVX-VNNI twin
// 138–188: BenchmarkIlv3Kernel).
//
// As for the 2-bit AVX-VNNI kernels (matvec_amd64.s), one body is built twice: with
// ILVYVEX (the VEX encoding Alder Lake and later Intel cores without AVX-512 run,
// which Go's assembler does not write) and with ILVYEVEX (the EVEX mnemonic, which any
// AVX-512 VNNI machine runs): the base-3 tests run the second in the AVX2 family
// (forEachIlv3Family, TestIlv3PairKernel), TestIlvAVXVNNIEncoding checks that the two
// differ only in VPDPBUSD's encoding.

// ILV3TRIPLE takes a step of the byte chain: Yx ← 3·Yx mod 256 (Yt scratch).
#define ILV3TRIPLE(Yx, Yt) \
	VPADDB Yx, Yx, Yt; \
	VPADDB Yt, Yx, Yx

// ILV3YHALF multiplies the half step at woff(AX), loaded into Yx, with Y13 into
// P₀…P₅ (Y14 scratch).
#define ILV3YHALF(DP, woff, Yx, x, Y0_, n0, Y1_, n1, Y2_, n2, Y3_, n3, Y4_, n4, Y5_, n5) \
	VMOVDQU (woff)(AX), Yx; \
	DP(Y13, 13, Yx, x, Y0_, n0); \
	ILV3TRIPLE(Yx, Y14); \
	DP(Y13, 13, Yx, x, Y1_, n1); \
	ILV3TRIPLE(Yx, Y14); \
	DP(Y13, 13, Yx, x, Y2_, n2); \
	ILV3TRIPLE(Yx, Y14); \
	DP(Y13, 13, Yx, x, Y3_, n3); \
	ILV3TRIPLE(Yx, Y14); \
	DP(Y13, 13, Yx, x, Y4_, n4); \
	ILV3TRIPLE(Yx, Y14); \
	DP(Y13, 13, Yx, x, Y5_, n5)

// ILV3YSTEP runs the step at woff(AX) with the activation dword at qoff(BX).
#define ILV3YSTEP(DP, woff, qoff) \
	ILV3PREFETCH(woff); \
	VPBROADCASTD (qoff)(BX), Y13; \
	ILV3YHALF(DP, woff, Y12, 12, Y0, 0, Y1, 1, Y2, 2, Y3, 3, Y4, 4, Y5, 5); \
	ILV3YHALF(DP, woff+32, Y15, 15, Y6, 6, Y7, 7, Y8, 8, Y9, 9, Y10, 10, Y11, 11)

#define ILV3YQUAD(DP, woff, qoff) \
	ILV3YSTEP(DP, woff, qoff); \
	ILV3YSTEP(DP, woff+64, qoff+4); \
	ILV3YSTEP(DP, woff+128, qoff+8); \
	ILV3YSTEP(DP, woff+192, qoff+12)

// ILV3YPLANE runs the eight steps of plane p: code bytes at wo = 192+512p, activations
// at qo = 64p.
#define ILV3YPLANE(DP, wo, qo) \
	ILV3YQUAD(DP, wo, qo); \
	ILV3YQUAD(DP, wo+256, qo+16)

// ILV3YROW turns Pₙ in Yn and Pₙ₊₁ in Ym into Sₙ − Sum (Sum in Y13) in Yn.
#define ILV3YROW(Yn, Ym) \
	VPADDD Yn, Yn, Y14; \
	VPADDD Y14, Yn, Yn; \
	VPSUBD Ym, Yn, Yn; \
	VPSRAD $8, Yn, Yn; \
	VPSUBD Y13, Yn, Yn

// ILV3YZERO clears the twelve accumulators Y0 … Y11.
#define ILV3YZERO \
	VPXOR Y0, Y0, Y0; \
	VPXOR Y1, Y1, Y1; \
	VPXOR Y2, Y2, Y2; \
	VPXOR Y3, Y3, Y3; \
	VPXOR Y4, Y4, Y4; \
	VPXOR Y5, Y5, Y5; \
	VPXOR Y6, Y6, Y6; \
	VPXOR Y7, Y7, Y7; \
	VPXOR Y8, Y8, Y8; \
	VPXOR Y9, Y9, Y9; \
	VPXOR Y10, Y10, Y10; \
	VPXOR Y11, Y11, Y11

// ILV3YSUMS leaves the 80 row integers Σ u·Q − Sum of the tile × block at AX
// (activations at BX, activation sum at (DI)) in Y0…Y4 and Y6…Y10, row group 2n+h in
// Y_{6h+n}.
#define ILV3YSUMS(DP) \
	ILV3PREFETCH(0); \
	ILV3PREFETCH(64); \
	ILV3PREFETCH(128); \
	ILV3YZERO; \
	ILV3YPLANE(DP, 192, 0); \
	ILV3YPLANE(DP, 704, 64); \
	ILV3YPLANE(DP, 1216, 128); \
	ILV3YPLANE(DP, 1728, 192); \
	VPBROADCASTD (DI), Y13; \
	ILV3YROW(Y0, Y1); \
	ILV3YROW(Y1, Y2); \
	ILV3YROW(Y2, Y3); \
	ILV3YROW(Y3, Y4); \
	ILV3YROW(Y4, Y5); \
	ILV3YROW(Y6, Y7); \
	ILV3YROW(Y7, Y8); \
	ILV3YROW(Y8, Y9); \
	ILV3YROW(Y9, Y10); \
	ILV3YROW(Y10, Y11)

#define ILV3YSUMSVEX ILV3YSUMS(ILVYVEX)
#define ILV3YSUMSEVEX ILV3YSUMS(ILVYEVEX)

// ILV3YFOLD1 adds the integers of rows 8i … 8i+7 (Yi), scaled by fp16(d_w)·D (scales
// at 16i(AX), D in Y13), into the block's lane of the accumulators at (R11)(R12):
// ILV2FOLD1's VMULPS and FMA.
#define ILV3YFOLD1(i, Yi) \
	VCVTPH2PS (16*i)(AX), Y12; \
	VMULPS Y13, Y12, Y12; \
	VCVTDQ2PS Yi, Yi; \
	VMOVUPS (32*i)(R11)(R12*1), Y14; \
	VFMADD231PS Yi, Y12, Y14; \
	VMOVUPS Y14, (32*i)(R11)(R12*1)

// ILV3YTREE stores y of rows 8i … 8i+7: their eight lanes (320 bytes apart in the
// accumulators at R11) added as ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
#define ILV3YTREE(i) \
	LANETREE(32*(i), 320, Y0, Y1, Y2, Y3); \
	VMOVUPS Y0, (32*i)(R14)

// ILV3YTREES stores the tile's 80 outputs (ILV3YTREE for each row group).
#define ILV3YTREES \
	ILV3YTREE(0); \
	ILV3YTREE(1); \
	ILV3YTREE(2); \
	ILV3YTREE(3); \
	ILV3YTREE(4); \
	ILV3YTREE(5); \
	ILV3YTREE(6); \
	ILV3YTREE(7); \
	ILV3YTREE(8); \
	ILV3YTREE(9)

// ILV3YNEXT steps to the next block: its weights, activations (R10: 32 after an even
// block, 224 after an odd one), D, Sum and accumulator lane (R13 zero).
#define ILV3YNEXT \
	ADDQ $2240, AX; \
	ADDQ R10, BX; \
	XORQ $192, R10; \
	ADDQ $4, DX; \
	ADDQ $4, DI; \
	ADDQ $320, R12; \
	CMPQ R12, $2560; \
	CMOVQEQ R13, R12

// ILV3YTILES is ilv3TilesVNNI's contract one block at a time, as ilvTilesAVX2 runs it.
//
// Registers: SI tile pointer, CX tile counter, R9 tile stride, R14 output pointer, R11
// the accumulators (8 lanes × 80 floats, lane l at 320l), R12 the block's lane offset;
// per block AX weights, BX activations (block b at 256·(b/2) + 32·(b%2)), R10 the step
// to the next block's (32 after an even block, 224 after an odd one), DX D, DI Sum, R8
// the block counter, R13 zero.
#define ILV3YTILES(SUMS) \
	MOVQ w+0(FP), SI \
	MOVQ tiles+8(FP), CX \
	MOVQ tileBytes+24(FP), R9 \
	MOVQ acc+56(FP), R11 \
	MOVQ y+64(FP), R14 \
	MOVQ $0, R13 \
ilv3ytile: \
	VXORPS Y0, Y0, Y0 \
	MOVQ $0, R12 \
ilv3yclear: \
	VMOVUPS Y0, (R11)(R12*1) \
	ADDQ $32, R12 \
	CMPQ R12, $2560 \
	JNE ilv3yclear \
	MOVQ $0, R12 \
	MOVQ SI, AX \
	MOVQ q+32(FP), BX \
	MOVQ d+40(FP), DX \
	MOVQ sum+48(FP), DI \
	MOVQ $32, R10 \
	MOVQ nb8+16(FP), R8 \
	SHLQ $3, R8 \
ilv3yblock: \
	SUMS \
	VBROADCASTSS (DX), Y13 \
	ILV3YFOLD1(0, Y0) \
	ILV3YFOLD1(1, Y6) \
	ILV3YFOLD1(2, Y1) \
	ILV3YFOLD1(3, Y7) \
	ILV3YFOLD1(4, Y2) \
	ILV3YFOLD1(5, Y8) \
	ILV3YFOLD1(6, Y3) \
	ILV3YFOLD1(7, Y9) \
	ILV3YFOLD1(8, Y4) \
	ILV3YFOLD1(9, Y10) \
	ILV3YNEXT \
	DECQ R8 \
	JNZ ilv3yblock \
	ILV3YTREES \
	ADDQ R9, SI \
	ADDQ $320, R14 \
	DECQ CX \
	JNZ ilv3ytile \
	VZEROUPPER \
	RET

// ILV3YBLOCKFN is ilv3BlockVNNI's contract: the 80 row integers in row order.
#define ILV3YBLOCKFN(SUMS) \
	MOVQ blk+0(FP), AX \
	MOVQ q+8(FP), BX \
	MOVQ sum+16(FP), DI \
	MOVQ out+24(FP), R8 \
	SUMS \
	VMOVDQU Y0, (R8) \
	VMOVDQU Y6, 32(R8) \
	VMOVDQU Y1, 64(R8) \
	VMOVDQU Y7, 96(R8) \
	VMOVDQU Y2, 128(R8) \
	VMOVDQU Y8, 160(R8) \
	VMOVDQU Y3, 192(R8) \
	VMOVDQU Y9, 224(R8) \
	VMOVDQU Y4, 256(R8) \
	VMOVDQU Y10, 288(R8) \
	VZEROUPPER \
	RET

// The AVX-VNNI batched base-3 kernel runs two vectors over one tile: per block, two
// passes (h = 0, 1: the halves of every step), each with P₀…P₅ of vector 0 in Y0…Y5
// and of vector 1 in Y6…Y11, so that one load and five triplings of a half step serve
// both vectors' twelve VPDPBUSD (25 instructions a half step against the decode
// kernel's 35 for the two). Each vector's integers and fold are the decode kernel's,
// block by block, so its outputs are bit for bit what ilv3TilesAVXVNNI gives it alone.

// ILV3PDOTS multiplies the byte vector Y12 with both vectors' activations (Y13, Y14)
// into their accumulators Ya and Yb.
#define ILV3PDOTS(DP, Ya, a, Yb, b) \
	DP(Y13, 13, Y12, 12, Ya, a); \
	DP(Y14, 14, Y12, 12, Yb, b)

// ILV3PSTEP runs half h of the step at woff(AX) for both vectors (activation dwords at
// qoff(BX) and qoff(BX)(SI*1)).
#define ILV3PSTEP(DP, woff, qoff) \
	ILV3PREFETCH(woff); \
	VMOVDQU (woff)(AX), Y12; \
	VPBROADCASTD (qoff)(BX), Y13; \
	VPBROADCASTD (qoff)(BX)(SI*1), Y14; \
	ILV3PDOTS(DP, Y0, 0, Y6, 6); \
	ILV3TRIPLE(Y12, Y15); \
	ILV3PDOTS(DP, Y1, 1, Y7, 7); \
	ILV3TRIPLE(Y12, Y15); \
	ILV3PDOTS(DP, Y2, 2, Y8, 8); \
	ILV3TRIPLE(Y12, Y15); \
	ILV3PDOTS(DP, Y3, 3, Y9, 9); \
	ILV3TRIPLE(Y12, Y15); \
	ILV3PDOTS(DP, Y4, 4, Y10, 10); \
	ILV3TRIPLE(Y12, Y15); \
	ILV3PDOTS(DP, Y5, 5, Y11, 11)

#define ILV3PQUAD(DP, woff, qoff) \
	ILV3PSTEP(DP, woff, qoff); \
	ILV3PSTEP(DP, woff+64, qoff+4); \
	ILV3PSTEP(DP, woff+128, qoff+8); \
	ILV3PSTEP(DP, woff+192, qoff+12)

#define ILV3PPLANE(DP, wo, qo) \
	ILV3PQUAD(DP, wo, qo); \
	ILV3PQUAD(DP, wo+256, qo+16)

// ILV3PFOLD1 folds row group i (half h, n = i/2) of both vectors: Ya (vector 0, acc at
// (R11)(R12)) and Yb (vector 1, acc 2560 bytes on), the scales converted once and
// multiplied by each vector's D (Y13, Y14), as ILV3YFOLD1 does for one.
#define ILV3PFOLD1(i, Ya, Yb) \
	VCVTPH2PS (16*(i))(AX), Y12; \
	VMULPS Y13, Y12, Y15; \
	VCVTDQ2PS Ya, Ya; \
	VMOVUPS (32*(i))(R11)(R12*1), Y5; \
	VFMADD231PS Ya, Y15, Y5; \
	VMOVUPS Y5, (32*(i))(R11)(R12*1); \
	VMULPS Y14, Y12, Y15; \
	VCVTDQ2PS Yb, Yb; \
	VMOVUPS (2560+32*(i))(R11)(R12*1), Y11; \
	VFMADD231PS Yb, Y15, Y11; \
	VMOVUPS Y11, (2560+32*(i))(R11)(R12*1)

// ILV3PPASS runs half h of the block at AX for both vectors and folds its five row
// groups 2n+h.
#define ILV3PPASS(DP, h) \
	ILV3YZERO; \
	ILV3PPLANE(DP, 192+32*h, 0); \
	ILV3PPLANE(DP, 704+32*h, 64); \
	ILV3PPLANE(DP, 1216+32*h, 128); \
	ILV3PPLANE(DP, 1728+32*h, 192); \
	VPBROADCASTD (DI), Y13; \
	ILV3YROW(Y0, Y1); \
	ILV3YROW(Y1, Y2); \
	ILV3YROW(Y2, Y3); \
	ILV3YROW(Y3, Y4); \
	ILV3YROW(Y4, Y5); \
	VPBROADCASTD (DI)(R9*1), Y13; \
	ILV3YROW(Y6, Y7); \
	ILV3YROW(Y7, Y8); \
	ILV3YROW(Y8, Y9); \
	ILV3YROW(Y9, Y10); \
	ILV3YROW(Y10, Y11); \
	VBROADCASTSS (DX), Y13; \
	VBROADCASTSS (DX)(R9*1), Y14; \
	ILV3PFOLD1(h, Y0, Y6); \
	ILV3PFOLD1(2+h, Y1, Y7); \
	ILV3PFOLD1(4+h, Y2, Y8); \
	ILV3PFOLD1(6+h, Y3, Y9); \
	ILV3PFOLD1(8+h, Y4, Y10)

// ILV3PAIR is the body of ilv3PairAVXVNNI.
//
// Registers: AX weights, BX vector 0's activations (block b at 256·(b/2) + 32·(b%2)),
// SI the bytes to vector 1's, R10 the step to the next block's (32, 224), DX vector
// 0's D and DI its Sum, R9 the bytes to vector 1's, R8 the block counter, R11 the
// accumulators (vector 0's 8 lanes × 80 floats, lane l at 320l, then vector 1's), R12
// the block's lane offset, R13 zero, R14 the outputs (vector 1's CX bytes on).
#define ILV3PAIR(DP) \
	MOVQ w+0(FP), AX \
	MOVQ nb8+8(FP), R8 \
	SHLQ $3, R8 \
	MOVQ q+16(FP), BX \
	MOVQ qs+24(FP), SI \
	MOVQ d+32(FP), DX \
	MOVQ sum+40(FP), DI \
	MOVQ ds+48(FP), R9 \
	MOVQ acc+56(FP), R11 \
	MOVQ y+64(FP), R14 \
	MOVQ ys+72(FP), CX \
	MOVQ $0, R13 \
	VXORPS Y0, Y0, Y0 \
	MOVQ $0, R12 \
ilv3pclear: \
	VMOVUPS Y0, (R11)(R12*1) \
	ADDQ $32, R12 \
	CMPQ R12, $5120 \
	JNE ilv3pclear \
	MOVQ $0, R12 \
	MOVQ $32, R10 \
ilv3pblock: \
	ILV3PREFETCH(0) \
	ILV3PREFETCH(64) \
	ILV3PREFETCH(128) \
	ILV3PPASS(DP, 0) \
	ILV3PPASS(DP, 1) \
	ILV3YNEXT \
	DECQ R8 \
	JNZ ilv3pblock \
	ILV3YTREES \
	ADDQ $2560, R11 \
	ADDQ CX, R14 \
	ILV3YTREES \
	VZEROUPPER \
	RET

// func ilv3TilesVNNI(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)
//
// Registers: SI tile pointer, CX tile counter, R9 tile stride, R14 output pointer, R11
// the accumulators (8 lanes × 80 floats, lane l at 320l), R12 the lane offset of the
// block pair (0, 640, 1280, 1920); per pair AX weights, BX activations, DX D, DI Sum,
// R8 the pair counter.
TEXT ·ilv3TilesVNNI(SB), NOSPLIT, $0-72
	MOVQ w+0(FP), SI
	MOVQ tiles+8(FP), CX
	MOVQ tileBytes+24(FP), R9
	MOVQ acc+56(FP), R11
	MOVQ y+64(FP), R14

ilv3tile:
	VPXORD Z0, Z0, Z0
	MOVQ $0, R12
ilv3clear:
	VMOVUPS Z0, (R11)(R12*1)
	ADDQ $64, R12
	CMPQ R12, $2560
	JNE ilv3clear
	MOVQ $0, R12
	MOVQ SI, AX
	MOVQ q+32(FP), BX
	MOVQ d+40(FP), DX
	MOVQ sum+48(FP), DI
	MOVQ nb8+16(FP), R8
	SHLQ $2, R8
	MOVQ $0, R10

ilv3pair:
	ILV3BLOCK(0, 0, 0, 0)
	ILV3BLOCK(2240, 32, 4, 320)
	ADDQ $4480, AX
	ADDQ $256, BX
	ADDQ $8, DX
	ADDQ $8, DI
	ADDQ $640, R12
	CMPQ R12, $2560
	CMOVQEQ R10, R12
	DECQ R8
	JNZ ilv3pair

	ILV3TREE(0)
	ILV3TREE(1)
	ILV3TREE(2)
	ILV3TREE(3)
	ILV3TREE(4)
	ADDQ R9, SI
	ADDQ $320, R14
	DECQ CX
	JNZ ilv3tile
	VZEROUPPER
	RET

// func ilv3BlockVNNI(blk *byte, q *int8, sum *int32, out *int32)
TEXT ·ilv3BlockVNNI(SB), NOSPLIT, $0-32
	MOVQ blk+0(FP), AX
	MOVQ q+8(FP), BX
	MOVQ sum+16(FP), DI
	MOVQ out+24(FP), R8
	ILV3SUMS(0, 0, 0)
	VMOVDQU32 Z0, (R8)
	VMOVDQU32 Z1, 64(R8)
	VMOVDQU32 Z2, 128(R8)
	VMOVDQU32 Z3, 192(R8)
	VMOVDQU32 Z4, 256(R8)
	VZEROUPPER
	RET

// func ilv3TilesAVXVNNI(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)
TEXT ·ilv3TilesAVXVNNI(SB), NOSPLIT, $0-72
	ILV3YTILES(ILV3YSUMSVEX)

// func ilv3BlockAVXVNNI(blk *byte, q *int8, sum *int32, out *int32)
TEXT ·ilv3BlockAVXVNNI(SB), NOSPLIT, $0-32
	ILV3YBLOCKFN(ILV3YSUMSVEX)

// func ilv3TilesVNNI256(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)
TEXT ·ilv3TilesVNNI256(SB), NOSPLIT, $0-72
	ILV3YTILES(ILV3YSUMSEVEX)

// func ilv3BlockVNNI256(blk *byte, q *int8, sum *int32, out *int32)
TEXT ·ilv3BlockVNNI256(SB), NOSPLIT, $0-32
	ILV3YBLOCKFN(ILV3YSUMSEVEX)

// func ilv3PairAVXVNNI(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int)
TEXT ·ilv3PairAVXVNNI(SB), NOSPLIT, $0-80
	ILV3PAIR(ILVYVEX)

// func ilv3PairVNNI256(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int)
TEXT ·ilv3PairVNNI256(SB), NOSPLIT, $0-80
	ILV3PAIR(ILVYEVEX)
