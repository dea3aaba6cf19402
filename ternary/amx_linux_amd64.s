//go:build linux && amd64 && !purego

#include "textflag.h"
#include "interleave_amd64.h"

// Intel AMX (Sapphire Rapids and later Xeons) for the batched products over both
// interleaved layouts: see amx_linux_amd64.go. The assembler knows no AMX instruction;
// these are their encodings (from LLVM's llvm-mc; TestAMXEncoding decodes the kernels
// with binutils' objdump) with the registers the kernels fix.

// LDTILECFG (AX); TILERELEASE; TILEZERO tmm0…tmm4.
#define LDTILECFG_AX BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00
#define TILERELEASE BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0
#define TILEZERO0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0
#define TILEZERO1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8
#define TILEZERO2 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0
#define TILEZERO3 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8
#define TILEZERO4 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xe0

// TILELOADD (SI)(DX*1), tmm4 and 64(SI)(DX*1), tmm5: the block's two activation chunks.
#define TILELOAD_A0 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x16
#define TILELOAD_A1 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x6c; BYTE $0x16; BYTE $0x40
// TILELOADD (SI)(DX*1), tmm5: the base-3 kernel's chunk 0 (chunk 1 is TILELOAD_A1).
#define TILELOAD_A0_5 BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x16

// TILELOADD off(R8)(BX*1), tmm6 (B0) and tmm7 (B1), off a 32-bit displacement.
#define TILELOAD_B0(off) BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0xb4; BYTE $0x18; LONG $(off)
#define TILELOAD_B1(off) BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0xbc; BYTE $0x18; LONG $(off)

// TDPBSSD tmmN += tmmA·tmmB: signed activations (A, tmm4 or tmm5) by signed weights
// (B, tmm6 or tmm7); vvvv is B (0x4b for tmm6, 0x43 for tmm7), ModRM 0xc0 | N<<3 | A.
#define TDP(vvvv, modrm) BYTE $0xc4; BYTE $0xe2; BYTE $(vvvv); BYTE $0x5e; BYTE $(modrm)

// AMXHALF accumulates chunk c's products of row groups j and j+1 (rows 16j…16j+31)
// into tmm j and tmm j+1: their weight tiles (at 2048j+1024c and 2048j+2048+1024c of
// the unpacked block at R8) by chunk c's activations (tmm4+c), two independent TDPBSSD.
#define AMXHALF(j, c) \
	TILELOAD_B0(2048*j+1024*c); \
	TILELOAD_B1(2048*j+2048+1024*c); \
	TDP(0x4b, 0xc4+8*j+c); \
	TDP(0x43, 0xcc+8*j+c)

// AMXSTART clears the C tiles and loads the block's two activation chunks (SI).
#define AMXSTART \
	TILEZERO0; \
	TILEZERO1; \
	TILEZERO2; \
	TILEZERO3; \
	TILELOAD_A0; \
	TILELOAD_A1

// TILESTORED tmmN, (R9)(R11*1) (ModRM 0x04 | N<<3).
#define TILESTORE_R9(modrm) BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $(modrm); BYTE $0x19

// AMXLANE folds block 8g+l of a (vector, row group): its weight scales (W, 320·l(BX))
// times the vector's D (4·l(DX)), one VMULPS as ILVFOLD1's, and one FMA of its integers
// (64·l(AX)) into lane l (Zl).
#define AMXLANE(l, Zl) \
	VMOVUPS (320*(l))(BX), Z0; \
	VMULPS.BCST (4*(l))(DX), Z0, Z0; \
	VCVTDQ2PS (64*(l))(AX), Z1; \
	VFMADD231PS Z1, Z0, Zl

// AMXPROLOGUE configures the tiles and loads amxProducts' and amx3Products' registers:
// SI the block's activations (vector s at s·DX), R8 its weight tiles, CX the blocks
// left, R14 the block's integers' place in the scratch (R11 between vectors, R12
// between row groups), BX the weight tiles' row stride.
#define AMXPROLOGUE \
	MOVQ a+0(FP), DI; \
	MOVQ 72(DI), AX; \
	LDTILECFG_AX; \
	MOVQ 0(DI), SI; \
	MOVQ 8(DI), DX; \
	MOVQ 16(DI), R8; \
	MOVQ 32(DI), CX; \
	SHLQ $3, CX; \
	MOVQ CX, R11; \
	SHLQ $6, R11; \
	MOVQ R11, R12; \
	SHLQ $4, R12; \
	MOVQ 56(DI), R14; \
	MOVQ $64, BX

// func amxProducts(a *amxArgs)
//
// The block integers of one 64-row tile for 16 vectors: for each block, TILEZERO the
// four C tiles (16 vectors × 16 rows, row group j in tmm j), two activation chunks
// (tmm4, tmm5: 16 vectors × 64 bytes), the eight weight tiles two at a time (tmm6,
// tmm7), eight TDPBSSD, and the C tiles stored into the integers' scratch, laid out so
// that each (vector, row group)'s blocks follow one another: row group j of vector s,
// block b at 16·nb·64·j + nb·64·s + 64·b (amxFold then reads them).
//
// The products and the fold run one after the other, and not the fold of a block
// between the products of the next, because the two would not overlap: with the eight
// lanes kept in memory a block's fold stores 64 accumulators, and the tile loads that
// follow waited on them (BenchmarkAMXKernel: products alone and fold alone added up to
// the whole, 0.7× this design's rate).
TEXT ·amxProducts(SB), NOSPLIT, $0-8
	AMXPROLOGUE

	// The products. SI: the block's activations (vector s at s·DX); R8: its weight
	// tiles; R14: its integers' place in the scratch (R9 running over the row groups).
amxmul:
	AMXSTART
	AMXHALF(0, 0)
	AMXHALF(0, 1)
	AMXHALF(2, 0)
	AMXHALF(2, 1)
	MOVQ R14, R9
	TILESTORE_R9(0x04)
	ADDQ R12, R9
	TILESTORE_R9(0x0c)
	ADDQ R12, R9
	TILESTORE_R9(0x14)
	ADDQ R12, R9
	TILESTORE_R9(0x1c)
	ADDQ $128, SI
	ADDQ $8192, R8
	ADDQ $64, R14
	DECQ CX
	JNZ amxmul
	TILERELEASE
	RET

// AMX3HALF accumulates chunk c's products of row groups j and j+1 into tmm j and
// tmm j+1: their weight tiles (2048j+1024c and 2048j+2048+1024c of the unpacked block
// at R8) by the chunk's activations in tmm5.
#define AMX3HALF(j, c) \
	TILELOAD_B0(2048*(j)+1024*(c)); \
	TILELOAD_B1(2048*(j)+2048+1024*(c)); \
	TDP(0x4b, 0xc5+8*(j)); \
	TDP(0x43, 0xcd+8*(j))

// AMX3CHUNK accumulates chunk c's products of the five row groups.
#define AMX3CHUNK(c) \
	AMX3HALF(0, c); \
	AMX3HALF(2, c); \
	TILELOAD_B0(8192+1024*(c)); \
	TDP(0x4b, 0xe5)

// func amx3Products(a *amxArgs)
//
// amxProducts for PTQ1_0's 80-row tiles: five C tiles (tmm0…tmm4), so one activation
// chunk at a time (tmm5) and the two weight tiles (tmm6, tmm7); ten TDPBSSD a block.
// The weight tiles are amx3Unpack's, 10240 bytes a block.
TEXT ·amx3Products(SB), NOSPLIT, $0-8
	AMXPROLOGUE
amx3mul:
	TILEZERO0
	TILEZERO1
	TILEZERO2
	TILEZERO3
	TILEZERO4
	TILELOAD_A0_5
	AMX3CHUNK(0)
	TILELOAD_A1
	AMX3CHUNK(1)
	MOVQ R14, R9
	TILESTORE_R9(0x04)
	ADDQ R12, R9
	TILESTORE_R9(0x0c)
	ADDQ R12, R9
	TILESTORE_R9(0x14)
	ADDQ R12, R9
	TILESTORE_R9(0x1c)
	ADDQ R12, R9
	TILESTORE_R9(0x24)
	ADDQ $128, SI
	ADDQ $10240, R8
	ADDQ $64, R14
	DECQ CX
	JNZ amx3mul
	TILERELEASE
	RET

// func amxFold(a *amxArgs)
//
// Folds the block integers amxProducts or amx3Products stored: for each (vector, row
// group), its eight lanes held in Z8…Z15 over the blocks, each block's integers scaled
// and added as ilvTilesVNNI (ilv3TilesVNNI) adds them (lane b mod 8), and the lane tree.
//
// Registers: R14 vector s's row group 0 in the scratch (R9 its row group j, R12
// between row groups, R11 between vectors); R10 its D (R13 between vectors); R8 row
// group j's weight scales (float32, 320 bytes a block); SI the output. Per (vector, row
// group): AX, BX, DX its integers, scales and D of the group of 8 blocks, CX the groups
// left; the row groups left on the stack.
TEXT ·amxFold(SB), NOSPLIT, $8-8
	MOVQ a+0(FP), DI
	MOVQ 32(DI), R11
	SHLQ $9, R11 // nb·64 = nb8·512
	MOVQ R11, R12
	SHLQ $4, R12
	MOVQ 56(DI), R14
	MOVQ 40(DI), R10
	MOVQ 48(DI), R13
	MOVQ 24(DI), R8
	MOVQ 64(DI), SI
	MOVQ $16, DI
amxvec:
	MOVQ R14, R9
	MOVQ a+0(FP), AX
	MOVQ 96(AX), AX
	MOVQ AX, left-8(SP)
amxgroup:
	// The lanes: zero on a range's first call, else as the previous call left them in
	// the lanes' scratch, at 8·(SI − y) (512 bytes a vector and row group).
	MOVQ a+0(FP), CX
	MOVQ SI, BX
	SUBQ 64(CX), BX
	SHLQ $3, BX
	ADDQ 80(CX), BX
	TESTQ $1, 88(CX)
	JZ amxload
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	JMP amxlanes0
amxload:
	VMOVUPS 0(BX), Z8
	VMOVUPS 64(BX), Z9
	VMOVUPS 128(BX), Z10
	VMOVUPS 192(BX), Z11
	VMOVUPS 256(BX), Z12
	VMOVUPS 320(BX), Z13
	VMOVUPS 384(BX), Z14
	VMOVUPS 448(BX), Z15
amxlanes0:
	MOVQ R9, AX
	MOVQ R8, BX
	MOVQ R10, DX
	MOVQ a+0(FP), CX
	MOVQ 32(CX), CX
amxlanes:
	AMXLANE(0, Z8)
	AMXLANE(1, Z9)
	AMXLANE(2, Z10)
	AMXLANE(3, Z11)
	AMXLANE(4, Z12)
	AMXLANE(5, Z13)
	AMXLANE(6, Z14)
	AMXLANE(7, Z15)
	ADDQ $512, AX
	ADDQ $2560, BX
	ADDQ $32, DX
	DECQ CX
	JNZ amxlanes
	MOVQ a+0(FP), CX
	TESTQ $2, 88(CX)
	JNZ amxtree
	// Not the range's last call: keep the lanes.
	MOVQ SI, BX
	SUBQ 64(CX), BX
	SHLQ $3, BX
	ADDQ 80(CX), BX
	VMOVUPS Z8, 0(BX)
	VMOVUPS Z9, 64(BX)
	VMOVUPS Z10, 128(BX)
	VMOVUPS Z11, 192(BX)
	VMOVUPS Z12, 256(BX)
	VMOVUPS Z13, 320(BX)
	VMOVUPS Z14, 384(BX)
	VMOVUPS Z15, 448(BX)
	JMP amxnextgroup
amxtree:
	// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), as LANETREE.
	VADDPS Z12, Z8, Z8
	VADDPS Z14, Z10, Z10
	VADDPS Z10, Z8, Z8
	VADDPS Z13, Z9, Z9
	VADDPS Z15, Z11, Z11
	VADDPS Z11, Z9, Z9
	VADDPS Z9, Z8, Z8
	VMOVUPS Z8, (SI)
amxnextgroup:
	ADDQ $64, SI
	ADDQ R12, R9
	ADDQ $64, R8
	DECQ left-8(SP)
	JNZ amxgroup
	MOVQ a+0(FP), AX
	MOVQ 96(AX), AX
	SHLQ $6, AX
	SUBQ AX, R8
	ADDQ R11, R14
	ADDQ R13, R10
	DECQ DI
	JNZ amxvec
	VZEROUPPER
	RET

// func amxUnpack(w *byte, nb int, dst *byte, wf *float32)
//
// Writes the weight tiles of nb blocks of an interleaved tile (w, 2176 bytes a block) at
// dst, 8192 bytes a block: row group j's weights, ((c >> 2j) & 3) − 1 of every code
// byte c (−1, 0, 1, and 2 for code 3, as every kernel reads it), at 2048j, in the code
// bytes' order (so chunk 0, the block's first 1024 code bytes, at 2048j and chunk 1 at
// 2048j + 1024, each TDPBSSD's B tile: 16 rows of 64 bytes, row r the four columns
// 4r…4r+3 of rows L = 0…15); and the blocks' 64 row scales as float32 at wf, 320 bytes
// a block (amxFold's stride for both layouts).
TEXT ·amxUnpack(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ dst+16(FP), DI
	MOVQ wf+24(FP), R8
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z31
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z30
amxublock:
	VCVTPH2PS 0(SI), Z0
	VCVTPH2PS 32(SI), Z1
	VCVTPH2PS 64(SI), Z2
	VCVTPH2PS 96(SI), Z3
	VMOVUPS Z0, 0(R8)
	VMOVUPS Z1, 64(R8)
	VMOVUPS Z2, 128(R8)
	VMOVUPS Z3, 192(R8)
	MOVQ $0, DX
amxustep:
	VMOVDQU64 128(SI)(DX*1), Z0
	VPSRLW $2, Z0, Z1
	VPSRLW $4, Z0, Z2
	VPSRLW $6, Z0, Z3
	VPANDQ Z31, Z0, Z0
	VPANDQ Z31, Z1, Z1
	VPANDQ Z31, Z2, Z2
	VPANDQ Z31, Z3, Z3
	VPSUBB Z30, Z0, Z0
	VPSUBB Z30, Z1, Z1
	VPSUBB Z30, Z2, Z2
	VPSUBB Z30, Z3, Z3
	VMOVDQU64 Z0, (DI)(DX*1)
	VMOVDQU64 Z1, 2048(DI)(DX*1)
	VMOVDQU64 Z2, 4096(DI)(DX*1)
	VMOVDQU64 Z3, 6144(DI)(DX*1)
	ADDQ $64, DX
	CMPQ DX, $2048
	JNE amxustep
	ADDQ $2176, SI
	ADDQ $8192, DI
	ADDQ $320, R8
	DECQ CX
	JNZ amxublock
	VZEROUPPER
	RET

// AMX3TRIT stores trit g's weights (trit − 1) of the code bytes in Z0 at off(DI), the
// trit being (x ≥ 86) + (x ≥ 171) of x = uint8(c·3^g) (that is (3x) >> 8, as the
// format defines it): 0xff − m₁ − m₂ with the compares' byte masks m.
#define AMX3TRIT(off) \
	VPCMPUB $5, Z29, Z0, K1; \
	VPCMPUB $5, Z27, Z0, K2; \
	VPMOVM2B K1, Z1; \
	VPMOVM2B K2, Z2; \
	VPSUBB Z1, Z28, Z3; \
	VPSUBB Z2, Z3, Z3; \
	VMOVDQU64 Z3, off(DI)(DX*1)

// AMX3TIMES3 sets Z0 to 3·Z0 mod 256 in every byte.
#define AMX3TIMES3 \
	VPADDB Z0, Z0, Z4; \
	VPADDB Z4, Z0, Z0

// func amx3Unpack(w *byte, nb int, dst *byte, wf *float32)
//
// amxUnpack for an Interleaved3 tile (2240 bytes a block): row group g's weights, trit
// g of every code byte less one, at 2048g of the block's 10240 bytes in the code bytes'
// order (chunk c at +1024c), and the blocks' 80 row scales as float32 at wf, 320 bytes
// a block.
TEXT ·amx3Unpack(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ dst+16(FP), DI
	MOVQ wf+24(FP), R8
	MOVL $0x56565656, AX // 86
	VPBROADCASTD AX, Z29
	MOVL $0xabababab, AX // 171
	VPBROADCASTD AX, Z27
	VPTERNLOGD $0xff, Z28, Z28, Z28
amx3ublock:
	VCVTPH2PS 0(SI), Z0
	VCVTPH2PS 32(SI), Z1
	VCVTPH2PS 64(SI), Z2
	VCVTPH2PS 96(SI), Z3
	VCVTPH2PS 128(SI), Z4
	VMOVUPS Z0, 0(R8)
	VMOVUPS Z1, 64(R8)
	VMOVUPS Z2, 128(R8)
	VMOVUPS Z3, 192(R8)
	VMOVUPS Z4, 256(R8)
	MOVQ $0, DX
amx3ustep:
	VMOVDQU64 192(SI)(DX*1), Z0
	AMX3TRIT(0)
	AMX3TIMES3
	AMX3TRIT(2048)
	AMX3TIMES3
	AMX3TRIT(4096)
	AMX3TIMES3
	AMX3TRIT(6144)
	AMX3TIMES3
	AMX3TRIT(8192)
	ADDQ $64, DX
	CMPQ DX, $2048
	JNE amx3ustep
	ADDQ $2240, SI
	ADDQ $10240, DI
	ADDQ $320, R8
	DECQ CX
	JNZ amx3ublock
	VZEROUPPER
	RET
