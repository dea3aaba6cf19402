// NEON instructions the package's arm64 kernels use and Go's assembler lacks, as WORDs
// (encodings checked with llvm-mc), and macros the interleaved kernels share. Operands
// are register numbers: d the destination, n and m the sources (d, n, m of the Arm
// manual), i an element index.

#define SDOT(d, n, m) WORD $(0x4e809400 | ((m)<<16) | ((n)<<5) | (d))
#define SDOTE(d, n, m, i) WORD $(0x4f80e000 | (((i)&1)<<21) | ((m)<<16) | (((i)>>1)<<11) | ((n)<<5) | (d))
#define SMLAL(d, n, m) WORD $(0x0e208000 | ((m)<<16) | ((n)<<5) | (d))
#define SMLAL2(d, n, m) WORD $(0x4e208000 | ((m)<<16) | ((n)<<5) | (d))
#define SADDLP(d, n) WORD $(0x4e602800 | ((n)<<5) | (d))
#define SSHR4S(d, n, sh) WORD $(0x4f000400 | ((64-(sh))<<16) | ((n)<<5) | (d))
#define SCVTF(d, n) WORD $(0x4e21d800 | ((n)<<5) | (d))
#define FCVTL(d, n) WORD $(0x0e217800 | ((n)<<5) | (d))
#define FCVTL2(d, n) WORD $(0x4e217800 | ((n)<<5) | (d))
#define FMUL(d, n, m) WORD $(0x6e20dc00 | ((m)<<16) | ((n)<<5) | (d))
#define FADD(d, n, m) WORD $(0x4e20d400 | ((m)<<16) | ((n)<<5) | (d))
#define FADDPS(d, n) WORD $(0x7e30d800 | ((n)<<5) | (d))
#define CMHI(d, n, m) WORD $(0x6e203400 | ((m)<<16) | ((n)<<5) | (d))
#define FMLA4S(d, n, m) WORD $(0x4e20cc00 | ((m)<<16) | ((n)<<5) | (d))
#define ADD4S(d, n, m) WORD $(0x4ea08400 | ((m)<<16) | ((n)<<5) | (d))
#define SUB4S(d, n, m) WORD $(0x6ea08400 | ((m)<<16) | ((n)<<5) | (d))
#define EOR16B(d, n, m) WORD $(0x6e201c00 | ((m)<<16) | ((n)<<5) | (d))
#define MULB(d, n, m) WORD $(0x4e209c00 | ((m)<<16) | ((n)<<5) | (d))

// ILVZERO16 clears V8…V23 (the 2-bit kernels' block sums, two thirds of the base-3
// kernels').
#define ILVZERO16 \
	VEOR V8.B16, V8.B16, V8.B16; \
	VEOR V9.B16, V9.B16, V9.B16; \
	VEOR V10.B16, V10.B16, V10.B16; \
	VEOR V11.B16, V11.B16, V11.B16; \
	VEOR V12.B16, V12.B16, V12.B16; \
	VEOR V13.B16, V13.B16, V13.B16; \
	VEOR V14.B16, V14.B16, V14.B16; \
	VEOR V15.B16, V15.B16, V15.B16; \
	VEOR V16.B16, V16.B16, V16.B16; \
	VEOR V17.B16, V17.B16, V17.B16; \
	VEOR V18.B16, V18.B16, V18.B16; \
	VEOR V19.B16, V19.B16, V19.B16; \
	VEOR V20.B16, V20.B16, V20.B16; \
	VEOR V21.B16, V21.B16, V21.B16; \
	VEOR V22.B16, V22.B16, V22.B16; \
	VEOR V23.B16, V23.B16, V23.B16

// LANETREE adds eight accumulator lanes of eight rows, lane l in V2l and V2l+1, into
// V0 V1 as ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)): the Q8 kernels' order, so that the
// interleaved kernels keep their bits.
#define LANETREE \
	FADD(0, 0, 8); \
	FADD(1, 1, 9); \
	FADD(4, 4, 12); \
	FADD(5, 5, 13); \
	FADD(0, 0, 4); \
	FADD(1, 1, 5); \
	FADD(2, 2, 10); \
	FADD(3, 3, 11); \
	FADD(6, 6, 14); \
	FADD(7, 7, 15); \
	FADD(2, 2, 6); \
	FADD(3, 3, 7); \
	FADD(0, 0, 2); \
	FADD(1, 1, 3)

// For the activation quantiser (q8quant_arm64.s).
#define FCVTNS4S(d, n) WORD $(0x4e21a800 | ((n)<<5) | (d))
#define XTN4H(d, n) WORD $(0x0e612800 | ((n)<<5) | (d))
#define XTN2_8H(d, n) WORD $(0x4e612800 | ((n)<<5) | (d))
#define XTN8B(d, n) WORD $(0x0e212800 | ((n)<<5) | (d))
#define XTN2_16B(d, n) WORD $(0x4e212800 | ((n)<<5) | (d))
#define ADDV4S(d, n) WORD $(0x4eb1b800 | ((n)<<5) | (d))
#define UMAXV4S(d, n) WORD $(0x6eb0a800 | ((n)<<5) | (d))
#define UMAX4S(d, n, m) WORD $(0x6ea06400 | ((m)<<16) | ((n)<<5) | (d))
#define FMULE0(d, n, m) WORD $(0x4f809000 | ((m)<<16) | ((n)<<5) | (d))
