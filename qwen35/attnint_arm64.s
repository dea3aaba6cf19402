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

// AXPY6N_ARGS loads the arguments of the value kernels (below; their shared parts are in
// neon_arm64.h): acc at R11 (R19 a row's bytes), the weights at R12 (R13 a row's
// bytes), the codes at R14, the scales at R24 (R25 a position's bytes: 4·d/32), n in
// R15, d/8 chunks of eight columns in R20, d in R16. With no chunk or no position it
// jumps to done.
#define AXPY6N_ARGS(done) \
	MOVD acc_base+0(FP), R11 \
	MOVD w_base+24(FP), R12 \
	MOVD ws+48(FP), R13 \
	LSL  $2, R13, R13 \
	MOVD v_base+56(FP), R14 \
	MOVD vs_base+80(FP), R24 \
	MOVD n+104(FP), R15 \
	MOVD d+112(FP), R16 \
	LSL  $2, R16, R19 \
	LSR  $3, R16, R25 \
	LSR  $3, R16, R20 \
	CBZ  R20, done \
	CBZ  R15, done

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

// AXPY6N_POS scales the eight signed codes in the low bytes of V12 by the position's
// scale (at R26, which moves on) into V12, V13 — code·s rounded once, as dequantInt8NEON
// forms it — and adds them times the six rows' weights to V0…V11 in axpy6F32NEON's
// order, so that the sums are its bits on the decoded rows.
#define AXPY6N_POS \
	VLD1R   (R26), [V20.S4] \
	ADD     R25, R26, R26 \
	SXTL8(12, 12) \
	SXTL216(12, 13) \
	SXTL16(12, 12) \
	SCVTF4(12, 12) \
	SCVTF4(13, 13) \
	FMUL4(20, 12, 12) \
	FMUL4(20, 13, 13) \
	AXPY6_FMA

// func axpy6Int8NEON(acc []float32, w []float32, ws int, v []int8, vs []float32, n, d int)
//
// axpy6F32NEON over int8 value rows as they lie (d codes a position, a scale per block
// of 32): eight columns of the six rows in twelve accumulators, a position's eight codes
// widened, converted and scaled in registers instead of decoded into a row and loaded
// back. d a multiple of 32.
TEXT ·axpy6Int8NEON(SB), NOSPLIT, $0-120
	AXPY6N_ARGS(ax8n_done)
	MOVD R16, R17 // a position's code bytes
	MOVD ZR, R16

ax8n_chunk:
	AXPY6_ROWS
	MOVD R24, R26
	MOVD R14, R21

ax8n_p:
	FMOVD (R21), F12
	ADD   R17, R21, R21
	AXPY6N_POS
	SUBS  $1, R10, R10
	BNE   ax8n_p
	AXPY6_STORE
	ADD   $8, R14, R14
	ADD   $1, R16, R16
	CMP   $4, R16
	BNE   ax8n_next
	MOVD  ZR, R16
	ADD   $4, R24, R24 // the next block's scales

ax8n_next:
	SUBS $1, R20, R20
	BNE  ax8n_chunk

ax8n_done:
	RET

// func axpy6Q4NEON(acc []float32, w []float32, ws int, v []byte, vs []float32, n, d int)
//
// axpy6Int8NEON over q4 value rows as they lie (16 code bytes a block of 32 values, the
// scales already widened to float32, exactly): a block's chunks 0 and 1 are the low
// nibbles of its bytes 0…7 and 8…15, chunks 2 and 3 their high nibbles; each value
// (code − 8)·s, an exact product as dequantQ4's, so that the sums are axpy6F32NEON's
// bits on the decoded rows.
TEXT ·axpy6Q4NEON(SB), NOSPLIT, $0-120
	AXPY6N_ARGS(ax4n_done)
	LSR  $1, R16, R17 // a position's code bytes
	MOVD ZR, R16
	VMOVI $15, V21.B16
	VMOVI $8, V27.B16

ax4n_chunk:
	AXPY6_ROWS
	MOVD R24, R26
	AND  $1, R16, R21
	ADD  R21<<3, R14, R21 // chunks 1 and 3: bytes 8…15
	CMP  $2, R16
	BGE  ax4n_hi

ax4n_lo:
	FMOVD (R21), F12
	ADD   R17, R21, R21
	VAND  V21.B16, V12.B16, V12.B16
	SUB16B(27, 12, 12)
	AXPY6N_POS
	SUBS  $1, R10, R10
	BNE   ax4n_lo
	B     ax4n_store

ax4n_hi:
	FMOVD (R21), F12
	ADD   R17, R21, R21
	VUSHR $4, V12.B16, V12.B16
	SUB16B(27, 12, 12)
	AXPY6N_POS
	SUBS  $1, R10, R10
	BNE   ax4n_hi

ax4n_store:
	AXPY6_STORE
	ADD  $1, R16, R16
	CMP  $4, R16
	BNE  ax4n_next
	MOVD ZR, R16
	ADD  $16, R14, R14 // the next block's bytes
	ADD  $4, R24, R24  // and scales

ax4n_next:
	SUBS $1, R20, R20
	BNE  ax4n_chunk

ax4n_done:
	RET
