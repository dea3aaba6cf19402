//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// Integer scoring of quantised queries against int8 and q4 keys on arm64 (attnint.go):
// each lane's integer J (signed codes against the signed query codes, so no correction
// is needed), then per lane acc += (float32(J)·sq)·sk with separate roundings and the
// lanes summed in hsum16's tree, so that the scores are the generic code's bits. J comes
// from SDOT where the CPU has it (ARMv8.2: the neondot set) and from widening multiplies
// on every other arm64 core (the neon set: Cortex-A53, A72, Raspberry Pi 4), which
// otherwise ran the generic Go scorer, some 60 times slower. Head dim 256 only: the
// row's sixteen 16-byte operands (an int8 row's first and second sixteen codes of each
// block; a q4 row's low and high nibbles less 8) and its eight scales stay in V0…V15,
// V24 and V25 for every query head.

// SDOTJ leaves in V(r) a block's four lane integers J: its codes' operands V(lo) and
// V(hi) against the query bytes in V(qa) and V(qb), by SDOT. (t is SMULJ's.)
#define SDOTJ(lo, hi, qa, qb, r, t) \
	MOVI0(r) \
	SDOT4(qa, lo, r) \
	SDOT4(qb, hi, r)

// SMULJ is SDOTJ by ARMv8.0's widening multiplies: per byte position its two products
// (low and high operand) in one int16 — |q| ≤ 127 (quantQuery clamps), |c| ≤ 128, so
// the pair is at most 2·127·128 = 32512, inside int16 —, then pairwise widened to int32
// and the pairs of pairs added: lane l the bytes 4l … 4l+3, SDOT's lanes. Clobbers V(t).
#define SMULJ(lo, hi, qa, qb, r, t) \
	SMULL8(lo, qa, r) \
	SMULL28(lo, qa, t) \
	SMLAL8(hi, qb, r) \
	SMLAL28(hi, qb, t) \
	SADDLP8H(r, r) \
	SADDLP8H(t, t) \
	ADDP4(t, r, r)

// SCOREJ loads a block's 16 query bytes at qo(R1) and qo+64(R1) into fa and fb
// (registers a and b) and leaves its lanes' J in V(r) by the macro J. Offsets, not
// post-indexed loads: each of those waits for the last one's address (llvm-mca's models
// of Apple M1 and Neoverse N1 put the head on that chain).
#define SCOREJ(J, lo, hi, qo, fa, a, fb, b, r, t) \
	FMOVQ qo(R1), fa \
	FMOVQ (qo+64)(R1), fb \
	J(lo, hi, a, b, r, t)

// SCOREF adds (float32(J)·sq)·sk of the block's lanes (J in V(r)) to V(acc): its scale
// lanes at so(R2), loaded into ft (register t), its key scale lane i of V(sk).
#define SCOREF(sk, i, acc, so, ft, t, r) \
	SCVTF4(r, r) \
	FMOVQ so(R2), ft \
	FMUL4(t, r, r) \
	FMULE4(sk, i, r, r) \
	FADD4(r, acc, acc)

// SCOREPAIR scores two blocks, their integer parts and then their float parts side by
// side in two sets of registers (V20…V23, V28…V31), so that a core that issues in order
// has one block's work to fill the other's latencies.
#define SCOREPAIR(J, lo0, hi0, sk0, i0, acc0, qo0, so0, lo1, hi1, sk1, i1, acc1, qo1, so1) \
	SCOREJ(J, lo0, hi0, qo0, F21, 21, F22, 22, 20, 23) \
	SCOREJ(J, lo1, hi1, qo1, F29, 29, F30, 30, 28, 31) \
	SCOREF(sk0, i0, acc0, so0, F23, 23, 20) \
	SCOREF(sk1, i1, acc1, so1, F31, 31, 28)

// SCOREHEAD scores one query head (codes at R1, scale lanes at R2, which it moves past
// their 128 bytes) against the row in V0…V15, V24 and V25, and stores the score at
// (R14): per block b its lanes' J (the macro J), then (float32(J)·sq)·sk into the
// block's four lanes of V16…V19, and hsum16's tree — lanes l and l+8, then l and l+4,
// then (0+2) + (1+3). The accumulators are cleared by MOVI, which reads no register
// (EOR of a register with itself waits for its last value on cores that do not treat it
// as an idiom, chaining every head to the one before).
#define SCOREHEAD(J) \
	VMOVI $0, V16.B16 \
	VMOVI $0, V17.B16 \
	VMOVI $0, V18.B16 \
	VMOVI $0, V19.B16 \
	SCOREPAIR(J, 0, 1, 24, 0, 16, 0, 0, 2, 3, 24, 1, 17, 16, 16) \
	SCOREPAIR(J, 4, 5, 24, 2, 18, 32, 32, 6, 7, 24, 3, 19, 48, 48) \
	SCOREPAIR(J, 8, 9, 25, 0, 16, 128, 64, 10, 11, 25, 1, 17, 144, 80) \
	SCOREPAIR(J, 12, 13, 25, 2, 18, 160, 96, 14, 15, 25, 3, 19, 176, 112) \
	ADD    $128, R2 \
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

// SCOREARGS loads the scorers' arguments: out at R0 (R9 its head stride in bytes), the
// codes and scale lanes of head 0 at R10 and R11, rep in R12, the keys and their scales
// at R3 and R4, n in R13. SCOREFIRST points R1, R2 and R14 at head 0's codes, scale lanes
// and score, R15 counting the heads.
#define SCOREARGS \
	MOVD out_base+0(FP), R0 \
	MOVD os+24(FP), R9 \
	LSL  $2, R9 \
	MOVD codes_base+32(FP), R10 \
	MOVD sq_base+56(FP), R11 \
	MOVD rep+104(FP), R12 \
	MOVD k_base+112(FP), R3 \
	MOVD ks_base+136(FP), R4 \
	MOVD n+160(FP), R13

#define SCOREFIRST \
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

// SCOREINT8 is the body of an int8 scorer, its J by the macro J; its labels are the
// function's (one SCOREINT8 a function).
#define SCOREINT8(J) \
	SCOREARGS \
si8_pos: \
	VLD1.P 64(R3), [V0.B16, V1.B16, V2.B16, V3.B16] \
	VLD1.P 64(R3), [V4.B16, V5.B16, V6.B16, V7.B16] \
	VLD1.P 64(R3), [V8.B16, V9.B16, V10.B16, V11.B16] \
	VLD1.P 64(R3), [V12.B16, V13.B16, V14.B16, V15.B16] \
	VLD1.P 32(R4), [V24.S4, V25.S4] \
	SCOREFIRST \
si8_head: \
	SCOREHEAD(J) \
	ADD    $256, R1 \
	ADD    R9, R14 \
	SUBS   $1, R15 \
	BNE    si8_head \
	ADD  $4, R0 \
	SUBS $1, R13 \
	BNE  si8_pos \
	RET

// SCOREQ4 is the body of a q4 scorer, as SCOREINT8.
#define SCOREQ4(J) \
	SCOREARGS \
	VMOVI $15, V26.B16 \
	VMOVI $8, V27.B16 \
sq4_pos: \
	VLD1.P 64(R3), [V16.B16, V17.B16, V18.B16, V19.B16] \
	VLD1.P 64(R3), [V20.B16, V21.B16, V22.B16, V23.B16] \
	NIBBLES(V16, V0, V1, 0, 1) \
	NIBBLES(V17, V2, V3, 2, 3) \
	NIBBLES(V18, V4, V5, 4, 5) \
	NIBBLES(V19, V6, V7, 6, 7) \
	NIBBLES(V20, V8, V9, 8, 9) \
	NIBBLES(V21, V10, V11, 10, 11) \
	NIBBLES(V22, V12, V13, 12, 13) \
	NIBBLES(V23, V14, V15, 14, 15) \
	VLD1.P 16(R4), [V25.H8] \
	FCVTLH(25, 24) \
	FCVTL2H(25, 25) \
	SCOREFIRST \
sq4_head: \
	SCOREHEAD(J) \
	ADD    $256, R1 \
	ADD    R9, R14 \
	SUBS   $1, R15 \
	BNE    sq4_head \
	ADD  $4, R0 \
	SUBS $1, R13 \
	BNE  sq4_pos \
	RET

// func scoreInt8SDOT(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)
TEXT ·scoreInt8SDOT(SB), NOSPLIT, $0-176
	SCOREINT8(SDOTJ)

// func scoreQ4SDOT(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int)
TEXT ·scoreQ4SDOT(SB), NOSPLIT, $0-176
	SCOREQ4(SDOTJ)

// func scoreInt8NEON(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)
TEXT ·scoreInt8NEON(SB), NOSPLIT, $0-176
	SCOREINT8(SMULJ)

// func scoreQ4NEON(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int)
TEXT ·scoreQ4NEON(SB), NOSPLIT, $0-176
	SCOREQ4(SMULJ)

// N8POS turns the eight signed codes in the low bytes of V(a) into V(a), V(b) scaled by
// the position's scale (at R26, which moves on; broadcast into V(s)) — code·s rounded
// once, as dequantInt8NEON forms it.
#define N8POS(a, b, s) \
	VLD1R   (R26), [V(s).S4] \
	ADD     R25, R26, R26 \
	SXTL8(a, a) \
	SXTL216(a, b) \
	SXTL16(a, a) \
	SCVTF4(a, a) \
	SCVTF4(b, b) \
	FMUL4(s, a, a) \
	FMUL4(s, b, b)

// CODES8 loads the position's eight code bytes at R21 into register va (number a) and
// moves R21 to the next position; Q4LO and Q4HI then keep their low or high nibbles
// less 8 (V21 holds 0x0F, V27 8).
#define CODES8(va, a) \
	VLD1 (R21), [va.B8] \
	ADD  R17, R21, R21

#define Q4LO(va, a) \
	CODES8(va, a) \
	VAND V21.B16, va.B16, va.B16 \
	SUB16B(27, a, a)

#define Q4HI(va, a) \
	CODES8(va, a) \
	VUSHR $4, va.B16, va.B16 \
	SUB16B(27, a, a)

// AXPY6N_P4 runs four positions: the six rows' four weights (AXPY6_W4), every
// position's codes (the macro CODES: CODES8, Q4LO or Q4HI) and their scaling (N8POS) into
// registers of its own, then each position's products with its weights' lane
// (AXPY6_FMAE) in position order, so that the conversions, a chain of seven or nine
// operations a position, run ahead of the multiplies instead of each stalling them.
#define AXPY6N_P4(CODES) \
	AXPY6_W4 \
	CODES(V12, 12) \
	CODES(V24, 24) \
	CODES(V22, 22) \
	CODES(V28, 28) \
	N8POS(12, 13, 20) \
	N8POS(24, 25, 26) \
	N8POS(22, 23, 30) \
	N8POS(28, 29, 31) \
	AXPY6_FMAE4

// AXPY6N_POS runs one position (codes in V12): N8POS and AXPY6_FMA, so that the sums are
// axpy6F32NEON's bits on the decoded rows.
#define AXPY6N_POS \
	N8POS(12, 13, 20) \
	AXPY6_FMA

// func axpy6Int8NEON(acc []float32, w []float32, ws int, v []int8, vs []float32, n, d int)
//
// axpy6F32NEON over int8 value rows as they lie (d codes a position, a scale per block
// of 32): eight columns of the six rows in twelve accumulators, a position's eight codes
// widened, converted and scaled in registers instead of decoded into a row and loaded
// back; four positions a pass, then one at a time. d a multiple of 32.
TEXT ·axpy6Int8NEON(SB), NOSPLIT, $0-120
	AXPY6N_ARGS(ax8n_done)
	MOVD R16, R17 // a position's code bytes
	MOVD ZR, R16

ax8n_chunk:
	AXPY6_ROWS
	MOVD R24, R26
	MOVD R14, R21
	CMP  $4, R10
	BLT  ax8n_p

ax8n_p4:
	AXPY6N_P4(CODES8)
	SUB  $4, R10, R10
	CMP  $4, R10
	BGE  ax8n_p4
	CBZ  R10, ax8n_store

ax8n_p:
	CODES8(V12, 12)
	AXPY6N_POS
	SUBS  $1, R10, R10
	BNE   ax8n_p

ax8n_store:
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
	CMP  $4, R10
	BLT  ax4n_lo

ax4n_lo4:
	AXPY6N_P4(Q4LO)
	SUB  $4, R10, R10
	CMP  $4, R10
	BGE  ax4n_lo4
	CBZ  R10, ax4n_store

ax4n_lo:
	Q4LO(V12, 12)
	AXPY6N_POS
	SUBS  $1, R10, R10
	BNE   ax4n_lo
	B     ax4n_store

ax4n_hi:
	CMP  $4, R10
	BLT  ax4n_hi1

ax4n_hi4:
	AXPY6N_P4(Q4HI)
	SUB  $4, R10, R10
	CMP  $4, R10
	BGE  ax4n_hi4
	CBZ  R10, ax4n_store

ax4n_hi1:
	Q4HI(V12, 12)
	AXPY6N_POS
	SUBS  $1, R10, R10
	BNE   ax4n_hi1

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
