//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// Interleaved kernels on NEON (see Interleaved in interleave.go for the layout, and
// ilvTilesGeneric for the contract). A step is 64 code bytes: dword L holds four
// columns of the rows L, 16+L, 32+L, 48+L, byte c = c₀ + 4c₁ + 16c₂ + 64c₃, and its
// four activations are one dword of the plane's 32 activation bytes.
//
// SDOT multiplies signed bytes, and a code byte is not one (c₃ ≥ 2 sets bit 7), so
// each row group g is taken out of the byte on its own: c & 0x03 = c₀, c & 0x0c = 4c₁,
// c & 0x30 = 16c₂ and c >> 6 = c₃, all in 0…48, and SDOT by element multiplies them
// with the step's dword of the plane's activations (no broadcast). Row group g's sums
// come out as 4^g·S_g for g = 1, 2, exact (|4^g·S_g| ≤ 48·128·128), and an arithmetic
// shift gives S_g. One step is 2 loads, 16 ands/shifts and 16 SDOTs for 256 weights.
//
// Without SDOT (q8RowsNEON's family) the codes are taken out as c_g = (c >> 2g) & 3
// and multiplied by SMLAL/SMLAL2 with the step's dword broadcast: 8 int16 lanes each,
// lane (row, column j) adding one product a step (|Σ| ≤ 32·3·128 over a block, no
// overflow). A whole step's lanes would take 32 registers, so a block runs in two
// passes of half the rows (code bytes 0…31 and 32…63 of each step: rows L = 0…7 and
// 8…15 of every group), and SADDLP and ADDP reduce each row's four columns at the end.
//
// The float fold is the Q8 kernels': per block, fp16(d_w) to float times D (FMUL),
// then one FMLA of the block integer into the accumulator lane b%8, here 8 lanes × 64
// rows in memory (lane l at 256l, row r at 4r); per tile the lanes are added as
// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)). So each kernel gives the bits of its family's
// row kernel (q8RowsNEONDot, q8RowsNEON), and ilvTilesGeneric's, which arm64 Go compiles
// with fused multiply-adds.
//
// Counted in the disassembly, per 256 weights (a step, with its share of the block's
// fold): the SDOT kernel runs 40 instructions, 35 of them on the vector pipes and 4.7
// 16-byte loads, where q8RowsNEONDot runs 61 with 20 loads (it reloads a row's
// activations); the plain NEON one runs 70, where q8RowsNEON runs 80. Not timed on
// hardware (see the prefetch distance below).
//
// The Go assembler lacks SDOT, SMLAL, SADDLP, SSHR, SCVTF, FCVTL, vector FMUL and FADD,
// so they are WORDs (neon_arm64.h).
//
// Registers (both families): R0 tile pointer, R1 tiles left, R2 tile stride, R3 the
// accumulators, R4 output, R5 block pointer, R6 block activations, R7 D, R10 Sum, R11
// blocks left, R12 lane offset (256·(b%8)), R13 code pointer, R14 the step from this
// block's activations to the next's (32 after an even block, 224 after an odd one), R15
// planes left, R19 activation pointer, R20 accumulator lane, R21 pass offset (plain
// NEON), R22 scale pointer. V26…V28 masks; V8…V23 block sums.


// ILVPF is how far ahead of the step being read the kernels prefetch, in bytes: four
// tile × blocks, as ilvTilesVNNI does. Every 64-byte line is prefetched once (twice on
// 128-byte-line cores, where the second is a cache hit). Not measured on arm64: a build
// may try another distance with
// go test -asmflags=github.com/bonsai-go/sdk/ternary=-D=ILVPF=4352 ...
#ifndef ILVPF
#define ILVPF 8704
#endif

// ILVCLEARACC clears the 2048 bytes of accumulators at R3 (V0, R20 and R15 scratch).
#define ILVCLEARACC \
	VEOR V0.B16, V0.B16, V0.B16; \
	MOVD R3, R20; \
	MOVD $16, R15; \
ilvclear: \
	FSTPQ.P (F0, F0), 32(R20); \
	FSTPQ.P (F0, F0), 32(R20); \
	FSTPQ.P (F0, F0), 32(R20); \
	FSTPQ.P (F0, F0), 32(R20); \
	SUBS $1, R15; \
	BNE ilvclear

// ILVTREE adds the accumulators' eight lanes of rows 8i … 8i+7 and stores them at
// 32i(R4): ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), lane l in V2l, V2l+1.
#define ILVTREE(i) \
	FLDPQ (32*i)(R3), (F0, F1); \
	FLDPQ (256+32*i)(R3), (F2, F3); \
	FLDPQ (512+32*i)(R3), (F4, F5); \
	FLDPQ (768+32*i)(R3), (F6, F7); \
	ADD $1024, R3, R20; \
	FLDPQ (32*i)(R20), (F8, F9); \
	FLDPQ (256+32*i)(R20), (F10, F11); \
	FLDPQ (512+32*i)(R20), (F12, F13); \
	FLDPQ (768+32*i)(R20), (F14, F15); \
	LANETREE; \
	FSTPQ (F0, F1), (32*i)(R4)

#define ILVTREES \
	ILVTREE(0); \
	ILVTREE(1); \
	ILVTREE(2); \
	ILVTREE(3); \
	ILVTREE(4); \
	ILVTREE(5); \
	ILVTREE(6); \
	ILVTREE(7)

// ILVNEXT moves R5, R6, R7, R10 and R12 on to the next block.
#define ILVNEXT \
	ADD $2176, R5; \
	ADD R14, R6; \
	EOR $192, R14; \
	ADD $4, R7; \
	ADD $4, R10; \
	ADD $256, R12; \
	AND $2047, R12

// SDOT family.

// ILVDREG multiplies code register c (rows 4i … 4i+3 of each group) with activation
// dword idx of Va into the sums V8+i, V12+i, V16+i, V20+i.
#define ILVDREG(c, i, a, idx) \
	VAND V26.B16, c.B16, V4.B16; \
	VAND V27.B16, c.B16, V5.B16; \
	VAND V28.B16, c.B16, V6.B16; \
	VUSHR $6, c.B16, V7.B16; \
	SDOTE(8+i, 4, a, idx); \
	SDOTE(12+i, 5, a, idx); \
	SDOTE(16+i, 6, a, idx); \
	SDOTE(20+i, 7, a, idx)

// ILVDSTEP runs the step at off(R13) with activation dword idx of Va.
#define ILVDSTEP(off, a, idx) \
	PRFM (off+ILVPF)(R13), PLDL1KEEP; \
	FLDPQ off(R13), (F0, F1); \
	FLDPQ (off+32)(R13), (F2, F3); \
	ILVDREG(V0, 0, a, idx); \
	ILVDREG(V1, 1, a, idx); \
	ILVDREG(V2, 2, a, idx); \
	ILVDREG(V3, 3, a, idx)

// ILVDPLANE runs the eight steps of a plane: codes at R13, activations at R19.
#define ILVDPLANE \
	FLDPQ (R19), (F24, F25); \
	ILVDSTEP(0, 24, 0); \
	ILVDSTEP(64, 24, 1); \
	ILVDSTEP(128, 24, 2); \
	ILVDSTEP(192, 24, 3); \
	ILVDSTEP(256, 25, 0); \
	ILVDSTEP(320, 25, 1); \
	ILVDSTEP(384, 25, 2); \
	ILVDSTEP(448, 25, 3)

// ILVDSUMS leaves in V8 … V23 the 64 row integers Σ c·Q − Sum of the tile × block at
// R5 (activations at R6, Sum at R10), rows in order.
#define ILVDSUMS \
	ILVZERO16; \
	ADD $128, R5, R13; \
	MOVD R6, R19; \
	MOVD $4, R15; \
ilvdplane: \
	ILVDPLANE; \
	ADD $512, R13; \
	ADD $64, R19; \
	SUBS $1, R15; \
	BNE ilvdplane; \
	SSHR4S(12, 12, 2); \
	SSHR4S(13, 13, 2); \
	SSHR4S(14, 14, 2); \
	SSHR4S(15, 15, 2); \
	SSHR4S(16, 16, 4); \
	SSHR4S(17, 17, 4); \
	SSHR4S(18, 18, 4); \
	SSHR4S(19, 19, 4); \
	VLD1R (R10), [V29.S4]; \
	VSUB V29.S4, V8.S4, V8.S4; \
	VSUB V29.S4, V9.S4, V9.S4; \
	VSUB V29.S4, V10.S4, V10.S4; \
	VSUB V29.S4, V11.S4, V11.S4; \
	VSUB V29.S4, V12.S4, V12.S4; \
	VSUB V29.S4, V13.S4, V13.S4; \
	VSUB V29.S4, V14.S4, V14.S4; \
	VSUB V29.S4, V15.S4, V15.S4; \
	VSUB V29.S4, V16.S4, V16.S4; \
	VSUB V29.S4, V17.S4, V17.S4; \
	VSUB V29.S4, V18.S4, V18.S4; \
	VSUB V29.S4, V19.S4, V19.S4; \
	VSUB V29.S4, V20.S4, V20.S4; \
	VSUB V29.S4, V21.S4, V21.S4; \
	VSUB V29.S4, V22.S4, V22.S4; \
	VSUB V29.S4, V23.S4, V23.S4

// ILVDFOLD1 adds row group g's integers (Vi0 … Vi3, numbers n0 … n3), scaled by
// fp16(d_w)·D (D in V30), into their accumulator lane at R20.
#define ILVDFOLD1(g, n0, n1, n2, n3, i0, i1, i2, i3) \
	FLDPQ (32*g)(R5), (F0, F1); \
	FCVTL(4, 0); \
	FCVTL2(5, 0); \
	FCVTL(6, 1); \
	FCVTL2(7, 1); \
	FMUL(4, 4, 30); \
	FMUL(5, 5, 30); \
	FMUL(6, 6, 30); \
	FMUL(7, 7, 30); \
	SCVTF(n0, n0); \
	SCVTF(n1, n1); \
	SCVTF(n2, n2); \
	SCVTF(n3, n3); \
	FLDPQ (64*g)(R20), (F0, F1); \
	FLDPQ (64*g+32)(R20), (F2, F3); \
	VFMLA i0.S4, V4.S4, V0.S4; \
	VFMLA i1.S4, V5.S4, V1.S4; \
	VFMLA i2.S4, V6.S4, V2.S4; \
	VFMLA i3.S4, V7.S4, V3.S4; \
	FSTPQ (F0, F1), (64*g)(R20); \
	FSTPQ (F2, F3), (64*g+32)(R20)

// func ilvTilesNEONDot(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)
TEXT ·ilvTilesNEONDot(SB), NOSPLIT, $0-72
	VMOVI $3, V26.B16
	VMOVI $12, V27.B16
	VMOVI $48, V28.B16
	MOVD w+0(FP), R0
	MOVD tiles+8(FP), R1
	MOVD tileBytes+24(FP), R2
	MOVD acc+56(FP), R3
	MOVD y+64(FP), R4

ilvdtile:
	ILVCLEARACC
	MOVD R0, R5
	MOVD q+32(FP), R6
	MOVD $32, R14
	MOVD d+40(FP), R7
	MOVD sum+48(FP), R10
	MOVD nb8+16(FP), R11
	LSL $3, R11
	MOVD $0, R12

ilvdblock:
	// The block's scales (its first two lines); the steps prefetch the rest.
	PRFM (ILVPF+0)(R5), PLDL1KEEP
	PRFM (ILVPF+64)(R5), PLDL1KEEP
	ILVDSUMS
	VLD1R (R7), [V30.S4]
	ADD R3, R12, R20
	ILVDFOLD1(0, 8, 9, 10, 11, V8, V9, V10, V11)
	ILVDFOLD1(1, 12, 13, 14, 15, V12, V13, V14, V15)
	ILVDFOLD1(2, 16, 17, 18, 19, V16, V17, V18, V19)
	ILVDFOLD1(3, 20, 21, 22, 23, V20, V21, V22, V23)
	ILVNEXT
	SUBS $1, R11
	BNE ilvdblock

	ILVTREES
	ADD R2, R0
	ADD $256, R4
	SUBS $1, R1
	BNE ilvdtile
	RET

// func ilvBlockNEONDot(blk *byte, q *int8, sum *int32, out *int32)
TEXT ·ilvBlockNEONDot(SB), NOSPLIT, $0-32
	VMOVI $3, V26.B16
	VMOVI $12, V27.B16
	VMOVI $48, V28.B16
	MOVD blk+0(FP), R5
	MOVD q+8(FP), R6
	MOVD sum+16(FP), R10
	MOVD out+24(FP), R0
	ILVDSUMS
	FSTPQ (F8, F9), 0(R0)
	FSTPQ (F10, F11), 32(R0)
	FSTPQ (F12, F13), 64(R0)
	FSTPQ (F14, F15), 96(R0)
	FSTPQ (F16, F17), 128(R0)
	FSTPQ (F18, F19), 160(R0)
	FSTPQ (F20, F21), 192(R0)
	FSTPQ (F22, F23), 224(R0)
	RET

// Plain NEON family.

// ILVNREG multiplies code register c (rows 4j … 4j+3 of the pass's 8 in each group,
// bytes 0…7 the first two rows) with the broadcast activations V24 into the int16
// lanes V8+8j+2g (low bytes) and V9+8j+2g (high bytes) of each group g.
#define ILVNREG(c, j) \
	VAND V26.B16, c.B16, V4.B16; \
	VUSHR $2, c.B16, V5.B16; \
	VAND V26.B16, V5.B16, V5.B16; \
	VUSHR $4, c.B16, V6.B16; \
	VAND V26.B16, V6.B16, V6.B16; \
	VUSHR $6, c.B16, V7.B16; \
	SMLAL(8+8*j, 4, 24); \
	SMLAL2(9+8*j, 4, 24); \
	SMLAL(10+8*j, 5, 24); \
	SMLAL2(11+8*j, 5, 24); \
	SMLAL(12+8*j, 6, 24); \
	SMLAL2(13+8*j, 6, 24); \
	SMLAL(14+8*j, 7, 24); \
	SMLAL2(15+8*j, 7, 24)

// ILVNSTEP runs the pass's half of the step at off(R13), its activation dword at R19
// (moved on).
#define ILVNSTEP(off) \
	PRFM (off+ILVPF)(R13), PLDL1KEEP; \
	FLDPQ off(R13), (F0, F1); \
	VLD1R.P 4(R19), [V24.S4]; \
	ILVNREG(V0, 0); \
	ILVNREG(V1, 1)

// ILVNROWS adds group g's column lanes for code register j into one int32 per row:
// rows 16g+8h+4j … +3 in Vlo.
#define ILVNROWS(lo, hi, vlo, vhi) \
	SADDLP(lo, lo); \
	SADDLP(hi, hi); \
	VADDP vhi.S4, vlo.S4, vlo.S4

// ILVNSUMS leaves the integers Σ c·Q − Sum (Sum in V29) of half h of the rows of the
// tile × block at R5 (activations at R6, R21 = 32h) in V8+2g (rows 16g+8h … +3) and
// V16+2g (rows 16g+8h+4 … +7).
#define ILVNSUMS \
	ILVZERO16; \
	ADD $128, R5, R13; \
	ADD R21, R13; \
	MOVD R6, R19; \
	MOVD $4, R15; \
ilvnplane: \
	ILVNSTEP(0); \
	ILVNSTEP(64); \
	ILVNSTEP(128); \
	ILVNSTEP(192); \
	ILVNSTEP(256); \
	ILVNSTEP(320); \
	ILVNSTEP(384); \
	ILVNSTEP(448); \
	ADD $512, R13; \
	ADD $32, R19; \
	SUBS $1, R15; \
	BNE ilvnplane; \
	ILVNROWS(8, 9, V8, V9); \
	ILVNROWS(10, 11, V10, V11); \
	ILVNROWS(12, 13, V12, V13); \
	ILVNROWS(14, 15, V14, V15); \
	ILVNROWS(16, 17, V16, V17); \
	ILVNROWS(18, 19, V18, V19); \
	ILVNROWS(20, 21, V20, V21); \
	ILVNROWS(22, 23, V22, V23); \
	VSUB V29.S4, V8.S4, V8.S4; \
	VSUB V29.S4, V10.S4, V10.S4; \
	VSUB V29.S4, V12.S4, V12.S4; \
	VSUB V29.S4, V14.S4, V14.S4; \
	VSUB V29.S4, V16.S4, V16.S4; \
	VSUB V29.S4, V18.S4, V18.S4; \
	VSUB V29.S4, V20.S4, V20.S4; \
	VSUB V29.S4, V22.S4, V22.S4

// ILVNFOLD1 adds group g's integers of the pass (Vi0, Vi1: numbers n0, n1), scaled by
// fp16(d_w)·D (scales at R22, D in V30), into their accumulator lane at R20.
#define ILVNFOLD1(g, n0, n1, i0, i1) \
	FMOVQ (32*g)(R22), F0; \
	FCVTL(4, 0); \
	FCVTL2(5, 0); \
	FMUL(4, 4, 30); \
	FMUL(5, 5, 30); \
	SCVTF(n0, n0); \
	SCVTF(n1, n1); \
	FLDPQ (64*g)(R20), (F0, F1); \
	VFMLA i0.S4, V4.S4, V0.S4; \
	VFMLA i1.S4, V5.S4, V1.S4; \
	FSTPQ (F0, F1), (64*g)(R20)

// func ilvTilesNEON(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)
TEXT ·ilvTilesNEON(SB), NOSPLIT, $0-72
	VMOVI $3, V26.B16
	MOVD w+0(FP), R0
	MOVD tiles+8(FP), R1
	MOVD tileBytes+24(FP), R2
	MOVD acc+56(FP), R3
	MOVD y+64(FP), R4

ilvntile:
	ILVCLEARACC
	MOVD R0, R5
	MOVD q+32(FP), R6
	MOVD $32, R14
	MOVD d+40(FP), R7
	MOVD sum+48(FP), R10
	MOVD nb8+16(FP), R11
	LSL $3, R11
	MOVD $0, R12

ilvnblock:
	PRFM (ILVPF+0)(R5), PLDL1KEEP
	PRFM (ILVPF+64)(R5), PLDL1KEEP
	VLD1R (R10), [V29.S4]
	VLD1R (R7), [V30.S4]
	MOVD $0, R21

ilvnpass:
	ILVNSUMS
	ADD R21>>1, R5, R22
	ADD R3, R12, R20
	ADD R21, R20
	ILVNFOLD1(0, 8, 16, V8, V16)
	ILVNFOLD1(1, 10, 18, V10, V18)
	ILVNFOLD1(2, 12, 20, V12, V20)
	ILVNFOLD1(3, 14, 22, V14, V22)
	ADD $32, R21
	CMP $64, R21
	BNE ilvnpass

	ILVNEXT
	SUBS $1, R11
	BNE ilvnblock

	ILVTREES
	ADD R2, R0
	ADD $256, R4
	SUBS $1, R1
	BNE ilvntile
	RET

// func ilvBlockNEON(blk *byte, q *int8, sum *int32, out *int32)
TEXT ·ilvBlockNEON(SB), NOSPLIT, $0-32
	VMOVI $3, V26.B16
	MOVD blk+0(FP), R5
	MOVD q+8(FP), R6
	MOVD sum+16(FP), R10
	MOVD out+24(FP), R0
	VLD1R (R10), [V29.S4]
	MOVD $0, R21

ilvnbpass:
	ILVNSUMS
	ADD R21, R0, R20
	FSTPQ (F8, F16), 0(R20)
	FSTPQ (F10, F18), 64(R20)
	FSTPQ (F12, F20), 128(R20)
	FSTPQ (F14, F22), 192(R20)
	ADD $32, R21
	CMP $64, R21
	BNE ilvnbpass
	RET
