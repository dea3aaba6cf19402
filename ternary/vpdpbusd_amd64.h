// VPDPBUSD on ymm registers in its two encodings, for the AVX-VNNI kernels
// (matvec_amd64.s, interleave3_amd64.s) and their EVEX twins. AVX-VNNI (Alder Lake and
// later Intel cores without AVX-512) has only the VEX form, which Go's assembler does
// not write (it writes the EVEX one, AVX512-VL, which those cores fault on).

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
