//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// quantizeQ8NEON is quantizeQ8AVX2 (q8quant_amd64.s) for NEON, the generic code's bits:
// max|x| as an unsigned integer max over the bits with the sign cleared, id = 127/max|x|
// and D = max|x|/127 by FDIV (correctly rounded, as Go's float32 division), x·id by FMUL
// and its rounding to nearest with ties to even by FCVTNS, the same integer as the
// generic code's add-and-subtract of 1.5·2²³. It stops at the first block it leaves to
// the generic code (zeros, a NaN or an infinity, or 127/max|x| overflowing) and returns
// its index, nb when all are done.
//
// LD4 splits sixteen values into their four planes (element 4j+p into register p), so
// each plane's 32 codes of a block are eight FCVTNS results narrowed twice (XTN).
//
// Registers: R0 Q, R1 D, R2 Sum, R3 the block's values, R4 block index, R5 nb, R6 the
// block's Q; V31 0x7fffffff, V7 id, V20 the block's integer sum.

// Q8QN_HALF(a, b) quantises 16 j (four LD4 loads, R3 advancing) into planes V(a+p), 16
// bytes each, using V8…V15 for the int16 halves.
#define Q8QN_HALF(a) \
	VLD4.P 64(R3), [V0.S4, V1.S4, V2.S4, V3.S4] \
	Q8QN_CONV \
	XTN4H(8, 0); XTN4H(9, 1); XTN4H(10, 2); XTN4H(11, 3) \
	VLD4.P 64(R3), [V0.S4, V1.S4, V2.S4, V3.S4] \
	Q8QN_CONV \
	XTN2_8H(8, 0); XTN2_8H(9, 1); XTN2_8H(10, 2); XTN2_8H(11, 3) \
	VLD4.P 64(R3), [V0.S4, V1.S4, V2.S4, V3.S4] \
	Q8QN_CONV \
	XTN4H(12, 0); XTN4H(13, 1); XTN4H(14, 2); XTN4H(15, 3) \
	VLD4.P 64(R3), [V0.S4, V1.S4, V2.S4, V3.S4] \
	Q8QN_CONV \
	XTN2_8H(12, 0); XTN2_8H(13, 1); XTN2_8H(14, 2); XTN2_8H(15, 3) \
	XTN8B(a, 8); XTN8B(a+1, 9); XTN8B(a+2, 10); XTN8B(a+3, 11) \
	XTN2_16B(a, 12); XTN2_16B(a+1, 13); XTN2_16B(a+2, 14); XTN2_16B(a+3, 15)

// Q8QN_CONV: V0…V3 ← round(V0…V3 · id) as int32, added into the sum.
#define Q8QN_CONV \
	FMULE0(0, 0, 7); FMULE0(1, 1, 7); FMULE0(2, 2, 7); FMULE0(3, 3, 7) \
	FCVTNS4S(0, 0); FCVTNS4S(1, 1); FCVTNS4S(2, 2); FCVTNS4S(3, 3) \
	ADD4S(20, 20, 0); ADD4S(20, 20, 1); ADD4S(20, 20, 2); ADD4S(20, 20, 3)

// Q8QN_MAX: 16 values at R3 (R3 advancing) into the running maxima V4…V7 of their bits
// with the sign cleared.
#define Q8QN_MAX \
	VLD1.P 64(R3), [V0.S4, V1.S4, V2.S4, V3.S4] \
	VAND V31.B16, V0.B16, V0.B16 \
	VAND V31.B16, V1.B16, V1.B16 \
	VAND V31.B16, V2.B16, V2.B16 \
	VAND V31.B16, V3.B16, V3.B16 \
	UMAX4S(4, 4, 0); UMAX4S(5, 5, 1); UMAX4S(6, 6, 2); UMAX4S(7, 7, 3)

// func quantizeQ8NEON(q *int8, d *float32, sum *int32, x *float32, b0, nb int) int
TEXT ·quantizeQ8NEON(SB), NOSPLIT, $0-56
	MOVD q+0(FP), R0
	MOVD d+8(FP), R1
	MOVD sum+16(FP), R2
	MOVD x+24(FP), R8
	MOVD b0+32(FP), R4
	MOVD nb+40(FP), R5
	MOVW $0x7fffffff, R9
	VDUP R9, V31.S4

loop:
	CMP  R5, R4
	BGE  done
	ADD  R4<<9, R8, R3 // the block's values: x + 512·b

	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	Q8QN_MAX
	Q8QN_MAX
	Q8QN_MAX
	Q8QN_MAX
	Q8QN_MAX
	Q8QN_MAX
	Q8QN_MAX
	Q8QN_MAX
	UMAX4S(4, 4, 5)
	UMAX4S(6, 6, 7)
	UMAX4S(4, 4, 6)
	UMAXV4S(4, 4)
	VMOV V4.S[0], R9
	CBZW R9, done // zeros
	MOVW $0x7f7fffff, R10
	CMPW R10, R9
	BHI  done     // NaN or infinity
	MOVW $0x42fe0000, R10 // 127
	FMOVS R10, F6
	FDIVS F4, F6, F7 // id = 127/max|x|
	FMOVS F7, R10
	MOVW $0x7f800000, R11
	CMPW R11, R10
	BEQ  done        // id overflowed
	FDIVS F6, F4, F8 // D = max|x|/127
	FMOVS F8, (R1)(R4<<2)

	// the block's Q: 256·(b/2) + 32·(b%2)
	LSR  $1, R4, R6
	LSL  $8, R6, R6
	AND  $1, R4, R10
	ADD  R10<<5, R6, R6
	ADD  R0, R6, R6

	ADD  R4<<9, R8, R3
	VEOR V20.B16, V20.B16, V20.B16
	Q8QN_HALF(16)
	Q8QN_HALF(21)
	VST1 [V16.B16], (R6)
	ADD  $16, R6, R10
	VST1 [V21.B16], (R10)
	ADD  $64, R6, R10
	VST1 [V17.B16], (R10)
	ADD  $80, R6, R10
	VST1 [V22.B16], (R10)
	ADD  $128, R6, R10
	VST1 [V18.B16], (R10)
	ADD  $144, R6, R10
	VST1 [V23.B16], (R10)
	ADD  $192, R6, R10
	VST1 [V19.B16], (R10)
	ADD  $208, R6, R10
	VST1 [V24.B16], (R10)
	ADDV4S(20, 20)
	VMOV V20.S[0], R10
	MOVW R10, (R2)(R4<<2)

	ADD  $1, R4
	B    loop

done:
	MOVD R4, ret+48(FP)
	RET
