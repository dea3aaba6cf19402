//go:build amd64 && !purego

#include "textflag.h"
#include "interleave_amd64.h"

// Q8 row kernels for PQ2_0 (see q8RowsFunc in matvec_generic.go for the contract).
//
// A group is 8 blocks: 272 weight bytes, 1024 activation bytes, 8 scales and 8 sums.
// Per block the 32 code bytes give four planes (v >> 2p) & 3 (p = 0..3; plane p holds
// elements 4j+p in byte j), each multiplied with the 32 activations stored for it
// (Q8 layout: block b, plane p at 256·(b/2) + 64p + 32·(b%2)). The per-block integer
// vectors of a group are reduced together to one vector of 8 block sums (no horizontal
// reduction per block), the activation sums are subtracted (the −1 fold), and the group
// is folded into the float accumulator with one FMA by the vector of 8 scales
// fp16(d_w)·D. One horizontal sum per row.
//
// Registers: AX group weight pointer, BX group activation pointer, DX D pointer,
// DI Sum pointer, R8 group counter, SI row pointer, R9 row stride, CX row counter,
// R10 groups per row, R11..R13 activation bases, R14 output pointer.

#define ARGS \
	MOVQ w+0(FP), SI; \
	MOVQ rowBytes+8(FP), R9; \
	MOVQ rows+16(FP), CX; \
	MOVQ nb8+24(FP), R10; \
	MOVQ q+32(FP), R11; \
	MOVQ d+40(FP), R12; \
	MOVQ sum+48(FP), R13; \
	MOVQ y+56(FP), R14

// SCALES leaves fp16(d_w)·D of the group's 8 blocks in Y5.
#define SCALES \
	VPXOR X5, X5, X5; \
	VPINSRW $0, (AX), X5, X5; \
	VPINSRW $1, 34(AX), X5, X5; \
	VPINSRW $2, 68(AX), X5, X5; \
	VPINSRW $3, 102(AX), X5, X5; \
	VPINSRW $4, 136(AX), X5, X5; \
	VPINSRW $5, 170(AX), X5, X5; \
	VPINSRW $6, 204(AX), X5, X5; \
	VPINSRW $7, 238(AX), X5, X5; \
	VCVTPH2PS X5, Y5; \
	VMULPS (DX), Y5, Y5

// PREFETCH runs two prefetch streams ahead of the group (a group spans 272 bytes, so
// 5 lines cover it): into L2 6 KiB ahead and into L1 1 KiB ahead. The kernel computes
// several times faster than memory delivers, but on its own its demand loads and the
// hardware prefetcher kept too few misses in flight: a loads-only loop over the same
// bytes ran 1.5× faster without prefetching, 1.3× with one T0 stream 2 KiB ahead, and
// about 1.17× with these two (measured with BenchmarkMatVecPaired; the L2 stream is
// what adds memory-level parallelism, the L1 fill buffers being few). Prefetching past
// the end of the matrix is harmless.
#define PREFETCH \
	PREFETCHT1 6144(AX); \
	PREFETCHT1 6208(AX); \
	PREFETCHT1 6272(AX); \
	PREFETCHT1 6336(AX); \
	PREFETCHT1 6400(AX); \
	PREFETCHT0 1024(AX); \
	PREFETCHT0 1088(AX); \
	PREFETCHT0 1152(AX); \
	PREFETCHT0 1216(AX); \
	PREFETCHT0 1280(AX)

// ROWEND stores the horizontal sum of the accumulator Y8 in the order
// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)) and steps to the next row.
#define ROWEND \
	VEXTRACTF128 $1, Y8, X0; \
	VADDPS X0, X8, X0; \
	VMOVHLPS X0, X0, X1; \
	VADDPS X1, X0, X0; \
	VMOVSHDUP X0, X1; \
	VADDSS X1, X0, X0; \
	VMOVSS X0, (R14); \
	ADDQ R9, SI; \
	ADDQ $4, R14; \
	DECQ CX

// AVX2 block: planes in Y0..Y3 (mask Y15 = 0x03 bytes), VPMADDUBSW (u8 codes × s8
// activations, pairs summed to int16: at most 2·3·127, no saturation), the four planes
// added in int16 (at most 3048) and widened to 8 int32 with VPMADDWD by ones (Y14).
#define BLK2(woff, qoff, dst) \
	VMOVDQU (woff+2)(AX), Y0; \
	VPSRLW $2, Y0, Y1; \
	VPSRLW $4, Y0, Y2; \
	VPSRLW $6, Y0, Y3; \
	VPAND Y15, Y0, Y0; \
	VPAND Y15, Y1, Y1; \
	VPAND Y15, Y2, Y2; \
	VPAND Y15, Y3, Y3; \
	VPMADDUBSW (qoff)(BX), Y0, Y0; \
	VPMADDUBSW (qoff+64)(BX), Y1, Y1; \
	VPMADDUBSW (qoff+128)(BX), Y2, Y2; \
	VPMADDUBSW (qoff+192)(BX), Y3, Y3; \
	VPADDW Y1, Y0, Y0; \
	VPADDW Y3, Y2, Y2; \
	VPADDW Y2, Y0, Y0; \
	VPMADDWD Y14, Y0, dst

// func q8RowsAVX2(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32)
TEXT ·q8RowsAVX2(SB), NOSPLIT, $0-64
	ARGS
	MOVL $0x03030303, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

avx2row:
	MOVQ SI, AX
	MOVQ R11, BX
	MOVQ R12, DX
	MOVQ R13, DI
	MOVQ R10, R8
	VXORPS Y8, Y8, Y8

avx2group:
	PREFETCH
	SCALES
	// Blocks 0..3: VPHADDD pairs the blocks and sums within 128-bit lanes, leaving
	// Y9 = per lane l [B0(l), B1(l), B2(l), B3(l)] (B(l): the lane's 4 dwords summed).
	BLK2(0, 0, Y9)
	BLK2(34, 32, Y10)
	VPHADDD Y10, Y9, Y9
	BLK2(68, 256, Y10)
	BLK2(102, 288, Y11)
	VPHADDD Y11, Y10, Y10
	VPHADDD Y10, Y9, Y9
	// Blocks 4..7 into Y10.
	BLK2(136, 512, Y10)
	BLK2(170, 544, Y11)
	VPHADDD Y11, Y10, Y10
	BLK2(204, 768, Y11)
	BLK2(238, 800, Y12)
	VPHADDD Y12, Y11, Y11
	VPHADDD Y11, Y10, Y10
	// Add the two lanes: Y11 = [B0 … B7].
	VPERM2I128 $0x20, Y10, Y9, Y11
	VPERM2I128 $0x31, Y10, Y9, Y12
	VPADDD Y12, Y11, Y11
	VPSUBD (DI), Y11, Y11
	VCVTDQ2PS Y11, Y11
	VFMADD231PS Y11, Y5, Y8
	ADDQ $272, AX
	ADDQ $1024, BX
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ R8
	JNZ avx2group

	ROWEND
	JNZ avx2row
	VZEROUPPER
	RET

// PREFETCHPTQ1 is PREFETCH for 224-byte groups (4 lines).
#define PREFETCHPTQ1 \
	PREFETCHT1 6144(AX); \
	PREFETCHT1 6208(AX); \
	PREFETCHT1 6272(AX); \
	PREFETCHT1 6336(AX); \
	PREFETCHT0 1024(AX); \
	PREFETCHT0 1088(AX); \
	PREFETCHT0 1152(AX); \
	PREFETCHT0 1216(AX)

// PTQ1_0 row kernel for AVX2 (see matvec_ptq1.go and the AVX-512 one below): one block
// per ymm, loaded at its offset in the pair's register image (56k or 56k+24, so block b
// at 56·(b/2) + 24·(b%2), its activations at 640·(b/2) + 32·(b%2)). The chains' lanes
// (xₙ₊₁, tₙ) meet the activations (0, a) in VPMADDUBSW, whose 16-bit products tₙ·a are
// summed over the five steps and two chains (|·| ≤ 10·2·127) and widened to 8 int32 by
// VPMADDWD by ones (Y14): the same block sum BLK2 leaves for a PQ2_0 block, so the group
// code is the AVX2 kernel's. Y13 and Y15 hold the bytes 3, 0 and 0, 3.
#define PTQ1BLK(woff, toff, dst) \
	VMOVDQU (woff)(AX), Y0; \
	VPMADDUBSW Y13, Y0, Y1; \
	VPMADDUBSW Y15, Y0, Y2; \
	VPMADDUBSW (toff)(BX), Y1, Y3; \
	VPMADDUBSW (toff+64)(BX), Y2, Y4; \
	VPADDW Y4, Y3, Y3; \
	VPMADDUBSW Y13, Y1, Y1; \
	VPMADDUBSW Y13, Y2, Y2; \
	VPMADDUBSW (toff+128)(BX), Y1, Y4; \
	VPMADDUBSW (toff+192)(BX), Y2, Y6; \
	VPADDW Y4, Y3, Y3; \
	VPADDW Y6, Y3, Y3; \
	VPMADDUBSW Y13, Y1, Y1; \
	VPMADDUBSW Y13, Y2, Y2; \
	VPMADDUBSW (toff+256)(BX), Y1, Y4; \
	VPMADDUBSW (toff+320)(BX), Y2, Y6; \
	VPADDW Y4, Y3, Y3; \
	VPADDW Y6, Y3, Y3; \
	VPMADDUBSW Y13, Y1, Y1; \
	VPMADDUBSW Y13, Y2, Y2; \
	VPMADDUBSW (toff+384)(BX), Y1, Y4; \
	VPMADDUBSW (toff+448)(BX), Y2, Y6; \
	VPADDW Y4, Y3, Y3; \
	VPADDW Y6, Y3, Y3; \
	VPMADDUBSW Y13, Y1, Y1; \
	VPMADDUBSW Y13, Y2, Y2; \
	VPMADDUBSW (toff+512)(BX), Y1, Y4; \
	VPMADDUBSW (toff+576)(BX), Y2, Y6; \
	VPADDW Y4, Y3, Y3; \
	VPADDW Y6, Y3, Y3; \
	VPMADDWD Y14, Y3, dst

// SCALESPTQ1AVX2 is SCALES for PTQ1_0 blocks (scale k at 28k+26).
#define SCALESPTQ1AVX2 \
	VPXOR X5, X5, X5; \
	VPINSRW $0, 26(AX), X5, X5; \
	VPINSRW $1, 54(AX), X5, X5; \
	VPINSRW $2, 82(AX), X5, X5; \
	VPINSRW $3, 110(AX), X5, X5; \
	VPINSRW $4, 138(AX), X5, X5; \
	VPINSRW $5, 166(AX), X5, X5; \
	VPINSRW $6, 194(AX), X5, X5; \
	VPINSRW $7, 222(AX), X5, X5; \
	VCVTPH2PS X5, Y5; \
	VMULPS (DX), Y5, Y5

// func q8RowsPTQ1AVX2(w *byte, rowBytes, rows, nb8 int, t *int8, d *float32, sum *int32, y *float32)
TEXT ·q8RowsPTQ1AVX2(SB), NOSPLIT, $0-64
	ARGS
	MOVL $0x00030003, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	MOVL $0x03000300, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x00010001, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

ptq1avx2row:
	MOVQ SI, AX
	MOVQ R11, BX
	MOVQ R12, DX
	MOVQ R13, DI
	MOVQ R10, R8
	VXORPS Y8, Y8, Y8

ptq1avx2group:
	PREFETCHPTQ1
	SCALESPTQ1AVX2
	PTQ1BLK(0, 0, Y9)
	PTQ1BLK(24, 32, Y10)
	VPHADDD Y10, Y9, Y9
	PTQ1BLK(56, 640, Y10)
	PTQ1BLK(80, 672, Y11)
	VPHADDD Y11, Y10, Y10
	VPHADDD Y10, Y9, Y9
	PTQ1BLK(112, 1280, Y10)
	PTQ1BLK(136, 1312, Y11)
	VPHADDD Y11, Y10, Y10
	PTQ1BLK(168, 1920, Y11)
	PTQ1BLK(192, 1952, Y12)
	VPHADDD Y12, Y11, Y11
	VPHADDD Y11, Y10, Y10
	VPERM2I128 $0x20, Y10, Y9, Y11
	VPERM2I128 $0x31, Y10, Y9, Y12
	VPADDD Y12, Y11, Y11
	VPSUBD (DI), Y11, Y11
	VCVTDQ2PS Y11, Y11
	VFMADD231PS Y11, Y5, Y8
	ADDQ $224, AX
	ADDQ $2560, BX
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ R8
	JNZ ptq1avx2group

	ROWEND
	JNZ ptq1avx2row
	VZEROUPPER
	RET

// AVX-512 pair: blocks 2k and 2k+1 side by side in Z0 (their code bytes in the low and
// high 256 bits), planes in Z0..Z3 (mask Z31), and VPDPBUSD against the 64 activation
// bytes of each plane of the pair, giving acc = [8 dwords of block 2k | 8 of 2k+1].
#define PAIR512(woff, qoff, acc) \
	VMOVDQU (woff+2)(AX), Y0; \
	VINSERTI64X4 $1, (woff+36)(AX), Z0, Z0; \
	VPSRLW $2, Z0, Z1; \
	VPSRLW $4, Z0, Z2; \
	VPSRLW $6, Z0, Z3; \
	VPANDD Z31, Z0, Z0; \
	VPANDD Z31, Z1, Z1; \
	VPANDD Z31, Z2, Z2; \
	VPANDD Z31, Z3, Z3; \
	VPXORD acc, acc, acc; \
	VPDPBUSD (qoff)(BX), Z0, acc; \
	VPDPBUSD (qoff+64)(BX), Z1, acc; \
	VPDPBUSD (qoff+128)(BX), Z2, acc; \
	VPDPBUSD (qoff+192)(BX), Z3, acc

// Dword indices that pick, from the reduced vector of GROUPEND512 (below), the two halves
// of each block sum in block order: the first half from 128-bit lanes 0 and 2, the second
// from lanes 1 and 3.
DATA q8half0<>+0(SB)/4, $0
DATA q8half0<>+4(SB)/4, $8
DATA q8half0<>+8(SB)/4, $1
DATA q8half0<>+12(SB)/4, $9
DATA q8half0<>+16(SB)/4, $2
DATA q8half0<>+20(SB)/4, $10
DATA q8half0<>+24(SB)/4, $3
DATA q8half0<>+28(SB)/4, $11
DATA q8half0<>+32(SB)/4, $4
DATA q8half0<>+36(SB)/4, $12
DATA q8half0<>+40(SB)/4, $5
DATA q8half0<>+44(SB)/4, $13
DATA q8half0<>+48(SB)/4, $6
DATA q8half0<>+52(SB)/4, $14
DATA q8half0<>+56(SB)/4, $7
DATA q8half0<>+60(SB)/4, $15
GLOBL q8half0<>(SB), RODATA|NOPTR, $64

// CONST512 loads what GROUPEND512 and SCALES512 use: Z28 = int16 ones, Z29/Z30 the two
// halves of q8half0 (Y30 its second half), and in K1…K7 the word masks 1<<k.
#define CONST512 \
	MOVL $0x00010001, AX; \
	VPBROADCASTD AX, Z28; \
	VMOVDQU32 q8half0<>(SB), Z29; \
	VMOVDQU32 q8half0<>+32(SB), Y30; \
	MOVL $2, AX; \
	KMOVW AX, K1; \
	MOVL $4, AX; \
	KMOVW AX, K2; \
	MOVL $8, AX; \
	KMOVW AX, K3; \
	MOVL $16, AX; \
	KMOVW AX, K4; \
	MOVL $32, AX; \
	KMOVW AX, K5; \
	MOVL $64, AX; \
	KMOVW AX, K6; \
	MOVL $128, AX; \
	KMOVW AX, K7

// SCALES512 is SCALES without the eight VPINSRW, whose shuffle µops competed with the
// products for port 5: block k's scale (at 34k) lands in word k through a word-masked
// load from 32k (masked loads with zeroing are plain loads), word 0 by a dword load
// whose upper word the merge-masked load of word 1 overwrites, and three three-way ORs
// (VPTERNLOGD 0xFE) join them.
#define SCALES512 \
	VMOVD (AX), X5; \
	VMOVDQU16 32(AX), K1, X5; \
	VMOVDQU16.Z 64(AX), K2, X9; \
	VMOVDQU16.Z 96(AX), K3, X10; \
	VMOVDQU16.Z 128(AX), K4, X11; \
	VMOVDQU16.Z 160(AX), K5, X12; \
	VMOVDQU16.Z 192(AX), K6, X13; \
	VMOVDQU16.Z 224(AX), K7, X14; \
	VPTERNLOGD $0xFE, X11, X10, X9; \
	VPTERNLOGD $0xFE, X14, X13, X12; \
	VPTERNLOGD $0xFE, X12, X9, X5; \
	VCVTPH2PS X5, Y5; \
	VMULPS (DX), Y5, Y5

// GROUPEND512 reduces the four pair accumulators Z16..Z19 of a group (two blocks each,
// 8 dwords per block, each dword a sum of 16 products, |·| ≤ 16·3·127 < 2¹⁵) to its 8
// block sums. Pairwise sums by packing to int16 and VPMADDWD by ones (port 0 or 5)
// replace most of the shuffles (port 5 only): after two rounds 128-bit lane l holds
// [B0 B2 B4 B6] (l = 0, 1) or [B1 B3 B5 B7] (l = 2, 3) over that lane's bytes, every
// value |·| ≤ 64·3·127 < 2¹⁵ so no pack saturates; two VPERMD gather the halves in block
// order and one add gives Y21 = [B0 … B7]. Then it subtracts the activation sums (the
// −1 fold), adds them scaled by Y5 into the row accumulator Y8, and steps to the next
// group (flags: the group counter R8). GROUPFOLD512 is all of it but the step.
#define GROUPEND512 \
	GROUPFOLD512; \
	ADDQ $272, AX; \
	ADDQ $1024, BX; \
	ADDQ $32, DX; \
	ADDQ $32, DI; \
	DECQ R8

#define GROUPFOLD512 \
	VPACKSSDW Z17, Z16, Z20; \
	VPACKSSDW Z19, Z18, Z21; \
	VPMADDWD Z28, Z20, Z20; \
	VPMADDWD Z28, Z21, Z21; \
	VPACKSSDW Z21, Z20, Z20; \
	VPMADDWD Z28, Z20, Z20; \
	VPERMD Z20, Z29, Z21; \
	VPERMD Z20, Z30, Z22; \
	VPADDD Y22, Y21, Y21; \
	VPSUBD (DI), Y21, Y21; \
	VCVTDQ2PS Y21, Y21; \
	VFMADD231PS Y21, Y5, Y8

// func q8RowsAVX512(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32)
TEXT ·q8RowsAVX512(SB), NOSPLIT, $0-64
	CONST512
	ARGS
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z31

avx512row:
	MOVQ SI, AX
	MOVQ R11, BX
	MOVQ R12, DX
	MOVQ R13, DI
	MOVQ R10, R8
	VXORPS Y8, Y8, Y8

avx512group:
	PREFETCH
	SCALES512
	PAIR512(0, 0, Z16)
	PAIR512(68, 256, Z17)
	PAIR512(136, 512, Z18)
	PAIR512(204, 768, Z19)
	GROUPEND512
	JNZ avx512group

	ROWEND
	JNZ avx512row
	VZEROUPPER
	RET

// GFNI pair: as PAIR512, but each plane is one VGF2P8AFFINEQB instead of a shift and a
// mask. The affine map's matrix (one qword, broadcast) has row 7−i selecting the source
// bit that becomes result bit i: result bits 0 and 1 take source bits 2p and 2p+1.
#define PAIRGF(woff, qoff, acc) \
	VMOVDQU (woff+2)(AX), Y4; \
	VINSERTI64X4 $1, (woff+36)(AX), Z4, Z4; \
	VGF2P8AFFINEQB $0, Z24, Z4, Z0; \
	VGF2P8AFFINEQB $0, Z25, Z4, Z1; \
	VGF2P8AFFINEQB $0, Z26, Z4, Z2; \
	VGF2P8AFFINEQB $0, Z27, Z4, Z3; \
	VPXORD acc, acc, acc; \
	VPDPBUSD (qoff)(BX), Z0, acc; \
	VPDPBUSD (qoff+64)(BX), Z1, acc; \
	VPDPBUSD (qoff+128)(BX), Z2, acc; \
	VPDPBUSD (qoff+192)(BX), Z3, acc

// GFCONST loads the four plane matrices into Z24..Z27.
#define GFCONST \
	MOVQ $0x0102000000000000, AX; \
	VPBROADCASTQ AX, Z24; \
	MOVQ $0x0408000000000000, AX; \
	VPBROADCASTQ AX, Z25; \
	MOVQ $0x1020000000000000, AX; \
	VPBROADCASTQ AX, Z26; \
	MOVQ $0x4080000000000000, AX; \
	VPBROADCASTQ AX, Z27

// func q8RowsGFNI(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32)
TEXT ·q8RowsGFNI(SB), NOSPLIT, $0-64
	CONST512
	ARGS
	GFCONST

gfnirow:
	MOVQ SI, AX
	MOVQ R11, BX
	MOVQ R12, DX
	MOVQ R13, DI
	MOVQ R10, R8
	VXORPS Y8, Y8, Y8

gfnigroup:
	PREFETCH
	SCALES512
	PAIRGF(0, 0, Z16)
	PAIRGF(68, 256, Z17)
	PAIRGF(136, 512, Z18)
	PAIRGF(204, 768, Z19)
	GROUPEND512
	JNZ gfnigroup

	ROWEND
	JNZ gfnirow
	VZEROUPPER
	RET

// PTQ1_0 row kernel (AVX-512 BW + VNNI; see matvec_ptq1.go for the method and the
// layouts). A group is 8 blocks: 224 weight bytes, 2560 bytes of the PTQ1_0-ordered
// activations. Each block pair (56 bytes) is loaded as two 32-byte halves, bytes 0…31
// and 24…55, so that every 32-bit lane holds bytes of one block and each half belongs
// to one block. VPMADDUBSW by the bytes 3, 0 (Z3) and 0, 3 (Z4) starts the even and odd
// chains (16-bit lanes 3·b), each further VPMADDUBSW by Z3 takes a step (3·xₙ = 256·tₙ +
// xₙ₊₁), and after each step VPDPBUSD multiplies the lanes' bytes (xₙ₊₁, tₙ) with the
// activations (0, a), into an even and an odd accumulator per pair. Their sum holds the
// pair's two blocks in its halves as the PQ2_0 kernels' accumulators do (|·| ≤ 128·2·127
// < 2¹⁵ for any part of a block), so GROUPFOLD512 applies unchanged.

// SCALESPTQ1 is SCALES512 for PTQ1_0 blocks (scale k at 28k+26, loaded as word k from
// 26k+26).
#define SCALESPTQ1 \
	VMOVD 26(AX), X5; \
	VMOVDQU16 52(AX), K1, X5; \
	VMOVDQU16.Z 78(AX), K2, X9; \
	VMOVDQU16.Z 104(AX), K3, X10; \
	VMOVDQU16.Z 130(AX), K4, X11; \
	VMOVDQU16.Z 156(AX), K5, X12; \
	VMOVDQU16.Z 182(AX), K6, X13; \
	VMOVDQU16.Z 208(AX), K7, X14; \
	VPTERNLOGD $0xFE, X11, X10, X9; \
	VPTERNLOGD $0xFE, X14, X13, X12; \
	VPTERNLOGD $0xFE, X12, X9, X5; \
	VCVTPH2PS X5, Y5; \
	VMULPS (DX), Y5, Y5

// PAIRPTQ1 leaves the products of the pair at woff(AX) with the activations at
// toff(BX) in acc (its odd chain's in acco).
#define PAIRPTQ1(woff, toff, acc, acco) \
	VMOVDQU (woff)(AX), Y0; \
	VINSERTI64X4 $1, (woff+24)(AX), Z0, Z0; \
	VPMADDUBSW Z3, Z0, Z1; \
	VPMADDUBSW Z4, Z0, Z2; \
	VPXORD acc, acc, acc; \
	VPXORD acco, acco, acco; \
	VPDPBUSD (toff)(BX), Z1, acc; \
	VPDPBUSD (toff+64)(BX), Z2, acco; \
	VPMADDUBSW Z3, Z1, Z1; \
	VPMADDUBSW Z3, Z2, Z2; \
	VPDPBUSD (toff+128)(BX), Z1, acc; \
	VPDPBUSD (toff+192)(BX), Z2, acco; \
	VPMADDUBSW Z3, Z1, Z1; \
	VPMADDUBSW Z3, Z2, Z2; \
	VPDPBUSD (toff+256)(BX), Z1, acc; \
	VPDPBUSD (toff+320)(BX), Z2, acco; \
	VPMADDUBSW Z3, Z1, Z1; \
	VPMADDUBSW Z3, Z2, Z2; \
	VPDPBUSD (toff+384)(BX), Z1, acc; \
	VPDPBUSD (toff+448)(BX), Z2, acco; \
	VPMADDUBSW Z3, Z1, Z1; \
	VPMADDUBSW Z3, Z2, Z2; \
	VPDPBUSD (toff+512)(BX), Z1, acc; \
	VPDPBUSD (toff+576)(BX), Z2, acco; \
	VPADDD acco, acc, acc

// func q8RowsPTQ1AVX512(w *byte, rowBytes, rows, nb8 int, t *int8, d *float32, sum *int32, y *float32)
TEXT ·q8RowsPTQ1AVX512(SB), NOSPLIT, $0-64
	CONST512
	ARGS
	MOVL $0x00030003, AX
	VPBROADCASTD AX, Z3
	MOVL $0x03000300, AX
	VPBROADCASTD AX, Z4

ptq1row:
	MOVQ SI, AX
	MOVQ R11, BX
	MOVQ R12, DX
	MOVQ R13, DI
	MOVQ R10, R8
	VXORPS Y8, Y8, Y8

ptq1group:
	PREFETCHPTQ1
	SCALESPTQ1
	PAIRPTQ1(0, 0, Z16, Z24)
	PAIRPTQ1(56, 640, Z17, Z25)
	PAIRPTQ1(112, 1280, Z18, Z26)
	PAIRPTQ1(168, 1920, Z19, Z27)
	GROUPFOLD512
	ADDQ $224, AX
	ADDQ $2560, BX
	ADDQ $32, DX
	ADDQ $32, DI
	DECQ R8
	JNZ ptq1group

	ROWEND
	JNZ ptq1row
	VZEROUPPER
	RET

// func memReadAVX2(p *byte, n int) uint64
TEXT ·memReadAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $7, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	TESTQ CX, CX
	JZ avx2rdone

avx2rloop:
	VPXOR (SI), Y0, Y0
	VPXOR 32(SI), Y1, Y1
	VPXOR 64(SI), Y2, Y2
	VPXOR 96(SI), Y3, Y3
	ADDQ $128, SI
	DECQ CX
	JNZ avx2rloop

avx2rdone:
	VPXOR Y1, Y0, Y0
	VPXOR Y3, Y2, Y2
	VPXOR Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	VMOVQ X0, AX
	VPEXTRQ $1, X0, BX
	XORQ BX, AX
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET

// func memReadAVX512(p *byte, n int) uint64
TEXT ·memReadAVX512(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $8, CX
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	VPXORQ Z2, Z2, Z2
	VPXORQ Z3, Z3, Z3
	TESTQ CX, CX
	JZ avx512rdone

avx512rloop:
	VPXORQ (SI), Z0, Z0
	VPXORQ 64(SI), Z1, Z1
	VPXORQ 128(SI), Z2, Z2
	VPXORQ 192(SI), Z3, Z3
	ADDQ $256, SI
	DECQ CX
	JNZ avx512rloop

avx512rdone:
	VPXORQ Z1, Z0, Z0
	VPXORQ Z3, Z2, Z2
	VPXORQ Z2, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPXOR Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR X1, X0, X0
	VMOVQ X0, AX
	VPEXTRQ $1, X0, BX
	XORQ BX, AX
	MOVQ AX, ret+16(FP)
	VZEROUPPER
	RET

// Interleaved kernels (see Interleaved in interleave.go for the layout). A step is 64
// code bytes: dword L holds four columns of the rows L, 16+L, 32+L, 48+L, byte
// c = c₀ + 4c₁ + 16c₂ + 64c₃. VPDPBUSD of the byte, and of it masked with 0xFC, 0xF0
// and 0xC0 (Z31, Z30, Z29), with the four broadcast activations gives the nested sums
// Xᵢ = Σ_{g≥i} 4^g·S_g over the block, from which S₃ = X₃>>6, S₂ = (X₂−X₃)>>4,
// S₁ = (X₁−X₂)>>2, S₀ = X₀−X₁: exact for every code, 3 included (|X₀| ≤ 255·127·128).
// Four accumulator sets (steps mod 4: Z0..Z3, Z4..Z7, Z8..Z11, Z12..Z15) hide
// VPDPBUSD's latency; dword L of S_g is row 16g+L, so after the −1 fold the block's
// 64 row integers lie in row order in Z0..Z3.

// ILVPREFETCH prefetches the line R13 bytes past off(AX) (ilvPrefetch, read into R13
// on entry: how far ahead pays depends on the machine, see interleave_amd64.go), every
// line of the tiles once.
#define ILVPREFETCH(off) PREFETCHT0 off(AX)(R13*1)

// ILVSTEP multiplies the step at woff(AX) with the activation dword at qoff(BX) into
// the accumulator set a0..a3.
#define ILVSTEP(woff, qoff, a0, a1, a2, a3) \
	ILVPREFETCH(woff); \
	VMOVDQU64 (woff)(AX), Z16; \
	VPBROADCASTD (qoff)(BX), Z17; \
	VPANDD Z31, Z16, Z18; \
	VPANDD Z30, Z16, Z19; \
	VPANDD Z29, Z16, Z20; \
	VPDPBUSD Z17, Z16, a0; \
	VPDPBUSD Z17, Z18, a1; \
	VPDPBUSD Z17, Z19, a2; \
	VPDPBUSD Z17, Z20, a3

// ILVQUAD runs four consecutive steps, one per accumulator set.
#define ILVQUAD(woff, qoff) \
	ILVSTEP(woff, qoff, Z0, Z1, Z2, Z3); \
	ILVSTEP(woff+64, qoff+4, Z4, Z5, Z6, Z7); \
	ILVSTEP(woff+128, qoff+8, Z8, Z9, Z10, Z11); \
	ILVSTEP(woff+192, qoff+12, Z12, Z13, Z14, Z15)

// ILVPLANE runs the eight steps of plane p: code bytes at bo+128+512p, activations at
// qo+64p.
#define ILVPLANE(wo, qo) \
	ILVQUAD(wo, qo); \
	ILVQUAD(wo+256, qo+16)

// ILVSUMS leaves in Z0..Z3 the 64 row integers Σ c·Q − Sum of the tile × block at
// bo(AX), whose activations are at qo(BX) and activation sum at so(DI).
#define ILVSUMS(bo, qo, so) \
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
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	ILVPLANE(bo+128, qo); \
	ILVPLANE(bo+640, qo+64); \
	ILVPLANE(bo+1152, qo+128); \
	ILVPLANE(bo+1664, qo+192); \
	VPADDD Z4, Z0, Z0; \
	VPADDD Z12, Z8, Z8; \
	VPADDD Z8, Z0, Z0; \
	VPADDD Z5, Z1, Z1; \
	VPADDD Z13, Z9, Z9; \
	VPADDD Z9, Z1, Z1; \
	VPADDD Z6, Z2, Z2; \
	VPADDD Z14, Z10, Z10; \
	VPADDD Z10, Z2, Z2; \
	VPADDD Z7, Z3, Z3; \
	VPADDD Z15, Z11, Z11; \
	VPADDD Z11, Z3, Z3; \
	VPSUBD Z1, Z0, Z0; \
	VPSUBD Z2, Z1, Z1; \
	VPSUBD Z3, Z2, Z2; \
	VPSRAD $2, Z1, Z1; \
	VPSRAD $4, Z2, Z2; \
	VPSRAD $6, Z3, Z3; \
	VPBROADCASTD (so)(DI), Z17; \
	VPSUBD Z17, Z0, Z0; \
	VPSUBD Z17, Z1, Z1; \
	VPSUBD Z17, Z2, Z2; \
	VPSUBD Z17, Z3, Z3

// ILVMASKS loads the three code masks.
#define ILVMASKS \
	MOVL $0xfcfcfcfc, AX; \
	VPBROADCASTD AX, Z31; \
	MOVL $0xf0f0f0f0, AX; \
	VPBROADCASTD AX, Z30; \
	MOVL $0xc0c0c0c0, AX; \
	VPBROADCASTD AX, Z29

// ILVFOLD1 adds row group g's integers Zi, scaled by fp16(d_w)·D (scales at
// bo+32g(AX), D in Z28), into its lane of the accumulators at lo(R11)(R12): as the Q8
// kernels do, one VMULPS for the scale and one FMA.
#define ILVFOLD1(bo, lo, g, Zi, Zs, Za) \
	VCVTPH2PS (bo+32*g)(AX), Zs; \
	VMULPS Z28, Zs, Zs; \
	VCVTDQ2PS Zi, Zi; \
	VMOVUPS (lo+64*g)(R11)(R12*1), Za; \
	VFMADD231PS Zi, Zs, Za; \
	VMOVUPS Za, (lo+64*g)(R11)(R12*1)

// ILVBLOCK folds the tile × block at bo(AX) (activations qo(BX), sum and D at so(DI)
// and so(DX)) into the accumulator lane at lo(R11)(R12).
#define ILVBLOCK(bo, qo, so, lo) \
	ILVPREFETCH(bo); \
	ILVPREFETCH(bo+64); \
	ILVSUMS(bo, qo, so); \
	VBROADCASTSS (so)(DX), Z28; \
	ILVFOLD1(bo, lo, 0, Z0, Z20, Z24); \
	ILVFOLD1(bo, lo, 1, Z1, Z21, Z25); \
	ILVFOLD1(bo, lo, 2, Z2, Z22, Z26); \
	ILVFOLD1(bo, lo, 3, Z3, Z23, Z27)

// ILVTREE stores row group g's y: its eight lanes (256 bytes apart in the accumulators
// at R11) added as ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
#define ILVTREE(g) \
	LANETREE(64*g, 256, Z0, Z1, Z2, Z3); \
	VMOVUPS Z0, (64*g)(R14)

// func ilvTilesVNNI(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)
//
// Registers: SI tile pointer, CX tile counter, R9 tile stride, R14 output pointer, R11
// the accumulators (8 lanes × 64 floats, lane l at 256l), R12 the lane offset of the
// block pair (0, 512, 1024, 1536); per pair AX weights, BX activations, DX D, DI Sum,
// R8 the pair counter.
TEXT ·ilvTilesVNNI(SB), NOSPLIT, $0-72
	ILVMASKS
	MOVQ ·ilvPrefetch(SB), R13
	MOVQ w+0(FP), SI
	MOVQ tiles+8(FP), CX
	MOVQ tileBytes+24(FP), R9
	MOVQ acc+56(FP), R11
	MOVQ y+64(FP), R14

ilvtile:
	VPXORD Z0, Z0, Z0
	MOVQ $0, R12
ilvclear:
	VMOVUPS Z0, (R11)(R12*1)
	ADDQ $64, R12
	CMPQ R12, $2048
	JNE ilvclear
	MOVQ $0, R12
	MOVQ SI, AX
	MOVQ q+32(FP), BX
	MOVQ d+40(FP), DX
	MOVQ sum+48(FP), DI
	MOVQ nb8+16(FP), R8
	SHLQ $2, R8

ilvpair:
	ILVBLOCK(0, 0, 0, 0)
	ILVBLOCK(2176, 32, 4, 256)
	ADDQ $4352, AX
	ADDQ $256, BX
	ADDQ $8, DX
	ADDQ $8, DI
	ADDQ $512, R12
	ANDQ $2047, R12
	DECQ R8
	JNZ ilvpair

	ILVTREE(0)
	ILVTREE(1)
	ILVTREE(2)
	ILVTREE(3)
	ADDQ R9, SI
	ADDQ $256, R14
	DECQ CX
	JNZ ilvtile
	VZEROUPPER
	RET

// func ilvBlockVNNI(blk *byte, q *int8, sum *int32, out *int32)
TEXT ·ilvBlockVNNI(SB), NOSPLIT, $0-32
	ILVMASKS
	MOVQ ·ilvPrefetch(SB), R13
	MOVQ blk+0(FP), AX
	MOVQ q+8(FP), BX
	MOVQ sum+16(FP), DI
	MOVQ out+24(FP), R8
	ILVSUMS(0, 0, 0)
	VMOVDQU32 Z0, (R8)
	VMOVDQU32 Z1, 64(R8)
	VMOVDQU32 Z2, 128(R8)
	VMOVDQU32 Z3, 192(R8)
	VZEROUPPER
	RET

// AVX2 interleaved kernels: the layout and results of the VNNI ones above, with the
// four row groups of a code byte v = c₀ + 4c₁ + 16c₂ + 64c₃ separated by shift and
// mask. A step's 64 bytes are two halves (dwords L = 0…7 and 8…15). VPMADDUBSW (codes
// unsigned, activations signed) has no wide accumulator, so a code is multiplied with
// the broadcast activation dword two at a time where int16 allows it: per half, the
// nibbles v & 15 = c₀ + 4c₁ and (v >> 4) & 15 = c₂ + 4c₃ give per word T₀₁ = S₀ + 4S₁
// and T₂₃ = S₂ + 4S₃ of rows 16g+8h+L, |·| ≤ 2·15·128 = 3840 a step, and v & 3 and
// (v >> 4) & 3 give S₀ and S₂, |·| ≤ 768 a step. S₀ and S₂ add up over a block's 32
// steps in int16 (≤ 24576 < 2¹⁵); T₀₁ and T₂₃ over 8 steps (≤ 30720), after which
// VPMADDWD by ones widens them into int32 totals kept on the stack (16 registers hold
// no more). At the block's end S₁ = (T₀₁ − S₀)/4 and S₃ = (T₂₃ − S₂)/4, exact: every
// code, 3 included, and every activation, −128 included. A step is 2 loads, a
// broadcast, 2 shifts, 8 ANDs, 8 VPMADDUBSW and 8 VPADDW (26 on the vector ALUs,
// against 30 when each row group had its own shift and product), plus a widening
// every 8 steps: 6.6 against 7.5 cycles a step on Zen 3's four vector pipes in a
// register-only loop; 64 rows × 17408 in its L2, alternated 15 times on the 2-core
// Zen 3 VM, 70 → 77 G weights/s a core (median; best 96 → 99). Rows 8i … 8i+7 end in
// Y_i = row group i/2 of half i%2.
//
// Registers: Y0…Y7 the accumulators (S₀ and S₂ in Y0, Y1, Y4, Y5; T₀₁ and T₂₃ in Y2,
// Y3, Y6, Y7), Y8…Y11 scratch, Y12 the 0x0F mask, Y13 int16 ones, Y14 the activation
// dword (the fold: D), Y15 the 0x03 mask; the T totals at 0…127(SP).

// ILV2PREFETCH is ILVPREFETCH for the AVX2 kernel, ILV2PF bytes ahead. Streaming
// 5120×17408 and 17408×5120 (BenchmarkIlvStreamAVX2, 1 and 2 threads, on a shared
// 2-core Intel VM at load 5–9, where single runs spread over 2× and only medians of
// alternated runs mean much), the medians of 5 runs per shape were 58–72% of the read
// loop without prefetching, 71–76% one tile × block ahead, 80–83% two, 77–92% four and
// 77–83% eight; 8 more alternated runs of two against four ahead gave 69–81% and 76–82%
// (four ahead better in every shape). -D=ILV2PF=… or -D=ILV2NOPF in -asmflags tries
// another distance.
#ifndef ILV2PF
#define ILV2PF 8704
#endif
#ifdef ILV2NOPF
#define ILV2PREFETCH(off)
#else
#define ILV2PREFETCH(off) PREFETCHT0 (off+ILV2PF)(AX)
#endif

// ILV2HALF multiplies the half step at woff(AX) with Y14 into s0 (S₀ or S₂, the
// low bits of each nibble) and t (T₀₁ or T₂₃, the nibble), twice: low nibbles, then
// high ones.
#define ILV2HALF(woff, s0, t01, s2, t23) \
	VMOVDQU (woff)(AX), Y8; \
	VPAND Y12, Y8, Y9; \
	VPAND Y15, Y8, Y10; \
	VPSRLW $4, Y8, Y8; \
	VPMADDUBSW Y14, Y9, Y9; \
	VPMADDUBSW Y14, Y10, Y10; \
	VPADDW Y9, t01, t01; \
	VPADDW Y10, s0, s0; \
	VPAND Y12, Y8, Y9; \
	VPAND Y15, Y8, Y10; \
	VPMADDUBSW Y14, Y9, Y9; \
	VPMADDUBSW Y14, Y10, Y10; \
	VPADDW Y9, t23, t23; \
	VPADDW Y10, s2, s2

// ILV2STEP runs the step at woff(AX) with the activation dword at qoff(BX).
#define ILV2STEP(woff, qoff) \
	ILV2PREFETCH(woff); \
	VPBROADCASTD (qoff)(BX), Y14; \
	ILV2HALF(woff, Y0, Y2, Y4, Y6); \
	ILV2HALF(woff+32, Y1, Y3, Y5, Y7)

// ILV2QUAD runs four consecutive steps.
#define ILV2QUAD(woff, qoff) \
	ILV2STEP(woff, qoff); \
	ILV2STEP(woff+64, qoff+4); \
	ILV2STEP(woff+128, qoff+8); \
	ILV2STEP(woff+192, qoff+12)

// ILV2PLANE runs the eight steps of activation plane p: code bytes at wo = 128+512p
// into the tile × block, activations at qo = 64p.
#define ILV2PLANE(wo, qo) \
	ILV2QUAD(wo, qo); \
	ILV2QUAD(wo+256, qo+16)

// ILV2ZERO clears the accumulators Y0…Y7.
#define ILV2ZERO \
	VPXOR Y0, Y0, Y0; \
	VPXOR Y1, Y1, Y1; \
	VPXOR Y2, Y2, Y2; \
	VPXOR Y3, Y3, Y3; \
	VPXOR Y4, Y4, Y4; \
	VPXOR Y5, Y5, Y5; \
	VPXOR Y6, Y6, Y6; \
	VPXOR Y7, Y7, Y7

// ILV2WIDEN0 widens the int16 nibble sums t into its int32 total at off(SP), which it
// starts (the first plane); ILV2WIDEN adds to it (the next two), ILV2WIDENLAST leaves
// the total in t (the last). Each empties t for the next 8 steps.
#define ILV2WIDEN0(t, off) \
	VPMADDWD Y13, t, t; \
	VMOVDQU t, off(SP); \
	VPXOR t, t, t

#define ILV2WIDEN(t, off) \
	VPMADDWD Y13, t, t; \
	VPADDD off(SP), t, t; \
	VMOVDQU t, off(SP); \
	VPXOR t, t, t

#define ILV2WIDENLAST(t, off) \
	VPMADDWD Y13, t, t; \
	VPADDD off(SP), t, t

#define ILV2WIDENALL(W) \
	W(Y2, 0); \
	W(Y3, 32); \
	W(Y6, 64); \
	W(Y7, 96)

// ILV2SPLIT turns the int16 sums s (S₀ or S₂) and the int32 total t (T₀₁ or T₂₃)
// into the int32 S₀ and S₁ (or S₂ and S₃), each less Sum (in Y11).
#define ILV2SPLIT(s, t) \
	VPMADDWD Y13, s, s; \
	VPSUBD s, t, t; \
	VPSRAD $2, t, t; \
	VPSUBD Y11, s, s; \
	VPSUBD Y11, t, t

// ILV2SUMS leaves in Y0…Y7 the 64 row integers Σ c·Q − Sum (rows 8i … 8i+7 in Y_i) of
// the tile × block at AX, whose activations are at BX and activation sum at (DI).
#define ILV2SUMS \
	ILV2PREFETCH(0); \
	ILV2PREFETCH(64); \
	ILV2ZERO; \
	ILV2PLANE(128, 0); \
	ILV2WIDENALL(ILV2WIDEN0); \
	ILV2PLANE(640, 64); \
	ILV2WIDENALL(ILV2WIDEN); \
	ILV2PLANE(1152, 128); \
	ILV2WIDENALL(ILV2WIDEN); \
	ILV2PLANE(1664, 192); \
	ILV2WIDENALL(ILV2WIDENLAST); \
	VPBROADCASTD (DI), Y11; \
	ILV2SPLIT(Y0, Y2); \
	ILV2SPLIT(Y1, Y3); \
	ILV2SPLIT(Y4, Y6); \
	ILV2SPLIT(Y5, Y7)

// ILV2CONST loads the masks and the ones.
#define ILV2CONST \
	MOVL $0x03030303, AX; \
	VMOVD AX, X15; \
	VPBROADCASTD X15, Y15; \
	MOVL $0x0f0f0f0f, AX; \
	VMOVD AX, X12; \
	VPBROADCASTD X12, Y12; \
	MOVL $0x00010001, AX; \
	VMOVD AX, X13; \
	VPBROADCASTD X13, Y13

// ILV2FOLD1 adds the integers of rows 8i … 8i+7 (Yi), scaled by fp16(d_w)·D (scales at
// 16i(AX), D in Y14), into the block's lane of the accumulators at (R11)(R12): the
// VNNI kernel's VMULPS and FMA, which are the AVX2 Q8 kernel's too.
#define ILV2FOLD1(i, Yi) \
	VCVTPH2PS (16*i)(AX), Y8; \
	VMULPS Y14, Y8, Y8; \
	VCVTDQ2PS Yi, Yi; \
	VMOVUPS (32*i)(R11)(R12*1), Y9; \
	VFMADD231PS Yi, Y8, Y9; \
	VMOVUPS Y9, (32*i)(R11)(R12*1)

// ILV2TREE stores y of rows 8i … 8i+7: their eight lanes (256 bytes apart in the
// accumulators at R11) added as ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
#define ILV2TREE(i) \
	LANETREE(32*i, 256, Y0, Y1, Y2, Y3); \
	VMOVUPS Y0, (32*i)(R14)

// func ilvTilesAVX2(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)
//
// Registers: SI tile pointer, CX tile counter, R9 tile stride, R14 output pointer, R11
// the accumulators (8 lanes × 64 floats, lane l at 256l), R12 the block's lane offset;
// per block AX weights, BX activations (block b at 256·(b/2) + 32·(b%2)), R10 the step
// to the next block's (32 after an even block, 224 after an odd one), DX D, DI Sum, R8
// the block counter.
TEXT ·ilvTilesAVX2(SB), NOSPLIT, $128-72
	ILV2CONST
	MOVQ w+0(FP), SI
	MOVQ tiles+8(FP), CX
	MOVQ tileBytes+24(FP), R9
	MOVQ acc+56(FP), R11
	MOVQ y+64(FP), R14

ilv2tile:
	VXORPS Y0, Y0, Y0
	MOVQ $0, R12
ilv2clear:
	VMOVUPS Y0, (R11)(R12*1)
	ADDQ $32, R12
	CMPQ R12, $2048
	JNE ilv2clear
	MOVQ $0, R12
	MOVQ SI, AX
	MOVQ q+32(FP), BX
	MOVQ d+40(FP), DX
	MOVQ sum+48(FP), DI
	MOVQ $32, R10
	MOVQ nb8+16(FP), R8
	SHLQ $3, R8

ilv2block:
	ILV2SUMS
	VBROADCASTSS (DX), Y14
	ILV2FOLD1(0, Y0)
	ILV2FOLD1(1, Y1)
	ILV2FOLD1(2, Y2)
	ILV2FOLD1(3, Y3)
	ILV2FOLD1(4, Y4)
	ILV2FOLD1(5, Y5)
	ILV2FOLD1(6, Y6)
	ILV2FOLD1(7, Y7)
	ADDQ $2176, AX
	ADDQ R10, BX
	XORQ $192, R10 // 32 ^ 224
	ADDQ $4, DX
	ADDQ $4, DI
	ADDQ $256, R12
	ANDQ $2047, R12
	DECQ R8
	JNZ ilv2block

	ILV2TREE(0)
	ILV2TREE(1)
	ILV2TREE(2)
	ILV2TREE(3)
	ILV2TREE(4)
	ILV2TREE(5)
	ILV2TREE(6)
	ILV2TREE(7)
	ADDQ R9, SI
	ADDQ $256, R14
	DECQ CX
	JNZ ilv2tile
	VZEROUPPER
	RET

// func ilvBlockAVX2(blk *byte, q *int8, sum *int32, out *int32)
TEXT ·ilvBlockAVX2(SB), NOSPLIT, $128-32
	ILV2CONST
	MOVQ blk+0(FP), AX
	MOVQ q+8(FP), BX
	MOVQ sum+16(FP), DI
	MOVQ out+24(FP), R8
	ILV2SUMS
	VMOVDQU Y0, (R8)
	VMOVDQU Y1, 32(R8)
	VMOVDQU Y2, 64(R8)
	VMOVDQU Y3, 96(R8)
	VMOVDQU Y4, 128(R8)
	VMOVDQU Y5, 160(R8)
	VMOVDQU Y6, 192(R8)
	VMOVDQU Y7, 224(R8)
	VZEROUPPER
	RET
// AVX-VNNI interleaved kernels: ilvTilesAVX2's contract and bits (the integers are
// exact, and each row group's fold is ILV2FOLD1), with ilvTilesVNNI's nested sums at
// half its width. A 64-byte step is two halves of 32 (dwords L = 0…7, then 8…15); per
// half, VPDPBUSD of the code bytes and of them masked with 0xFC, 0xF0, 0xC0 (Y13…Y15)
// with the broadcast activation dword (Y12) gives X₀…X₃ (Y0…Y3, then Y4…Y7), from which
// ILVYSUMS recovers S₀…S₃ as ILVSUMS does. A step is 2 loads, a broadcast, 6 ANDs and
// 8 VPDPBUSD: 17 instructions per 256 weights against the AVX2 kernel's 29, and int32
// accumulators instead of int16 ones. After the recovery, S_g of half h (rows
// 16g+8h … +7) is ilvTilesAVX2's Y_{2g+h}.
//
// AVX-VNNI (Alder Lake and later Intel cores without AVX-512, Sierra Forest) has
// VPDPBUSD in a VEX encoding, which Go's assembler does not emit (it writes the EVEX
// one, AVX512-VL): ILVYVEX writes its five bytes. The same body is built twice, once
// with ILVYVEX (ilvTilesAVXVNNI, the kernel those CPUs run) and once with the EVEX
// mnemonic (ilvTilesVNNI256), which any AVX-512 VNNI machine runs, so the arithmetic is
// tested where no AVX-VNNI CPU is at hand; TestIlvAVXVNNIEncoding checks with binutils'
// objdump that the two differ in nothing but that encoding.

// ILVYVEX and ILVYEVEX (interleave_amd64.h) are the two encodings of VPDPBUSD on ymm.

// ILVYHALF multiplies the half step at woff(AX) with Y12 into the nested sums of its
// four accumulators.
#define ILVYHALF(DP, woff, Ya0, a0, Ya1, a1, Ya2, a2, Ya3, a3) \
	VMOVDQU (woff)(AX), Y8; \
	VPAND Y13, Y8, Y9; \
	VPAND Y14, Y8, Y10; \
	VPAND Y15, Y8, Y11; \
	DP(Y12, 12, Y8, 8, Ya0, a0); \
	DP(Y12, 12, Y9, 9, Ya1, a1); \
	DP(Y12, 12, Y10, 10, Ya2, a2); \
	DP(Y12, 12, Y11, 11, Ya3, a3)

// ILVYSTEP runs the step at woff(AX) with the activation dword at qoff(BX).
#define ILVYSTEP(DP, woff, qoff) \
	ILV2PREFETCH(woff); \
	VPBROADCASTD (qoff)(BX), Y12; \
	ILVYHALF(DP, woff, Y0, 0, Y1, 1, Y2, 2, Y3, 3); \
	ILVYHALF(DP, woff+32, Y4, 4, Y5, 5, Y6, 6, Y7, 7)

#define ILVYQUAD(DP, woff, qoff) \
	ILVYSTEP(DP, woff, qoff); \
	ILVYSTEP(DP, woff+64, qoff+4); \
	ILVYSTEP(DP, woff+128, qoff+8); \
	ILVYSTEP(DP, woff+192, qoff+12)

#define ILVYPLANE(DP, wo, qo) \
	ILVYQUAD(DP, wo, qo); \
	ILVYQUAD(DP, wo+256, qo+16)

// ILVYRECOVER turns the nested sums Xa0…Xa3 into S₀…S₃ − Sum (Sum in Y12).
#define ILVYRECOVER(a0, a1, a2, a3) \
	VPSUBD a1, a0, a0; \
	VPSUBD a2, a1, a1; \
	VPSUBD a3, a2, a2; \
	VPSRAD $2, a1, a1; \
	VPSRAD $4, a2, a2; \
	VPSRAD $6, a3, a3; \
	VPSUBD Y12, a0, a0; \
	VPSUBD Y12, a1, a1; \
	VPSUBD Y12, a2, a2; \
	VPSUBD Y12, a3, a3

// ILVYSUMS leaves the 64 row integers Σ c·Q − Sum of the tile × block at AX (activations
// at BX, activation sum at (DI)) in Y0…Y7, rows 16g+8h … +7 in Y_{g+4h}; it loads the
// masks, which the fold's D (Y14) overwrites.
#define ILVYSUMS(DP) \
	ILV2PREFETCH(0); \
	ILV2PREFETCH(64); \
	VPBROADCASTD ilvymasks<>+0(SB), Y13; \
	VPBROADCASTD ilvymasks<>+4(SB), Y14; \
	VPBROADCASTD ilvymasks<>+8(SB), Y15; \
	ILV2ZERO; \
	ILVYPLANE(DP, 128, 0); \
	ILVYPLANE(DP, 640, 64); \
	ILVYPLANE(DP, 1152, 128); \
	ILVYPLANE(DP, 1664, 192); \
	VPBROADCASTD (DI), Y12; \
	ILVYRECOVER(Y0, Y1, Y2, Y3); \
	ILVYRECOVER(Y4, Y5, Y6, Y7)

DATA ilvymasks<>+0(SB)/4, $0xfcfcfcfc
DATA ilvymasks<>+4(SB)/4, $0xf0f0f0f0
DATA ilvymasks<>+8(SB)/4, $0xc0c0c0c0
GLOBL ilvymasks<>(SB), RODATA|NOPTR, $12

// ILVYTILES is the body of ilvTilesAVX2 with ILVYSUMS for ILV2SUMS, the row groups
// folded from where ILVYSUMS leaves them.
#define ILVYTILES(DP) \
	MOVQ w+0(FP), SI \
	MOVQ tiles+8(FP), CX \
	MOVQ tileBytes+24(FP), R9 \
	MOVQ acc+56(FP), R11 \
	MOVQ y+64(FP), R14 \
ilvytile: \
	VXORPS Y0, Y0, Y0 \
	MOVQ $0, R12 \
ilvyclear: \
	VMOVUPS Y0, (R11)(R12*1) \
	ADDQ $32, R12 \
	CMPQ R12, $2048 \
	JNE ilvyclear \
	MOVQ $0, R12 \
	MOVQ SI, AX \
	MOVQ q+32(FP), BX \
	MOVQ d+40(FP), DX \
	MOVQ sum+48(FP), DI \
	MOVQ $32, R10 \
	MOVQ nb8+16(FP), R8 \
	SHLQ $3, R8 \
ilvyblock: \
	ILVYSUMS(DP) \
	VBROADCASTSS (DX), Y14 \
	ILV2FOLD1(0, Y0) \
	ILV2FOLD1(1, Y4) \
	ILV2FOLD1(2, Y1) \
	ILV2FOLD1(3, Y5) \
	ILV2FOLD1(4, Y2) \
	ILV2FOLD1(5, Y6) \
	ILV2FOLD1(6, Y3) \
	ILV2FOLD1(7, Y7) \
	ADDQ $2176, AX \
	ADDQ R10, BX \
	XORQ $192, R10 \
	ADDQ $4, DX \
	ADDQ $4, DI \
	ADDQ $256, R12 \
	ANDQ $2047, R12 \
	DECQ R8 \
	JNZ ilvyblock \
	ILV2TREE(0) \
	ILV2TREE(1) \
	ILV2TREE(2) \
	ILV2TREE(3) \
	ILV2TREE(4) \
	ILV2TREE(5) \
	ILV2TREE(6) \
	ILV2TREE(7) \
	ADDQ R9, SI \
	ADDQ $256, R14 \
	DECQ CX \
	JNZ ilvytile \
	VZEROUPPER \
	RET

// ILVYBLOCKFN is the body of ilvBlockAVX2 with ILVYSUMS.
#define ILVYBLOCKFN(DP) \
	MOVQ blk+0(FP), AX \
	MOVQ q+8(FP), BX \
	MOVQ sum+16(FP), DI \
	MOVQ out+24(FP), R8 \
	ILVYSUMS(DP) \
	VMOVDQU Y0, (R8) \
	VMOVDQU Y4, 32(R8) \
	VMOVDQU Y1, 64(R8) \
	VMOVDQU Y5, 96(R8) \
	VMOVDQU Y2, 128(R8) \
	VMOVDQU Y6, 160(R8) \
	VMOVDQU Y3, 192(R8) \
	VMOVDQU Y7, 224(R8) \
	VZEROUPPER \
	RET

// func ilvTilesAVXVNNI(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)
TEXT ·ilvTilesAVXVNNI(SB), NOSPLIT, $0-72
	ILVYTILES(ILVYVEX)

// func ilvBlockAVXVNNI(blk *byte, q *int8, sum *int32, out *int32)
TEXT ·ilvBlockAVXVNNI(SB), NOSPLIT, $0-32
	ILVYBLOCKFN(ILVYVEX)

// func ilvTilesVNNI256(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)
TEXT ·ilvTilesVNNI256(SB), NOSPLIT, $0-72
	ILVYTILES(ILVYEVEX)

// func ilvBlockVNNI256(blk *byte, q *int8, sum *int32, out *int32)
TEXT ·ilvBlockVNNI256(SB), NOSPLIT, $0-32
	ILVYBLOCKFN(ILVYEVEX)

// func cpuVendor() (ebx, edx, ecx uint32)
TEXT ·cpuVendor(SB), NOSPLIT, $0-12
	XORL AX, AX
	XORL CX, CX
	CPUID
	MOVL BX, ebx+0(FP)
	MOVL DX, edx+4(FP)
	MOVL CX, ecx+8(FP)
	RET
