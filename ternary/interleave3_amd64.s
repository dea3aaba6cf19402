//go:build amd64 && !purego

#include "textflag.h"

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
	VMOVUPS (64*g)(R11), Z0; \
	VADDPS (1280+64*g)(R11), Z0, Z0; \
	VMOVUPS (640+64*g)(R11), Z1; \
	VADDPS (1920+64*g)(R11), Z1, Z1; \
	VADDPS Z1, Z0, Z0; \
	VMOVUPS (320+64*g)(R11), Z2; \
	VADDPS (1600+64*g)(R11), Z2, Z2; \
	VMOVUPS (960+64*g)(R11), Z3; \
	VADDPS (2240+64*g)(R11), Z3, Z3; \
	VADDPS Z3, Z2, Z2; \
	VADDPS Z2, Z0, Z0; \
	VMOVUPS Z0, (64*g)(R14)

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
