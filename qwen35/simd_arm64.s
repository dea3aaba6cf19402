//go:build !purego

#include "textflag.h"

// The small kernels of simd.go for arm64 NEON. See simd_generic.go for what each computes.

// siluconst<>: the constants of SILU4, four lanes each, in register order V19…V31:
// negzero, expmin, log2e, nln2hi, nln2lo, ep0, ep1, ep2, ep3, ep4, ep5, one, bias127.
DATA siluconst<>+0(SB)/4, $0x80000000
DATA siluconst<>+4(SB)/4, $0x80000000
DATA siluconst<>+8(SB)/4, $0x80000000
DATA siluconst<>+12(SB)/4, $0x80000000
DATA siluconst<>+16(SB)/4, $0xc2aeac50
DATA siluconst<>+20(SB)/4, $0xc2aeac50
DATA siluconst<>+24(SB)/4, $0xc2aeac50
DATA siluconst<>+28(SB)/4, $0xc2aeac50
DATA siluconst<>+32(SB)/4, $0x3fb8aa3b
DATA siluconst<>+36(SB)/4, $0x3fb8aa3b
DATA siluconst<>+40(SB)/4, $0x3fb8aa3b
DATA siluconst<>+44(SB)/4, $0x3fb8aa3b
DATA siluconst<>+48(SB)/4, $0xbf318000
DATA siluconst<>+52(SB)/4, $0xbf318000
DATA siluconst<>+56(SB)/4, $0xbf318000
DATA siluconst<>+60(SB)/4, $0xbf318000
DATA siluconst<>+64(SB)/4, $0x395e8083
DATA siluconst<>+68(SB)/4, $0x395e8083
DATA siluconst<>+72(SB)/4, $0x395e8083
DATA siluconst<>+76(SB)/4, $0x395e8083
DATA siluconst<>+80(SB)/4, $0x39506967
DATA siluconst<>+84(SB)/4, $0x39506967
DATA siluconst<>+88(SB)/4, $0x39506967
DATA siluconst<>+92(SB)/4, $0x39506967
DATA siluconst<>+96(SB)/4, $0x3ab743ce
DATA siluconst<>+100(SB)/4, $0x3ab743ce
DATA siluconst<>+104(SB)/4, $0x3ab743ce
DATA siluconst<>+108(SB)/4, $0x3ab743ce
DATA siluconst<>+112(SB)/4, $0x3c088908
DATA siluconst<>+116(SB)/4, $0x3c088908
DATA siluconst<>+120(SB)/4, $0x3c088908
DATA siluconst<>+124(SB)/4, $0x3c088908
DATA siluconst<>+128(SB)/4, $0x3d2aa9c1
DATA siluconst<>+132(SB)/4, $0x3d2aa9c1
DATA siluconst<>+136(SB)/4, $0x3d2aa9c1
DATA siluconst<>+140(SB)/4, $0x3d2aa9c1
DATA siluconst<>+144(SB)/4, $0x3e2aaaaa
DATA siluconst<>+148(SB)/4, $0x3e2aaaaa
DATA siluconst<>+152(SB)/4, $0x3e2aaaaa
DATA siluconst<>+156(SB)/4, $0x3e2aaaaa
DATA siluconst<>+160(SB)/4, $0x3f000000
DATA siluconst<>+164(SB)/4, $0x3f000000
DATA siluconst<>+168(SB)/4, $0x3f000000
DATA siluconst<>+172(SB)/4, $0x3f000000
DATA siluconst<>+176(SB)/4, $0x3f800000
DATA siluconst<>+180(SB)/4, $0x3f800000
DATA siluconst<>+184(SB)/4, $0x3f800000
DATA siluconst<>+188(SB)/4, $0x3f800000
DATA siluconst<>+192(SB)/4, $0x0000007f
DATA siluconst<>+196(SB)/4, $0x0000007f
DATA siluconst<>+200(SB)/4, $0x0000007f
DATA siluconst<>+204(SB)/4, $0x0000007f
GLOBL siluconst<>(SB), RODATA|NOPTR, $208

#include "neon_arm64.h"

// REDUCE4(a, b, c, d): the sum of the 16 lanes of Va…Vd into Sa; Vb…Vd clobbered.
#define REDUCE4(a, b, c, d) FADD4(b, a, a); FADD4(d, c, c); FADD4(c, a, a); FADDP4(a, a, a); FADDPS(a, a)

// func dotNEON(a, b []float32) float32
TEXT ·dotNEON(SB), NOSPLIT, $0-52
	MOVD a_base+0(FP), R0
	MOVD a_len+8(FP), R2
	MOVD b_base+24(FP), R1
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	LSR  $4, R2, R3
	CBZ  R3, dot_4

dot_16:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	VFMLA  V1.S4, V5.S4, V17.S4
	VFMLA  V2.S4, V6.S4, V18.S4
	VFMLA  V3.S4, V7.S4, V19.S4
	SUBS   $1, R3, R3
	BNE    dot_16

dot_4:
	AND $15, R2, R3
	LSR $2, R3, R3
	CBZ R3, dot_reduce

dot_4loop:
	VLD1.P 16(R0), [V0.S4]
	VLD1.P 16(R1), [V4.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	SUBS   $1, R3, R3
	BNE    dot_4loop

dot_reduce:
	REDUCE4(16, 17, 18, 19)
	AND $3, R2, R3
	CBZ R3, dot_done

dot_1:
	FMOVS.P 4(R0), F0
	FMOVS.P 4(R1), F1
	FMADDS  F1, F16, F0, F16
	SUBS    $1, R3, R3
	BNE     dot_1

dot_done:
	FMOVS F16, ret+48(FP)
	RET

// func dotRowsNEON4(out []float32, os int, a []float32, as, na int, b []float32, bs, nb, d int)
//
// dotRows over the first d&^3 columns (the Go wrapper adds the rest): blocks of 2 rows of
// a × 4 rows of b in eight accumulators, leftover columns 2 × 1 and leftover rows 1 × 4
// and 1 × 1. R0/R1 = rows of a, R2-R5 = rows of b (advanced as they are read),
// R6 = i, R7 = j, R8 = d&^3, strides in bytes in R9 (as), R10 (bs), R11 (os).
TEXT ·dotRowsNEON4(SB), NOSPLIT, $0-120
	MOVD d+112(FP), R8
	AND  $-4, R8, R8
	MOVD as+56(FP), R9
	LSL  $2, R9, R9
	MOVD bs+96(FP), R10
	LSL  $2, R10, R10
	MOVD os+24(FP), R11
	LSL  $2, R11, R11
	MOVD $0, R6

dr_i2:
	MOVD na+64(FP), R12
	SUB  R6, R12, R12
	CMP  $2, R12
	BLT  dr_i1
	MOVD $0, R7

dr_j4:
	MOVD nb+104(FP), R12
	SUB  R7, R12, R12
	CMP  $4, R12
	BLT  dr_j1
	MOVD a_base+32(FP), R0
	MUL  R6, R9, R12
	ADD  R12, R0, R0
	ADD  R9, R0, R1
	MOVD b_base+72(FP), R2
	MUL  R7, R10, R12
	ADD  R12, R2, R2
	ADD  R10, R2, R3
	ADD  R10, R3, R4
	ADD  R10, R4, R5
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	LSR  $2, R8, R12
	CBZ  R12, dr24_reduce

dr24_loop:
	VLD1.P 16(R0), [V0.S4]
	VLD1.P 16(R1), [V1.S4]
	VLD1.P 16(R2), [V2.S4]
	VLD1.P 16(R3), [V3.S4]
	VLD1.P 16(R4), [V4.S4]
	VLD1.P 16(R5), [V5.S4]
	VFMLA  V0.S4, V2.S4, V16.S4
	VFMLA  V0.S4, V3.S4, V17.S4
	VFMLA  V0.S4, V4.S4, V18.S4
	VFMLA  V0.S4, V5.S4, V19.S4
	VFMLA  V1.S4, V2.S4, V20.S4
	VFMLA  V1.S4, V3.S4, V21.S4
	VFMLA  V1.S4, V4.S4, V22.S4
	VFMLA  V1.S4, V5.S4, V23.S4
	SUBS   $1, R12, R12
	BNE    dr24_loop

dr24_reduce:
	FADDP4(17, 16, 16)
	FADDP4(19, 18, 18)
	FADDP4(18, 16, 16)
	FADDP4(21, 20, 20)
	FADDP4(23, 22, 22)
	FADDP4(22, 20, 20)
	MOVD os+24(FP), R12
	MUL  R6, R12, R12
	ADD  R7, R12, R12
	MOVD out_base+0(FP), R13
	ADD  R12<<2, R13, R13
	VST1 [V16.S4], (R13)
	ADD  R11, R13, R13
	VST1 [V20.S4], (R13)
	ADD  $4, R7, R7
	B    dr_j4

dr_j1:
	MOVD nb+104(FP), R12
	CMP  R12, R7
	BGE  dr_i2next
	MOVD a_base+32(FP), R0
	MUL  R6, R9, R12
	ADD  R12, R0, R0
	ADD  R9, R0, R1
	MOVD b_base+72(FP), R2
	MUL  R7, R10, R12
	ADD  R12, R2, R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V20.B16, V20.B16, V20.B16
	LSR  $2, R8, R12
	CBZ  R12, dr21_reduce

dr21_loop:
	VLD1.P 16(R0), [V0.S4]
	VLD1.P 16(R1), [V1.S4]
	VLD1.P 16(R2), [V2.S4]
	VFMLA  V0.S4, V2.S4, V16.S4
	VFMLA  V1.S4, V2.S4, V20.S4
	SUBS   $1, R12, R12
	BNE    dr21_loop

dr21_reduce:
	FADDP4(16, 16, 16)
	FADDPS(16, 16)
	FADDP4(20, 20, 20)
	FADDPS(20, 20)
	MOVD  os+24(FP), R12
	MUL   R6, R12, R12
	ADD   R7, R12, R12
	MOVD  out_base+0(FP), R13
	ADD   R12<<2, R13, R13
	FMOVS F16, (R13)
	ADD   R11, R13, R13
	FMOVS F20, (R13)
	ADD   $1, R7, R7
	B     dr_j1

dr_i2next:
	ADD $2, R6, R6
	B   dr_i2

dr_i1:
	MOVD na+64(FP), R12
	CMP  R12, R6
	BGE  dr_done
	MOVD $0, R7

dr_j4s:
	MOVD nb+104(FP), R12
	SUB  R7, R12, R12
	CMP  $4, R12
	BLT  dr_j1s
	MOVD a_base+32(FP), R0
	MUL  R6, R9, R12
	ADD  R12, R0, R0
	MOVD b_base+72(FP), R2
	MUL  R7, R10, R12
	ADD  R12, R2, R2
	ADD  R10, R2, R3
	ADD  R10, R3, R4
	ADD  R10, R4, R5
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	LSR  $2, R8, R12
	CBZ  R12, dr14_reduce

dr14_loop:
	VLD1.P 16(R0), [V0.S4]
	VLD1.P 16(R2), [V2.S4]
	VLD1.P 16(R3), [V3.S4]
	VLD1.P 16(R4), [V4.S4]
	VLD1.P 16(R5), [V5.S4]
	VFMLA  V0.S4, V2.S4, V16.S4
	VFMLA  V0.S4, V3.S4, V17.S4
	VFMLA  V0.S4, V4.S4, V18.S4
	VFMLA  V0.S4, V5.S4, V19.S4
	SUBS   $1, R12, R12
	BNE    dr14_loop

dr14_reduce:
	FADDP4(17, 16, 16)
	FADDP4(19, 18, 18)
	FADDP4(18, 16, 16)
	MOVD os+24(FP), R12
	MUL  R6, R12, R12
	ADD  R7, R12, R12
	MOVD out_base+0(FP), R13
	ADD  R12<<2, R13, R13
	VST1 [V16.S4], (R13)
	ADD  $4, R7, R7
	B    dr_j4s

dr_j1s:
	MOVD nb+104(FP), R12
	CMP  R12, R7
	BGE  dr_done
	MOVD a_base+32(FP), R0
	MUL  R6, R9, R12
	ADD  R12, R0, R0
	MOVD b_base+72(FP), R2
	MUL  R7, R10, R12
	ADD  R12, R2, R2
	VEOR V16.B16, V16.B16, V16.B16
	LSR  $2, R8, R12
	CBZ  R12, dr11_reduce

dr11_loop:
	VLD1.P 16(R0), [V0.S4]
	VLD1.P 16(R2), [V2.S4]
	VFMLA  V0.S4, V2.S4, V16.S4
	SUBS   $1, R12, R12
	BNE    dr11_loop

dr11_reduce:
	FADDP4(16, 16, 16)
	FADDPS(16, 16)
	MOVD  os+24(FP), R12
	MUL   R6, R12, R12
	ADD   R7, R12, R12
	MOVD  out_base+0(FP), R13
	ADD   R12<<2, R13, R13
	FMOVS F16, (R13)
	ADD   $1, R7, R7
	B     dr_j1s

dr_done:
	RET

// func scalNEON(x []float32, alpha float32)
TEXT ·scalNEON(SB), NOSPLIT, $0-28
	MOVD  x_base+0(FP), R0
	MOVD  x_len+8(FP), R2
	FMOVS alpha+24(FP), F31
	VDUP  V31.S[0], V31.S4
	LSR   $4, R2, R3
	CBZ   R3, scal_4

scal_16:
	VLD1   (R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	FMUL4(31, 0, 0)
	FMUL4(31, 1, 1)
	FMUL4(31, 2, 2)
	FMUL4(31, 3, 3)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUBS   $1, R3, R3
	BNE    scal_16

scal_4:
	AND $15, R2, R3
	LSR $2, R3, R3
	CBZ R3, scal_tail

scal_4loop:
	VLD1   (R0), [V0.S4]
	FMUL4(31, 0, 0)
	VST1.P [V0.S4], 16(R0)
	SUBS   $1, R3, R3
	BNE    scal_4loop

scal_tail:
	AND $3, R2, R3
	CBZ R3, scal_done

scal_1:
	FMOVS   (R0), F0
	FMULS   F31, F0, F0
	FMOVS.P F0, 4(R0)
	SUBS    $1, R3, R3
	BNE     scal_1

scal_done:
	RET

// func scaleMulNEON(dst, x []float32, scale float32, gain []float32)
TEXT ·scaleMulNEON(SB), NOSPLIT, $0-80
	MOVD  dst_base+0(FP), R0
	MOVD  x_base+24(FP), R1
	MOVD  x_len+32(FP), R2
	FMOVS scale+48(FP), F31
	VDUP  V31.S[0], V31.S4
	MOVD  gain_base+56(FP), R4
	MOVD  gain_len+64(FP), R5
	LSR   $2, R2, R3
	CBZ   R5, sm_nogain
	CBZ   R3, sm_gtail

sm_g4:
	VLD1.P 16(R1), [V0.S4]
	VLD1.P 16(R4), [V1.S4]
	FMUL4(31, 0, 0)
	FMUL4(1, 0, 0)
	VST1.P [V0.S4], 16(R0)
	SUBS   $1, R3, R3
	BNE    sm_g4

sm_gtail:
	AND $3, R2, R3
	CBZ R3, sm_done

sm_g1:
	FMOVS.P 4(R1), F0
	FMOVS.P 4(R4), F1
	FMULS   F31, F0, F0
	FMULS   F1, F0, F0
	FMOVS.P F0, 4(R0)
	SUBS    $1, R3, R3
	BNE     sm_g1
	RET

sm_nogain:
	CBZ R3, sm_tail

sm_4:
	VLD1.P 16(R1), [V0.S4]
	FMUL4(31, 0, 0)
	VST1.P [V0.S4], 16(R0)
	SUBS   $1, R3, R3
	BNE    sm_4

sm_tail:
	AND $3, R2, R3
	CBZ R3, sm_done

sm_1:
	FMOVS.P 4(R1), F0
	FMULS   F31, F0, F0
	FMOVS.P F0, 4(R0)
	SUBS    $1, R3, R3
	BNE     sm_1

sm_done:
	RET

// func sumSquaresNEON(x []float32) float64
TEXT ·sumSquaresNEON(SB), NOSPLIT, $0-32
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R2
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	LSR  $3, R2, R3
	CBZ  R3, ss_reduce

ss_8:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	FCVTLS(0, 2)
	FCVTL2S(0, 3)
	FCVTLS(1, 4)
	FCVTL2S(1, 5)
	VFMLA  V2.D2, V2.D2, V16.D2
	VFMLA  V3.D2, V3.D2, V17.D2
	VFMLA  V4.D2, V4.D2, V18.D2
	VFMLA  V5.D2, V5.D2, V19.D2
	SUBS   $1, R3, R3
	BNE    ss_8

ss_reduce:
	FADD2D(17, 16, 16)
	FADD2D(19, 18, 18)
	FADD2D(18, 16, 16)
	FADDPD(16, 16)
	AND $7, R2, R3
	CBZ R3, ss_done

ss_1:
	FMOVS.P 4(R0), F0
	FCVTSD  F0, F0
	FMADDD  F0, F16, F0, F16
	SUBS    $1, R3, R3
	BNE     ss_1

ss_done:
	FMOVD F16, ret+24(FP)
	RET

// func f16ToF32NEON(dst []float32, src []uint16)
TEXT ·f16ToF32NEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R2
	MOVD src_base+24(FP), R1
	LSR  $4, R2, R3
	CBZ  R3, f16_8

f16_16:
	VLD1.P 32(R1), [V0.H8, V1.H8]
	FCVTLH(0, 2)
	FCVTL2H(0, 3)
	FCVTLH(1, 4)
	FCVTL2H(1, 5)
	VST1.P [V2.S4, V3.S4, V4.S4, V5.S4], 64(R0)
	SUBS   $1, R3, R3
	BNE    f16_16

f16_8:
	AND $15, R2, R3
	LSR $2, R3, R3
	CBZ R3, f16_tail

f16_4:
	FMOVD.P 8(R1), F0
	FCVTLH(0, 2)
	VST1.P  [V2.S4], 16(R0)
	SUBS    $1, R3, R3
	BNE     f16_4

f16_tail:
	AND $3, R2, R3
	CBZ R3, f16_done

f16_1:
	VLD1.P 2(R1), V0.H[0]
	FCVTLH(0, 2)
	VST1.P V2.S[0], 4(R0)
	SUBS   $1, R3, R3
	BNE    f16_1

f16_done:
	RET

// func dotBF16NEON(row []byte, x []float32) float32
TEXT ·dotBF16NEON(SB), NOSPLIT, $0-52
	MOVD row_base+0(FP), R0
	MOVD x_base+24(FP), R1
	MOVD x_len+32(FP), R2
	VEOR V31.B16, V31.B16, V31.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	LSR  $4, R2, R3
	CBZ  R3, bf_4

bf_16:
	VLD1.P 32(R0), [V0.H8, V1.H8]
	VZIP1  V0.H8, V31.H8, V2.H8
	VZIP2  V0.H8, V31.H8, V3.H8
	VZIP1  V1.H8, V31.H8, V4.H8
	VZIP2  V1.H8, V31.H8, V5.H8
	VLD1.P 64(R1), [V6.S4, V7.S4, V8.S4, V9.S4]
	VFMLA  V2.S4, V6.S4, V16.S4
	VFMLA  V3.S4, V7.S4, V17.S4
	VFMLA  V4.S4, V8.S4, V18.S4
	VFMLA  V5.S4, V9.S4, V19.S4
	SUBS   $1, R3, R3
	BNE    bf_16

bf_4:
	AND $15, R2, R3
	LSR $2, R3, R3
	CBZ R3, bf_reduce

bf_4loop:
	FMOVD.P 8(R0), F0
	VZIP1   V0.H8, V31.H8, V2.H8
	VLD1.P  16(R1), [V6.S4]
	VFMLA   V2.S4, V6.S4, V16.S4
	SUBS    $1, R3, R3
	BNE     bf_4loop

bf_reduce:
	REDUCE4(16, 17, 18, 19)
	AND $3, R2, R3
	CBZ R3, bf_done

bf_1:
	MOVHU.P 2(R0), R4
	LSLW    $16, R4, R4
	FMOVS   R4, F0
	FMOVS.P 4(R1), F1
	FMADDS  F1, F16, F0, F16
	SUBS    $1, R3, R3
	BNE     bf_1

bf_done:
	FMOVS F16, ret+48(FP)
	RET

// func scaleAddRowsNEON(y []float32, scale float32, c, x []float32, stride int)
//
// Blocks of 32 values of y (then 4, then 1) stay in registers while every row of x
// streams past.
TEXT ·scaleAddRowsNEON(SB), NOSPLIT, $0-88
	MOVD  y_base+0(FP), R0
	MOVD  y_len+8(FP), R2
	FMOVS scale+24(FP), F30
	VDUP  V30.S[0], V30.S4
	MOVD  c_base+32(FP), R4
	MOVD  c_len+40(FP), R5
	MOVD  x_base+56(FP), R6
	MOVD  stride+80(FP), R7
	LSL   $2, R7, R7

sar_32:
	CMP  $32, R2
	BLT  sar_4
	VLD1 (R0), [V16.S4, V17.S4, V18.S4, V19.S4]
	ADD  $64, R0, R8
	VLD1 (R8), [V20.S4, V21.S4, V22.S4, V23.S4]
	FMUL4(30, 16, 16)
	FMUL4(30, 17, 17)
	FMUL4(30, 18, 18)
	FMUL4(30, 19, 19)
	FMUL4(30, 20, 20)
	FMUL4(30, 21, 21)
	FMUL4(30, 22, 22)
	FMUL4(30, 23, 23)
	MOVD R4, R9
	MOVD R5, R10
	MOVD R6, R11
	CBZ  R10, sar_32store

sar_32row:
	VLD1R.P 4(R9), [V31.S4]
	ADD     $64, R11, R12
	VLD1    (R11), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1    (R12), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA   V31.S4, V0.S4, V16.S4
	VFMLA   V31.S4, V1.S4, V17.S4
	VFMLA   V31.S4, V2.S4, V18.S4
	VFMLA   V31.S4, V3.S4, V19.S4
	VFMLA   V31.S4, V4.S4, V20.S4
	VFMLA   V31.S4, V5.S4, V21.S4
	VFMLA   V31.S4, V6.S4, V22.S4
	VFMLA   V31.S4, V7.S4, V23.S4
	ADD     R7, R11, R11
	SUBS    $1, R10, R10
	BNE     sar_32row

sar_32store:
	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R0)
	VST1.P [V20.S4, V21.S4, V22.S4, V23.S4], 64(R0)
	ADD    $128, R6, R6
	SUB    $32, R2, R2
	B      sar_32

sar_4:
	CMP  $4, R2
	BLT  sar_1
	VLD1 (R0), [V16.S4]
	FMUL4(30, 16, 16)
	MOVD R4, R9
	MOVD R5, R10
	MOVD R6, R11
	CBZ  R10, sar_4store

sar_4row:
	VLD1R.P 4(R9), [V31.S4]
	VLD1    (R11), [V0.S4]
	VFMLA   V31.S4, V0.S4, V16.S4
	ADD     R7, R11, R11
	SUBS    $1, R10, R10
	BNE     sar_4row

sar_4store:
	VST1.P [V16.S4], 16(R0)
	ADD    $16, R6, R6
	SUB    $4, R2, R2
	B      sar_4

sar_1:
	CBZ   R2, sar_done
	FMOVS (R0), F16
	FMULS F30, F16, F16
	MOVD  R4, R9
	MOVD  R5, R10
	MOVD  R6, R11
	CBZ   R10, sar_1store

sar_1row:
	FMOVS.P 4(R9), F31
	FMOVS   (R11), F0
	FMADDS  F31, F16, F0, F16
	ADD     R7, R11, R11
	SUBS    $1, R10, R10
	BNE     sar_1row

sar_1store:
	FMOVS.P F16, 4(R0)
	ADD     $4, R6, R6
	SUB     $1, R2, R2
	B       sar_1

sar_done:
	RET

// GS8PTRS sets the eight row pointers R7, R8, R11…R16 to the group's rows (R0 + r·R9).
#define GS8PTRS \
	MOVD R0, R7 \
	ADD  R9, R7, R8 \
	ADD  R9, R8, R11 \
	ADD  R9, R11, R12 \
	ADD  R9, R12, R13 \
	ADD  R9, R13, R14 \
	ADD  R9, R14, R15 \
	ADD  R9, R15, R16

// GS8DOT(ptr, t0, t1, a0, a1): pass 1 of one row and chunk of eight values: the row's
// chunk (at ptr, which moves on) into Vt0, Vt1, and Va0 += row·k, Va1 likewise (k's chunk
// in V0, V1).
#define GS8DOT(ptr, t0, t1, a0, a1) \
	VLD1.P 32(ptr), [t0.S4, t1.S4] \
	VFMLA  V0.S4, t0.S4, a0.S4 \
	VFMLA  V1.S4, t1.S4, a1.S4

// GS8UPD(ptr, T0, T1, t0, t1, dv, i, a0, a1): pass 2 of one row and chunk: row ←
// decay·row + δ·k (decay in V4, δ in lane i of V dv, k's chunk in V0, V1) in VT0, VT1
// (register numbers t0, t1), stored back, and Va0, Va1 += row·q (q's chunk in V2, V3).
#define GS8UPD(ptr, T0, T1, t0, t1, dv, i, a0, a1) \
	VLD1   (ptr), [T0.S4, T1.S4] \
	FMUL4(4, t0, t0) \
	FMUL4(4, t1, t1) \
	FMLAE4(dv, i, 0, t0) \
	FMLAE4(dv, i, 1, t1) \
	VST1.P [T0.S4, T1.S4], 32(ptr) \
	VFMLA  V2.S4, T0.S4, a0.S4 \
	VFMLA  V3.S4, T1.S4, a1.S4

// GS8SUMS leaves in V16 the sums of rows 0-3 and in V24 those of rows 4-7, row r's two
// accumulators being V(16+2r), V(17+2r): each row's two added, then pairwise
// ((l0+l1)+(l2+l3)) across its lanes.
#define GS8SUMS \
	FADD4(17, 16, 16) \
	FADD4(19, 18, 18) \
	FADD4(21, 20, 20) \
	FADD4(23, 22, 22) \
	FADD4(25, 24, 24) \
	FADD4(27, 26, 26) \
	FADD4(29, 28, 28) \
	FADD4(31, 30, 30) \
	FADDP4(18, 16, 16) \
	FADDP4(22, 20, 20) \
	FADDP4(26, 24, 24) \
	FADDP4(30, 28, 28) \
	FADDP4(20, 16, 16) \
	FADDP4(28, 24, 24)

#define GS8ZERO \
	VEOR V16.B16, V16.B16, V16.B16 \
	VEOR V17.B16, V17.B16, V17.B16 \
	VEOR V18.B16, V18.B16, V18.B16 \
	VEOR V19.B16, V19.B16, V19.B16 \
	VEOR V20.B16, V20.B16, V20.B16 \
	VEOR V21.B16, V21.B16, V21.B16 \
	VEOR V22.B16, V22.B16, V22.B16 \
	VEOR V23.B16, V23.B16, V23.B16 \
	VEOR V24.B16, V24.B16, V24.B16 \
	VEOR V25.B16, V25.B16, V25.B16 \
	VEOR V26.B16, V26.B16, V26.B16 \
	VEOR V27.B16, V27.B16, V27.B16 \
	VEOR V28.B16, V28.B16, V28.B16 \
	VEOR V29.B16, V29.B16, V29.B16 \
	VEOR V30.B16, V30.B16, V30.B16 \
	VEOR V31.B16, V31.B16, V31.B16

// func gdnStepNEON(S, k, q, v, o []float32, decay, beta float32)
//
// Rows of a multiple of 8 values, 8 rows at a time (the models' heads), as gdnStepAVX2
// does: pass 1 runs the eight rows' dot products with k side by side, two accumulators a
// row (sixteen independent chains, what four FMA pipes of four cycles' latency need), each
// k chunk loaded once for the eight; δ of the eight rows is two vector operations on their
// sums; pass 2 updates the rows (δ taken by lane) and runs their dot products with q the
// same way.
//
// Other shapes, a row at a time: the dot product with k, δ, then the update and the dot
// product with q in a second pass while the row is in L1. R0 walks the rows; k and q
// restart at R1, R2.
TEXT ·gdnStepNEON(SB), NOSPLIT, $0-128
	MOVD  S_base+0(FP), R0
	MOVD  k_base+24(FP), R1
	MOVD  k_len+32(FP), R3
	MOVD  q_base+48(FP), R2
	MOVD  v_base+72(FP), R4
	MOVD  o_base+96(FP), R5
	MOVD  o_len+104(FP), R6
	CBZ   R6, gs_done
	CBZ   R3, gs_rowsetup
	ORR   R3, R6, R10
	TST   $7, R10
	BNE   gs_rowsetup
	LSL   $2, R3, R9 // a row's bytes

gs8_group:
	// Pass 1: the eight rows' dot products with k.
	GS8ZERO
	GS8PTRS
	MOVD R1, R17
	LSR  $3, R3, R10

gs8_dot:
	VLD1.P 32(R17), [V0.S4, V1.S4]
	GS8DOT(R7, V2, V3, V16, V17)
	GS8DOT(R8, V4, V5, V18, V19)
	GS8DOT(R11, V6, V7, V20, V21)
	GS8DOT(R12, V8, V9, V22, V23)
	GS8DOT(R13, V10, V11, V24, V25)
	GS8DOT(R14, V12, V13, V26, V27)
	GS8DOT(R15, V14, V15, V28, V29)
	GS8DOT(R16, V2, V3, V30, V31)
	SUBS   $1, R10, R10
	BNE    gs8_dot
	GS8SUMS

	// δ = (v − decay·s)·beta for the eight rows: V5 (rows 0-3), V6 (rows 4-7).
	FMOVS  decay+120(FP), F4
	VDUP   V4.S[0], V4.S4
	FMOVS  beta+124(FP), F7
	VDUP   V7.S[0], V7.S4
	VLD1.P 32(R4), [V5.S4, V6.S4]
	VFMLS  V4.S4, V16.S4, V5.S4
	VFMLS  V4.S4, V24.S4, V6.S4
	FMUL4(7, 5, 5)
	FMUL4(7, 6, 6)

	// Pass 2: the updates and the dot products with q.
	GS8ZERO
	GS8PTRS
	MOVD R1, R17
	MOVD R2, R19
	LSR  $3, R3, R10

gs8_upd:
	VLD1.P 32(R17), [V0.S4, V1.S4]
	VLD1.P 32(R19), [V2.S4, V3.S4]
	GS8UPD(R7, V8, V9, 8, 9, 5, 0, V16, V17)
	GS8UPD(R8, V10, V11, 10, 11, 5, 1, V18, V19)
	GS8UPD(R11, V12, V13, 12, 13, 5, 2, V20, V21)
	GS8UPD(R12, V14, V15, 14, 15, 5, 3, V22, V23)
	GS8UPD(R13, V8, V9, 8, 9, 6, 0, V24, V25)
	GS8UPD(R14, V10, V11, 10, 11, 6, 1, V26, V27)
	GS8UPD(R15, V12, V13, 12, 13, 6, 2, V28, V29)
	GS8UPD(R16, V14, V15, 14, 15, 6, 3, V30, V31)
	SUBS   $1, R10, R10
	BNE    gs8_upd
	GS8SUMS
	VST1.P [V16.S4], 16(R5)
	VST1.P [V24.S4], 16(R5)

	ADD  R9<<3, R0, R0
	SUBS $8, R6, R6
	BNE  gs8_group
	RET

gs_rowsetup:
	FMOVS decay+120(FP), F29
	VDUP  V29.S[0], V29.S4
	FMOVS beta+124(FP), F28

gs_row:
	// Pass 1: s = row·k into F16.
	MOVD R0, R7
	MOVD R1, R8
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	LSR  $4, R3, R10
	CBZ  R10, gs_d4

gs_d16:
	VLD1.P 64(R7), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R8), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	VFMLA  V1.S4, V5.S4, V17.S4
	VFMLA  V2.S4, V6.S4, V18.S4
	VFMLA  V3.S4, V7.S4, V19.S4
	SUBS   $1, R10, R10
	BNE    gs_d16

gs_d4:
	AND $15, R3, R10
	LSR $2, R10, R10
	CBZ R10, gs_dred

gs_d4loop:
	VLD1.P 16(R7), [V0.S4]
	VLD1.P 16(R8), [V4.S4]
	VFMLA  V0.S4, V4.S4, V16.S4
	SUBS   $1, R10, R10
	BNE    gs_d4loop

gs_dred:
	REDUCE4(16, 17, 18, 19)
	AND $3, R3, R10
	CBZ R10, gs_delta

gs_d1:
	FMOVS.P 4(R7), F0
	FMOVS.P 4(R8), F1
	FMADDS  F1, F16, F0, F16
	SUBS    $1, R10, R10
	BNE     gs_d1

gs_delta:
	// δ = (v[j] − decay·s)·beta, broadcast to V30.
	FMOVS.P 4(R4), F0
	FMSUBS  F29, F0, F16, F0
	FMULS   F28, F0, F0
	VDUP    V0.S[0], V30.S4

	// Pass 2: row ← decay·row + δ·k; the sum of row·q into F16.
	MOVD R0, R7
	MOVD R1, R8
	MOVD R2, R9
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	LSR  $3, R3, R10
	CBZ  R10, gs_u4

gs_u8:
	VLD1   (R7), [V0.S4, V1.S4]
	VLD1.P 32(R8), [V4.S4, V5.S4]
	VLD1.P 32(R9), [V6.S4, V7.S4]
	FMUL4(29, 0, 0)
	FMUL4(29, 1, 1)
	VFMLA  V4.S4, V30.S4, V0.S4
	VFMLA  V5.S4, V30.S4, V1.S4
	VST1.P [V0.S4, V1.S4], 32(R7)
	VFMLA  V0.S4, V6.S4, V16.S4
	VFMLA  V1.S4, V7.S4, V17.S4
	SUBS   $1, R10, R10
	BNE    gs_u8

gs_u4:
	AND $7, R3, R10
	LSR $2, R10, R10
	CBZ R10, gs_ured
	VLD1   (R7), [V0.S4]
	VLD1.P 16(R8), [V4.S4]
	VLD1.P 16(R9), [V6.S4]
	FMUL4(29, 0, 0)
	VFMLA  V4.S4, V30.S4, V0.S4
	VST1.P [V0.S4], 16(R7)
	VFMLA  V0.S4, V6.S4, V18.S4

gs_ured:
	REDUCE4(16, 17, 18, 19)
	AND $3, R3, R10
	CBZ R10, gs_out

gs_u1:
	FMOVS   (R7), F0
	FMOVS.P 4(R8), F1
	FMOVS.P 4(R9), F2
	FMULS   F29, F0, F0
	FMADDS  F1, F0, F30, F0
	FMOVS.P F0, 4(R7)
	FMADDS  F2, F16, F0, F16
	SUBS    $1, R10, R10
	BNE     gs_u1

gs_out:
	FMOVS.P F16, 4(R5)
	MOVD    R7, R0
	SUBS    $1, R6, R6
	BNE     gs_row

gs_done:
	RET

// SIGMOID4: V8 ← σ(V11), four lanes, as SIGMOID8CORE of simd_amd64.s computes it (the
// same operations, each rounded once, so the two agree bit for bit). Needs the constants
// of siluconst<> in V19-V31; clobbers V1-V7, V9, V10.
#define SIGMOID4 \
	VORR   V19.B16, V11.B16, V1.B16 \
	FMAX4(20, 1, 1) \
	FMUL4(21, 1, 2) \
	FRINTN4(2, 2) \
	VFMLA  V2.S4, V22.S4, V1.S4 \
	VFMLA  V2.S4, V23.S4, V1.S4 \
	VMOV   V24.B16, V3.B16 \
	VMOV   V25.B16, V4.B16 \
	VFMLA  V1.S4, V3.S4, V4.S4 \
	VMOV   V26.B16, V3.B16 \
	VFMLA  V1.S4, V4.S4, V3.S4 \
	VMOV   V27.B16, V4.B16 \
	VFMLA  V1.S4, V3.S4, V4.S4 \
	VMOV   V28.B16, V3.B16 \
	VFMLA  V1.S4, V4.S4, V3.S4 \
	VMOV   V29.B16, V4.B16 \
	VFMLA  V1.S4, V3.S4, V4.S4 \
	FMUL4(1, 1, 5) \
	VMOV   V1.B16, V6.B16 \
	VFMLA  V5.S4, V4.S4, V6.S4 \
	FADD4(30, 6, 6) \
	FCVTZS4(2, 2) \
	VADD   V31.S4, V2.S4, V2.S4 \
	VSHL   $23, V2.S4, V2.S4 \
	FMUL4(2, 6, 6) \
	FADD4(30, 6, 7) \
	FDIV4(7, 30, 8) \
	FMUL4(8, 6, 9) \
	CMLTZ4(11, 10) \
	VBIT   V10.B16, V9.B16, V8.B16

// SILUCONST loads siluconst<> into V19-V31 (R6 clobbered).
#define SILUCONST \
	MOVD   $siluconst<>(SB), R6 \
	VLD1.P 64(R6), [V19.S4, V20.S4, V21.S4, V22.S4] \
	VLD1.P 64(R6), [V23.S4, V24.S4, V25.S4, V26.S4] \
	VLD1.P 64(R6), [V27.S4, V28.S4, V29.S4, V30.S4] \
	VLD1   (R6), [V31.S4]

// SILU4: V12 ← silu(V11) = V11·σ(V11), four lanes, as SILU8CORE; clobbers V1-V10.
#define SILU4 \
	SIGMOID4 \
	FMUL4(8, 11, 12)

// func gateMulNEON(dst, g, u []float32, s float32)
TEXT ·gateMulNEON(SB), NOSPLIT, $0-76
	MOVD  dst_base+0(FP), R0
	MOVD  dst_len+8(FP), R2
	MOVD  g_base+24(FP), R1
	MOVD  u_base+48(FP), R4
	FMOVS s+72(FP), F14
	VDUP  V14.S[0], V14.S4
	SILUCONST
	LSR    $2, R2, R3
	CBZ    R3, gate_tail

gate_4:
	VLD1.P 16(R1), [V11.S4]
	VLD1.P 16(R4), [V13.S4]
	SIGMOID4
	FMUL4(14, 13, 13)
	FMUL4(8, 13, 12)
	VST1.P [V12.S4], 16(R0)
	SUBS   $1, R3, R3
	BNE    gate_4

gate_tail:
	AND $3, R2, R3
	CBZ R3, gate_done
	// The last one to three values go through the lanes of V11 and V13.
	VEOR   V11.B16, V11.B16, V11.B16
	VEOR   V13.B16, V13.B16, V13.B16
	VLD1.P 4(R1), V11.S[0]
	VLD1.P 4(R4), V13.S[0]
	CMP    $2, R3
	BLT    gate_tcalc
	VLD1.P 4(R1), V11.S[1]
	VLD1.P 4(R4), V13.S[1]
	CMP    $3, R3
	BLT    gate_tcalc
	VLD1.P 4(R1), V11.S[2]
	VLD1.P 4(R4), V13.S[2]

gate_tcalc:
	SIGMOID4
	FMUL4(14, 13, 13)
	FMUL4(8, 13, 12)
	VST1.P V12.S[0], 4(R0)
	CMP    $2, R3
	BLT    gate_done
	VST1.P V12.S[1], 4(R0)
	CMP    $3, R3
	BLT    gate_done
	VST1.P V12.S[2], 4(R0)

gate_done:
	RET

// func siluMulNEON(dst, g, u []float32)
TEXT ·siluMulNEON(SB), NOSPLIT, $0-72
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R2
	MOVD g_base+24(FP), R1
	MOVD u_base+48(FP), R4
	MOVD u_len+56(FP), R5
	SILUCONST
	LSR    $2, R2, R3
	CBZ    R3, silu_tail

silu_4:
	VLD1.P 16(R1), [V11.S4]
	SILU4
	CBZ    R5, silu_4store
	VLD1.P 16(R4), [V13.S4]
	FMUL4(13, 12, 12)

silu_4store:
	VST1.P [V12.S4], 16(R0)
	SUBS   $1, R3, R3
	BNE    silu_4

silu_tail:
	AND $3, R2, R3
	CBZ R3, silu_done
	// The last one to three values go through the lanes of V11 and V13.
	VEOR   V11.B16, V11.B16, V11.B16
	VEOR   V13.B16, V13.B16, V13.B16
	VLD1.P 4(R1), V11.S[0]
	CBZ    R5, silu_t1
	VLD1.P 4(R4), V13.S[0]

silu_t1:
	CMP    $2, R3
	BLT    silu_tcalc
	VLD1.P 4(R1), V11.S[1]
	CBZ    R5, silu_t2
	VLD1.P 4(R4), V13.S[1]

silu_t2:
	CMP    $3, R3
	BLT    silu_tcalc
	VLD1.P 4(R1), V11.S[2]
	CBZ    R5, silu_tcalc
	VLD1.P 4(R4), V13.S[2]

silu_tcalc:
	SILU4
	CBZ    R5, silu_tstore
	FMUL4(13, 12, 12)

silu_tstore:
	VST1.P V12.S[0], 4(R0)
	CMP    $2, R3
	BLT    silu_done
	VST1.P V12.S[1], 4(R0)
	CMP    $3, R3
	BLT    silu_done
	VST1.P V12.S[2], 4(R0)

silu_done:
	RET

// func dequantInt8NEON(dst []float32, src []int8, scales []float32)
//
// Whole blocks of 32 (kvBlock): 32 bytes widened to 8H, then 4S, converted and scaled;
// a short last block one value at a time.
TEXT ·dequantInt8NEON(SB), NOSPLIT, $0-72
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R2
	MOVD src_base+24(FP), R1
	MOVD scales_base+48(FP), R4

dq_32:
	CMP     $32, R2
	BLT     dq_tail
	VLD1R.P 4(R4), [V31.S4]
	VLD1.P  32(R1), [V0.B16, V1.B16]
	SXTL8(0, 2)
	SXTL28(0, 3)
	SXTL8(1, 4)
	SXTL28(1, 5)
	SXTL16(2, 16)
	SXTL216(2, 17)
	SXTL16(3, 18)
	SXTL216(3, 19)
	SXTL16(4, 20)
	SXTL216(4, 21)
	SXTL16(5, 22)
	SXTL216(5, 23)
	SCVTF4(16, 16)
	SCVTF4(17, 17)
	SCVTF4(18, 18)
	SCVTF4(19, 19)
	SCVTF4(20, 20)
	SCVTF4(21, 21)
	SCVTF4(22, 22)
	SCVTF4(23, 23)
	FMUL4(31, 16, 16)
	FMUL4(31, 17, 17)
	FMUL4(31, 18, 18)
	FMUL4(31, 19, 19)
	FMUL4(31, 20, 20)
	FMUL4(31, 21, 21)
	FMUL4(31, 22, 22)
	FMUL4(31, 23, 23)
	VST1.P  [V16.S4, V17.S4, V18.S4, V19.S4], 64(R0)
	VST1.P  [V20.S4, V21.S4, V22.S4, V23.S4], 64(R0)
	SUB     $32, R2, R2
	B       dq_32

dq_tail:
	CBZ   R2, dq_done
	FMOVS (R4), F31

dq_1:
	MOVB.P  1(R1), R3
	SCVTFWS R3, F0
	FMULS   F31, F0, F0
	FMOVS.P F0, 4(R0)
	SUBS    $1, R2, R2
	BNE     dq_1

dq_done:
	RET

// EXP4: V12 ← e^V11 for four lanes (V11 ≤ 0), SILU4's exponential (EXP8CORE of
// simd_amd64.s: the same operations). Needs siluconst<> in V19-V31; clobbers V1-V6.
#define EXP4 \
	FMAX4(20, 11, 1) \
	FMUL4(21, 1, 2) \
	FRINTN4(2, 2) \
	VFMLA  V2.S4, V22.S4, V1.S4 \
	VFMLA  V2.S4, V23.S4, V1.S4 \
	VMOV   V24.B16, V3.B16 \
	VMOV   V25.B16, V4.B16 \
	VFMLA  V1.S4, V3.S4, V4.S4 \
	VMOV   V26.B16, V3.B16 \
	VFMLA  V1.S4, V4.S4, V3.S4 \
	VMOV   V27.B16, V4.B16 \
	VFMLA  V1.S4, V3.S4, V4.S4 \
	VMOV   V28.B16, V3.B16 \
	VFMLA  V1.S4, V4.S4, V3.S4 \
	VMOV   V29.B16, V4.B16 \
	VFMLA  V1.S4, V3.S4, V4.S4 \
	FMUL4(1, 1, 5) \
	VMOV   V1.B16, V6.B16 \
	VFMLA  V5.S4, V4.S4, V6.S4 \
	FADD4(30, 6, 6) \
	FCVTZS4(2, 2) \
	VADD   V31.S4, V2.S4, V2.S4 \
	VSHL   $23, V2.S4, V2.S4 \
	FMUL4(2, 6, 12)

// func expSubNEON4(x []float32, m float32) float32
//
// expSub over whole vectors of four (the Go wrapper does the last len mod 4).
TEXT ·expSubNEON4(SB), NOSPLIT, $0-36
	MOVD   x_base+0(FP), R0
	MOVD   x_len+8(FP), R2
	MOVWU  m+24(FP), R4
	VDUP   R4, V18.S4
	SILUCONST
	VEOR   V17.B16, V17.B16, V17.B16
	LSR    $2, R2, R3
	CBZ    R3, es_done

es_4:
	VLD1   (R0), [V11.S4]
	FSUB4(18, 11, 11)
	EXP4
	VST1.P [V12.S4], 16(R0)
	FADD4(12, 17, 17)
	SUBS   $1, R3, R3
	BNE    es_4

es_done:
	FADDP4(17, 17, 17)
	FADDPS(17, 17)
	FMOVS F17, ret+32(FP)
	RET

#define FMAXV4(n, d) WORD $(0x6E30F800 | ((n)<<5) | (d)) // Sd = max of the four lanes of Vn

// func maxNEON4(x []float32) float32
//
// The largest of x[:len&^3] and negative infinity (the Go wrapper does the rest).
TEXT ·maxNEON4(SB), NOSPLIT, $0-28
	MOVD   x_base+0(FP), R0
	MOVD   x_len+8(FP), R2
	MOVW   $0xff800000, R4
	VDUP   R4, V0.S4
	LSR    $2, R2, R3
	CBZ    R3, mx_done

mx_4:
	VLD1.P 16(R0), [V1.S4]
	FMAX4(1, 0, 0)
	SUBS   $1, R3, R3
	BNE    mx_4

mx_done:
	FMAXV4(0, 0)
	FMOVS F0, ret+24(FP)
	RET


// func dot6x4F32NEON(out []float32, os int, q []float32, k []float32, nb, d int)
//
// dot6x4F32AVX512 of simd_amd64.s with four-lane vectors (d a multiple of 4): blocks of
// 6 queries × 4 keys in 24 accumulators V0-V23, keys in V24-V27, a query chunk in V28;
// leftover keys 6 × 1.
TEXT ·dot6x4F32NEON(SB), NOSPLIT, $0-96
	MOVD out_base+0(FP), R11
	MOVD os+24(FP), R13
	LSL  $2, R13, R13
	MOVD q_base+32(FP), R12
	MOVD k_base+56(FP), R14
	MOVD nb+80(FP), R15
	MOVD d+88(FP), R16
	MOVD $4, R17
	MUL  R16, R17, R17 // key row bytes
	LSL  $2, R16, R19  // query row bytes
dot6x4F32NEON_j4:
	CMP  $4, R15
	BLT  dot6x4F32NEON_j1
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	MOVD R12, R0
	ADD  R19, R0, R1
	ADD  R19, R1, R2
	ADD  R19, R2, R3
	ADD  R19, R3, R4
	ADD  R19, R4, R5
	MOVD R14, R6
	ADD  R17, R6, R7
	ADD  R17, R7, R8
	ADD  R17, R8, R9
	LSR  $2, R16, R10
dot6x4F32NEON_c4:
	VLD1.P 16(R6), [V24.S4]
	VLD1.P 16(R7), [V25.S4]
	VLD1.P 16(R8), [V26.S4]
	VLD1.P 16(R9), [V27.S4]
	VLD1.P 16(R0), [V28.S4]
	VFMLA V28.S4, V24.S4, V0.S4
	VFMLA V28.S4, V25.S4, V1.S4
	VFMLA V28.S4, V26.S4, V2.S4
	VFMLA V28.S4, V27.S4, V3.S4
	VLD1.P 16(R1), [V28.S4]
	VFMLA V28.S4, V24.S4, V4.S4
	VFMLA V28.S4, V25.S4, V5.S4
	VFMLA V28.S4, V26.S4, V6.S4
	VFMLA V28.S4, V27.S4, V7.S4
	VLD1.P 16(R2), [V28.S4]
	VFMLA V28.S4, V24.S4, V8.S4
	VFMLA V28.S4, V25.S4, V9.S4
	VFMLA V28.S4, V26.S4, V10.S4
	VFMLA V28.S4, V27.S4, V11.S4
	VLD1.P 16(R3), [V28.S4]
	VFMLA V28.S4, V24.S4, V12.S4
	VFMLA V28.S4, V25.S4, V13.S4
	VFMLA V28.S4, V26.S4, V14.S4
	VFMLA V28.S4, V27.S4, V15.S4
	VLD1.P 16(R4), [V28.S4]
	VFMLA V28.S4, V24.S4, V16.S4
	VFMLA V28.S4, V25.S4, V17.S4
	VFMLA V28.S4, V26.S4, V18.S4
	VFMLA V28.S4, V27.S4, V19.S4
	VLD1.P 16(R5), [V28.S4]
	VFMLA V28.S4, V24.S4, V20.S4
	VFMLA V28.S4, V25.S4, V21.S4
	VFMLA V28.S4, V26.S4, V22.S4
	VFMLA V28.S4, V27.S4, V23.S4
	SUBS $1, R10, R10
	BNE  dot6x4F32NEON_c4
	MOVD R11, R0
	FADDP4(1, 0, 29)
	FADDP4(3, 2, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	FADDP4(5, 4, 29)
	FADDP4(7, 6, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	FADDP4(9, 8, 29)
	FADDP4(11, 10, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	FADDP4(13, 12, 29)
	FADDP4(15, 14, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	FADDP4(17, 16, 29)
	FADDP4(19, 18, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	FADDP4(21, 20, 29)
	FADDP4(23, 22, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	ADD  $16, R11, R11
	ADD  R17<<2, R14, R14
	SUB  $4, R15, R15
	B    dot6x4F32NEON_j4
dot6x4F32NEON_j1:
	CBZ  R15, dot6x4F32NEON_done
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	MOVD R12, R0
	ADD  R19, R0, R1
	ADD  R19, R1, R2
	ADD  R19, R2, R3
	ADD  R19, R3, R4
	ADD  R19, R4, R5
	MOVD R14, R6
	LSR  $2, R16, R10
dot6x4F32NEON_c1:
	VLD1.P 16(R6), [V24.S4]
	VLD1.P 16(R0), [V28.S4]
	VFMLA V28.S4, V24.S4, V0.S4
	VLD1.P 16(R1), [V28.S4]
	VFMLA V28.S4, V24.S4, V1.S4
	VLD1.P 16(R2), [V28.S4]
	VFMLA V28.S4, V24.S4, V2.S4
	VLD1.P 16(R3), [V28.S4]
	VFMLA V28.S4, V24.S4, V3.S4
	VLD1.P 16(R4), [V28.S4]
	VFMLA V28.S4, V24.S4, V4.S4
	VLD1.P 16(R5), [V28.S4]
	VFMLA V28.S4, V24.S4, V5.S4
	SUBS $1, R10, R10
	BNE  dot6x4F32NEON_c1
	MOVD R11, R0
	FADDP4(0, 0, 0)
	FADDPS(0, 0)
	FMOVS F0, (R0)
	ADD  R13, R0, R0
	FADDP4(1, 1, 1)
	FADDPS(1, 1)
	FMOVS F1, (R0)
	ADD  R13, R0, R0
	FADDP4(2, 2, 2)
	FADDPS(2, 2)
	FMOVS F2, (R0)
	ADD  R13, R0, R0
	FADDP4(3, 3, 3)
	FADDPS(3, 3)
	FMOVS F3, (R0)
	ADD  R13, R0, R0
	FADDP4(4, 4, 4)
	FADDPS(4, 4)
	FMOVS F4, (R0)
	ADD  R13, R0, R0
	FADDP4(5, 5, 5)
	FADDPS(5, 5)
	FMOVS F5, (R0)
	ADD  R13, R0, R0
	ADD  $4, R11, R11
	ADD  R17, R14, R14
	SUB  $1, R15, R15
	B    dot6x4F32NEON_j1
dot6x4F32NEON_done:
	RET

// func dot6x4F16NEON(out []float32, os int, q []float32, k []uint16, nb, d int)
//
// dot6x4F32AVX512 of simd_amd64.s with four-lane vectors (d a multiple of 4): blocks of
// 6 queries × 4 keys in 24 accumulators V0-V23, keys in V24-V27, a query chunk in V28;
// leftover keys 6 × 1. The halves are widened by FCVTL.
TEXT ·dot6x4F16NEON(SB), NOSPLIT, $0-96
	MOVD out_base+0(FP), R11
	MOVD os+24(FP), R13
	LSL  $2, R13, R13
	MOVD q_base+32(FP), R12
	MOVD k_base+56(FP), R14
	MOVD nb+80(FP), R15
	MOVD d+88(FP), R16
	MOVD $2, R17
	MUL  R16, R17, R17 // key row bytes
	LSL  $2, R16, R19  // query row bytes
dot6x4F16NEON_j4:
	CMP  $4, R15
	BLT  dot6x4F16NEON_j1
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	MOVD R12, R0
	ADD  R19, R0, R1
	ADD  R19, R1, R2
	ADD  R19, R2, R3
	ADD  R19, R3, R4
	ADD  R19, R4, R5
	MOVD R14, R6
	ADD  R17, R6, R7
	ADD  R17, R7, R8
	ADD  R17, R8, R9
	LSR  $2, R16, R10
dot6x4F16NEON_c4:
	FMOVD.P 8(R6), F24
	FCVTLH(24, 24)
	FMOVD.P 8(R7), F25
	FCVTLH(25, 25)
	FMOVD.P 8(R8), F26
	FCVTLH(26, 26)
	FMOVD.P 8(R9), F27
	FCVTLH(27, 27)
	VLD1.P 16(R0), [V28.S4]
	VFMLA V28.S4, V24.S4, V0.S4
	VFMLA V28.S4, V25.S4, V1.S4
	VFMLA V28.S4, V26.S4, V2.S4
	VFMLA V28.S4, V27.S4, V3.S4
	VLD1.P 16(R1), [V28.S4]
	VFMLA V28.S4, V24.S4, V4.S4
	VFMLA V28.S4, V25.S4, V5.S4
	VFMLA V28.S4, V26.S4, V6.S4
	VFMLA V28.S4, V27.S4, V7.S4
	VLD1.P 16(R2), [V28.S4]
	VFMLA V28.S4, V24.S4, V8.S4
	VFMLA V28.S4, V25.S4, V9.S4
	VFMLA V28.S4, V26.S4, V10.S4
	VFMLA V28.S4, V27.S4, V11.S4
	VLD1.P 16(R3), [V28.S4]
	VFMLA V28.S4, V24.S4, V12.S4
	VFMLA V28.S4, V25.S4, V13.S4
	VFMLA V28.S4, V26.S4, V14.S4
	VFMLA V28.S4, V27.S4, V15.S4
	VLD1.P 16(R4), [V28.S4]
	VFMLA V28.S4, V24.S4, V16.S4
	VFMLA V28.S4, V25.S4, V17.S4
	VFMLA V28.S4, V26.S4, V18.S4
	VFMLA V28.S4, V27.S4, V19.S4
	VLD1.P 16(R5), [V28.S4]
	VFMLA V28.S4, V24.S4, V20.S4
	VFMLA V28.S4, V25.S4, V21.S4
	VFMLA V28.S4, V26.S4, V22.S4
	VFMLA V28.S4, V27.S4, V23.S4
	SUBS $1, R10, R10
	BNE  dot6x4F16NEON_c4
	MOVD R11, R0
	FADDP4(1, 0, 29)
	FADDP4(3, 2, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	FADDP4(5, 4, 29)
	FADDP4(7, 6, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	FADDP4(9, 8, 29)
	FADDP4(11, 10, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	FADDP4(13, 12, 29)
	FADDP4(15, 14, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	FADDP4(17, 16, 29)
	FADDP4(19, 18, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	FADDP4(21, 20, 29)
	FADDP4(23, 22, 30)
	FADDP4(30, 29, 31)
	VST1 [V31.S4], (R0)
	ADD  R13, R0, R0
	ADD  $16, R11, R11
	ADD  R17<<2, R14, R14
	SUB  $4, R15, R15
	B    dot6x4F16NEON_j4
dot6x4F16NEON_j1:
	CBZ  R15, dot6x4F16NEON_done
	VEOR V0.B16, V0.B16, V0.B16
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	MOVD R12, R0
	ADD  R19, R0, R1
	ADD  R19, R1, R2
	ADD  R19, R2, R3
	ADD  R19, R3, R4
	ADD  R19, R4, R5
	MOVD R14, R6
	LSR  $2, R16, R10
dot6x4F16NEON_c1:
	FMOVD.P 8(R6), F24
	FCVTLH(24, 24)
	VLD1.P 16(R0), [V28.S4]
	VFMLA V28.S4, V24.S4, V0.S4
	VLD1.P 16(R1), [V28.S4]
	VFMLA V28.S4, V24.S4, V1.S4
	VLD1.P 16(R2), [V28.S4]
	VFMLA V28.S4, V24.S4, V2.S4
	VLD1.P 16(R3), [V28.S4]
	VFMLA V28.S4, V24.S4, V3.S4
	VLD1.P 16(R4), [V28.S4]
	VFMLA V28.S4, V24.S4, V4.S4
	VLD1.P 16(R5), [V28.S4]
	VFMLA V28.S4, V24.S4, V5.S4
	SUBS $1, R10, R10
	BNE  dot6x4F16NEON_c1
	MOVD R11, R0
	FADDP4(0, 0, 0)
	FADDPS(0, 0)
	FMOVS F0, (R0)
	ADD  R13, R0, R0
	FADDP4(1, 1, 1)
	FADDPS(1, 1)
	FMOVS F1, (R0)
	ADD  R13, R0, R0
	FADDP4(2, 2, 2)
	FADDPS(2, 2)
	FMOVS F2, (R0)
	ADD  R13, R0, R0
	FADDP4(3, 3, 3)
	FADDPS(3, 3)
	FMOVS F3, (R0)
	ADD  R13, R0, R0
	FADDP4(4, 4, 4)
	FADDPS(4, 4)
	FMOVS F4, (R0)
	ADD  R13, R0, R0
	FADDP4(5, 5, 5)
	FADDPS(5, 5)
	FMOVS F5, (R0)
	ADD  R13, R0, R0
	ADD  $4, R11, R11
	ADD  R17, R14, R14
	SUB  $1, R15, R15
	B    dot6x4F16NEON_j1
dot6x4F16NEON_done:
	RET

// func axpy6F32NEON(acc []float32, w []float32, ws int, v []float32, n, d int)
//
// axpy6F32AVX512 of simd_amd64.s with four-lane vectors: 8 columns of the six rows in
// 12 accumulators V0-V11 (d a multiple of 8), a value chunk in V12-V13, the weights
// broadcast into V14-V19.
TEXT ·axpy6F32NEON(SB), NOSPLIT, $0-96
	MOVD acc_base+0(FP), R11
	MOVD w_base+24(FP), R12
	MOVD ws+48(FP), R13
	LSL  $2, R13, R13
	MOVD v_base+56(FP), R14
	MOVD n+80(FP), R15
	MOVD d+88(FP), R16
	MOVD $4, R17
	MUL  R16, R17, R17 // value row bytes
	LSL  $2, R16, R19  // acc row bytes
	LSR  $3, R16, R20
	CBZ  R20, axpy6F32NEON_done
	CBZ  R15, axpy6F32NEON_done
axpy6F32NEON_chunk:
	AXPY6_ROWS
	MOVD R14, R21
	CMP  $4, R10
	BLT  axpy6F32NEON_p
axpy6F32NEON_p4:
	AXPY6_W4
	VLD1 (R21), [V12.S4, V13.S4]
	ADD  R17, R21, R21
	VLD1 (R21), [V24.S4, V25.S4]
	ADD  R17, R21, R21
	VLD1 (R21), [V22.S4, V23.S4]
	ADD  R17, R21, R21
	VLD1 (R21), [V28.S4, V29.S4]
	ADD  R17, R21, R21
	AXPY6_FMAE4
	SUB  $4, R10, R10
	CMP  $4, R10
	BGE  axpy6F32NEON_p4
	CBZ  R10, axpy6F32NEON_store
axpy6F32NEON_p:
	VLD1 (R21), [V12.S4, V13.S4]
	ADD  R17, R21, R21
	AXPY6_FMA
	SUBS $1, R10, R10
	BNE  axpy6F32NEON_p
axpy6F32NEON_store:
	AXPY6_STORE
	ADD  $32, R14, R14
	SUBS $1, R20, R20
	BNE  axpy6F32NEON_chunk
axpy6F32NEON_done:
	RET

// F16CHUNK loads the position's eight halves at R21 widened into V(a), V(b) and moves
// R21 to the next position.
#define F16CHUNK(a, b) \
	VLD1 (R21), [V(a).H8] \
	FCVTL2H(a, b) \
	FCVTLH(a, a) \
	ADD  R17, R21, R21

// func axpy6F16NEON(acc []float32, w []float32, ws int, v []uint16, n, d int)
//
// axpy6F32AVX512 of simd_amd64.s with four-lane vectors: 8 columns of the six rows in
// 12 accumulators V0-V11 (d a multiple of 8), a value chunk in V12-V13, the weights
// broadcast into V14-V19.
TEXT ·axpy6F16NEON(SB), NOSPLIT, $0-96
	MOVD acc_base+0(FP), R11
	MOVD w_base+24(FP), R12
	MOVD ws+48(FP), R13
	LSL  $2, R13, R13
	MOVD v_base+56(FP), R14
	MOVD n+80(FP), R15
	MOVD d+88(FP), R16
	MOVD $2, R17
	MUL  R16, R17, R17 // value row bytes
	LSL  $2, R16, R19  // acc row bytes
	LSR  $3, R16, R20
	CBZ  R20, axpy6F16NEON_done
	CBZ  R15, axpy6F16NEON_done
axpy6F16NEON_chunk:
	AXPY6_ROWS
	MOVD R14, R21
	CMP  $4, R10
	BLT  axpy6F16NEON_p
axpy6F16NEON_p4:
	AXPY6_W4
	F16CHUNK(12, 13)
	F16CHUNK(24, 25)
	F16CHUNK(22, 23)
	F16CHUNK(28, 29)
	AXPY6_FMAE4
	SUB  $4, R10, R10
	CMP  $4, R10
	BGE  axpy6F16NEON_p4
	CBZ  R10, axpy6F16NEON_store
axpy6F16NEON_p:
	F16CHUNK(12, 13)
	AXPY6_FMA
	SUBS $1, R10, R10
	BNE  axpy6F16NEON_p
axpy6F16NEON_store:
	AXPY6_STORE
	ADD  $16, R14, R14
	SUBS $1, R20, R20
	BNE  axpy6F16NEON_chunk
axpy6F16NEON_done:
	RET

// func dequantQ4NEON(dst []float32, src []byte, scales []uint16)
//
// Whole q4_0 blocks of 32: the 16 code bytes' low nibbles are values 0…15, their high
// nibbles 16…31, each code c giving (c−8)·d with d the block's half scale, widened to
// float32 (exact: a 4-bit integer times an 11-bit mantissa), as dequantQ4Generic does.
TEXT ·dequantQ4NEON(SB), NOSPLIT, $0-72
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R2
	MOVD src_base+24(FP), R1
	MOVD scales_base+48(FP), R4
	LSR  $5, R2, R2
	CBZ  R2, q4n_done
	VMOVI $15, V28.B16
	VMOVI $8, V29.B16

q4n_block:
	VLD1R.P 2(R4), [V31.H8]
	FCVTLH(31, 30)
	VLD1.P  16(R1), [V0.B16]
	VAND    V28.B16, V0.B16, V1.B16
	VUSHR   $4, V0.B16, V2.B16
	SUB16B(29, 1, 1) // V1.B16 −= 8
	SUB16B(29, 2, 2) // V2.B16 −= 8
	SXTL8(1, 16)
	SXTL28(1, 17)
	SXTL8(2, 18)
	SXTL28(2, 19)
	SXTL16(16, 20)
	SXTL216(16, 21)
	SXTL16(17, 22)
	SXTL216(17, 23)
	SXTL16(18, 24)
	SXTL216(18, 25)
	SXTL16(19, 26)
	SXTL216(19, 27)
	SCVTF4(20, 20)
	SCVTF4(21, 21)
	SCVTF4(22, 22)
	SCVTF4(23, 23)
	SCVTF4(24, 24)
	SCVTF4(25, 25)
	SCVTF4(26, 26)
	SCVTF4(27, 27)
	FMUL4(30, 20, 20)
	FMUL4(30, 21, 21)
	FMUL4(30, 22, 22)
	FMUL4(30, 23, 23)
	FMUL4(30, 24, 24)
	FMUL4(30, 25, 25)
	FMUL4(30, 26, 26)
	FMUL4(30, 27, 27)
	VST1.P  [V20.S4, V21.S4, V22.S4, V23.S4], 64(R0)
	VST1.P  [V24.S4, V25.S4, V26.S4, V27.S4], 64(R0)
	SUBS    $1, R2, R2
	BNE     q4n_block

q4n_done:
	RET
