//go:build !purego

#include "textflag.h"

// Float32 transform passes for arm64 NEON; see fwht_simd.go for the contract.
// A vector holds 4 floats. The first pass loads 16 floats de-interleaved (LD4),
// so that the four entries of each group of four sit in the same lane of four
// registers and the stages h = 1, 2 become whole-register butterflies; ST4
// interleaves them back.
//
// The Go assembler has no mnemonics for the float vector arithmetic, so it is
// spelled out: VFADD4(m, n, d) is FADD Vd.4S, Vn.4S, Vm.4S (d = n + m),
// VFSUB4(m, n, d) is FSUB (d = n − m) and VFMUL4(m, n, d) is FMUL (d = n·m),
// with register numbers for operands.
#define VFADD4(m, n, d) WORD $(0x4E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define VFSUB4(m, n, d) WORD $(0x4EA0D400 | ((m)<<16) | ((n)<<5) | (d))
#define VFMUL4(m, n, d) WORD $(0x6E20DC00 | ((m)<<16) | ((n)<<5) | (d))

// BF(a, b, s, d): Vs = Va + Vb, Vd = Va − Vb.
#define BF(a, b, s, d) VFADD4(b, a, s); VFSUB4(b, a, d)

// func firstNEON(x, pre []float32)
TEXT ·firstNEON(SB), NOSPLIT, $0-48
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R2
	MOVD pre_base+24(FP), R1
	MOVD pre_len+32(FP), R3
	LSR $4, R2, R2 // groups of 16
	CBZ R3, firstNEONnopre
firstNEONpre:
	VLD4 (R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD4.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	VFMUL4(4, 0, 0); VFMUL4(5, 1, 1); VFMUL4(6, 2, 2); VFMUL4(7, 3, 3)
	BF(0, 1, 8, 9); BF(2, 3, 10, 11)  // stage 1
	BF(8, 10, 0, 2); BF(9, 11, 1, 3)  // stage 2
	VST4.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUBS $1, R2, R2
	BNE firstNEONpre
	RET

firstNEONnopre:
	VLD4 (R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	BF(0, 1, 8, 9); BF(2, 3, 10, 11)  // stage 1
	BF(8, 10, 0, 2); BF(9, 11, 1, 3)  // stage 2
	VST4.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUBS $1, R2, R2
	BNE firstNEONnopre
	RET

// func pass2NEON(x, post []float32, h int)
TEXT ·pass2NEON(SB), NOSPLIT, $0-56
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R1
	MOVD post_base+24(FP), R2
	MOVD post_len+32(FP), R3
	MOVD h+48(FP), R4
	LSL $2, R1, R1 // bytes in x
	LSL $2, R4, R4 // h in bytes
	ADD R0, R1, R5 // end of x
	MOVD R0, R6 // group in x
	MOVD R2, R7 // group in post
	CBZ R3, pass2NEONnopost_group
pass2NEONpost_group:
	MOVD $0, R8 // offset in the group
pass2NEONpost_inner:
	ADD R6, R8, R9
	ADD R7, R8, R10
	FMOVQ (R9), F0
	ADD R4, R9, R11
	FMOVQ (R11), F1
	BF(0, 1, 8, 9)
	FMOVQ (R10), F24
	ADD R4, R10, R10
	FMOVQ (R10), F25
	VFMUL4(24, 8, 8); VFMUL4(25, 9, 9)
	FMOVQ F8, (R9)
	ADD R4, R9, R9
	FMOVQ F9, (R9)
	ADD $16, R8
	CMP R4, R8
	BLT pass2NEONpost_inner
	ADD R4<<1, R6, R6
	ADD R4<<1, R7, R7
	CMP R5, R6
	BLT pass2NEONpost_group
	RET

pass2NEONnopost_group:
	MOVD $0, R8 // offset in the group
pass2NEONnopost_inner:
	ADD R6, R8, R9
	FMOVQ (R9), F0
	ADD R4, R9, R11
	FMOVQ (R11), F1
	BF(0, 1, 8, 9)
	FMOVQ F8, (R9)
	ADD R4, R9, R9
	FMOVQ F9, (R9)
	ADD $16, R8
	CMP R4, R8
	BLT pass2NEONnopost_inner
	ADD R4<<1, R6, R6
	CMP R5, R6
	BLT pass2NEONnopost_group
	RET

// func pass4NEON(x, post []float32, h int)
TEXT ·pass4NEON(SB), NOSPLIT, $0-56
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R1
	MOVD post_base+24(FP), R2
	MOVD post_len+32(FP), R3
	MOVD h+48(FP), R4
	LSL $2, R1, R1 // bytes in x
	LSL $2, R4, R4 // h in bytes
	ADD R0, R1, R5 // end of x
	MOVD R0, R6 // group in x
	MOVD R2, R7 // group in post
	CBZ R3, pass4NEONnopost_group
pass4NEONpost_group:
	MOVD $0, R8 // offset in the group
pass4NEONpost_inner:
	ADD R6, R8, R9
	ADD R7, R8, R10
	FMOVQ (R9), F0
	ADD R4, R9, R11
	FMOVQ (R11), F1
	ADD R4, R11, R11
	FMOVQ (R11), F2
	ADD R4, R11, R11
	FMOVQ (R11), F3
	BF(0, 1, 8, 9); BF(2, 3, 10, 11)
	BF(8, 10, 0, 2); BF(9, 11, 1, 3)
	FMOVQ (R10), F24
	ADD R4, R10, R10
	FMOVQ (R10), F25
	ADD R4, R10, R10
	FMOVQ (R10), F26
	ADD R4, R10, R10
	FMOVQ (R10), F27
	VFMUL4(24, 0, 0); VFMUL4(25, 1, 1); VFMUL4(26, 2, 2); VFMUL4(27, 3, 3)
	FMOVQ F0, (R9)
	ADD R4, R9, R9
	FMOVQ F1, (R9)
	ADD R4, R9, R9
	FMOVQ F2, (R9)
	ADD R4, R9, R9
	FMOVQ F3, (R9)
	ADD $16, R8
	CMP R4, R8
	BLT pass4NEONpost_inner
	ADD R4<<2, R6, R6
	ADD R4<<2, R7, R7
	CMP R5, R6
	BLT pass4NEONpost_group
	RET

pass4NEONnopost_group:
	MOVD $0, R8 // offset in the group
pass4NEONnopost_inner:
	ADD R6, R8, R9
	FMOVQ (R9), F0
	ADD R4, R9, R11
	FMOVQ (R11), F1
	ADD R4, R11, R11
	FMOVQ (R11), F2
	ADD R4, R11, R11
	FMOVQ (R11), F3
	BF(0, 1, 8, 9); BF(2, 3, 10, 11)
	BF(8, 10, 0, 2); BF(9, 11, 1, 3)
	FMOVQ F0, (R9)
	ADD R4, R9, R9
	FMOVQ F1, (R9)
	ADD R4, R9, R9
	FMOVQ F2, (R9)
	ADD R4, R9, R9
	FMOVQ F3, (R9)
	ADD $16, R8
	CMP R4, R8
	BLT pass4NEONnopost_inner
	ADD R4<<2, R6, R6
	CMP R5, R6
	BLT pass4NEONnopost_group
	RET

// func pass8NEON(x, post []float32, h int)
TEXT ·pass8NEON(SB), NOSPLIT, $0-56
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R1
	MOVD post_base+24(FP), R2
	MOVD post_len+32(FP), R3
	MOVD h+48(FP), R4
	LSL $2, R1, R1 // bytes in x
	LSL $2, R4, R4 // h in bytes
	ADD R0, R1, R5 // end of x
	MOVD R0, R6 // group in x
	MOVD R2, R7 // group in post
	CBZ R3, pass8NEONnopost_group
pass8NEONpost_group:
	MOVD $0, R8 // offset in the group
pass8NEONpost_inner:
	ADD R6, R8, R9
	ADD R7, R8, R10
	FMOVQ (R9), F0
	ADD R4, R9, R11
	FMOVQ (R11), F1
	ADD R4, R11, R11
	FMOVQ (R11), F2
	ADD R4, R11, R11
	FMOVQ (R11), F3
	ADD R4, R11, R11
	FMOVQ (R11), F4
	ADD R4, R11, R11
	FMOVQ (R11), F5
	ADD R4, R11, R11
	FMOVQ (R11), F6
	ADD R4, R11, R11
	FMOVQ (R11), F7
	BF(0, 1, 8, 9); BF(2, 3, 10, 11); BF(4, 5, 12, 13); BF(6, 7, 14, 15)
	BF(8, 10, 16, 18); BF(9, 11, 17, 19); BF(12, 14, 20, 22); BF(13, 15, 21, 23)
	BF(16, 20, 0, 4); BF(17, 21, 1, 5); BF(18, 22, 2, 6); BF(19, 23, 3, 7)
	FMOVQ (R10), F24
	ADD R4, R10, R10
	FMOVQ (R10), F25
	ADD R4, R10, R10
	FMOVQ (R10), F26
	ADD R4, R10, R10
	FMOVQ (R10), F27
	ADD R4, R10, R10
	FMOVQ (R10), F28
	ADD R4, R10, R10
	FMOVQ (R10), F29
	ADD R4, R10, R10
	FMOVQ (R10), F30
	ADD R4, R10, R10
	FMOVQ (R10), F31
	VFMUL4(24, 0, 0); VFMUL4(25, 1, 1); VFMUL4(26, 2, 2); VFMUL4(27, 3, 3); VFMUL4(28, 4, 4); VFMUL4(29, 5, 5); VFMUL4(30, 6, 6); VFMUL4(31, 7, 7)
	FMOVQ F0, (R9)
	ADD R4, R9, R9
	FMOVQ F1, (R9)
	ADD R4, R9, R9
	FMOVQ F2, (R9)
	ADD R4, R9, R9
	FMOVQ F3, (R9)
	ADD R4, R9, R9
	FMOVQ F4, (R9)
	ADD R4, R9, R9
	FMOVQ F5, (R9)
	ADD R4, R9, R9
	FMOVQ F6, (R9)
	ADD R4, R9, R9
	FMOVQ F7, (R9)
	ADD $16, R8
	CMP R4, R8
	BLT pass8NEONpost_inner
	ADD R4<<3, R6, R6
	ADD R4<<3, R7, R7
	CMP R5, R6
	BLT pass8NEONpost_group
	RET

pass8NEONnopost_group:
	MOVD $0, R8 // offset in the group
pass8NEONnopost_inner:
	ADD R6, R8, R9
	FMOVQ (R9), F0
	ADD R4, R9, R11
	FMOVQ (R11), F1
	ADD R4, R11, R11
	FMOVQ (R11), F2
	ADD R4, R11, R11
	FMOVQ (R11), F3
	ADD R4, R11, R11
	FMOVQ (R11), F4
	ADD R4, R11, R11
	FMOVQ (R11), F5
	ADD R4, R11, R11
	FMOVQ (R11), F6
	ADD R4, R11, R11
	FMOVQ (R11), F7
	BF(0, 1, 8, 9); BF(2, 3, 10, 11); BF(4, 5, 12, 13); BF(6, 7, 14, 15)
	BF(8, 10, 16, 18); BF(9, 11, 17, 19); BF(12, 14, 20, 22); BF(13, 15, 21, 23)
	BF(16, 20, 0, 4); BF(17, 21, 1, 5); BF(18, 22, 2, 6); BF(19, 23, 3, 7)
	FMOVQ F0, (R9)
	ADD R4, R9, R9
	FMOVQ F1, (R9)
	ADD R4, R9, R9
	FMOVQ F2, (R9)
	ADD R4, R9, R9
	FMOVQ F3, (R9)
	ADD R4, R9, R9
	FMOVQ F4, (R9)
	ADD R4, R9, R9
	FMOVQ F5, (R9)
	ADD R4, R9, R9
	FMOVQ F6, (R9)
	ADD R4, R9, R9
	FMOVQ F7, (R9)
	ADD $16, R8
	CMP R4, R8
	BLT pass8NEONnopost_inner
	ADD R4<<3, R6, R6
	CMP R5, R6
	BLT pass8NEONnopost_group
	RET
