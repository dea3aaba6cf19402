//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// Integer scoring of quantised queries against int8 and q4 keys on arm64 (attnint.go):
// each lane's integer J by SDOT (signed codes against the signed query codes, so no
// correction is needed), then per lane acc += (float32(J)·sq)·sk with separate roundings
// and the lanes summed in hsum16's tree, so that the scores are the generic code's bits.
// Head dim 256 only: the row's sixteen 16-byte operands (an int8 row's first and second
// sixteen codes of each block; a q4 row's low and high nibbles less 8) and its eight
// scales stay in V0…V15, V24 and V25 for every query head.

// SDOTHEAD scores one query head (codes at R1, read through R6 and R7; scale lanes at
// R2, advanced past their 128 bytes) against the row in V0…V15, V24 and V25, and stores
// the score at (R14): per block b its lanes' J by two SDOTs, then (float32(J)·sq)·sk
// into the block's four lanes of V16…V19, and hsum16's tree — lanes l and l+8, then l
// and l+4, then (0+2) + (1+3).
// SDOTBLOCK adds block b's four lanes to V(acc): its codes' operands V(lo) and V(hi)
// against the next 16 query bytes at R6 and at R7, its scale lane i of V(sk).
#define SDOTBLOCK(lo, hi, sk, i, acc) \
	VEOR   V20.B16, V20.B16, V20.B16 \
	VLD1.P 16(R6), [V21.B16] \
	VLD1.P 16(R7), [V22.B16] \
	SDOT4(21, lo, 20) \
	SDOT4(22, hi, 20) \
	SCVTF4(20, 20) \
	VLD1.P 16(R2), [V23.S4] \
	FMUL4(23, 20, 20) \
	FMULE4(sk, i, 20, 20) \
	FADD4(20, acc, acc)

#define SDOTHEAD \
	VEOR V16.B16, V16.B16, V16.B16 \
	VEOR V17.B16, V17.B16, V17.B16 \
	VEOR V18.B16, V18.B16, V18.B16 \
	VEOR V19.B16, V19.B16, V19.B16 \
	MOVD R1, R6 \
	ADD  $64, R1, R7 \
	SDOTBLOCK(0, 1, 24, 0, 16) \
	SDOTBLOCK(2, 3, 24, 1, 17) \
	SDOTBLOCK(4, 5, 24, 2, 18) \
	SDOTBLOCK(6, 7, 24, 3, 19) \
	ADD $64, R6 \
	ADD $64, R7 \
	SDOTBLOCK(8, 9, 25, 0, 16) \
	SDOTBLOCK(10, 11, 25, 1, 17) \
	SDOTBLOCK(12, 13, 25, 2, 18) \
	SDOTBLOCK(14, 15, 25, 3, 19) \
	FADD4(18, 16, 16) \
	FADD4(19, 17, 17) \
	FADD4(17, 16, 16) \
	VEXT   $8, V16.B16, V16.B16, V17.B16 \
	FADD4(17, 16, 16) \
	FADDPS(16, 16) \
	FMOVS  F16, (R14)

// NIBBLES splits the 16 code bytes of vs into their low nibbles less 8 in vl (register
// number l) and their high ones less 8 in vh (h): a q4 block's values.
#define NIBBLES(vs, vl, vh, l, h) \
	VAND   V26.B16, vs.B16, vl.B16 \
	VUSHR  $4, vs.B16, vh.B16 \
	SUB16B(27, l, l) \
	SUB16B(27, h, h)

// SDOTARGS loads the scorers' arguments: out at R0 (R9 its head stride in bytes), the
// codes and scale lanes of head 0 at R10 and R11, rep in R12, the keys and their scales
// at R3 and R4, n in R13. SDOTFIRST points R1, R2 and R14 at head 0's codes, scale lanes
// and score, R15 counting the heads.
#define SDOTARGS \
	MOVD out_base+0(FP), R0 \
	MOVD os+24(FP), R9 \
	LSL  $2, R9 \
	MOVD codes_base+32(FP), R10 \
	MOVD sq_base+56(FP), R11 \
	MOVD rep+104(FP), R12 \
	MOVD k_base+112(FP), R3 \
	MOVD ks_base+136(FP), R4 \
	MOVD n+160(FP), R13

#define SDOTFIRST \
	MOVD R10, R1 \
	MOVD R11, R2 \
	MOVD R0, R14 \
	MOVD R12, R15

// func scoreInt8SDOT(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)
TEXT ·scoreInt8SDOT(SB), NOSPLIT, $0-176
	SDOTARGS

scoreInt8SDOT_pos:
	VLD1.P 64(R3), [V0.B16, V1.B16, V2.B16, V3.B16]
	VLD1.P 64(R3), [V4.B16, V5.B16, V6.B16, V7.B16]
	VLD1.P 64(R3), [V8.B16, V9.B16, V10.B16, V11.B16]
	VLD1.P 64(R3), [V12.B16, V13.B16, V14.B16, V15.B16]
	VLD1.P 32(R4), [V24.S4, V25.S4]
	SDOTFIRST

scoreInt8SDOT_head:
	SDOTHEAD
	ADD    $256, R1
	ADD    R9, R14
	SUBS   $1, R15
	BNE    scoreInt8SDOT_head

	ADD  $4, R0
	SUBS $1, R13
	BNE  scoreInt8SDOT_pos
	RET

// func scoreQ4SDOT(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int)
TEXT ·scoreQ4SDOT(SB), NOSPLIT, $0-176
	SDOTARGS
	VMOVI $15, V26.B16
	VMOVI $8, V27.B16

scoreQ4SDOT_pos:
	VLD1.P 64(R3), [V16.B16, V17.B16, V18.B16, V19.B16]
	VLD1.P 64(R3), [V20.B16, V21.B16, V22.B16, V23.B16]
	NIBBLES(V16, V0, V1, 0, 1)
	NIBBLES(V17, V2, V3, 2, 3)
	NIBBLES(V18, V4, V5, 4, 5)
	NIBBLES(V19, V6, V7, 6, 7)
	NIBBLES(V20, V8, V9, 8, 9)
	NIBBLES(V21, V10, V11, 10, 11)
	NIBBLES(V22, V12, V13, 12, 13)
	NIBBLES(V23, V14, V15, 14, 15)
	VLD1.P 16(R4), [V25.H8]
	FCVTLH(25, 24)
	FCVTL2H(25, 25)
	SDOTFIRST

scoreQ4SDOT_head:
	SDOTHEAD
	ADD    $256, R1
	ADD    R9, R14
	SUBS   $1, R15
	BNE    scoreQ4SDOT_head

	ADD  $4, R0
	SUBS $1, R13
	BNE  scoreQ4SDOT_pos
	RET
