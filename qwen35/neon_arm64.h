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

// FMULE4 multiplies Vn.4S by lane i of Vm.4S into Vd.4S.
#define FMULE4(m, i, n, d) WORD $(0x4F809000 | (((i)&1)<<21) | ((m)<<16) | (((i)>>1)<<11) | ((n)<<5) | (d))

// FMLAE4 adds Vn.4S times lane i of Vm.4S to Vd.4S.
#define FMLAE4(m, i, n, d) WORD $(0x4F801000 | (((i)&1)<<21) | ((m)<<16) | (((i)>>1)<<11) | ((n)<<5) | (d))
