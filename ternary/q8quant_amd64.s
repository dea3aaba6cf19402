//go:build amd64 && !purego

#include "textflag.h"

// quantizeQ8AVX2 quantises blocks b0 … nb−1 of an activation vector as quantizeQ8Block
// does (see there and the Q8 layout), to the same bits: max|x| as an unsigned integer max
// over the bits with the sign cleared, id = 127/max|x| and D = max|x|/127 by VDIVSS (one
// correctly rounded float32 division, as Go's), x·id by VMULPS and its rounding to nearest
// with ties to even by VCVTPS2DQ (the default MXCSR mode, which Go keeps), the same
// integer as the generic code's add-and-subtract of 1.5·2²³ for |x·id| ≤ 127.
//
// It stops at the first block it leaves to the generic code (all zeros, a NaN or an
// infinity, or a max|x| so small that 127/max|x| overflows) and returns its index, nb
// when every block is done.
//
// The 128 values of a block, element 4j+p in plane p's byte j, are 16 vectors of 8;
// four at a time (j = 8g … 8g+7) they are packed to bytes, which leaves one lane the
// even j and the other the odd ones; VPERMD puts the j in order (a dword a j, its four
// planes), VPSHUFB gathers each lane's bytes by plane (a dword a plane, four j), and a
// second VPERMD makes qword p plane p's eight bytes. A 4×4 transpose of the four groups'
// qwords then gives each plane's 32 bytes in one register.
//
// Registers: BX x, SI D, DX Sum, DI Q, R8 block index, R9 nb, R12 the block's Q, Y12 the
// block's integer sum, Y13 the VPERMD index, Y14 the VPSHUFB mask, Y15 0x7fffffff.

DATA q8qPerm<>+0(SB)/4, $0
DATA q8qPerm<>+4(SB)/4, $4
DATA q8qPerm<>+8(SB)/4, $1
DATA q8qPerm<>+12(SB)/4, $5
DATA q8qPerm<>+16(SB)/4, $2
DATA q8qPerm<>+20(SB)/4, $6
DATA q8qPerm<>+24(SB)/4, $3
DATA q8qPerm<>+28(SB)/4, $7
GLOBL q8qPerm<>(SB), RODATA|NOPTR, $32

// Per 16-byte lane: bytes 0, 4, 8, 12, then 1, 5, 9, 13, … (a dword of four j's bytes
// becomes four bytes of one plane).
DATA q8qShuf<>+0(SB)/8, $0x0d0905010c080400
DATA q8qShuf<>+8(SB)/8, $0x0f0b07030e0a0602
DATA q8qShuf<>+16(SB)/8, $0x0d0905010c080400
DATA q8qShuf<>+24(SB)/8, $0x0f0b07030e0a0602
GLOBL q8qShuf<>(SB), RODATA|NOPTR, $32

// One group of 32 values at off(BX) (j = 8g … 8g+7) into R, qword p plane p's bytes.
#define Q8Q_GROUP(off, R) \
	VMULPS off+0(BX), Y2, Y4 \
	VMULPS off+32(BX), Y2, Y5 \
	VMULPS off+64(BX), Y2, Y6 \
	VMULPS off+96(BX), Y2, Y7 \
	VCVTPS2DQ Y4, Y4 \
	VCVTPS2DQ Y5, Y5 \
	VCVTPS2DQ Y6, Y6 \
	VCVTPS2DQ Y7, Y7 \
	VPADDD Y4, Y12, Y12 \
	VPADDD Y5, Y12, Y12 \
	VPADDD Y6, Y12, Y12 \
	VPADDD Y7, Y12, Y12 \
	VPACKSSDW Y5, Y4, Y4 \
	VPACKSSDW Y7, Y6, Y6 \
	VPACKSSWB Y6, Y4, Y4 \
	VPERMD Y4, Y13, Y4 \
	VPSHUFB Y14, Y4, Y4 \
	VPERMD Y4, Y13, R

// func quantizeQ8AVX2(q *int8, d *float32, sum *int32, x *float32, b0, nb int) int
TEXT ·quantizeQ8AVX2(SB), NOSPLIT, $0-56
	MOVQ q+0(FP), DI
	MOVQ d+8(FP), SI
	MOVQ sum+16(FP), DX
	MOVQ x+24(FP), BX
	MOVQ b0+32(FP), R8
	MOVQ nb+40(FP), R9
	MOVQ R8, AX
	SHLQ $9, AX
	ADDQ AX, BX // x + 512·b0
	MOVL $0x7fffffff, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	VMOVDQU q8qPerm<>(SB), Y13
	VMOVDQU q8qShuf<>(SB), Y14

loop:
	CMPQ R8, R9
	JGE  done

	// max over the bits with the sign cleared
	VPAND 0(BX), Y15, Y0
	VPAND 32(BX), Y15, Y1
	VPAND 64(BX), Y15, Y4
	VPAND 96(BX), Y15, Y5
	VPAND 128(BX), Y15, Y6
	VPAND 160(BX), Y15, Y7
	VPAND 192(BX), Y15, Y8
	VPAND 224(BX), Y15, Y9
	VPMAXUD Y4, Y0, Y0
	VPMAXUD Y5, Y1, Y1
	VPMAXUD Y6, Y0, Y0
	VPMAXUD Y7, Y1, Y1
	VPMAXUD Y8, Y0, Y0
	VPMAXUD Y9, Y1, Y1
	VPAND 256(BX), Y15, Y4
	VPAND 288(BX), Y15, Y5
	VPAND 320(BX), Y15, Y6
	VPAND 352(BX), Y15, Y7
	VPAND 384(BX), Y15, Y8
	VPAND 416(BX), Y15, Y9
	VPAND 448(BX), Y15, Y10
	VPAND 480(BX), Y15, Y11
	VPMAXUD Y4, Y0, Y0
	VPMAXUD Y5, Y1, Y1
	VPMAXUD Y6, Y0, Y0
	VPMAXUD Y7, Y1, Y1
	VPMAXUD Y8, Y0, Y0
	VPMAXUD Y9, Y1, Y1
	VPMAXUD Y10, Y0, Y0
	VPMAXUD Y11, Y1, Y1
	VPMAXUD Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0x4e, X0, X1
	VPMAXUD X1, X0, X0
	VPSHUFD $0xb1, X0, X1
	VPMAXUD X1, X0, X0
	VMOVD X0, AX
	TESTL AX, AX
	JZ    done          // zeros
	CMPL  AX, $0x7f7fffff
	JHI   done          // NaN or infinity
	MOVL  $0x42fe0000, AX // 127
	VMOVD AX, X1
	VDIVSS X0, X1, X2   // id = 127/max|x|
	VMOVD X2, AX
	CMPL  AX, $0x7f800000
	JEQ   done          // id overflowed
	VDIVSS X1, X0, X3   // D = max|x|/127
	VMOVSS X3, (SI)(R8*4)
	VBROADCASTSS X2, Y2

	// the block's Q: 256·(b/2) + 32·(b%2)
	MOVQ R8, R12
	SHRQ $1, R12
	SHLQ $8, R12
	MOVQ R8, AX
	ANDQ $1, AX
	SHLQ $5, AX
	ADDQ AX, R12
	ADDQ DI, R12

	VPXOR Y12, Y12, Y12
	Q8Q_GROUP(0, Y8)
	Q8Q_GROUP(128, Y9)
	Q8Q_GROUP(256, Y10)
	Q8Q_GROUP(384, Y11)

	VPUNPCKLQDQ Y9, Y8, Y4   // g0.q0 g1.q0 | g0.q2 g1.q2
	VPUNPCKHQDQ Y9, Y8, Y5   // g0.q1 g1.q1 | g0.q3 g1.q3
	VPUNPCKLQDQ Y11, Y10, Y6 // g2.q0 g3.q0 | g2.q2 g3.q2
	VPUNPCKHQDQ Y11, Y10, Y7 // g2.q1 g3.q1 | g2.q3 g3.q3
	VPERM2I128 $0x20, Y6, Y4, Y8
	VPERM2I128 $0x20, Y7, Y5, Y9
	VPERM2I128 $0x31, Y6, Y4, Y10
	VPERM2I128 $0x31, Y7, Y5, Y11
	VMOVDQU Y8, 0(R12)
	VMOVDQU Y9, 64(R12)
	VMOVDQU Y10, 128(R12)
	VMOVDQU Y11, 192(R12)

	VEXTRACTI128 $1, Y12, X4
	VPADDD X4, X12, X4
	VPSHUFD $0x4e, X4, X5
	VPADDD X5, X4, X4
	VPSHUFD $0xb1, X4, X5
	VPADDD X5, X4, X4
	VMOVD X4, (DX)(R8*4)

	ADDQ $512, BX
	INCQ R8
	JMP  loop

done:
	VZEROUPPER
	MOVQ R8, ret+48(FP)
	RET
