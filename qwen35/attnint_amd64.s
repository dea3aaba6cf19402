//go:build !purego

#include "textflag.h"
#include "axpy6_amd64.h"

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

// HSUM6 sums the lanes of the six accumulators Z8…Z13 (query heads 0…5) in hsum16's
// order, two to four heads a vector at each level, and stores head r's score at
// (DI)+r·R8 (AX = DI + 3·R8). Clobbers Z0…Z2, Z4…Z7.
#define HSUM6 \
	VSHUFF64X2    $0x44, Z9, Z8, Z0 \
	VSHUFF64X2    $0xee, Z9, Z8, Z1 \
	VADDPS        Z1, Z0, Z0 \
	VSHUFF64X2    $0x44, Z11, Z10, Z1 \
	VSHUFF64X2    $0xee, Z11, Z10, Z2 \
	VADDPS        Z2, Z1, Z1 \
	VSHUFF64X2    $0x44, Z13, Z12, Z2 \
	VSHUFF64X2    $0xee, Z13, Z12, Z4 \
	VADDPS        Z4, Z2, Z2 \
	VSHUFF64X2    $0x88, Z1, Z0, Z4 \
	VSHUFF64X2    $0xdd, Z1, Z0, Z5 \
	VADDPS        Z5, Z4, Z4 \
	VSHUFF64X2    $0x88, Z2, Z2, Z5 \
	VSHUFF64X2    $0xdd, Z2, Z2, Z6 \
	VADDPS        Z6, Z5, Z5 \
	VSHUFPS       $0x44, Z5, Z4, Z6 \
	VSHUFPS       $0xee, Z5, Z4, Z7 \
	VADDPS        Z7, Z6, Z6 \
	VSHUFPS       $0x88, Z6, Z6, Z7 \
	VSHUFPS       $0xdd, Z6, Z6, Z4 \
	VADDPS        Z4, Z7, Z7 \
	LEAQ          (DI)(R8*2), AX \
	ADDQ          R8, AX \
	VMOVSS        X7, (DI) \
	VEXTRACTPS    $1, X7, (AX)(R8*1) \
	VEXTRACTF32X4 $1, Z7, X4 \
	VMOVSS        X4, (DI)(R8*1) \
	VEXTRACTPS    $1, X4, (AX)(R8*2) \
	VEXTRACTF32X4 $2, Z7, X4 \
	VMOVSS        X4, (DI)(R8*2) \
	VEXTRACTF32X4 $3, Z7, X4 \
	VMOVSS        X4, (AX)

// SCORE6VNNI scores six query heads (codes at SI, scale lanes at R9, corrections R10
// bytes after them) against a key row's four operands Z16…Z19 (each head's vector 0
// from Z16 and Z17, vector 1 from Z18 and Z19) with its scale lanes Z20 and Z21, and
// stores the scores at (DI)+r·R8 (HSUM6). SCORE1VNNI is one head: codes at R13, scale
// lanes at R14, its score at (DX).
#define SCORE6VNNI \
	VXORPS Z8, Z8, Z8 \
	VXORPS Z9, Z9, Z9 \
	VXORPS Z10, Z10, Z10 \
	VXORPS Z11, Z11, Z11 \
	VXORPS Z12, Z12, Z12 \
	VXORPS Z13, Z13, Z13 \
	VMOVDQU32 0(R9)(R10*1), Z1 \
	VPDPBUSD  0(SI), Z16, Z1 \
	VPDPBUSD  64(SI), Z17, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    0(R9), Z1, Z1 \
	VMULPS    Z20, Z1, Z1 \
	VADDPS    Z1, Z8, Z8 \
	VMOVDQU32 64(R9)(R10*1), Z1 \
	VPDPBUSD  128(SI), Z18, Z1 \
	VPDPBUSD  192(SI), Z19, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    64(R9), Z1, Z1 \
	VMULPS    Z21, Z1, Z1 \
	VADDPS    Z1, Z8, Z8 \
	VMOVDQU32 128(R9)(R10*1), Z1 \
	VPDPBUSD  256(SI), Z16, Z1 \
	VPDPBUSD  320(SI), Z17, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    128(R9), Z1, Z1 \
	VMULPS    Z20, Z1, Z1 \
	VADDPS    Z1, Z9, Z9 \
	VMOVDQU32 192(R9)(R10*1), Z1 \
	VPDPBUSD  384(SI), Z18, Z1 \
	VPDPBUSD  448(SI), Z19, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    192(R9), Z1, Z1 \
	VMULPS    Z21, Z1, Z1 \
	VADDPS    Z1, Z9, Z9 \
	VMOVDQU32 256(R9)(R10*1), Z1 \
	VPDPBUSD  512(SI), Z16, Z1 \
	VPDPBUSD  576(SI), Z17, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    256(R9), Z1, Z1 \
	VMULPS    Z20, Z1, Z1 \
	VADDPS    Z1, Z10, Z10 \
	VMOVDQU32 320(R9)(R10*1), Z1 \
	VPDPBUSD  640(SI), Z18, Z1 \
	VPDPBUSD  704(SI), Z19, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    320(R9), Z1, Z1 \
	VMULPS    Z21, Z1, Z1 \
	VADDPS    Z1, Z10, Z10 \
	VMOVDQU32 384(R9)(R10*1), Z1 \
	VPDPBUSD  768(SI), Z16, Z1 \
	VPDPBUSD  832(SI), Z17, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    384(R9), Z1, Z1 \
	VMULPS    Z20, Z1, Z1 \
	VADDPS    Z1, Z11, Z11 \
	VMOVDQU32 448(R9)(R10*1), Z1 \
	VPDPBUSD  896(SI), Z18, Z1 \
	VPDPBUSD  960(SI), Z19, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    448(R9), Z1, Z1 \
	VMULPS    Z21, Z1, Z1 \
	VADDPS    Z1, Z11, Z11 \
	VMOVDQU32 512(R9)(R10*1), Z1 \
	VPDPBUSD  1024(SI), Z16, Z1 \
	VPDPBUSD  1088(SI), Z17, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    512(R9), Z1, Z1 \
	VMULPS    Z20, Z1, Z1 \
	VADDPS    Z1, Z12, Z12 \
	VMOVDQU32 576(R9)(R10*1), Z1 \
	VPDPBUSD  1152(SI), Z18, Z1 \
	VPDPBUSD  1216(SI), Z19, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    576(R9), Z1, Z1 \
	VMULPS    Z21, Z1, Z1 \
	VADDPS    Z1, Z12, Z12 \
	VMOVDQU32 640(R9)(R10*1), Z1 \
	VPDPBUSD  1280(SI), Z16, Z1 \
	VPDPBUSD  1344(SI), Z17, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    640(R9), Z1, Z1 \
	VMULPS    Z20, Z1, Z1 \
	VADDPS    Z1, Z13, Z13 \
	VMOVDQU32 704(R9)(R10*1), Z1 \
	VPDPBUSD  1408(SI), Z18, Z1 \
	VPDPBUSD  1472(SI), Z19, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    704(R9), Z1, Z1 \
	VMULPS    Z21, Z1, Z1 \
	VADDPS    Z1, Z13, Z13 \
	HSUM6

#define SCORE1VNNI \
	VXORPS Z0, Z0, Z0 \
	VMOVDQU32 0(R14)(R10*1), Z1 \
	VPDPBUSD  0(R13), Z16, Z1 \
	VPDPBUSD  64(R13), Z17, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    0(R14), Z1, Z1 \
	VMULPS    Z20, Z1, Z1 \
	VADDPS    Z1, Z0, Z0 \
	VMOVDQU32 64(R14)(R10*1), Z1 \
	VPDPBUSD  128(R13), Z18, Z1 \
	VPDPBUSD  192(R13), Z19, Z1 \
	VCVTDQ2PS Z1, Z1 \
	VMULPS    64(R14), Z1, Z1 \
	VMULPS    Z21, Z1, Z1 \
	VADDPS    Z1, Z0, Z0 \
	HSUM16 \
	VMOVSS X0, (DX)

// func scoreInt8AVX512(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)
//
// The row's four vectors, their 128-bit chunks regrouped (VSHUFI64X2) into the first
// and the second sixteen codes of blocks 0…3 and of blocks 4…7, are scoreQ4AVX512's four
// operands; the keys XOR 0x80 are their codes + 128, unsigned, and corr holds −128·Σ of
// each lane's eight query codes.
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
	VMOVDQU32    q4lanes<>+0(SB), Z28
	VMOVDQU32    q4lanes<>+64(SB), Z29

si8_pos:
	// The rows eight ahead and their scales, into L1 while these are scored: a decode
	// step reads the keys from memory once.
	PREFETCHT0 2048(BX)
	PREFETCHT0 2112(BX)
	PREFETCHT0 2176(BX)
	PREFETCHT0 2240(BX)
	PREFETCHT0 256(R12)
	VMOVDQU32  (BX), Z2
	VMOVDQU32  64(BX), Z3
	VSHUFI64X2 $0x88, Z3, Z2, Z16 // chunks 0, 2 of each: blocks 0…3, codes 0…15
	VSHUFI64X2 $0xdd, Z3, Z2, Z17 // chunks 1, 3: codes 16…31
	VPXORD     Z31, Z16, Z16
	VPXORD     Z31, Z17, Z17
	VMOVDQU32  128(BX), Z2
	VMOVDQU32  192(BX), Z3
	VSHUFI64X2 $0x88, Z3, Z2, Z18
	VSHUFI64X2 $0xdd, Z3, Z2, Z19
	VPXORD     Z31, Z18, Z18
	VPXORD     Z31, Z19, Z19
	VMOVUPS    (R12), Y3
	VPERMPS    Z3, Z28, Z20
	VPERMPS    Z3, Z29, Z21
	CMPQ      R11, $6
	JNE       si8_heads
	SCORE6VNNI
	JMP si8_next

si8_heads:
	MOVQ      SI, R13
	MOVQ      R9, R14
	MOVQ      DI, DX
	MOVQ      R11, AX

si8_head:
	SCORE1VNNI
	ADDQ   $256, R13
	ADDQ   $128, R14
	ADDQ   R8, DX
	DECQ   AX
	JNZ    si8_head

si8_next:
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
	PREFETCHT0 1024(BX) // the rows eight ahead and their scales, as scoreInt8AVX512
	PREFETCHT0 1088(BX)
	PREFETCHT0 128(R12)
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
	CMPQ      R11, $6
	JNE       sq4_heads
	SCORE6VNNI
	JMP sq4_next

sq4_heads:
	MOVQ      SI, R13
	MOVQ      R9, R14
	MOVQ      DI, DX
	MOVQ      R11, AX

sq4_head:
	SCORE1VNNI
	ADDQ   $256, R13
	ADDQ   $128, R14
	ADDQ   R8, DX
	DECQ   AX
	JNZ    sq4_head

sq4_next:
	ADDQ $4, DI
	ADDQ $128, BX
	ADDQ $16, R12
	DECQ CX
	JNZ  sq4_pos
	VZEROUPPER
	RET

// The AVX2 kernels sum a head's sixteen lanes in hsum16's order eight keys at a time:
// each head's halves are added (VADDPS, its first level) and kept in a slot of the
// frame, head h's for key j at SLOTS + 256h + 32j, and after the eighth key (or the
// last) every head's eight slots are reduced together, the quarters of two keys a
// vector, then the pairs of four, then the last level of all eight, which leaves the
// eight scores in order for one store. Reducing each key's heads as it was scored
// left most lanes idle and its chain of shuffles and adds on the kernel's path
// (2-core Zen 3 VM, BenchmarkKernels/score, six heads × 64 keys in L1). The frame:
// 0…383 the key's own data, the slots (six heads), the heads left after this group of
// up to six and the group's own count.
#define SLOTS 384
#define HLEFT 1920
#define HCOUNT 1928

// Lane numbers, for the mask of a last batch of fewer than eight keys.
DATA hlanes<>+0(SB)/8, $0x0000000100000000
DATA hlanes<>+8(SB)/8, $0x0000000300000002
DATA hlanes<>+16(SB)/8, $0x0000000500000004
DATA hlanes<>+24(SB)/8, $0x0000000700000006
GLOBL hlanes<>(SB), RODATA|NOPTR, $32

// HGROUPSTART takes the next group of up to six heads: HCOUNT of them, HLEFT after.
#define HGROUPSTART \
	MOVQ    HLEFT(SP), AX \
	MOVQ    $6, R11 \
	CMPQ    AX, R11 \
	CMOVQLT AX, R11 \
	SUBQ    R11, AX \
	MOVQ    AX, HLEFT(SP) \
	MOVQ    R11, HCOUNT(SP)

// HKEYS starts a pass of scoreInt8AVX2 or scoreQ4AVX2 over the keys: BX the codes, R12
// the scales, CX the count, DX the output column of the first batch, R10 the keys in it.
// vet does not look inside macros: TestScoreKernels checks its frame offsets.
#define HKEYS \
	MOVQ k_base+112(FP), BX \
	MOVQ ks_base+136(FP), R12 \
	MOVQ n+160(FP), CX \
	MOVQ DI, DX \
	XORQ R10, R10

// HGROUPNEXT moves the queries (SI codes, R9 scales) and the output (DI) past the
// group's heads and sets the flags for HLEFT ≠ 0.
#define HGROUPNEXT \
	MOVQ  HCOUNT(SP), AX \
	MOVQ  AX, R11 \
	SHLQ  $8, R11 \
	ADDQ  R11, SI \
	MOVQ  AX, R11 \
	SHLQ  $7, R11 \
	ADDQ  R11, R9 \
	IMULQ R8, AX \
	ADDQ  AX, DI \
	CMPQ  HLEFT(SP), $0

// HSLOTFIRST points R15 at head 0's slot for key R10 of the batch.
#define HSLOTFIRST \
	MOVQ R10, R15 \
	SHLQ $5, R15 \
	LEAQ SLOTS(SP)(R15*1), R15

// HSLOT adds the halves of the head in Y0 and Y5 and stores them at (R15), then moves
// R15 to the next head's slot for the same key.
#define HSLOT \
	VADDPS  Y5, Y0, Y0 \
	VMOVUPS Y0, (R15) \
	ADDQ    $256, R15

// HQUART(j, d): Yd ← the quarters of keys j and j+4 of the head at R15 (key j's in
// lanes 0…3): lane i of each plus its lane i+4. Clobbers Y1…Y3.
#define HQUART(j, d) \
	VMOVUPS    (32*j)(R15), Y1 \
	VPERM2F128 $0x20, (32*j+128)(R15), Y1, Y2 \
	VPERM2F128 $0x31, (32*j+128)(R15), Y1, Y3 \
	VADDPS     Y3, Y2, d

// HRED8 leaves in Y0 the eight scores of the head whose slots are at R15, key j in
// lane j: the quarters (HQUART: keys 0|4, 1|5, 2|6, 3|7), then per key its pairs
// (lanes 0+2 and 1+3, two keys a 128-bit lane), then their sum. Clobbers Y1…Y6.
#define HRED8 \
	HQUART(0, Y0) \
	HQUART(1, Y4) \
	HQUART(2, Y5) \
	HQUART(3, Y6) \
	VSHUFPS $0x44, Y4, Y0, Y1 \
	VSHUFPS $0xee, Y4, Y0, Y2 \
	VADDPS  Y2, Y1, Y0 \
	VSHUFPS $0x44, Y6, Y5, Y1 \
	VSHUFPS $0xee, Y6, Y5, Y2 \
	VADDPS  Y2, Y1, Y4 \
	VSHUFPS $0x88, Y4, Y0, Y1 \
	VSHUFPS $0xdd, Y4, Y0, Y2 \
	VADDPS  Y2, Y1, Y0

// HREDUCE8 reduces the batch of R10 keys (1…8) of the group's HCOUNT heads and
// stores head h's scores at DX + h·R8 (a batch of fewer keys under a mask in Y8: no
// byte past them is written), then moves DX past the batch and clears R10. Clobbers
// AX, R11, R15, Y0…Y6 and Y8. Its labels are the function's: one HREDUCE8 a kernel.
#define HREDUCE8 \
	LEAQ         SLOTS(SP), R15 \
	MOVQ         DX, R11 \
	MOVQ         HCOUNT(SP), AX \
	CMPQ         R10, $8 \
	JEQ          hr_head \
	VMOVQ        R10, X8 \
	VPBROADCASTD X8, Y8 \
	VPCMPGTD     hlanes<>(SB), Y8, Y8 \
hr_head: \
	HRED8 \
	CMPQ         R10, $8 \
	JNE          hr_part \
	VMOVUPS      Y0, (R11) \
	JMP          hr_next \
hr_part: \
	VMASKMOVPS   Y0, Y8, (R11) \
hr_next: \
	ADDQ         $256, R15 \
	ADDQ         R8, R11 \
	DECQ         AX \
	JNZ          hr_head \
	LEAQ         (DX)(R10*4), DX \
	XORQ         R10, R10

// SI8APAIR regroups blocks 2k and 2k+1 of the key row at BX (their bytes at lo and
// hi) into their first sixteen codes side by side and their second, kept at the same
// offsets on the stack (their signs) and as magnitudes in alo and ahi; their scales (at
// s0 and s1 past R12) broadcast four lanes each at sc on the stack.
#define SI8APAIR(lo, hi, alo, ahi, s0, s1, sc) \
	VMOVDQU      lo(BX), Y2 \
	VMOVDQU      hi(BX), Y3 \
	VPERM2I128   $0x20, Y3, Y2, Y4 \
	VPERM2I128   $0x31, Y3, Y2, Y5 \
	VMOVDQU      Y4, lo(SP) \
	VMOVDQU      Y5, hi(SP) \
	VPABSB       Y4, alo \
	VPABSB       Y5, ahi \
	VBROADCASTSS s0(R12), X2 \
	VBROADCASTSS s1(R12), X3 \
	VINSERTF128  $1, X3, Y2, Y2 \
	VMOVUPS      Y2, sc(SP)

// SI8AHALF adds a half vector's eight lanes to acc: the query codes at qlo and qhi past
// R13 against the regrouped keys (signs at slo and shi on the stack, magnitudes klo and
// khi), each lane's J scaled by the query's lanes at sq past R14 and the keys' at sc.
#define SI8AHALF(qlo, qhi, slo, shi, klo, khi, sq, sc, acc) \
	VMOVDQU     qlo(R13), Y1 \
	VPSIGNB     slo(SP), Y1, Y1 \
	VPMADDUBSW  Y1, klo, Y1 \
	VPMADDWD    Y7, Y1, Y1 \
	VMOVDQU     qhi(R13), Y2 \
	VPSIGNB     shi(SP), Y2, Y2 \
	VPMADDUBSW  Y2, khi, Y2 \
	VPMADDWD    Y7, Y2, Y2 \
	VPADDD      Y2, Y1, Y1 \
	VCVTDQ2PS   Y1, Y1 \
	VMULPS      sq(R14), Y1, Y1 \
	VMULPS      sc(SP), Y1, Y1 \
	VADDPS      Y1, acc, acc

// func scoreInt8AVX2(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)
//
// Half h of vector v (lanes 8h…8h+7) takes blocks 2k and 2k+1, k = 2v + h: their first
// sixteen codes side by side (VPERM2I128), then their second. VPMADDUBSW takes |k|
// unsigned and q with k's sign, whose pair sums stay within int16 (2·127² < 2¹⁵, the
// codes never −128), each widened by VPMADDWD before the two are added, so no correction
// is needed. The regrouped keys' magnitudes stay in Y8…Y15; the keys themselves (their
// signs) and the pairs' scale lanes on the stack (0…383), the heads' half sums in their
// slots (SLOTS, HREDUCE8). The frame is larger than a NOSPLIT function may take.
TEXT ·scoreInt8AVX2(SB), 0, $1936-176
	MOVQ out_base+0(FP), DI
	MOVQ os+24(FP), R8
	SHLQ $2, R8
	MOVQ codes_base+32(FP), SI
	MOVQ sq_base+56(FP), R9
	MOVQ rep+104(FP), AX
	MOVQ AX, HLEFT(SP)
	MOVL $0x00010001, AX
	VMOVQ AX, X7
	VPBROADCASTD X7, Y7

si8a_group:
	HGROUPSTART
	HKEYS

si8a_pos:
	PREFETCHT0 2048(BX) // as scoreInt8AVX512
	PREFETCHT0 2112(BX)
	PREFETCHT0 2176(BX)
	PREFETCHT0 2240(BX)
	PREFETCHT0 256(R12)
	SI8APAIR(0, 32, Y8, Y9, 0, 4, 256)
	SI8APAIR(64, 96, Y10, Y11, 8, 12, 288)
	SI8APAIR(128, 160, Y12, Y13, 16, 20, 320)
	SI8APAIR(192, 224, Y14, Y15, 24, 28, 352)
	MOVQ SI, R13
	MOVQ R9, R14
	HSLOTFIRST
	MOVQ HCOUNT(SP), AX

si8a_head:
	VXORPS Y0, Y0, Y0
	VXORPS Y5, Y5, Y5
	SI8AHALF(0, 64, 0, 32, Y8, Y9, 0, 256, Y0)
	SI8AHALF(32, 96, 64, 96, Y10, Y11, 32, 288, Y5)
	SI8AHALF(128, 192, 128, 160, Y12, Y13, 64, 320, Y0)
	SI8AHALF(160, 224, 192, 224, Y14, Y15, 96, 352, Y5)
	HSLOT
	ADDQ $256, R13
	ADDQ $128, R14
	DECQ AX
	JNZ  si8a_head

	ADDQ $256, BX
	ADDQ $32, R12
	INCQ R10
	DECQ CX
	JZ   si8a_reduce
	CMPQ R10, $8
	JNE  si8a_pos

si8a_reduce:
	HREDUCE8
	TESTQ CX, CX
	JNZ   si8a_pos
	HGROUPNEXT
	JNZ   si8a_group
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
// within int16. The nibbles stay in Y8…Y15, the scale lanes on the stack (0…127), the
// heads' half sums in their slots (SLOTS, HREDUCE8).
TEXT ·scoreQ4AVX2(SB), 0, $1936-176
	MOVQ out_base+0(FP), DI
	MOVQ os+24(FP), R8
	SHLQ $2, R8
	MOVQ codes_base+32(FP), SI
	MOVQ sq_base+56(FP), R9
	MOVQ rep+104(FP), AX
	MOVQ AX, HLEFT(SP)

sq4a_group:
	HGROUPSTART
	HKEYS

sq4a_pos:
	MOVL         $0x0f0f0f0f, AX
	VMOVQ         AX, X6
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
	VMOVQ      AX, X4
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
	VMOVQ         AX, X7
	VPBROADCASTD X7, Y7
	MOVQ         SI, R13
	MOVQ         R9, R14
	MOVQ         corr_base+80(FP), R11 // R14 + R11: the head's corrections
	SUBQ         sq_base+56(FP), R11
	HSLOTFIRST
	MOVQ         HCOUNT(SP), AX

sq4a_head:
	VXORPS Y0, Y0, Y0
	VXORPS Y5, Y5, Y5
	VPMADDUBSW 0(R13), Y8, Y1
	VPMADDUBSW 64(R13), Y9, Y2
	VPADDW     Y2, Y1, Y1
	VPMADDWD   Y7, Y1, Y1
	VPADDD     0(R14)(R11*1), Y1, Y1
	VCVTDQ2PS  Y1, Y1
	VMULPS     0(R14), Y1, Y1
	VMULPS     0(SP), Y1, Y1
	VADDPS     Y1, Y0, Y0
	VPMADDUBSW 32(R13), Y10, Y1
	VPMADDUBSW 96(R13), Y11, Y2
	VPADDW     Y2, Y1, Y1
	VPMADDWD   Y7, Y1, Y1
	VPADDD     32(R14)(R11*1), Y1, Y1
	VCVTDQ2PS  Y1, Y1
	VMULPS     32(R14), Y1, Y1
	VMULPS     32(SP), Y1, Y1
	VADDPS     Y1, Y5, Y5
	VPMADDUBSW 128(R13), Y12, Y1
	VPMADDUBSW 192(R13), Y13, Y2
	VPADDW     Y2, Y1, Y1
	VPMADDWD   Y7, Y1, Y1
	VPADDD     64(R14)(R11*1), Y1, Y1
	VCVTDQ2PS  Y1, Y1
	VMULPS     64(R14), Y1, Y1
	VMULPS     64(SP), Y1, Y1
	VADDPS     Y1, Y0, Y0
	VPMADDUBSW 160(R13), Y14, Y1
	VPMADDUBSW 224(R13), Y15, Y2
	VPADDW     Y2, Y1, Y1
	VPMADDWD   Y7, Y1, Y1
	VPADDD     96(R14)(R11*1), Y1, Y1
	VCVTDQ2PS  Y1, Y1
	VMULPS     96(R14), Y1, Y1
	VMULPS     96(SP), Y1, Y1
	VADDPS     Y1, Y5, Y5
	HSLOT
	ADDQ $256, R13
	ADDQ $128, R14
	DECQ AX
	JNZ  sq4a_head

	ADDQ $128, BX
	ADDQ $16, R12
	INCQ R10
	DECQ CX
	JZ   sq4a_reduce
	CMPQ R10, $8
	JNE  sq4a_pos

sq4a_reduce:
	HREDUCE8
	TESTQ CX, CX
	JNZ   sq4a_pos
	HGROUPNEXT
	JNZ   sq4a_group
	VZEROUPPER
	RET

// func axpy6Int8AVX512(acc []float32, w []float32, ws int, v []int8, vs []float32, n, d int)
//
// axpy6F32AVX512 over int8 value rows as they lie (d codes and d/32 float scales a row,
// one block a chunk): each value code·s rounded once, as dequantInt8 forms it, so that
// the sums are axpy6F32AVX512's bits on the decoded rows.
TEXT ·axpy6Int8AVX512(SB), NOSPLIT, $0-120
	AXPY6C_ARGS(5, ax8_done)

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
	// The same columns of the next n rows (the next tile's, in decode): into L1 by
	// the time they are read.
	PREFETCHT0   (SI)(R15*1)
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

// func axpy6Int8AVX2(acc []float32, w []float32, ws int, v []int8, vs []float32, n, d int)
//
// axpy6Int8AVX512 with 8-float vectors, in axpy6F32AVX2's order: 16 columns of the six
// rows in 12 accumulators, two chunks a block of 32; each value code·s rounded once, as
// dequantInt8AVX2 forms it, so that the sums are axpy6F32AVX2's bits on the decoded
// rows, without storing the decoded rows and loading them back. Every register is in
// use: Y12, Y13 the values, Y14 a weight, Y15 the block's scale.
TEXT ·axpy6Int8AVX2(SB), NOSPLIT, $0-120
	AXPY6C_ARGS(4, ax8y_done)

ax8y_chunk:
	AXPY6Y_LOAD
	MOVQ    R12, R9
	LEAQ    (R12)(BX*2), R10
	ADDQ    BX, R10
	MOVQ    R13, SI
	MOVQ    d+112(FP), DX // the chunk's block b = (d/16 − R14)/2, its scale at vs + b
	SHRQ    $4, DX
	SUBQ    R14, DX
	SHRQ    $1, DX
	SHLQ    $2, DX
	ADDQ    vs_base+80(FP), DX
	MOVQ    d+112(FP), AX // the rows' strides: codes, then scales
	MOVQ    AX, R11
	SHRQ    $3, R11
	MOVQ    n+104(FP), CX

ax8y_p:
	PREFETCHT0   (SI)(R15*1) // the next tile's, as axpy6Int8AVX512
	VPMOVSXBD    (SI), Y12
	VPMOVSXBD    8(SI), Y13
	VCVTDQ2PS    Y12, Y12
	VCVTDQ2PS    Y13, Y13
	VBROADCASTSS (DX), Y15
	VMULPS       Y15, Y12, Y12
	VMULPS       Y15, Y13, Y13
	AXPY6Y_FMA(Y12, Y13)
	ADDQ         $4, R9
	ADDQ         $4, R10
	ADDQ         AX, SI
	ADDQ         R11, DX
	DECQ         CX
	JNZ          ax8y_p

	AXPY6Y_STORE
	ADDQ    $64, DI
	ADDQ    $16, R13
	DECQ    R14
	JNZ     ax8y_chunk

ax8y_done:
	VZEROUPPER
	RET

// func axpy6Q4AVX2(acc []float32, w []float32, ws int, v []byte, vs []float32, n, d int)
//
// axpy6Int8AVX2 over q4 value rows as they lie (16 code bytes a block of 32 values, the
// scales already widened to float32, exactly): a block's first 16 columns are its bytes'
// low nibbles, its last 16 their high ones, one chunk each; each value (code − 8)·s, an
// exact product as dequantQ4's, so that the sums are axpy6F32AVX2's bits on the decoded
// rows. A position's 16 code bytes are widened to dwords straight from memory (two
// VPMOVZXBD) and each dword's nibble taken there (AND 15, or shift right by 4): one
// shuffle µop per 8 values where a 16-byte load, its nibbles and then VPSRLDQ and two
// VPMOVZXBD from registers took three, on the pipes the FMAs share (2-core Zen 3 VM,
// BenchmarkKernels/axpy6Q4, six heads × 64 × 256 in L1, nine alternated runs: min 3600
// → 2889 ns, median 3947 → 3122). The dword mask and the 8 are memory operands: the 16
// registers are in use.
#define AX4Y_POS(NIB) \
	PREFETCHT0   (SI)(R15*1); \
	VPMOVZXBD    (SI), Y12; \
	VPMOVZXBD    8(SI), Y13; \
	NIB(Y12); \
	NIB(Y13); \
	VPSUBD       q4yeight<>(SB), Y12, Y12; \
	VPSUBD       q4yeight<>(SB), Y13, Y13; \
	VCVTDQ2PS    Y12, Y12; \
	VCVTDQ2PS    Y13, Y13; \
	VBROADCASTSS (DX), Y15; \
	VMULPS       Y15, Y12, Y12; \
	VMULPS       Y15, Y13, Y13; \
	AXPY6Y_FMA(Y12, Y13); \
	ADDQ         $4, R9; \
	ADDQ         $4, R10; \
	ADDQ         AX, SI; \
	ADDQ         R11, DX

#define AX4Y_LO(y) VPAND q4ydnib<>(SB), y, y
#define AX4Y_HI(y) VPSRLD $4, y, y

TEXT ·axpy6Q4AVX2(SB), NOSPLIT, $0-120
	AXPY6C_ARGS(4, ax4y_done)
	SHRQ $1, R15 // n rows of q4 codes

ax4y_chunk:
	AXPY6Y_LOAD
	MOVQ    R12, R9
	LEAQ    (R12)(BX*2), R10
	ADDQ    BX, R10
	MOVQ    R13, SI
	MOVQ    d+112(FP), AX // the rows' strides: codes, then scales
	MOVQ    AX, R11
	SHRQ    $1, AX
	SHRQ    $3, R11
	MOVQ    d+112(FP), DX // the chunk j = d/16 − R14: block j/2, its scale at vs + j/2
	SHRQ    $4, DX
	SUBQ    R14, DX
	MOVQ    vs_base+80(FP), CX
	SHRQ    $1, DX // CF: j odd, the block's high nibbles (MOVQ and LEAQ keep the flags)
	LEAQ    (CX)(DX*4), DX
	MOVQ    n+104(FP), CX
	JCS     ax4y_hi

ax4y_lo:
	AX4Y_POS(AX4Y_LO)
	DECQ CX
	JNZ  ax4y_lo
	JMP  ax4y_store

ax4y_hi:
	AX4Y_POS(AX4Y_HI)
	DECQ CX
	JNZ  ax4y_hi
	ADDQ $16, R13 // the next block's bytes

ax4y_store:
	AXPY6Y_STORE
	ADDQ    $64, DI
	DECQ    R14
	JNZ     ax4y_chunk

ax4y_done:
	VZEROUPPER
	RET

// q4ydnib<> is the int32 15, q4yeight<> the int32 8.
DATA q4yeight<>+0(SB)/8, $0x0000000800000008
DATA q4yeight<>+8(SB)/8, $0x0000000800000008
DATA q4yeight<>+16(SB)/8, $0x0000000800000008
DATA q4yeight<>+24(SB)/8, $0x0000000800000008
GLOBL q4yeight<>(SB), RODATA|NOPTR, $32
DATA q4ydnib<>+0(SB)/8, $0x0000000f0000000f
DATA q4ydnib<>+8(SB)/8, $0x0000000f0000000f
DATA q4ydnib<>+16(SB)/8, $0x0000000f0000000f
DATA q4ydnib<>+24(SB)/8, $0x0000000f0000000f
GLOBL q4ydnib<>(SB), RODATA|NOPTR, $32

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

// func axpy6Q4AVX512(acc []float32, w []float32, ws int, v []byte, vs []float32, n, d int)
//
// axpy6F32AVX512 over q4 value rows as they lie (16 code bytes a block of 32 values, one
// block a chunk; the scales already widened to float32, exactly): each value (code − 8)·s looked up by VPERMPS (which
// reads an index's low four bits, so the low nibble needs no mask) in the block's table
// s·(−8…7), whose products are exact, as dequantQ4's, so that the sums are
// axpy6F32AVX512's bits on the decoded rows.
TEXT ·axpy6Q4AVX512(SB), NOSPLIT, $0-120
	AXPY6C_ARGS(5, ax4_done)
	SHRQ $1, R15 // n rows of q4 codes
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
	SHLQ    $2, DX
	ADDQ    vs_base+80(FP), DX
	MOVQ    d+112(FP), AX // the rows' strides: codes, then scales
	MOVQ    AX, R11
	SHRQ    $1, AX
	SHRQ    $3, R11
	MOVQ    n+104(FP), CX

ax4_p:
	PREFETCHT0   (SI)(R15*1) // the next tile's, as axpy6Int8AVX512
	VPMOVZXBD    (SI), Z12
	VPSRLD       $4, Z12, Z13
	VMULPS.BCST  (DX), Z22, Z20
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
