// Vector instructions the Go assembler has no mnemonics for, spelled out for the
// arm64 kernels of this package; operands are register numbers. Three-operand forms
// read d = n op m.

#define FADD4(m, n, d)  WORD $(0x4E20D400 | ((m)<<16) | ((n)<<5) | (d))
#define FSUB4(m, n, d)  WORD $(0x4EA0D400 | ((m)<<16) | ((n)<<5) | (d))
#define FMUL4(m, n, d)  WORD $(0x6E20DC00 | ((m)<<16) | ((n)<<5) | (d))
#define FDIV4(m, n, d)  WORD $(0x6E20FC00 | ((m)<<16) | ((n)<<5) | (d))
#define FMAX4(m, n, d)  WORD $(0x4E20F400 | ((m)<<16) | ((n)<<5) | (d))
#define FADDP4(m, n, d) WORD $(0x6E20D400 | ((m)<<16) | ((n)<<5) | (d)) // (n0+n1, n2+n3, m0+m1, m2+m3)
#define FADD2D(m, n, d) WORD $(0x4E60D400 | ((m)<<16) | ((n)<<5) | (d))
#define FADDPS(n, d)    WORD $(0x7E30D800 | ((n)<<5) | (d))             // Sd = n0 + n1
#define FADDPD(n, d)    WORD $(0x7E70D800 | ((n)<<5) | (d))             // Dd = n0 + n1 (float64 lanes)
#define FCVTLH(n, d)    WORD $(0x0E217800 | ((n)<<5) | (d))             // 4S ← low 4H
#define FCVTL2H(n, d)   WORD $(0x4E217800 | ((n)<<5) | (d))             // 4S ← high 4H
#define FCVTLS(n, d)    WORD $(0x0E617800 | ((n)<<5) | (d))             // 2D ← low 2S
#define FCVTL2S(n, d)   WORD $(0x4E617800 | ((n)<<5) | (d))             // 2D ← high 2S
#define FRINTN4(n, d)   WORD $(0x4E218800 | ((n)<<5) | (d))             // round to nearest even
#define FCVTZS4(n, d)   WORD $(0x4EA1B800 | ((n)<<5) | (d))             // float → int32
#define CMLTZ4(n, d)    WORD $(0x4EA0A800 | ((n)<<5) | (d))             // all ones where int32 n < 0

#define SXTL8(n, d)   WORD $(0x0F08A400 | ((n)<<5) | (d)) // 8H ← low 8B, sign-extended
#define SXTL28(n, d)  WORD $(0x4F08A400 | ((n)<<5) | (d)) // 8H ← high 8B
#define SXTL16(n, d)  WORD $(0x0F10A400 | ((n)<<5) | (d)) // 4S ← low 4H
#define SXTL216(n, d) WORD $(0x4F10A400 | ((n)<<5) | (d)) // 4S ← high 4H
#define SCVTF4(n, d)  WORD $(0x4E21D800 | ((n)<<5) | (d)) // int32 → float32
#define SDOT4(m, n, d)  WORD $(0x4E809400 | ((m)<<16) | ((n)<<5) | (d)) // 4S += the four-byte dots of 16B n and m (ARMv8.2 dot product)
#define SUB16B(m, n, d) WORD $(0x6E208400 | ((m)<<16) | ((n)<<5) | (d)) // 16B: d = n − m
#define MOVI0(d)        WORD $(0x4F00E400 | (d))                         // 16B: d = 0, reading no register (MOVI)

// The widening multiplies of ARMv8.0 (every arm64 core), for integer dot products where
// SDOT is missing: signed bytes n × m into 8H, from the low or the high eight (…2).
#define SMULL8(m, n, d)  WORD $(0x0E20C000 | ((m)<<16) | ((n)<<5) | (d)) // 8H = n.8B × m.8B
#define SMULL28(m, n, d) WORD $(0x4E20C000 | ((m)<<16) | ((n)<<5) | (d)) // 8H = n.16B[8:] × m.16B[8:]
#define SMLAL8(m, n, d)  WORD $(0x0E208000 | ((m)<<16) | ((n)<<5) | (d)) // 8H += n.8B × m.8B
#define SMLAL28(m, n, d) WORD $(0x4E208000 | ((m)<<16) | ((n)<<5) | (d)) // 8H += the high eight
#define SADDLP8H(n, d)   WORD $(0x4E602800 | ((n)<<5) | (d))             // 4S = pairwise sums of 8H n, widened
#define ADDP4(m, n, d)   WORD $(0x4EA0BC00 | ((m)<<16) | ((n)<<5) | (d)) // 4S: (n0+n1, n2+n3, m0+m1, m2+m3)

// FMULE4 multiplies Vn.4S by lane i of Vm.4S into Vd.4S.
#define FMULE4(m, i, n, d) WORD $(0x4F809000 | (((i)&1)<<21) | ((m)<<16) | (((i)>>1)<<11) | ((n)<<5) | (d))

// FMLAE4 adds Vn.4S times lane i of Vm.4S to Vd.4S.
#define FMLAE4(m, i, n, d) WORD $(0x4F801000 | (((i)&1)<<21) | ((m)<<16) | (((i)>>1)<<11) | ((n)<<5) | (d))

// The six-row value kernels' shared parts (axpy6F32NEON, axpy6F16NEON, axpy6Int8NEON,
// axpy6Q4NEON): eight columns of the six accumulator rows in V0…V11, the value chunk in
// V12, V13, the weights broadcast into V14…V19.
//
// AXPY6_ROWS loads the eight columns at R11 of the six accumulator rows (R19 bytes
// apart; R0…R5 left at them) and points R6…R9, R22, R23 at the six weight rows (from
// R12, R13 bytes apart), R10 at n (R15).
#define AXPY6_ROWS \
	MOVD R11, R0 \
	ADD  R19, R0, R1 \
	ADD  R19, R1, R2 \
	ADD  R19, R2, R3 \
	ADD  R19, R3, R4 \
	ADD  R19, R4, R5 \
	VLD1 (R0), [V0.S4, V1.S4] \
	VLD1 (R1), [V2.S4, V3.S4] \
	VLD1 (R2), [V4.S4, V5.S4] \
	VLD1 (R3), [V6.S4, V7.S4] \
	VLD1 (R4), [V8.S4, V9.S4] \
	VLD1 (R5), [V10.S4, V11.S4] \
	MOVD R12, R6 \
	ADD  R13, R6, R7 \
	ADD  R13, R7, R8 \
	ADD  R13, R8, R9 \
	ADD  R13, R9, R22 \
	ADD  R13, R22, R23 \
	MOVD R15, R10

// AXPY6_FMA adds the value chunk V12, V13 times the position's six weights (which move
// on) to V0…V11.
#define AXPY6_FMA \
	VLD1R.P 4(R6), [V14.S4] \
	VLD1R.P 4(R7), [V15.S4] \
	VLD1R.P 4(R8), [V16.S4] \
	VLD1R.P 4(R9), [V17.S4] \
	VLD1R.P 4(R22), [V18.S4] \
	VLD1R.P 4(R23), [V19.S4] \
	VFMLA   V14.S4, V12.S4, V0.S4 \
	VFMLA   V14.S4, V13.S4, V1.S4 \
	VFMLA   V15.S4, V12.S4, V2.S4 \
	VFMLA   V15.S4, V13.S4, V3.S4 \
	VFMLA   V16.S4, V12.S4, V4.S4 \
	VFMLA   V16.S4, V13.S4, V5.S4 \
	VFMLA   V17.S4, V12.S4, V6.S4 \
	VFMLA   V17.S4, V13.S4, V7.S4 \
	VFMLA   V18.S4, V12.S4, V8.S4 \
	VFMLA   V18.S4, V13.S4, V9.S4 \
	VFMLA   V19.S4, V12.S4, V10.S4 \
	VFMLA   V19.S4, V13.S4, V11.S4

// AXPY6_W4 loads the next four weights of each of the six rows into V14…V19 (lane j:
// position p+j), moving the pointers on: the four-position loops of the value kernels
// multiply by lane (FMLA by element) instead of loading each weight broadcast, so a
// position costs a quarter of a load a row where it cost a broadcast load (on the cores
// LLVM models, a vector unit's slot as well: llvm-mca put six of them a position on the
// vector units that the twelve FMLAs need).
#define AXPY6_W4 \
	VLD1.P 16(R6), [V14.S4] \
	VLD1.P 16(R7), [V15.S4] \
	VLD1.P 16(R8), [V16.S4] \
	VLD1.P 16(R9), [V17.S4] \
	VLD1.P 16(R22), [V18.S4] \
	VLD1.P 16(R23), [V19.S4]

// AXPY6_FMAE adds the value chunk V(a), V(b) times lane j of V14…V19 (position p+j's
// weights) to V0…V11: AXPY6_FMA's operations, in its order.
#define AXPY6_FMAE(j, a, b) \
	FMLAE4(14, j, a, 0) \
	FMLAE4(14, j, b, 1) \
	FMLAE4(15, j, a, 2) \
	FMLAE4(15, j, b, 3) \
	FMLAE4(16, j, a, 4) \
	FMLAE4(16, j, b, 5) \
	FMLAE4(17, j, a, 6) \
	FMLAE4(17, j, b, 7) \
	FMLAE4(18, j, a, 8) \
	FMLAE4(18, j, b, 9) \
	FMLAE4(19, j, a, 10) \
	FMLAE4(19, j, b, 11)

// AXPY6_FMAE4 adds a four-position pass's value chunks — positions p … p+3 in V12, V13;
// V24, V25; V22, V23; V28, V29 — times their weights' lanes to V0…V11, in position
// order.
#define AXPY6_FMAE4 \
	AXPY6_FMAE(0, 12, 13) \
	AXPY6_FMAE(1, 24, 25) \
	AXPY6_FMAE(2, 22, 23) \
	AXPY6_FMAE(3, 28, 29)

// AXPY6_STORE stores V0…V11 back and moves R11 to the next eight columns.
#define AXPY6_STORE \
	VST1 [V0.S4, V1.S4], (R0) \
	VST1 [V2.S4, V3.S4], (R1) \
	VST1 [V4.S4, V5.S4], (R2) \
	VST1 [V6.S4, V7.S4], (R3) \
	VST1 [V8.S4, V9.S4], (R4) \
	VST1 [V10.S4, V11.S4], (R5) \
	ADD  $32, R11, R11
