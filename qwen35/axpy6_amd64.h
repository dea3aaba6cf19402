// The AVX2 axpy6 kernels' shared parts (axpy6F32AVX2, axpy6Int8AVX2, axpy6Q4AVX2): 16
// columns of the six accumulator rows in Y0…Y11 (row r's at Y2r, Y2r+1; rows R8 bytes
// apart from DI), the weights of position p at (R9), (R9)(BX*1), (R9)(BX*2), (R10),
// (R10)(BX*1), (R10)(BX*2), and Y14 the broadcast weight.

// AXPY6Y_LOAD loads the chunk's accumulators (R11 the fourth row).
#define AXPY6Y_LOAD \
	LEAQ    (DI)(R8*2), R11; \
	ADDQ    R8, R11; \
	VMOVUPS (DI), Y0; \
	VMOVUPS 32(DI), Y1; \
	VMOVUPS (DI)(R8*1), Y2; \
	VMOVUPS 32(DI)(R8*1), Y3; \
	VMOVUPS (DI)(R8*2), Y4; \
	VMOVUPS 32(DI)(R8*2), Y5; \
	VMOVUPS (R11), Y6; \
	VMOVUPS 32(R11), Y7; \
	VMOVUPS (R11)(R8*1), Y8; \
	VMOVUPS 32(R11)(R8*1), Y9; \
	VMOVUPS (R11)(R8*2), Y10; \
	VMOVUPS 32(R11)(R8*2), Y11

// AXPY6Y_STORE stores them back (R11 recomputed: the loops may use it).
#define AXPY6Y_STORE \
	LEAQ    (DI)(R8*2), R11; \
	ADDQ    R8, R11; \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, (DI)(R8*1); \
	VMOVUPS Y3, 32(DI)(R8*1); \
	VMOVUPS Y4, (DI)(R8*2); \
	VMOVUPS Y5, 32(DI)(R8*2); \
	VMOVUPS Y6, (R11); \
	VMOVUPS Y7, 32(R11); \
	VMOVUPS Y8, (R11)(R8*1); \
	VMOVUPS Y9, 32(R11)(R8*1); \
	VMOVUPS Y10, (R11)(R8*2); \
	VMOVUPS Y11, 32(R11)(R8*2)

// AXPY6Y_FMA adds the position's six weights times its 16 values (va, vb) into the
// accumulators, row by row.
#define AXPY6Y_FMA(va, vb) \
	VBROADCASTSS (R9), Y14; \
	VFMADD231PS  Y14, va, Y0; \
	VFMADD231PS  Y14, vb, Y1; \
	VBROADCASTSS (R9)(BX*1), Y14; \
	VFMADD231PS  Y14, va, Y2; \
	VFMADD231PS  Y14, vb, Y3; \
	VBROADCASTSS (R9)(BX*2), Y14; \
	VFMADD231PS  Y14, va, Y4; \
	VFMADD231PS  Y14, vb, Y5; \
	VBROADCASTSS (R10), Y14; \
	VFMADD231PS  Y14, va, Y6; \
	VFMADD231PS  Y14, vb, Y7; \
	VBROADCASTSS (R10)(BX*1), Y14; \
	VFMADD231PS  Y14, va, Y8; \
	VFMADD231PS  Y14, vb, Y9; \
	VBROADCASTSS (R10)(BX*2), Y14; \
	VFMADD231PS  Y14, va, Y10; \
	VFMADD231PS  Y14, vb, Y11

// AXPY6C_ARGS loads the arguments of axpy6Int8 and axpy6Q4 (AVX2 and AVX-512): DI
// acc, R12 w, BX ws·4, R13 v, R8 d·4, R14 the chunks of 2^shift columns, R15 n·d (n rows
// of int8 codes past the tile's first: the prefetch distance; q4 halves it); to done
// when there is nothing to do. vet does not look inside macros, so its frame offsets are
// checked by the tests that run each kernel against its generic twin (TestAxpyCodes).
#define AXPY6C_ARGS(shift, done) \
	MOVQ  acc_base+0(FP), DI; \
	MOVQ  w_base+24(FP), R12; \
	MOVQ  ws+48(FP), BX; \
	SHLQ  $2, BX; \
	MOVQ  v_base+56(FP), R13; \
	MOVQ  d+112(FP), R8; \
	SHLQ  $2, R8; \
	MOVQ  d+112(FP), R14; \
	SHRQ  $shift, R14; \
	JZ    done; \
	CMPQ  n+104(FP), $0; \
	JEQ   done; \
	MOVQ  n+104(FP), R15; \
	IMULQ d+112(FP), R15
