//go:build !purego

#include "textflag.h"

// Integer scoring of quantised queries against int8 and q4 keys (attnint.go): each
// lane's integer J by VPDPBUSD (unsigned key bytes × signed query codes, the keys'
// bias removed by starting the lane at the query's correction), then per lane
// acc += (float32(J)·sq)·sk with separate roundings and the lanes summed in hsum16's
// tree, so that the scores are the generic code's bits. Head dim 256 only: the four
// (int8) or two (q4) vectors of a key row and their scale lanes stay in registers for
// every query head.

// q4 scale lanes: vector v's lane l takes block 4v + l/4 of the row's eight scales.
DATA q4lanes<>+0(SB)/8, $0x0000000000000000
DATA q4lanes<>+8(SB)/8, $0x0000000000000000
DATA q4lanes<>+16(SB)/8, $0x0000000100000001
DATA q4lanes<>+24(SB)/8, $0x0000000100000001
DATA q4lanes<>+32(SB)/8, $0x0000000200000002
DATA q4lanes<>+40(SB)/8, $0x0000000200000002
DATA q4lanes<>+48(SB)/8, $0x0000000300000003
DATA q4lanes<>+56(SB)/8, $0x0000000300000003
DATA q4lanes<>+64(SB)/8, $0x0000000400000004
DATA q4lanes<>+72(SB)/8, $0x0000000400000004
DATA q4lanes<>+80(SB)/8, $0x0000000500000005
DATA q4lanes<>+88(SB)/8, $0x0000000500000005
DATA q4lanes<>+96(SB)/8, $0x0000000600000006
DATA q4lanes<>+104(SB)/8, $0x0000000600000006
DATA q4lanes<>+112(SB)/8, $0x0000000700000007
DATA q4lanes<>+120(SB)/8, $0x0000000700000007
GLOBL q4lanes<>(SB), RODATA|NOPTR, $128

// HSUM16 leaves the sum of Z0's lanes in X0 (hsum16's order); clobbers Z1.
#define HSUM16 \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDPS        Y1, Y0, Y0 \
	VEXTRACTF128  $1, Y0, X1 \
	VADDPS        X1, X0, X0 \
	VPERMILPS     $0x0e, X0, X1 \
	VADDPS        X1, X0, X0 \
	VMOVSHDUP     X0, X1 \
	VADDSS        X1, X0, X0

// func scoreInt8AVX512(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)
//
// The keys XOR 0x80 are their codes + 128, unsigned; corr holds −128·Σ of each lane's
// query codes.
TEXT ·scoreInt8AVX512(SB), NOSPLIT, $0-176
	MOVQ out_base+0(FP), DI
	MOVQ os+24(FP), R8
	SHLQ $2, R8
	MOVQ codes_base+32(FP), SI
	MOVQ sq_base+56(FP), R9
	MOVQ corr_base+80(FP), R10
	SUBQ R9, R10 // corr lies R10 bytes after sq, lane for lane
	MOVQ rep+104(FP), R11
	MOVQ k_base+112(FP), BX
	MOVQ ks_base+136(FP), R12
	MOVQ n+160(FP), CX
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z31

si8_pos:
	VPXORD (BX), Z31, Z16
	VPXORD 64(BX), Z31, Z17
	VPXORD 128(BX), Z31, Z18
	VPXORD 192(BX), Z31, Z19
	VBROADCASTSS 0(R12), Z20
	VBROADCASTSS 4(R12), Y3
	VINSERTF64X4 $1, Y3, Z20, Z20
	VBROADCASTSS 8(R12), Z21
	VBROADCASTSS 12(R12), Y3
	VINSERTF64X4 $1, Y3, Z21, Z21
	VBROADCASTSS 16(R12), Z22
	VBROADCASTSS 20(R12), Y3
	VINSERTF64X4 $1, Y3, Z22, Z22
	VBROADCASTSS 24(R12), Z23
	VBROADCASTSS 28(R12), Y3
	VINSERTF64X4 $1, Y3, Z23, Z23
	MOVQ SI, R13
	MOVQ R9, R14
	MOVQ DI, DX
	MOVQ R11, AX

si8_head:
	VXORPS Z0, Z0, Z0
	VMOVDQU32 0(R14)(R10*1), Z1
	VPDPBUSD  0(R13), Z16, Z1
	VCVTDQ2PS Z1, Z1
	VMULPS    0(R14), Z1, Z1
	VMULPS    Z20, Z1, Z1
	VADDPS    Z1, Z0, Z0
	VMOVDQU32 64(R14)(R10*1), Z1
	VPDPBUSD  64(R13), Z17, Z1
	VCVTDQ2PS Z1, Z1
	VMULPS    64(R14), Z1, Z1
	VMULPS    Z21, Z1, Z1
	VADDPS    Z1, Z0, Z0
	VMOVDQU32 128(R14)(R10*1), Z1
	VPDPBUSD  128(R13), Z18, Z1
	VCVTDQ2PS Z1, Z1
	VMULPS    128(R14), Z1, Z1
	VMULPS    Z22, Z1, Z1
	VADDPS    Z1, Z0, Z0
	VMOVDQU32 192(R14)(R10*1), Z1
	VPDPBUSD  192(R13), Z19, Z1
	VCVTDQ2PS Z1, Z1
	VMULPS    192(R14), Z1, Z1
	VMULPS    Z23, Z1, Z1
	VADDPS    Z1, Z0, Z0
	HSUM16
	VMOVSS X0, (DX)
	ADDQ   $256, R13
	ADDQ   $256, R14
	ADDQ   R8, DX
	DECQ   AX
	JNZ    si8_head

	ADDQ $4, DI
	ADDQ $256, BX
	ADDQ $32, R12
	DECQ CX
	JNZ  si8_pos
	VZEROUPPER
	RET

// func scoreQ4AVX512(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int)
//
// A vector's 64 code bytes give two operands, the low nibbles and the high ones, both
// accumulating into the same lanes; corr holds −8·Σ of each lane's eight query codes.
TEXT ·scoreQ4AVX512(SB), NOSPLIT, $0-176
	MOVQ out_base+0(FP), DI
	MOVQ os+24(FP), R8
	SHLQ $2, R8
	MOVQ codes_base+32(FP), SI
	MOVQ sq_base+56(FP), R9
	MOVQ corr_base+80(FP), R10
	SUBQ R9, R10
	MOVQ rep+104(FP), R11
	MOVQ k_base+112(FP), BX
	MOVQ ks_base+136(FP), R12
	MOVQ n+160(FP), CX
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z30
	VMOVDQU32    q4lanes<>+0(SB), Z28
	VMOVDQU32    q4lanes<>+64(SB), Z29

sq4_pos:
	VMOVDQU32 (BX), Z2
	VPANDD    Z30, Z2, Z16
	VPSRLW    $4, Z2, Z2
	VPANDD    Z30, Z2, Z17
	VMOVDQU32 64(BX), Z2
	VPANDD    Z30, Z2, Z18
	VPSRLW    $4, Z2, Z2
	VPANDD    Z30, Z2, Z19
	VCVTPH2PS (R12), Y3
	VPERMPS   Z3, Z28, Z20
	VPERMPS   Z3, Z29, Z21
	MOVQ      SI, R13
	MOVQ      R9, R14
	MOVQ      DI, DX
	MOVQ      R11, AX

sq4_head:
	VXORPS Z0, Z0, Z0
	VMOVDQU32 0(R14)(R10*1), Z1
	VPDPBUSD  0(R13), Z16, Z1
	VPDPBUSD  64(R13), Z17, Z1
	VCVTDQ2PS Z1, Z1
	VMULPS    0(R14), Z1, Z1
	VMULPS    Z20, Z1, Z1
	VADDPS    Z1, Z0, Z0
	VMOVDQU32 64(R14)(R10*1), Z1
	VPDPBUSD  128(R13), Z18, Z1
	VPDPBUSD  192(R13), Z19, Z1
	VCVTDQ2PS Z1, Z1
	VMULPS    64(R14), Z1, Z1
	VMULPS    Z21, Z1, Z1
	VADDPS    Z1, Z0, Z0
	HSUM16
	VMOVSS X0, (DX)
	ADDQ   $256, R13
	ADDQ   $128, R14
	ADDQ   R8, DX
	DECQ   AX
	JNZ    sq4_head

	ADDQ $4, DI
	ADDQ $128, BX
	ADDQ $16, R12
	DECQ CX
	JNZ  sq4_pos
	VZEROUPPER
	RET

// HSUM8 leaves in X0 the sum of the sixteen lanes Y0 (lanes 0…7) and Y5 (8…15), in
// hsum16's order; clobbers Y1.
#define HSUM8 \
	VADDPS       Y5, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VPERMILPS    $0x0e, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1 \
	VADDSS       X1, X0, X0

// func scoreInt8AVX2(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)
//
// A vector's two halves of 32 values are one block each, lanes 0…7 and 8…15: Y0 and
// Y5 accumulate them. VPMADDUBSW takes |k| unsigned and q with k's sign, whose pair sums
// stay within int16 (2·127² < 2¹⁵, the codes never −128), so no correction is needed.
// The keys' magnitudes stay in Y8…Y15; the blocks' scales, broadcast, on the stack.
TEXT ·scoreInt8AVX2(SB), NOSPLIT, $256-176
	MOVQ out_base+0(FP), DI
	MOVQ os+24(FP), R8
	SHLQ $2, R8
	MOVQ codes_base+32(FP), SI
	MOVQ sq_base+56(FP), R9
	MOVQ rep+104(FP), R11
	MOVQ k_base+112(FP), BX
	MOVQ ks_base+136(FP), R12
	MOVQ n+160(FP), CX
	MOVL $0x00010001, AX
	MOVQ AX, X7
	VPBROADCASTD X7, Y7

si8a_pos:
	VPABSB       0(BX), Y8
	VBROADCASTSS 0(R12), Y1
	VMOVUPS      Y1, 0(SP)
	VPABSB       32(BX), Y9
	VBROADCASTSS 4(R12), Y1
	VMOVUPS      Y1, 32(SP)
	VPABSB       64(BX), Y10
	VBROADCASTSS 8(R12), Y1
	VMOVUPS      Y1, 64(SP)
	VPABSB       96(BX), Y11
	VBROADCASTSS 12(R12), Y1
	VMOVUPS      Y1, 96(SP)
	VPABSB       128(BX), Y12
	VBROADCASTSS 16(R12), Y1
	VMOVUPS      Y1, 128(SP)
	VPABSB       160(BX), Y13
	VBROADCASTSS 20(R12), Y1
	VMOVUPS      Y1, 160(SP)
	VPABSB       192(BX), Y14
	VBROADCASTSS 24(R12), Y1
	VMOVUPS      Y1, 192(SP)
	VPABSB       224(BX), Y15
	VBROADCASTSS 28(R12), Y1
	VMOVUPS      Y1, 224(SP)
	MOVQ SI, R13
	MOVQ R9, R14
	MOVQ DI, DX
	MOVQ R11, AX

si8a_head:
	VXORPS Y0, Y0, Y0
	VXORPS Y5, Y5, Y5
	VMOVDQU     0(R13), Y1
	VPSIGNB     0(BX), Y1, Y1
	VPMADDUBSW  Y1, Y8, Y1
	VPMADDWD    Y7, Y1, Y1
	VCVTDQ2PS   Y1, Y1
	VMULPS      0(R14), Y1, Y1
	VMULPS      0(SP), Y1, Y1
	VADDPS      Y1, Y0, Y0
	VMOVDQU     32(R13), Y1
	VPSIGNB     32(BX), Y1, Y1
	VPMADDUBSW  Y1, Y9, Y1
	VPMADDWD    Y7, Y1, Y1
	VCVTDQ2PS   Y1, Y1
	VMULPS      32(R14), Y1, Y1
	VMULPS      32(SP), Y1, Y1
	VADDPS      Y1, Y5, Y5
	VMOVDQU     64(R13), Y1
	VPSIGNB     64(BX), Y1, Y1
	VPMADDUBSW  Y1, Y10, Y1
	VPMADDWD    Y7, Y1, Y1
	VCVTDQ2PS   Y1, Y1
	VMULPS      64(R14), Y1, Y1
	VMULPS      64(SP), Y1, Y1
	VADDPS      Y1, Y0, Y0
	VMOVDQU     96(R13), Y1
	VPSIGNB     96(BX), Y1, Y1
	VPMADDUBSW  Y1, Y11, Y1
	VPMADDWD    Y7, Y1, Y1
	VCVTDQ2PS   Y1, Y1
	VMULPS      96(R14), Y1, Y1
	VMULPS      96(SP), Y1, Y1
	VADDPS      Y1, Y5, Y5
	VMOVDQU     128(R13), Y1
	VPSIGNB     128(BX), Y1, Y1
	VPMADDUBSW  Y1, Y12, Y1
	VPMADDWD    Y7, Y1, Y1
	VCVTDQ2PS   Y1, Y1
	VMULPS      128(R14), Y1, Y1
	VMULPS      128(SP), Y1, Y1
	VADDPS      Y1, Y0, Y0
	VMOVDQU     160(R13), Y1
	VPSIGNB     160(BX), Y1, Y1
	VPMADDUBSW  Y1, Y13, Y1
	VPMADDWD    Y7, Y1, Y1
	VCVTDQ2PS   Y1, Y1
	VMULPS      160(R14), Y1, Y1
	VMULPS      160(SP), Y1, Y1
	VADDPS      Y1, Y5, Y5
	VMOVDQU     192(R13), Y1
	VPSIGNB     192(BX), Y1, Y1
	VPMADDUBSW  Y1, Y14, Y1
	VPMADDWD    Y7, Y1, Y1
	VCVTDQ2PS   Y1, Y1
	VMULPS      192(R14), Y1, Y1
	VMULPS      192(SP), Y1, Y1
	VADDPS      Y1, Y0, Y0
	VMOVDQU     224(R13), Y1
	VPSIGNB     224(BX), Y1, Y1
	VPMADDUBSW  Y1, Y15, Y1
	VPMADDWD    Y7, Y1, Y1
	VCVTDQ2PS   Y1, Y1
	VMULPS      224(R14), Y1, Y1
	VMULPS      224(SP), Y1, Y1
	VADDPS      Y1, Y5, Y5
	HSUM8
	VMOVSS X0, (DX)
	ADDQ   $256, R13
	ADDQ   $256, R14
	ADDQ   R8, DX
	DECQ   AX
	JNZ    si8a_head

	ADDQ $4, DI
	ADDQ $256, BX
	ADDQ $32, R12
	DECQ CX
	JNZ  si8a_pos
	VZEROUPPER
	RET

// q4 scale lanes of an AVX2 half: half k (0…3) of the row's lanes takes blocks 2k and
// 2k+1, four lanes each.
DATA q4half<>+0(SB)/8, $0x0000000000000000
DATA q4half<>+8(SB)/8, $0x0000000000000000
DATA q4half<>+16(SB)/8, $0x0000000100000001
DATA q4half<>+24(SB)/8, $0x0000000100000001
GLOBL q4half<>(SB), RODATA|NOPTR, $32

// func scoreQ4AVX2(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int)
//
// Each half of a vector (32 code bytes, lanes 0…7 or 8…15) gives its low and high
// nibbles, unsigned; VPMADDUBSW's pair sums (≤ 2·15·127) and the two nibbles' total stay
// within int16. The nibbles stay in Y8…Y15, the scale lanes on the stack.
TEXT ·scoreQ4AVX2(SB), NOSPLIT, $128-176
	MOVQ out_base+0(FP), DI
	MOVQ os+24(FP), R8
	SHLQ $2, R8
	MOVQ codes_base+32(FP), SI
	MOVQ sq_base+56(FP), R9
	MOVQ corr_base+80(FP), R10
	SUBQ R9, R10
	MOVQ rep+104(FP), R11
	MOVQ k_base+112(FP), BX
	MOVQ ks_base+136(FP), R12
	MOVQ n+160(FP), CX

sq4a_pos:
	MOVL         $0x0f0f0f0f, AX
	MOVQ         AX, X6
	VPBROADCASTD X6, Y6
	VMOVDQU 0(BX), Y1
	VPAND   Y6, Y1, Y8
	VPSRLW  $4, Y1, Y1
	VPAND   Y6, Y1, Y9
	VMOVDQU 32(BX), Y1
	VPAND   Y6, Y1, Y10
	VPSRLW  $4, Y1, Y1
	VPAND   Y6, Y1, Y11
	VMOVDQU 64(BX), Y1
	VPAND   Y6, Y1, Y12
	VPSRLW  $4, Y1, Y1
	VPAND   Y6, Y1, Y13
	VMOVDQU 96(BX), Y1
	VPAND   Y6, Y1, Y14
	VPSRLW  $4, Y1, Y1
	VPAND   Y6, Y1, Y15
	VCVTPH2PS (R12), Y2
	VMOVDQU   q4half<>(SB), Y3
	MOVL      $0x00000002, AX
	MOVQ      AX, X4
	VPBROADCASTD X4, Y4
	VPERMPS Y2, Y3, Y1
	VMOVUPS Y1, 0(SP)
	VPADDD  Y4, Y3, Y3
	VPERMPS Y2, Y3, Y1
	VMOVUPS Y1, 32(SP)
	VPADDD  Y4, Y3, Y3
	VPERMPS Y2, Y3, Y1
	VMOVUPS Y1, 64(SP)
	VPADDD  Y4, Y3, Y3
	VPERMPS Y2, Y3, Y1
	VMOVUPS Y1, 96(SP)
	MOVL         $0x00010001, AX
	MOVQ         AX, X7
	VPBROADCASTD X7, Y7
	MOVQ         SI, R13
	MOVQ         R9, R14
	MOVQ         DI, DX
	MOVQ         R11, AX

sq4a_head:
	VXORPS Y0, Y0, Y0
	VXORPS Y5, Y5, Y5
	VPMADDUBSW 0(R13), Y8, Y1
	VPMADDUBSW 64(R13), Y9, Y2
	VPADDW     Y2, Y1, Y1
	VPMADDWD   Y7, Y1, Y1
	VPADDD     0(R14)(R10*1), Y1, Y1
	VCVTDQ2PS  Y1, Y1
	VMULPS     0(R14), Y1, Y1
	VMULPS     0(SP), Y1, Y1
	VADDPS     Y1, Y0, Y0
	VPMADDUBSW 32(R13), Y10, Y1
	VPMADDUBSW 96(R13), Y11, Y2
	VPADDW     Y2, Y1, Y1
	VPMADDWD   Y7, Y1, Y1
	VPADDD     32(R14)(R10*1), Y1, Y1
	VCVTDQ2PS  Y1, Y1
	VMULPS     32(R14), Y1, Y1
	VMULPS     32(SP), Y1, Y1
	VADDPS     Y1, Y5, Y5
	VPMADDUBSW 128(R13), Y12, Y1
	VPMADDUBSW 192(R13), Y13, Y2
	VPADDW     Y2, Y1, Y1
	VPMADDWD   Y7, Y1, Y1
	VPADDD     64(R14)(R10*1), Y1, Y1
	VCVTDQ2PS  Y1, Y1
	VMULPS     64(R14), Y1, Y1
	VMULPS     64(SP), Y1, Y1
	VADDPS     Y1, Y0, Y0
	VPMADDUBSW 160(R13), Y14, Y1
	VPMADDUBSW 224(R13), Y15, Y2
	VPADDW     Y2, Y1, Y1
	VPMADDWD   Y7, Y1, Y1
	VPADDD     96(R14)(R10*1), Y1, Y1
	VCVTDQ2PS  Y1, Y1
	VMULPS     96(R14), Y1, Y1
	VMULPS     96(SP), Y1, Y1
	VADDPS     Y1, Y5, Y5
	HSUM8
	VMOVSS X0, (DX)
	ADDQ   $256, R13
	ADDQ   $128, R14
	ADDQ   R8, DX
	DECQ   AX
	JNZ    sq4a_head

	ADDQ $4, DI
	ADDQ $128, BX
	ADDQ $16, R12
	DECQ CX
	JNZ  sq4a_pos
	VZEROUPPER
	RET

// func axpy6Int8AVX512(acc []float32, w []float32, ws int, v []int8, vs []float32, n, d int)
//
// axpy6F32AVX512 over int8 value rows as they lie (d codes and d/32 float scales a row,
// one block a chunk): each value code·s rounded once, as dequantInt8 forms it, so that
// the sums are axpy6F32AVX512's bits on the decoded rows.
TEXT ·axpy6Int8AVX512(SB), NOSPLIT, $0-120
	MOVQ acc_base+0(FP), DI
	MOVQ w_base+24(FP), R12
	MOVQ ws+48(FP), BX
	SHLQ $2, BX
	MOVQ v_base+56(FP), R13
	MOVQ d+112(FP), R8
	SHLQ $2, R8
	MOVQ d+112(FP), R14
	SHRQ $5, R14
	JZ   ax8_done
	CMPQ n+104(FP), $0
	JEQ  ax8_done

ax8_chunk:
	LEAQ    (DI)(R8*2), R11
	ADDQ    R8, R11
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS (DI)(R8*1), Z2
	VMOVUPS 64(DI)(R8*1), Z3
	VMOVUPS (DI)(R8*2), Z4
	VMOVUPS 64(DI)(R8*2), Z5
	VMOVUPS (R11), Z6
	VMOVUPS 64(R11), Z7
	VMOVUPS (R11)(R8*1), Z8
	VMOVUPS 64(R11)(R8*1), Z9
	VMOVUPS (R11)(R8*2), Z10
	VMOVUPS 64(R11)(R8*2), Z11
	MOVQ    R12, R9
	LEAQ    (R12)(BX*2), R10
	ADDQ    BX, R10
	MOVQ    R13, SI
	MOVQ    d+112(FP), DX // the chunk's block b = d/32 − R14, its scale at vs + b
	SHRQ    $5, DX
	SUBQ    R14, DX
	SHLQ    $2, DX
	ADDQ    vs_base+80(FP), DX
	MOVQ    d+112(FP), AX // the rows' strides: codes, then scales
	MOVQ    AX, R11
	SHRQ    $3, R11
	MOVQ    n+104(FP), CX

ax8_p:
	VPMOVSXBD    (SI), Z12
	VPMOVSXBD    16(SI), Z13
	VCVTDQ2PS    Z12, Z12
	VCVTDQ2PS    Z13, Z13
	VBROADCASTSS (DX), Z20
	VMULPS       Z20, Z12, Z12
	VMULPS       Z20, Z13, Z13
	VBROADCASTSS (R9), Z14
	VBROADCASTSS (R9)(BX*1), Z15
	VBROADCASTSS (R9)(BX*2), Z16
	VBROADCASTSS (R10), Z17
	VBROADCASTSS (R10)(BX*1), Z18
	VBROADCASTSS (R10)(BX*2), Z19
	VFMADD231PS  Z14, Z12, Z0
	VFMADD231PS  Z14, Z13, Z1
	VFMADD231PS  Z15, Z12, Z2
	VFMADD231PS  Z15, Z13, Z3
	VFMADD231PS  Z16, Z12, Z4
	VFMADD231PS  Z16, Z13, Z5
	VFMADD231PS  Z17, Z12, Z6
	VFMADD231PS  Z17, Z13, Z7
	VFMADD231PS  Z18, Z12, Z8
	VFMADD231PS  Z18, Z13, Z9
	VFMADD231PS  Z19, Z12, Z10
	VFMADD231PS  Z19, Z13, Z11
	ADDQ         $4, R9
	ADDQ         $4, R10
	ADDQ         AX, SI
	ADDQ         R11, DX
	DECQ         CX
	JNZ          ax8_p

	LEAQ    (DI)(R8*2), R11
	ADDQ    R8, R11
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, (DI)(R8*1)
	VMOVUPS Z3, 64(DI)(R8*1)
	VMOVUPS Z4, (DI)(R8*2)
	VMOVUPS Z5, 64(DI)(R8*2)
	VMOVUPS Z6, (R11)
	VMOVUPS Z7, 64(R11)
	VMOVUPS Z8, (R11)(R8*1)
	VMOVUPS Z9, 64(R11)(R8*1)
	VMOVUPS Z10, (R11)(R8*2)
	VMOVUPS Z11, 64(R11)(R8*2)
	ADDQ    $128, DI
	ADDQ    $32, R13
	DECQ    R14
	JNZ     ax8_chunk

ax8_done:
	VZEROUPPER
	RET

// q4values is code − 8 for the codes 0…15.
DATA q4values<>+0(SB)/4, $-8.0
DATA q4values<>+4(SB)/4, $-7.0
DATA q4values<>+8(SB)/4, $-6.0
DATA q4values<>+12(SB)/4, $-5.0
DATA q4values<>+16(SB)/4, $-4.0
DATA q4values<>+20(SB)/4, $-3.0
DATA q4values<>+24(SB)/4, $-2.0
DATA q4values<>+28(SB)/4, $-1.0
DATA q4values<>+32(SB)/4, $0.0
DATA q4values<>+36(SB)/4, $1.0
DATA q4values<>+40(SB)/4, $2.0
DATA q4values<>+44(SB)/4, $3.0
DATA q4values<>+48(SB)/4, $4.0
DATA q4values<>+52(SB)/4, $5.0
DATA q4values<>+56(SB)/4, $6.0
DATA q4values<>+60(SB)/4, $7.0
GLOBL q4values<>(SB), RODATA|NOPTR, $64

// func axpy6Q4AVX512(acc []float32, w []float32, ws int, v []byte, vs []uint16, n, d int)
//
// axpy6F32AVX512 over q4 value rows as they lie (16 code bytes and a half scale a block
// of 32 values, one block a chunk): each value (code − 8)·s looked up by VPERMPS (which
// reads an index's low four bits, so the low nibble needs no mask) in the block's table
// s·(−8…7), whose products are exact, as dequantQ4's, so that the sums are
// axpy6F32AVX512's bits on the decoded rows.
TEXT ·axpy6Q4AVX512(SB), NOSPLIT, $0-120
	MOVQ acc_base+0(FP), DI
	MOVQ w_base+24(FP), R12
	MOVQ ws+48(FP), BX
	SHLQ $2, BX
	MOVQ v_base+56(FP), R13
	MOVQ d+112(FP), R8
	SHLQ $2, R8
	MOVQ d+112(FP), R14
	SHRQ $5, R14
	JZ   ax4_done
	CMPQ n+104(FP), $0
	JEQ  ax4_done
	VMOVUPS q4values<>(SB), Z22

ax4_chunk:
	LEAQ    (DI)(R8*2), R11
	ADDQ    R8, R11
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	VMOVUPS (DI)(R8*1), Z2
	VMOVUPS 64(DI)(R8*1), Z3
	VMOVUPS (DI)(R8*2), Z4
	VMOVUPS 64(DI)(R8*2), Z5
	VMOVUPS (R11), Z6
	VMOVUPS 64(R11), Z7
	VMOVUPS (R11)(R8*1), Z8
	VMOVUPS 64(R11)(R8*1), Z9
	VMOVUPS (R11)(R8*2), Z10
	VMOVUPS 64(R11)(R8*2), Z11
	MOVQ    R12, R9
	LEAQ    (R12)(BX*2), R10
	ADDQ    BX, R10
	MOVQ    R13, SI
	MOVQ    d+112(FP), DX // the chunk's block b = d/32 − R14, its scale at vs + b
	SHRQ    $5, DX
	SUBQ    R14, DX
	SHLQ    $1, DX
	ADDQ    vs_base+80(FP), DX
	MOVQ    d+112(FP), AX // the rows' strides: codes, then scales
	MOVQ    AX, R11
	SHRQ    $1, AX
	SHRQ    $4, R11
	MOVQ    n+104(FP), CX

ax4_p:
	VPMOVZXBD    (SI), Z12
	VPSRLD       $4, Z12, Z13
	VPBROADCASTW (DX), Y24
	VCVTPH2PS    Y24, Z20
	VMULPS       Z22, Z20, Z20
	VPERMPS      Z20, Z12, Z12
	VPERMPS      Z20, Z13, Z13
	VBROADCASTSS (R9), Z14
	VBROADCASTSS (R9)(BX*1), Z15
	VBROADCASTSS (R9)(BX*2), Z16
	VBROADCASTSS (R10), Z17
	VBROADCASTSS (R10)(BX*1), Z18
	VBROADCASTSS (R10)(BX*2), Z19
	VFMADD231PS  Z14, Z12, Z0
	VFMADD231PS  Z14, Z13, Z1
	VFMADD231PS  Z15, Z12, Z2
	VFMADD231PS  Z15, Z13, Z3
	VFMADD231PS  Z16, Z12, Z4
	VFMADD231PS  Z16, Z13, Z5
	VFMADD231PS  Z17, Z12, Z6
	VFMADD231PS  Z17, Z13, Z7
	VFMADD231PS  Z18, Z12, Z8
	VFMADD231PS  Z18, Z13, Z9
	VFMADD231PS  Z19, Z12, Z10
	VFMADD231PS  Z19, Z13, Z11
	ADDQ         $4, R9
	ADDQ         $4, R10
	ADDQ         AX, SI
	ADDQ         R11, DX
	DECQ         CX
	JNZ          ax4_p

	LEAQ    (DI)(R8*2), R11
	ADDQ    R8, R11
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, (DI)(R8*1)
	VMOVUPS Z3, 64(DI)(R8*1)
	VMOVUPS Z4, (DI)(R8*2)
	VMOVUPS Z5, 64(DI)(R8*2)
	VMOVUPS Z6, (R11)
	VMOVUPS Z7, 64(R11)
	VMOVUPS Z8, (R11)(R8*1)
	VMOVUPS Z9, 64(R11)(R8*1)
	VMOVUPS Z10, (R11)(R8*2)
	VMOVUPS Z11, 64(R11)(R8*2)
	ADDQ    $128, DI
	ADDQ    $16, R13
	DECQ    R14
	JNZ     ax4_chunk

ax4_done:
	VZEROUPPER
	RET
