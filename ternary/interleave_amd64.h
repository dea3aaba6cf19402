// Macros the interleaved kernels of matvec_amd64.s and interleave3_amd64.s share.

// LANETREE(o, s, A, B, C, D) leaves in A the sum of the eight accumulator lanes at
// o(R11), s bytes apart, added as ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)): the order of
// the Q8 kernels' horizontal sum, so that the interleaved kernels keep their bits. A … D
// are registers of the lanes' width (Y or Z).
#define LANETREE(o, s, A, B, C, D) \
	VMOVUPS (o)(R11), A; \
	VADDPS (o+4*s)(R11), A, A; \
	VMOVUPS (o+2*s)(R11), B; \
	VADDPS (o+6*s)(R11), B, B; \
	VADDPS B, A, A; \
	VMOVUPS (o+s)(R11), C; \
	VADDPS (o+5*s)(R11), C, C; \
	VMOVUPS (o+3*s)(R11), D; \
	VADDPS (o+7*s)(R11), D, D; \
	VADDPS D, C, C; \
	VADDPS C, A, A

// VPDPBUSD on ymm registers in its two encodings, for the AVX-VNNI kernels and their
// EVEX twins. AVX-VNNI (Alder Lake and later Intel cores without AVX-512) has only the
// VEX form, which Go's assembler does not write (it writes the EVEX one, AVX512-VL,
// which those cores fault on).

// ILVYVEX(Yrm, rm, Yv, v, Yd, d) is VPDPBUSD Yrm, Yv, Yd (Yd += Σ₄ u8(Yv)·s8(Yrm) a
// dword) encoded VEX.256.66.0F38.W0 50 /r: rm, v, d are the registers' numbers.
#define ILVYVEX(Yrm, rm, Yv, v, Yd, d) \
	BYTE $0xC4 \
	BYTE $(0xE2 ^ (((d)>>3)<<7) ^ (((rm)>>3)<<5)) \
	BYTE $(0x05 | ((15-(v))<<3)) \
	BYTE $0x50 \
	BYTE $(0xC0 | (((d)&7)<<3) | ((rm)&7))

// ILVYEVEX is ILVYVEX in the EVEX encoding (AVX512-VNNI with VL).
#define ILVYEVEX(Yrm, rm, Yv, v, Yd, d) VPDPBUSD Yrm, Yv, Yd
