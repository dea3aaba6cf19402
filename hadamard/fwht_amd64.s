//go:build !purego

#include "textflag.h"

// Float32 transform passes for amd64; see fwht_simd.go for the contract. The
// AVX2 passes work on 8-float vectors, the AVX-512 ones on 16-float vectors;
// otherwise the two are the same code.

// sgnH: lane i holds −1 where bit h of i is set, else +1 (16 lanes).

DATA sgn1<>+0(SB)/4, $0x3f800000
DATA sgn1<>+4(SB)/4, $0xbf800000
DATA sgn1<>+8(SB)/4, $0x3f800000
DATA sgn1<>+12(SB)/4, $0xbf800000
DATA sgn1<>+16(SB)/4, $0x3f800000
DATA sgn1<>+20(SB)/4, $0xbf800000
DATA sgn1<>+24(SB)/4, $0x3f800000
DATA sgn1<>+28(SB)/4, $0xbf800000
DATA sgn1<>+32(SB)/4, $0x3f800000
DATA sgn1<>+36(SB)/4, $0xbf800000
DATA sgn1<>+40(SB)/4, $0x3f800000
DATA sgn1<>+44(SB)/4, $0xbf800000
DATA sgn1<>+48(SB)/4, $0x3f800000
DATA sgn1<>+52(SB)/4, $0xbf800000
DATA sgn1<>+56(SB)/4, $0x3f800000
DATA sgn1<>+60(SB)/4, $0xbf800000
GLOBL sgn1<>(SB), RODATA|NOPTR, $64

DATA sgn2<>+0(SB)/4, $0x3f800000
DATA sgn2<>+4(SB)/4, $0x3f800000
DATA sgn2<>+8(SB)/4, $0xbf800000
DATA sgn2<>+12(SB)/4, $0xbf800000
DATA sgn2<>+16(SB)/4, $0x3f800000
DATA sgn2<>+20(SB)/4, $0x3f800000
DATA sgn2<>+24(SB)/4, $0xbf800000
DATA sgn2<>+28(SB)/4, $0xbf800000
DATA sgn2<>+32(SB)/4, $0x3f800000
DATA sgn2<>+36(SB)/4, $0x3f800000
DATA sgn2<>+40(SB)/4, $0xbf800000
DATA sgn2<>+44(SB)/4, $0xbf800000
DATA sgn2<>+48(SB)/4, $0x3f800000
DATA sgn2<>+52(SB)/4, $0x3f800000
DATA sgn2<>+56(SB)/4, $0xbf800000
DATA sgn2<>+60(SB)/4, $0xbf800000
GLOBL sgn2<>(SB), RODATA|NOPTR, $64

DATA sgn4<>+0(SB)/4, $0x3f800000
DATA sgn4<>+4(SB)/4, $0x3f800000
DATA sgn4<>+8(SB)/4, $0x3f800000
DATA sgn4<>+12(SB)/4, $0x3f800000
DATA sgn4<>+16(SB)/4, $0xbf800000
DATA sgn4<>+20(SB)/4, $0xbf800000
DATA sgn4<>+24(SB)/4, $0xbf800000
DATA sgn4<>+28(SB)/4, $0xbf800000
DATA sgn4<>+32(SB)/4, $0x3f800000
DATA sgn4<>+36(SB)/4, $0x3f800000
DATA sgn4<>+40(SB)/4, $0x3f800000
DATA sgn4<>+44(SB)/4, $0x3f800000
DATA sgn4<>+48(SB)/4, $0xbf800000
DATA sgn4<>+52(SB)/4, $0xbf800000
DATA sgn4<>+56(SB)/4, $0xbf800000
DATA sgn4<>+60(SB)/4, $0xbf800000
GLOBL sgn4<>(SB), RODATA|NOPTR, $64

DATA sgn8<>+0(SB)/4, $0x3f800000
DATA sgn8<>+4(SB)/4, $0x3f800000
DATA sgn8<>+8(SB)/4, $0x3f800000
DATA sgn8<>+12(SB)/4, $0x3f800000
DATA sgn8<>+16(SB)/4, $0x3f800000
DATA sgn8<>+20(SB)/4, $0x3f800000
DATA sgn8<>+24(SB)/4, $0x3f800000
DATA sgn8<>+28(SB)/4, $0x3f800000
DATA sgn8<>+32(SB)/4, $0xbf800000
DATA sgn8<>+36(SB)/4, $0xbf800000
DATA sgn8<>+40(SB)/4, $0xbf800000
DATA sgn8<>+44(SB)/4, $0xbf800000
DATA sgn8<>+48(SB)/4, $0xbf800000
DATA sgn8<>+52(SB)/4, $0xbf800000
DATA sgn8<>+56(SB)/4, $0xbf800000
DATA sgn8<>+60(SB)/4, $0xbf800000
GLOBL sgn8<>(SB), RODATA|NOPTR, $64

// BFLY(a, b, t): (a, b) ← (a+b, a−b); t is clobbered.
#define BFLY(a, b, t) VSUBPS b, a, t; VADDPS b, a, a; VMOVAPS t, b

// BFLY4: stages h, 2h over a, b, c, d = x[j], x[j+h], x[j+2h], x[j+3h].
#define BFLY4(a, b, c, d, t) BFLY(a, b, t); BFLY(c, d, t); BFLY(a, c, t); BFLY(b, d, t)

// BFLY8: stages h, 2h, 4h over r0…r7 = x[j+k·h].
#define BFLY8(r0, r1, r2, r3, r4, r5, r6, r7, t) \
	BFLY(r0, r1, t); BFLY(r2, r3, t); BFLY(r4, r5, t); BFLY(r6, r7, t) \
	BFLY(r0, r2, t); BFLY(r1, r3, t); BFLY(r4, r6, t); BFLY(r5, r7, t) \
	BFLY(r0, r4, t); BFLY(r1, r5, t); BFLY(r2, r6, t); BFLY(r3, r7, t)

// INTRA8(v, t): stages 1, 2, 4 inside the 8-float vector v; the result is left
// in t and v is clobbered. Each stage is t = swap(v) + v·sgn, one rounding.
#define INTRA8(v, t) \
	VPERMILPS $0xB1, v, t; VFMADD231PS Y13, v, t \
	VPERMILPS $0x4E, t, v; VFMADD231PS Y14, t, v \
	VPERM2F128 $0x01, v, v, t; VFMADD231PS Y15, v, t

// INTRA16(v, t): stages 1, 2, 4, 8 inside the 16-float vector v, in place; t
// is clobbered.
#define INTRA16(v, t) \
	VPERMILPS $0xB1, v, t; VFMADD231PS Z28, v, t \
	VPERMILPS $0x4E, t, v; VFMADD231PS Z29, t, v \
	VSHUFF32X4 $0xB1, v, v, t; VFMADD231PS Z30, v, t \
	VSHUFF32X4 $0x4E, t, t, v; VFMADD231PS Z31, t, v

// func firstAVX2(x, pre []float32)
TEXT ·firstAVX2(SB), NOSPLIT, $0-48
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	MOVQ pre_base+24(FP), SI
	MOVQ pre_len+32(FP), R8
	VMOVUPS sgn1<>(SB), Y13
	VMOVUPS sgn2<>(SB), Y14
	VMOVUPS sgn4<>(SB), Y15
	SHRQ $4, CX // pairs of vectors
	TESTQ R8, R8
	JZ firstAVX2nopre
firstAVX2pre:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y2
	VMULPS (SI), Y0, Y0
	VMULPS 32(SI), Y2, Y2
	INTRA8(Y0, Y1)
	INTRA8(Y2, Y3)
	VMOVUPS Y1, (DI)
	VMOVUPS Y3, 32(DI)
	ADDQ $64, DI
	ADDQ $64, SI
	DECQ CX
	JNZ firstAVX2pre
	VZEROUPPER
	RET

firstAVX2nopre:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y2
	INTRA8(Y0, Y1)
	INTRA8(Y2, Y3)
	VMOVUPS Y1, (DI)
	VMOVUPS Y3, 32(DI)
	ADDQ $64, DI
	DECQ CX
	JNZ firstAVX2nopre
	VZEROUPPER
	RET

// func pass2AVX2(x, post []float32, h int)
TEXT ·pass2AVX2(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), R13
	MOVQ post_base+24(FP), DX
	MOVQ post_len+32(FP), SI
	MOVQ h+48(FP), R11
	SHLQ $2, R13 // bytes in x
	SHLQ $2, R11 // h in bytes
	LEAQ (R11)(R11*2), R12 // 3h in bytes
	XORQ AX, AX // offset of the group
	TESTQ SI, SI
	JZ pass2AVX2nopost_group
pass2AVX2post_group:
	XORQ BX, BX // offset in the group
pass2AVX2post_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	LEAQ (DX)(R8*1), R9
	VMOVUPS (R10), Y0
	VMOVUPS (R10)(R11*1), Y1
	BFLY(Y0, Y1, Y8)
	VMULPS (R9), Y0, Y0
	VMOVUPS Y0, (R10)
	VMULPS (R9)(R11*1), Y1, Y1
	VMOVUPS Y1, (R10)(R11*1)
	ADDQ $32, BX
	CMPQ BX, R11
	JLT pass2AVX2post_inner
	LEAQ (AX)(R11*2), AX
	CMPQ AX, R13
	JLT pass2AVX2post_group
	VZEROUPPER
	RET

pass2AVX2nopost_group:
	XORQ BX, BX // offset in the group
pass2AVX2nopost_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	VMOVUPS (R10), Y0
	VMOVUPS (R10)(R11*1), Y1
	BFLY(Y0, Y1, Y8)
	VMOVUPS Y0, (R10)
	VMOVUPS Y1, (R10)(R11*1)
	ADDQ $32, BX
	CMPQ BX, R11
	JLT pass2AVX2nopost_inner
	LEAQ (AX)(R11*2), AX
	CMPQ AX, R13
	JLT pass2AVX2nopost_group
	VZEROUPPER
	RET

// func pass4AVX2(x, post []float32, h int)
TEXT ·pass4AVX2(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), R13
	MOVQ post_base+24(FP), DX
	MOVQ post_len+32(FP), SI
	MOVQ h+48(FP), R11
	SHLQ $2, R13 // bytes in x
	SHLQ $2, R11 // h in bytes
	LEAQ (R11)(R11*2), R12 // 3h in bytes
	XORQ AX, AX // offset of the group
	TESTQ SI, SI
	JZ pass4AVX2nopost_group
pass4AVX2post_group:
	XORQ BX, BX // offset in the group
pass4AVX2post_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	LEAQ (DX)(R8*1), R9
	VMOVUPS (R10), Y0
	VMOVUPS (R10)(R11*1), Y1
	VMOVUPS (R10)(R11*2), Y2
	VMOVUPS (R10)(R12*1), Y3
	BFLY4(Y0, Y1, Y2, Y3, Y8)
	VMULPS (R9), Y0, Y0
	VMOVUPS Y0, (R10)
	VMULPS (R9)(R11*1), Y1, Y1
	VMOVUPS Y1, (R10)(R11*1)
	VMULPS (R9)(R11*2), Y2, Y2
	VMOVUPS Y2, (R10)(R11*2)
	VMULPS (R9)(R12*1), Y3, Y3
	VMOVUPS Y3, (R10)(R12*1)
	ADDQ $32, BX
	CMPQ BX, R11
	JLT pass4AVX2post_inner
	LEAQ (AX)(R11*4), AX
	CMPQ AX, R13
	JLT pass4AVX2post_group
	VZEROUPPER
	RET

pass4AVX2nopost_group:
	XORQ BX, BX // offset in the group
pass4AVX2nopost_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	VMOVUPS (R10), Y0
	VMOVUPS (R10)(R11*1), Y1
	VMOVUPS (R10)(R11*2), Y2
	VMOVUPS (R10)(R12*1), Y3
	BFLY4(Y0, Y1, Y2, Y3, Y8)
	VMOVUPS Y0, (R10)
	VMOVUPS Y1, (R10)(R11*1)
	VMOVUPS Y2, (R10)(R11*2)
	VMOVUPS Y3, (R10)(R12*1)
	ADDQ $32, BX
	CMPQ BX, R11
	JLT pass4AVX2nopost_inner
	LEAQ (AX)(R11*4), AX
	CMPQ AX, R13
	JLT pass4AVX2nopost_group
	VZEROUPPER
	RET

// func pass8AVX2(x, post []float32, h int)
TEXT ·pass8AVX2(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), R13
	MOVQ post_base+24(FP), DX
	MOVQ post_len+32(FP), SI
	MOVQ h+48(FP), R11
	SHLQ $2, R13 // bytes in x
	SHLQ $2, R11 // h in bytes
	LEAQ (R11)(R11*2), R12 // 3h in bytes
	XORQ AX, AX // offset of the group
	TESTQ SI, SI
	JZ pass8AVX2nopost_group
pass8AVX2post_group:
	XORQ BX, BX // offset in the group
pass8AVX2post_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	LEAQ (R10)(R11*4), R14
	LEAQ (DX)(R8*1), R9
	LEAQ (R9)(R11*4), CX
	VMOVUPS (R10), Y0
	VMOVUPS (R10)(R11*1), Y1
	VMOVUPS (R10)(R11*2), Y2
	VMOVUPS (R10)(R12*1), Y3
	VMOVUPS (R14), Y4
	VMOVUPS (R14)(R11*1), Y5
	VMOVUPS (R14)(R11*2), Y6
	VMOVUPS (R14)(R12*1), Y7
	BFLY8(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8)
	VMULPS (R9), Y0, Y0
	VMOVUPS Y0, (R10)
	VMULPS (R9)(R11*1), Y1, Y1
	VMOVUPS Y1, (R10)(R11*1)
	VMULPS (R9)(R11*2), Y2, Y2
	VMOVUPS Y2, (R10)(R11*2)
	VMULPS (R9)(R12*1), Y3, Y3
	VMOVUPS Y3, (R10)(R12*1)
	VMULPS (CX), Y4, Y4
	VMOVUPS Y4, (R14)
	VMULPS (CX)(R11*1), Y5, Y5
	VMOVUPS Y5, (R14)(R11*1)
	VMULPS (CX)(R11*2), Y6, Y6
	VMOVUPS Y6, (R14)(R11*2)
	VMULPS (CX)(R12*1), Y7, Y7
	VMOVUPS Y7, (R14)(R12*1)
	ADDQ $32, BX
	CMPQ BX, R11
	JLT pass8AVX2post_inner
	LEAQ (AX)(R11*8), AX
	CMPQ AX, R13
	JLT pass8AVX2post_group
	VZEROUPPER
	RET

pass8AVX2nopost_group:
	XORQ BX, BX // offset in the group
pass8AVX2nopost_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	LEAQ (R10)(R11*4), R14
	VMOVUPS (R10), Y0
	VMOVUPS (R10)(R11*1), Y1
	VMOVUPS (R10)(R11*2), Y2
	VMOVUPS (R10)(R12*1), Y3
	VMOVUPS (R14), Y4
	VMOVUPS (R14)(R11*1), Y5
	VMOVUPS (R14)(R11*2), Y6
	VMOVUPS (R14)(R12*1), Y7
	BFLY8(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8)
	VMOVUPS Y0, (R10)
	VMOVUPS Y1, (R10)(R11*1)
	VMOVUPS Y2, (R10)(R11*2)
	VMOVUPS Y3, (R10)(R12*1)
	VMOVUPS Y4, (R14)
	VMOVUPS Y5, (R14)(R11*1)
	VMOVUPS Y6, (R14)(R11*2)
	VMOVUPS Y7, (R14)(R12*1)
	ADDQ $32, BX
	CMPQ BX, R11
	JLT pass8AVX2nopost_inner
	LEAQ (AX)(R11*8), AX
	CMPQ AX, R13
	JLT pass8AVX2nopost_group
	VZEROUPPER
	RET

// func firstAVX512(x, pre []float32)
TEXT ·firstAVX512(SB), NOSPLIT, $0-48
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), CX
	MOVQ pre_base+24(FP), SI
	MOVQ pre_len+32(FP), R8
	VMOVUPS sgn1<>(SB), Z28
	VMOVUPS sgn2<>(SB), Z29
	VMOVUPS sgn4<>(SB), Z30
	VMOVUPS sgn8<>(SB), Z31
	SHRQ $5, CX // pairs of vectors
	TESTQ R8, R8
	JZ firstAVX512nopre
firstAVX512pre:
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z2
	VMULPS (SI), Z0, Z0
	VMULPS 64(SI), Z2, Z2
	INTRA16(Z0, Z1)
	INTRA16(Z2, Z3)
	VMOVUPS Z0, (DI)
	VMOVUPS Z2, 64(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	DECQ CX
	JNZ firstAVX512pre
	VZEROUPPER
	RET

firstAVX512nopre:
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z2
	INTRA16(Z0, Z1)
	INTRA16(Z2, Z3)
	VMOVUPS Z0, (DI)
	VMOVUPS Z2, 64(DI)
	ADDQ $128, DI
	DECQ CX
	JNZ firstAVX512nopre
	VZEROUPPER
	RET

// func pass2AVX512(x, post []float32, h int)
TEXT ·pass2AVX512(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), R13
	MOVQ post_base+24(FP), DX
	MOVQ post_len+32(FP), SI
	MOVQ h+48(FP), R11
	SHLQ $2, R13 // bytes in x
	SHLQ $2, R11 // h in bytes
	LEAQ (R11)(R11*2), R12 // 3h in bytes
	XORQ AX, AX // offset of the group
	TESTQ SI, SI
	JZ pass2AVX512nopost_group
pass2AVX512post_group:
	XORQ BX, BX // offset in the group
pass2AVX512post_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	LEAQ (DX)(R8*1), R9
	VMOVUPS (R10), Z0
	VMOVUPS (R10)(R11*1), Z1
	BFLY(Z0, Z1, Z8)
	VMULPS (R9), Z0, Z0
	VMOVUPS Z0, (R10)
	VMULPS (R9)(R11*1), Z1, Z1
	VMOVUPS Z1, (R10)(R11*1)
	ADDQ $64, BX
	CMPQ BX, R11
	JLT pass2AVX512post_inner
	LEAQ (AX)(R11*2), AX
	CMPQ AX, R13
	JLT pass2AVX512post_group
	VZEROUPPER
	RET

pass2AVX512nopost_group:
	XORQ BX, BX // offset in the group
pass2AVX512nopost_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	VMOVUPS (R10), Z0
	VMOVUPS (R10)(R11*1), Z1
	BFLY(Z0, Z1, Z8)
	VMOVUPS Z0, (R10)
	VMOVUPS Z1, (R10)(R11*1)
	ADDQ $64, BX
	CMPQ BX, R11
	JLT pass2AVX512nopost_inner
	LEAQ (AX)(R11*2), AX
	CMPQ AX, R13
	JLT pass2AVX512nopost_group
	VZEROUPPER
	RET

// func pass4AVX512(x, post []float32, h int)
TEXT ·pass4AVX512(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), R13
	MOVQ post_base+24(FP), DX
	MOVQ post_len+32(FP), SI
	MOVQ h+48(FP), R11
	SHLQ $2, R13 // bytes in x
	SHLQ $2, R11 // h in bytes
	LEAQ (R11)(R11*2), R12 // 3h in bytes
	XORQ AX, AX // offset of the group
	TESTQ SI, SI
	JZ pass4AVX512nopost_group
pass4AVX512post_group:
	XORQ BX, BX // offset in the group
pass4AVX512post_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	LEAQ (DX)(R8*1), R9
	VMOVUPS (R10), Z0
	VMOVUPS (R10)(R11*1), Z1
	VMOVUPS (R10)(R11*2), Z2
	VMOVUPS (R10)(R12*1), Z3
	BFLY4(Z0, Z1, Z2, Z3, Z8)
	VMULPS (R9), Z0, Z0
	VMOVUPS Z0, (R10)
	VMULPS (R9)(R11*1), Z1, Z1
	VMOVUPS Z1, (R10)(R11*1)
	VMULPS (R9)(R11*2), Z2, Z2
	VMOVUPS Z2, (R10)(R11*2)
	VMULPS (R9)(R12*1), Z3, Z3
	VMOVUPS Z3, (R10)(R12*1)
	ADDQ $64, BX
	CMPQ BX, R11
	JLT pass4AVX512post_inner
	LEAQ (AX)(R11*4), AX
	CMPQ AX, R13
	JLT pass4AVX512post_group
	VZEROUPPER
	RET

pass4AVX512nopost_group:
	XORQ BX, BX // offset in the group
pass4AVX512nopost_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	VMOVUPS (R10), Z0
	VMOVUPS (R10)(R11*1), Z1
	VMOVUPS (R10)(R11*2), Z2
	VMOVUPS (R10)(R12*1), Z3
	BFLY4(Z0, Z1, Z2, Z3, Z8)
	VMOVUPS Z0, (R10)
	VMOVUPS Z1, (R10)(R11*1)
	VMOVUPS Z2, (R10)(R11*2)
	VMOVUPS Z3, (R10)(R12*1)
	ADDQ $64, BX
	CMPQ BX, R11
	JLT pass4AVX512nopost_inner
	LEAQ (AX)(R11*4), AX
	CMPQ AX, R13
	JLT pass4AVX512nopost_group
	VZEROUPPER
	RET

// func pass8AVX512(x, post []float32, h int)
TEXT ·pass8AVX512(SB), NOSPLIT, $0-56
	MOVQ x_base+0(FP), DI
	MOVQ x_len+8(FP), R13
	MOVQ post_base+24(FP), DX
	MOVQ post_len+32(FP), SI
	MOVQ h+48(FP), R11
	SHLQ $2, R13 // bytes in x
	SHLQ $2, R11 // h in bytes
	LEAQ (R11)(R11*2), R12 // 3h in bytes
	XORQ AX, AX // offset of the group
	TESTQ SI, SI
	JZ pass8AVX512nopost_group
pass8AVX512post_group:
	XORQ BX, BX // offset in the group
pass8AVX512post_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	LEAQ (R10)(R11*4), R14
	LEAQ (DX)(R8*1), R9
	LEAQ (R9)(R11*4), CX
	VMOVUPS (R10), Z0
	VMOVUPS (R10)(R11*1), Z1
	VMOVUPS (R10)(R11*2), Z2
	VMOVUPS (R10)(R12*1), Z3
	VMOVUPS (R14), Z4
	VMOVUPS (R14)(R11*1), Z5
	VMOVUPS (R14)(R11*2), Z6
	VMOVUPS (R14)(R12*1), Z7
	BFLY8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8)
	VMULPS (R9), Z0, Z0
	VMOVUPS Z0, (R10)
	VMULPS (R9)(R11*1), Z1, Z1
	VMOVUPS Z1, (R10)(R11*1)
	VMULPS (R9)(R11*2), Z2, Z2
	VMOVUPS Z2, (R10)(R11*2)
	VMULPS (R9)(R12*1), Z3, Z3
	VMOVUPS Z3, (R10)(R12*1)
	VMULPS (CX), Z4, Z4
	VMOVUPS Z4, (R14)
	VMULPS (CX)(R11*1), Z5, Z5
	VMOVUPS Z5, (R14)(R11*1)
	VMULPS (CX)(R11*2), Z6, Z6
	VMOVUPS Z6, (R14)(R11*2)
	VMULPS (CX)(R12*1), Z7, Z7
	VMOVUPS Z7, (R14)(R12*1)
	ADDQ $64, BX
	CMPQ BX, R11
	JLT pass8AVX512post_inner
	LEAQ (AX)(R11*8), AX
	CMPQ AX, R13
	JLT pass8AVX512post_group
	VZEROUPPER
	RET

pass8AVX512nopost_group:
	XORQ BX, BX // offset in the group
pass8AVX512nopost_inner:
	LEAQ (AX)(BX*1), R8
	LEAQ (DI)(R8*1), R10
	LEAQ (R10)(R11*4), R14
	VMOVUPS (R10), Z0
	VMOVUPS (R10)(R11*1), Z1
	VMOVUPS (R10)(R11*2), Z2
	VMOVUPS (R10)(R12*1), Z3
	VMOVUPS (R14), Z4
	VMOVUPS (R14)(R11*1), Z5
	VMOVUPS (R14)(R11*2), Z6
	VMOVUPS (R14)(R12*1), Z7
	BFLY8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8)
	VMOVUPS Z0, (R10)
	VMOVUPS Z1, (R10)(R11*1)
	VMOVUPS Z2, (R10)(R11*2)
	VMOVUPS Z3, (R10)(R12*1)
	VMOVUPS Z4, (R14)
	VMOVUPS Z5, (R14)(R11*1)
	VMOVUPS Z6, (R14)(R11*2)
	VMOVUPS Z7, (R14)(R12*1)
	ADDQ $64, BX
	CMPQ BX, R11
	JLT pass8AVX512nopost_inner
	LEAQ (AX)(R11*8), AX
	CMPQ AX, R13
	JLT pass8AVX512nopost_group
	VZEROUPPER
	RET
