//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// Base-3 interleaved kernels on NEON with SDOT (see Interleaved3 in interleave3.go for
// the layout, and ilv3TilesGeneric for the contract). A step is 64 code bytes: dword L
// holds four columns of the rows L, 16+L, 32+L, 48+L, 64+L, five trits a byte, and its
// four activations are one dword of the plane's 32 activation bytes.
//
// Trit g of byte c is ⌊3xg/256⌋ with x₀ = c and xₙ₊₁ = 3xₙ mod 256, so a row group's
// sum is Sg = (3Pg − Pg+1)/256 over the sums Pn = Σ xₙ·Q. SDOT multiplies signed bytes,
// which a code byte is not; but yₙ = xₙ ⊕ 0x80 = xₙ − 128 mod 256 obeys the same
// recurrence (3·128 = 384 ≡ 128 mod 256), so the kernel flips bit 7 once and triples
// yₙ, read as a signed byte (MUL by a vector of 3s), and SDOT gives Pₙ' = Pₙ − 128·ΣQ.
// Then (3Pg' − Pg+1')/256 = Sg − ΣQ: the block's integer Σ (u−1)·Q itself, the Sum that
// the unsigned kernels subtract cancelled by the offset (Q8's Sum is ΣQ), and exact:
// |Pₙ'| ≤ 128·128·128.
//
// One step is 2 loads, 4 EORs, 20 MULs and 24 SDOTs by element for 320 weights (the
// 2-bit SDOT kernel's 16 ands and shifts and 16 SDOTs for 256); the six sums of four
// row quads take 24 registers, the codes 4, the constants 2 and the plane's activations
// the last 2.
//
// The float fold is the Q8 kernels': per block, fp16(d_w) to float times D, then one
// fused multiply-add of the block integer into accumulator lane b%8, 8 lanes × 80 rows
// in memory (lane l at 320l, row r at 4r); per tile the lanes are added as
// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)). So the outputs are the bits of
// q8RowsPTQ1NEONDot over the PTQ1_0 file, and of ilv3TilesGeneric.
//
// Registers: R0 tile pointer, R1 tiles left, R2 tile stride, R3 the accumulators, R4
// output, R5 block pointer, R6 block activations, R7 D, R9 320, R11 blocks left, R12
// accumulator lane (b%8), R13 code pointer, R14 the step from this block's activations
// to the next's (32 after an even block, 224 after an odd one), R15 planes left, R19
// activation pointer, R20 accumulator lane pointer. V0…V3 codes, V4 0x80s, V5 3s, V6 V7
// the plane's activations; Pₙ of row quad i (rows 4i…4i+3 of each group) in V8+4n+i.

// ILV3PF is how far ahead of the step being read the kernels prefetch, in bytes: four
// tile × blocks, as the 2-bit kernels do. Not measured on arm64.
#ifndef ILV3PF
#define ILV3PF 8960
#endif

// ILV3ZERO24 clears the sums V8…V31.
#define ILV3ZERO24 \
	ILVZERO16; \
	VEOR V24.B16, V24.B16, V24.B16; \
	VEOR V25.B16, V25.B16, V25.B16; \
	VEOR V26.B16, V26.B16, V26.B16; \
	VEOR V27.B16, V27.B16, V27.B16; \
	VEOR V28.B16, V28.B16, V28.B16; \
	VEOR V29.B16, V29.B16, V29.B16; \
	VEOR V30.B16, V30.B16, V30.B16; \
	VEOR V31.B16, V31.B16, V31.B16

// ILV3DOT adds the four code registers times activation dword idx of Va into Pₙ's
// quads s … s+3 (s = 8+4n).
#define ILV3DOT(s, a, idx) \
	SDOTE(s, 0, a, idx); \
	SDOTE(s+1, 1, a, idx); \
	SDOTE(s+2, 2, a, idx); \
	SDOTE(s+3, 3, a, idx)

// ILV3TRIPLE takes the code registers from yₙ to yₙ₊₁.
#define ILV3TRIPLE \
	MULB(0, 0, 5); \
	MULB(1, 1, 5); \
	MULB(2, 2, 5); \
	MULB(3, 3, 5)

// ILV3STEP runs the step at off(R13) with activation dword idx of Va.
#define ILV3STEP(off, a, idx) \
	PRFM (off+ILV3PF)(R13), PLDL1KEEP; \
	FLDPQ off(R13), (F0, F1); \
	FLDPQ (off+32)(R13), (F2, F3); \
	EOR16B(0, 0, 4); \
	EOR16B(1, 1, 4); \
	EOR16B(2, 2, 4); \
	EOR16B(3, 3, 4); \
	ILV3DOT(8, a, idx); \
	ILV3TRIPLE; \
	ILV3DOT(12, a, idx); \
	ILV3TRIPLE; \
	ILV3DOT(16, a, idx); \
	ILV3TRIPLE; \
	ILV3DOT(20, a, idx); \
	ILV3TRIPLE; \
	ILV3DOT(24, a, idx); \
	ILV3TRIPLE; \
	ILV3DOT(28, a, idx)

// ILV3REC turns the sum Pg' in Vq into the row integers (3Pg' − Pg+1')/256 (Pg+1' in
// Vq+s), with Vt scratch.
#define ILV3REC(q, t, s) \
	ADD4S(t, q, q); \
	ADD4S(t, t, q); \
	SUB4S(t, t, (q)+(s)); \
	SSHR4S(q, t, 8)

// ILV3SUMS leaves in V8 … V27 the 80 row integers Σ (u−1)·Q of the tile × block at R5
// (activations at R6), rows in order; it clobbers V0 … V7 and V28 … V31.
#define ILV3SUMS \
	VMOVI $128, V4.B16; \
	VMOVI $3, V5.B16; \
	ILV3ZERO24; \
	ADD $192, R5, R13; \
	MOVD R6, R19; \
	MOVD $4, R15; \
ilv3plane: \
	FLDPQ (R19), (F6, F7); \
	ILV3STEP(0, 6, 0); \
	ILV3STEP(64, 6, 1); \
	ILV3STEP(128, 6, 2); \
	ILV3STEP(192, 6, 3); \
	ILV3STEP(256, 7, 0); \
	ILV3STEP(320, 7, 1); \
	ILV3STEP(384, 7, 2); \
	ILV3STEP(448, 7, 3); \
	ADD $512, R13; \
	ADD $64, R19; \
	SUBS $1, R15; \
	BNE ilv3plane; \
	ILV3REC(8, 0, 4); \
	ILV3REC(9, 1, 4); \
	ILV3REC(10, 2, 4); \
	ILV3REC(11, 3, 4); \
	ILV3REC(12, 0, 4); \
	ILV3REC(13, 1, 4); \
	ILV3REC(14, 2, 4); \
	ILV3REC(15, 3, 4); \
	ILV3REC(16, 0, 4); \
	ILV3REC(17, 1, 4); \
	ILV3REC(18, 2, 4); \
	ILV3REC(19, 3, 4); \
	ILV3REC(20, 0, 4); \
	ILV3REC(21, 1, 4); \
	ILV3REC(22, 2, 4); \
	ILV3REC(23, 3, 4); \
	ILV3REC(24, 0, 4); \
	ILV3REC(25, 1, 4); \
	ILV3REC(26, 2, 4); \
	ILV3REC(27, 3, 4)

// ILV3FOLD adds row group g's integers (V8+4g … V11+4g, rows 16g … 16g+15), scaled by
// fp16(d_w)·D (D in V28), into their accumulator lane at R20.
#define ILV3FOLD(g) \
	FLDPQ (32*(g))(R5), (F0, F1); \
	FCVTL(4, 0); \
	FCVTL2(5, 0); \
	FCVTL(6, 1); \
	FCVTL2(7, 1); \
	FMUL(4, 4, 28); \
	FMUL(5, 5, 28); \
	FMUL(6, 6, 28); \
	FMUL(7, 7, 28); \
	SCVTF(8+4*(g), 8+4*(g)); \
	SCVTF(9+4*(g), 9+4*(g)); \
	SCVTF(10+4*(g), 10+4*(g)); \
	SCVTF(11+4*(g), 11+4*(g)); \
	FLDPQ (64*(g))(R20), (F0, F1); \
	FLDPQ (64*(g)+32)(R20), (F2, F3); \
	FMLA4S(0, 8+4*(g), 4); \
	FMLA4S(1, 9+4*(g), 5); \
	FMLA4S(2, 10+4*(g), 6); \
	FMLA4S(3, 11+4*(g), 7); \
	FSTPQ (F0, F1), (64*(g))(R20); \
	FSTPQ (F2, F3), (64*(g)+32)(R20)

// ILV3CLEARACC clears n·128 bytes of accumulators at R3 (V0, R20 and R15 scratch).
#define ILV3CLEARACC(n) \
	VEOR V0.B16, V0.B16, V0.B16; \
	MOVD R3, R20; \
	MOVD $(n), R15; \
ilv3clear: \
	FSTPQ.P (F0, F0), 32(R20); \
	FSTPQ.P (F0, F0), 32(R20); \
	FSTPQ.P (F0, F0), 32(R20); \
	FSTPQ.P (F0, F0), 32(R20); \
	SUBS $1, R15; \
	BNE ilv3clear

// ILV3TREE adds the accumulators' eight lanes of rows 8i … 8i+7 and stores them at
// 32i(R4): ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), lane l in V2l, V2l+1.
#define ILV3TREE(i) \
	ADD $(32*(i)), R3, R20; \
	ADD $(1280+32*(i)), R3, R21; \
	FLDPQ 0(R20), (F0, F1); \
	FLDPQ 320(R20), (F2, F3); \
	FLDPQ 640(R20), (F4, F5); \
	FLDPQ 960(R20), (F6, F7); \
	FLDPQ 0(R21), (F8, F9); \
	FLDPQ 320(R21), (F10, F11); \
	FLDPQ 640(R21), (F12, F13); \
	FLDPQ 960(R21), (F14, F15); \
	LANETREE; \
	FSTPQ (F0, F1), (32*(i))(R4)

// ILV3TREES stores the tile's 80 outputs at R4 from the accumulators at R3.
#define ILV3TREES \
	ILV3TREE(0); \
	ILV3TREE(1); \
	ILV3TREE(2); \
	ILV3TREE(3); \
	ILV3TREE(4); \
	ILV3TREE(5); \
	ILV3TREE(6); \
	ILV3TREE(7); \
	ILV3TREE(8); \
	ILV3TREE(9)

// ILV3MULTIARGS loads the multi-vector kernels' arguments (ilv3PairNEONDot's
// signature) and clears the lane R12.
#define ILV3MULTIARGS \
	MOVD w+0(FP), R5; \
	MOVD nb8+8(FP), R11; \
	LSL $3, R11; \
	MOVD q+16(FP), R6; \
	MOVD qs+24(FP), R1; \
	MOVD d+32(FP), R7; \
	MOVD ds+48(FP), R2; \
	MOVD acc+56(FP), R3; \
	MOVD $320, R9; \
	MOVD $32, R14; \
	MOVD $0, R12

// ILV3PASS starts a multi-vector kernel's pass: the constants, the sums cleared, the
// pass's codes at R13 (R21 bytes into each step) and vector 0's activations at R19.
#define ILV3PASS \
	VMOVI $128, V4.B16; \
	VMOVI $3, V5.B16; \
	ILV3ZERO24; \
	ADD $192, R5, R13; \
	ADD R21, R13; \
	MOVD R6, R19

// ILV3BLOCKPF prefetches the scale lines of the tile × block ILV3PF bytes on; the steps
// prefetch the rest.
#define ILV3BLOCKPF \
	PRFM (ILV3PF+0)(R5), PLDL1KEEP; \
	PRFM (ILV3PF+64)(R5), PLDL1KEEP; \
	PRFM (ILV3PF+128)(R5), PLDL1KEEP

// ILV3NEXT moves R5, R6, R7 and the lane R12 on to the next block.
#define ILV3NEXT \
	ADD $2240, R5; \
	ADD R14, R6; \
	EOR $192, R14; \
	ADD $4, R7; \
	ADD $1, R12; \
	AND $7, R12

// func ilv3TilesNEONDot(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)
TEXT ·ilv3TilesNEONDot(SB), NOSPLIT, $0-72
	MOVD w+0(FP), R0
	MOVD tiles+8(FP), R1
	MOVD tileBytes+24(FP), R2
	MOVD acc+56(FP), R3
	MOVD y+64(FP), R4
	MOVD $320, R9

ilv3tile:
	ILV3CLEARACC(20)
	MOVD R0, R5
	MOVD q+32(FP), R6
	MOVD $32, R14
	MOVD d+40(FP), R7
	MOVD nb8+16(FP), R11
	LSL $3, R11
	MOVD $0, R12

ilv3block:
	ILV3BLOCKPF
	ILV3SUMS
	VLD1R (R7), [V28.S4]
	MADD R9, R3, R12, R20
	ILV3FOLD(0)
	ILV3FOLD(1)
	ILV3FOLD(2)
	ILV3FOLD(3)
	ILV3FOLD(4)
	ILV3NEXT
	SUBS $1, R11
	BNE ilv3block

	ILV3TREES
	ADD R2, R0
	ADD $320, R4
	SUBS $1, R1
	BNE ilv3tile
	RET

// func ilv3BlockNEONDot(blk *byte, q *int8, sum *int32, out *int32)
TEXT ·ilv3BlockNEONDot(SB), NOSPLIT, $0-32
	MOVD blk+0(FP), R5
	MOVD q+8(FP), R6
	MOVD out+24(FP), R0
	ILV3SUMS
	FSTPQ (F8, F9), 0(R0)
	FSTPQ (F10, F11), 32(R0)
	FSTPQ (F12, F13), 64(R0)
	FSTPQ (F14, F15), 96(R0)
	FSTPQ (F16, F17), 128(R0)
	FSTPQ (F18, F19), 160(R0)
	FSTPQ (F20, F21), 192(R0)
	FSTPQ (F22, F23), 224(R0)
	FSTPQ (F24, F25), 256(R0)
	FSTPQ (F26, F27), 288(R0)
	RET

// The pair kernel (ilv3PairNEONDot) runs two vectors over one tile: the six sums of
// both would take 48 registers, so each block runs in two passes of half the rows
// (code bytes 0…31 and 32…63 of each step: rows L = 0…7 and 8…15 of every group), and
// each loaded half step is flipped and tripled once for both vectors' 24 SDOTs: per 32
// code bytes 2 EORs, 10 MULs and 24 SDOTs, where two runs of the decode kernel take 24
// instructions and 24 SDOTs. Pₙ of row quad j (rows 8h+4j … +3 of each group, h the
// pass) is in V8+2n+j for vector 0 and V20+2n+j for vector 1; V0 V1 codes, V4 V5 the
// constants, V6 V7 and V2 V3 the vectors' activations. R1 qs, R2 ds, R8 ys, R21 the
// pass's code offset (32h), R22 vector 1's activation pointer, R23 the pass's scales,
// R24 vector 1's accumulator lane.

// ILV3PDOT adds the two code registers times activation dword idx of Va0 (vector 0)
// and Va1 (vector 1) into their Pₙ.
#define ILV3PDOT(n, a0, a1, idx) \
	SDOTE(8+2*(n), 0, a0, idx); \
	SDOTE(9+2*(n), 1, a0, idx); \
	SDOTE(20+2*(n), 0, a1, idx); \
	SDOTE(21+2*(n), 1, a1, idx)

#define ILV3PTRIPLE \
	MULB(0, 0, 5); \
	MULB(1, 1, 5)

// ILV3PSTEP runs the pass's half of the step at off(R13) with activation dword idx of
// Va0 and Va1.
#define ILV3PSTEP(off, a0, a1, idx) \
	PRFM (off+ILV3PF)(R13), PLDL1KEEP; \
	FLDPQ off(R13), (F0, F1); \
	EOR16B(0, 0, 4); \
	EOR16B(1, 1, 4); \
	ILV3PDOT(0, a0, a1, idx); \
	ILV3PTRIPLE; \
	ILV3PDOT(1, a0, a1, idx); \
	ILV3PTRIPLE; \
	ILV3PDOT(2, a0, a1, idx); \
	ILV3PTRIPLE; \
	ILV3PDOT(3, a0, a1, idx); \
	ILV3PTRIPLE; \
	ILV3PDOT(4, a0, a1, idx); \
	ILV3PTRIPLE; \
	ILV3PDOT(5, a0, a1, idx)

// ILV3PFOLD adds both vectors' integers of row group g's half (rows 16g+8h … +7),
// scaled by fp16(d_w)·D (vector 0's D in V18, vector 1's in V30), into their
// accumulator lanes at R20 and R24.
#define ILV3PFOLD(g) \
	FMOVQ (32*(g))(R23), F0; \
	FCVTL(1, 0); \
	FCVTL2(2, 0); \
	FMUL(3, 1, 18); \
	FMUL(4, 2, 18); \
	FMUL(5, 1, 30); \
	FMUL(6, 2, 30); \
	SCVTF(8+2*(g), 8+2*(g)); \
	SCVTF(9+2*(g), 9+2*(g)); \
	SCVTF(20+2*(g), 20+2*(g)); \
	SCVTF(21+2*(g), 21+2*(g)); \
	FLDPQ (64*(g))(R20), (F0, F1); \
	FLDPQ (64*(g))(R24), (F2, F7); \
	FMLA4S(0, 8+2*(g), 3); \
	FMLA4S(1, 9+2*(g), 4); \
	FMLA4S(2, 20+2*(g), 5); \
	FMLA4S(7, 21+2*(g), 6); \
	FSTPQ (F0, F1), (64*(g))(R20); \
	FSTPQ (F2, F7), (64*(g))(R24)

// func ilv3PairNEONDot(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int)
TEXT ·ilv3PairNEONDot(SB), NOSPLIT, $0-80
	ILV3MULTIARGS
	ILV3CLEARACC(40)

ilv3pblock:
	ILV3BLOCKPF
	MOVD $0, R21

ilv3ppass:
	ILV3PASS
	ADD R1, R6, R22
	MOVD $4, R15

ilv3pplane:
	FLDPQ (R19), (F6, F7)
	FLDPQ (R22), (F2, F3)
	ILV3PSTEP(0, 6, 2, 0)
	ILV3PSTEP(64, 6, 2, 1)
	ILV3PSTEP(128, 6, 2, 2)
	ILV3PSTEP(192, 6, 2, 3)
	ILV3PSTEP(256, 7, 3, 0)
	ILV3PSTEP(320, 7, 3, 1)
	ILV3PSTEP(384, 7, 3, 2)
	ILV3PSTEP(448, 7, 3, 3)
	ADD $512, R13
	ADD $64, R19
	ADD $64, R22
	SUBS $1, R15
	BNE ilv3pplane

	ILV3REC(8, 0, 2)
	ILV3REC(9, 1, 2)
	ILV3REC(10, 2, 2)
	ILV3REC(11, 3, 2)
	ILV3REC(12, 0, 2)
	ILV3REC(13, 1, 2)
	ILV3REC(14, 2, 2)
	ILV3REC(15, 3, 2)
	ILV3REC(16, 0, 2)
	ILV3REC(17, 1, 2)
	ILV3REC(20, 0, 2)
	ILV3REC(21, 1, 2)
	ILV3REC(22, 2, 2)
	ILV3REC(23, 3, 2)
	ILV3REC(24, 0, 2)
	ILV3REC(25, 1, 2)
	ILV3REC(26, 2, 2)
	ILV3REC(27, 3, 2)
	ILV3REC(28, 0, 2)
	ILV3REC(29, 1, 2)

	VLD1R (R7), [V18.S4]
	ADD R2, R7, R25
	VLD1R (R25), [V30.S4]
	ADD R21>>1, R5, R23
	MADD R9, R3, R12, R20
	ADD R21, R20
	ADD $2560, R20, R24
	ILV3PFOLD(0)
	ILV3PFOLD(1)
	ILV3PFOLD(2)
	ILV3PFOLD(3)
	ILV3PFOLD(4)
	ADD $32, R21
	CMP $64, R21
	BNE ilv3ppass

	ILV3NEXT
	SUBS $1, R11
	BNE ilv3pblock

	MOVD y+64(FP), R4
	MOVD ys+72(FP), R8
	ILV3TREES
	ADD $2560, R3
	ADD R8, R4
	ILV3TREES
	RET


// The quad kernel (ilv3QuadNEONDot) runs four vectors over one tile, for prefill and
// batches of four or more: each block in four passes of a quarter of the rows (code
// bytes 16j … 16j+15 of each step: rows L = 4j … 4j+3 of every group, j the pass), so
// that each loaded quarter step, flipped and tripled once (an EOR and five MULs), meets
// the four vectors' activation dwords in 24 SDOTs: 31 instructions for 320
// multiply-adds where the pair kernel takes 36 and the decode kernel 48. Pₙ of vector v
// is in V8+6v+n; the code in V0 and V7 by turns (in-order cores then overlap steps),
// the constants in V4 V5, the vectors' activations for four steps in V1 V2 V3 V6.
// R10, R19, R22, R24 the vectors' activation pointers, R21 the pass's code offset (16j),
// R23 the pass's scales.

// ILV3QDOT adds code register c times activation dword idx of each vector into its Pₙ.
#define ILV3QDOT(n, c, idx) \
	SDOTE(8+(n), c, 1, idx); \
	SDOTE(14+(n), c, 2, idx); \
	SDOTE(20+(n), c, 3, idx); \
	SDOTE(26+(n), c, 6, idx)

// ILV3QSTEP runs the pass's quarter of the step at off(R13) with activation dword idx,
// its code in register c (Fc its name).
#define ILV3QSTEP(off, Fc, c, idx) \
	PRFM (off+ILV3PF)(R13), PLDL1KEEP; \
	FMOVQ off(R13), Fc; \
	EOR16B(c, c, 4); \
	ILV3QDOT(0, c, idx); \
	MULB(c, c, 5); \
	ILV3QDOT(1, c, idx); \
	MULB(c, c, 5); \
	ILV3QDOT(2, c, idx); \
	MULB(c, c, 5); \
	ILV3QDOT(3, c, idx); \
	MULB(c, c, 5); \
	ILV3QDOT(4, c, idx); \
	MULB(c, c, 5); \
	ILV3QDOT(5, c, idx)

// ILV3QACTS loads the four vectors' activation dwords of four steps, off bytes into
// the plane.
#define ILV3QACTS(off) \
	FMOVQ off(R19), F1; \
	FMOVQ off(R22), F2; \
	FMOVQ off(R24), F3; \
	FMOVQ off(R10), F6

// ILV3QRECS turns vector v's sums into its row integers, rows 16g+4j … +3 in V8+6v+g.
#define ILV3QRECS(v) \
	ILV3REC(8+6*(v), 0, 1); \
	ILV3REC(9+6*(v), 1, 1); \
	ILV3REC(10+6*(v), 2, 1); \
	ILV3REC(11+6*(v), 3, 1); \
	ILV3REC(12+6*(v), 7, 1)

// ILV3QFOLD1 adds vector v's integers of row group g's quarter, scaled by the group's
// float scales (Vf) times the vector's D (V13+6v), into its accumulator lane at
// R20 + 2560v.
#define ILV3QFOLD1(v, g, f) \
	FMUL(4, f, 13+6*(v)); \
	SCVTF(8+6*(v)+(g), 8+6*(v)+(g)); \
	FMOVQ (2560*(v)+64*(g))(R20), F5; \
	FMLA4S(5, 8+6*(v)+(g), 4); \
	FMOVQ F5, (2560*(v)+64*(g))(R20)

#define ILV3QFOLD(v) \
	ILV3QFOLD1(v, 0, 0); \
	ILV3QFOLD1(v, 1, 1); \
	ILV3QFOLD1(v, 2, 2); \
	ILV3QFOLD1(v, 3, 3); \
	ILV3QFOLD1(v, 4, 6)

// func ilv3QuadNEONDot(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int)
TEXT ·ilv3QuadNEONDot(SB), NOSPLIT, $0-80
	ILV3MULTIARGS
	ILV3CLEARACC(80)

ilv3qblock:
	ILV3BLOCKPF
	MOVD $0, R21

ilv3qpass:
	ILV3PASS
	ADD R1, R19, R22
	ADD R1, R22, R24
	ADD R1, R24, R10
	MOVD $4, R15

ilv3qplane:
	ILV3QACTS(0)
	ILV3QSTEP(0, F0, 0, 0)
	ILV3QSTEP(64, F7, 7, 1)
	ILV3QSTEP(128, F0, 0, 2)
	ILV3QSTEP(192, F7, 7, 3)
	ILV3QACTS(16)
	ILV3QSTEP(256, F0, 0, 0)
	ILV3QSTEP(320, F7, 7, 1)
	ILV3QSTEP(384, F0, 0, 2)
	ILV3QSTEP(448, F7, 7, 3)
	ADD $512, R13
	ADD $64, R19
	ADD $64, R22
	ADD $64, R24
	ADD $64, R10
	SUBS $1, R15
	BNE ilv3qplane

	ILV3QRECS(0)
	ILV3QRECS(1)
	ILV3QRECS(2)
	ILV3QRECS(3)
	VLD1R (R7), [V13.S4]
	ADD R2, R7, R25
	VLD1R (R25), [V19.S4]
	ADD R2, R25
	VLD1R (R25), [V25.S4]
	ADD R2, R25
	VLD1R (R25), [V31.S4]
	ADD R21>>1, R5, R23
	FMOVD 0(R23), F0
	FMOVD 32(R23), F1
	FMOVD 64(R23), F2
	FMOVD 96(R23), F3
	FMOVD 128(R23), F6
	FCVTL(0, 0)
	FCVTL(1, 1)
	FCVTL(2, 2)
	FCVTL(3, 3)
	FCVTL(6, 6)
	MADD R9, R3, R12, R20
	ADD R21, R20
	ILV3QFOLD(0)
	ILV3QFOLD(1)
	ILV3QFOLD(2)
	ILV3QFOLD(3)
	ADD $16, R21
	CMP $64, R21
	BNE ilv3qpass

	ILV3NEXT
	SUBS $1, R11
	BNE ilv3qblock

	MOVD y+64(FP), R4
	MOVD ys+72(FP), R8
	ILV3TREES
	ADD $2560, R3
	ADD R8, R4
	ILV3TREES
	ADD $2560, R3
	ADD R8, R4
	ILV3TREES
	ADD $2560, R3
	ADD R8, R4
	ILV3TREES
	RET
