// NEON instructions the interleaved kernels of interleave_arm64.s and
// interleave3_arm64.s use and Go's assembler lacks, as WORDs (encodings checked with
// llvm-mc). Operands are register numbers: d the destination, n and m the sources (d,
// n, m of the Arm manual), i an element index.

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
#define FMLA4S(d, n, m) WORD $(0x4e20cc00 | ((m)<<16) | ((n)<<5) | (d))
#define ADD4S(d, n, m) WORD $(0x4ea08400 | ((m)<<16) | ((n)<<5) | (d))
#define SUB4S(d, n, m) WORD $(0x6ea08400 | ((m)<<16) | ((n)<<5) | (d))
#define EOR16B(d, n, m) WORD $(0x6e201c00 | ((m)<<16) | ((n)<<5) | (d))
#define MUL16B(d, n, m) WORD $(0x4e209c00 | ((m)<<16) | ((n)<<5) | (d))
