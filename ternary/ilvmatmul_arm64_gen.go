//go:build ignore

// This program writes ilvmatmul_arm64.s, the batched interleaved kernels of the SDOT
// family on arm64:
//
//	go run ilvmatmul_arm64_gen.go
//
// See ilvmatmul_arm64.go for the method and ilvTilesNEONDot (interleave_arm64.s) for
// how the four rows of a code byte are separated.
package main

import (
	"bytes"
	"fmt"
	"os"
)

// width and widthNEON are the widest kernels of the two families (ilvMatWidthNEONDot,
// ilvMatWidthNEON); there is one for every width up to them.
const (
	width     = 5
	widthNEON = 3
)

// Offsets of the ilvMatArgs fields.
const (
	argW   = 0
	argNB8 = 8
	argQ   = 16
	argQS  = 24
	argD   = 32
	argSum = 40
	argDS  = 48
	argAcc = 56
	argY   = 64
	argYS  = 72
	argPFD = 80
)

var b bytes.Buffer

func p(format string, args ...any) { fmt.Fprintf(&b, "\t"+format+"\n", args...) }
func label(l string)               { fmt.Fprintf(&b, "%s:\n", l) }

// actReg is the general register that points at vector v's activations of the block.
func actReg(v int) string { return fmt.Sprintf("R%d", 19+v) }

// prologue loads the arguments and clears the nv·2048 bytes of float accumulators.
func prologue(name string, nv int) {
	fmt.Fprintf(&b, "\n// func %s%d(a *ilvMatArgs)\n", name, nv)
	fmt.Fprintf(&b, "TEXT ·%s%d(SB), NOSPLIT, $0-8\n", name, nv)
	p("MOVD a+0(FP), R0")
	p("MOVD %d(R0), R5", argW)
	p("MOVD %d(R0), R11", argNB8)
	p("LSL $3, R11")
	p("MOVD %d(R0), R6", argQ)
	p("MOVD %d(R0), R7", argQS)
	p("MOVD %d(R0), R8", argD)
	p("MOVD %d(R0), R9", argSum)
	p("MOVD %d(R0), R10", argDS)
	p("MOVD %d(R0), R3", argAcc)
	p("MOVD %d(R0), R24", argPFD)
	p("MOVD $32, R14")
	p("MOVD $0, R12")

	// Clear the nv·2048 bytes of float accumulators.
	p("VEOR V0.B16, V0.B16, V0.B16")
	p("MOVD R3, R2")
	p("MOVD $%d, R15", 16*nv)
	label("clear")
	for range 4 {
		p("FSTPQ.P (F0, F0), 32(R2)")
	}
	p("SUBS $1, R15")
	p("BNE clear")
}

// blockStart begins the block loop: on a tile's first call, the block's lines of the
// tile the next call reads are prefetched into L2.
func blockStart() {
	label("block")
	p("CBZ R24, noprefetch")
	p("ADD R24, R5, R2")
	for l := 0; l < 34; l++ {
		p("PRFM %d(R2), PLDL2KEEP", 64*l)
	}
	label("noprefetch")
}

// blockEnd moves on to the next block and closes the block loop.
func blockEnd() {
	p("ADD $2176, R5")
	p("ADD R14, R6")
	p("EOR $192, R14")
	p("ADD $4, R8")
	p("ADD $4, R9")
	p("ADD $256, R12")
	p("AND $2047, R12")
	p("SUBS $1, R11")
	p("BNE block")
}

// foldStart converts the pass's scales (rows 16g+4i … +3 of each group g) to float in
// V(sc+g) and points R16, R17 and R2 at vector 0's D, Sum and lane (pass offset R15).
func foldStart(sc int) {
	p("ADD R15>>1, R5, R1")
	for g := range 4 {
		p("FMOVD %d(R1), F%d", 32*g, sc+g)
		p("FCVTL(%d, %d)", sc+g, sc+g)
	}
	p("MOVD R8, R16")
	p("MOVD R9, R17")
	p("ADD R3, R12, R2")
	p("ADD R15, R2")
}

// foldVector moves R16, R17 and R2 on to vector v (v > 0) and broadcasts its D and Sum
// into Vd and Vs.
func foldVector(v, d, sm int) {
	if v > 0 {
		p("ADD R10, R16")
		p("ADD R10, R17")
		p("ADD $2048, R2")
	}
	p("VLD1R (R16), [V%d.S4]", d)
	p("VLD1R (R17), [V%d.S4]", sm)
}

// fold1 adds group g's integers of the pass, Va (less Sum in Vsm), scaled by the
// group's scales V(sc+g) times D (Vd), into their lane: Vt and Vm are scratch.
func fold1(g, a, sc, d, sm, t, m int) {
	p("VSUB V%d.S4, V%d.S4, V%d.S4", sm, a, a)
	p("SCVTF(%d, %d)", a, a)
	p("FMUL(%d, %d, %d)", t, sc+g, d)
	p("FMOVQ %d(R2), F%d", 64*g, m)
	p("VFMLA V%d.S4, V%d.S4, V%d.S4", a, t, m)
	p("FMOVQ F%d, %d(R2)", m, 64*g)
}

func kernel(nv int) {
	prologue("ilvMatNEONDot", nv)
	p("VMOVI $3, V26.B16")
	p("VMOVI $12, V27.B16")
	p("VMOVI $48, V28.B16")
	blockStart()
	p("MOVD R6, %s", actReg(0))
	for v := 1; v < nv; v++ {
		p("ADD R7, %s, %s", actReg(v-1), actReg(v))
	}
	p("MOVD $0, R15")

	label("pass")
	// Pass i (R15 = 16i) reads bytes 16i…16i+15 of every step: rows 4i…4i+3 of each
	// group g, into V(4v+g) for vector v.
	p("ADD $128, R5, R13")
	p("ADD R15, R13")
	for r := 0; r < 4*nv; r++ {
		p("VEOR V%d.B16, V%d.B16, V%d.B16", r, r, r)
	}
	for s := 0; s < 32; s++ {
		pl, j := s/8, s%8
		if s%4 == 0 {
			p("PRFM %d(R13), PLDL1KEEP", 64*s+512)
		}
		p("FMOVQ %d(R13), F25", 64*s)
		if j%4 == 0 {
			for v := range nv {
				p("FMOVQ %d(%s), F%d", 64*pl+16*(j/4), actReg(v), 20+v)
			}
		}
		idx := j % 4
		for g := range 4 {
			t := 29 + g%3
			if g < 3 {
				p("VAND V%d.B16, V25.B16, V%d.B16", 26+g, t)
			} else {
				p("VUSHR $6, V25.B16, V%d.B16", t)
			}
			for v := range nv {
				p("SDOTE(%d, %d, %d, %d)", 4*v+g, t, 20+v, idx)
			}
		}
	}

	// Fold: the pass's 16 rows of each group, scale fp16(d_w)·D, into lane b%8.
	foldStart(20)
	for v := range nv {
		foldVector(v, 24, 25)
		for g := range 4 {
			a := 4*v + g
			if g == 1 || g == 2 {
				p("SSHR4S(%d, %d, %d)", a, a, 2*g)
			}
			fold1(g, a, 20, 24, 25, 29, 30)
		}
	}
	p("ADD $16, R15")
	p("CMP $64, R15")
	p("BNE pass")
	blockEnd()
	tree(nv)
}

// kernelNEON writes the plain NEON kernel for nv ≤ 3 vectors: pass i as in kernel, each
// row group taken out as c_g = (c >> 2g) & 3 and multiplied by SMLAL/SMLAL2 with each
// vector's broadcast activation dword into int16 lanes (row, column), V(8v+2g) the low
// half of the code bytes and V(8v+2g+1) the high; V24… the activations, V27 the code
// register, V28 the mask, V29 and V30 the extracted codes.
func kernelNEON(nv int) {
	prologue("ilvMatNEON", nv)
	blockStart()
	p("MOVD $0, R15")

	label("pass")
	p("VMOVI $3, V28.B16")
	p("ADD $128, R5, R13")
	p("ADD R15, R13")
	p("MOVD R6, %s", actReg(0))
	for v := 1; v < nv; v++ {
		p("ADD R7, %s, %s", actReg(v-1), actReg(v))
	}
	for r := 0; r < 8*nv; r++ {
		p("VEOR V%d.B16, V%d.B16, V%d.B16", r, r, r)
	}
	for s := 0; s < 32; s++ {
		if s%4 == 0 {
			p("PRFM %d(R13), PLDL1KEEP", 64*s+512)
		}
		p("FMOVQ %d(R13), F27", 64*s)
		for v := range nv {
			p("VLD1R.P 4(%s), [V%d.S4]", actReg(v), 24+v)
		}
		for g := range 4 {
			t := 29 + g%2
			switch g {
			case 0:
				p("VAND V28.B16, V27.B16, V%d.B16", t)
			case 3:
				p("VUSHR $6, V27.B16, V%d.B16", t)
			default:
				p("VUSHR $%d, V27.B16, V%d.B16", 2*g, t)
				p("VAND V28.B16, V%d.B16, V%d.B16", t, t)
			}
			for v := range nv {
				p("SMLAL(%d, %d, %d)", 8*v+2*g, t, 24+v)
				p("SMLAL2(%d, %d, %d)", 8*v+2*g+1, t, 24+v)
			}
		}
		if s%8 == 7 && s != 31 {
			for v := range nv {
				p("ADD $32, %s", actReg(v))
			}
		}
	}

	// Each row's four columns into one int32 (rows 4i…4i+3 of group g in V(8v+2g)),
	// then the fold as in kernel.
	for v := range nv {
		for g := range 4 {
			lo, hi := 8*v+2*g, 8*v+2*g+1
			p("SADDLP(%d, %d)", lo, lo)
			p("SADDLP(%d, %d)", hi, hi)
			p("VADDP V%d.S4, V%d.S4, V%d.S4", hi, lo, lo)
		}
	}
	foldStart(24)
	for v := range nv {
		foldVector(v, 28, 29)
		for g := range 4 {
			fold1(g, 8*v+2*g, 24, 28, 29, 30, 31)
		}
	}
	p("ADD $16, R15")
	p("CMP $64, R15")
	p("BNE pass")
	blockEnd()
	tree(nv)
}

// tree adds each vector's eight lanes as the decode kernels do,
// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), into its outputs.
func tree(nv int) {
	p("MOVD %d(R0), R16", argY)
	p("MOVD %d(R0), R17", argYS)
	p("MOVD $%d, R15", nv)
	label("tree")
	p("ADD $1024, R3, R2")
	for i := range 8 {
		p("FLDPQ %d(R3), (F0, F1)", 32*i)
		p("FLDPQ %d(R3), (F2, F3)", 256+32*i)
		p("FLDPQ %d(R3), (F4, F5)", 512+32*i)
		p("FLDPQ %d(R3), (F6, F7)", 768+32*i)
		p("FLDPQ %d(R2), (F8, F9)", 32*i)
		p("FLDPQ %d(R2), (F10, F11)", 256+32*i)
		p("FLDPQ %d(R2), (F12, F13)", 512+32*i)
		p("FLDPQ %d(R2), (F14, F15)", 768+32*i)
		for _, op := range [][3]int{{0, 0, 8}, {1, 1, 9}, {4, 4, 12}, {5, 5, 13}, {0, 0, 4}, {1, 1, 5},
			{2, 2, 10}, {3, 3, 11}, {6, 6, 14}, {7, 7, 15}, {2, 2, 6}, {3, 3, 7}, {0, 0, 2}, {1, 1, 3}} {
			p("FADD(%d, %d, %d)", op[0], op[1], op[2])
		}
		p("FSTPQ (F0, F1), %d(R16)", 32*i)
	}
	p("ADD $2048, R3")
	p("ADD R17, R16")
	p("SUBS $1, R15")
	p("BNE tree")
	p("RET")
}

func main() {
	b.WriteString(`// Code generated by ilvmatmul_arm64_gen.go; DO NOT EDIT.

//go:build arm64 && !purego

#include "textflag.h"
#include "neon_arm64.h"

// The batched interleaved kernels of the two NEON families (see ilvmatmul_arm64.go).
// Registers (SDOT kernels; kernelNEON in ilvmatmul_arm64_gen.go gives the plain NEON
// ones' vectors): R5 block, R6 vector 0's block activations, R7 their stride, R8 D, R9 Sum,
// R10 their stride, R11 blocks left, R12 lane offset 256·(b%8), R13 the pass's codes,
// R14 the step to the next block's activations, R15 pass offset 16i, R19… vector v's
// activations, R24 prefetch distance. V(4v+g) vector v's sums of group g, V20… its
// activations, V25 a code register, V26…V28 masks, V29…V31 the extracted codes.
`)
	for nv := 1; nv <= width; nv++ {
		kernel(nv)
	}
	for nv := 1; nv <= widthNEON; nv++ {
		kernelNEON(nv)
	}
	if err := os.WriteFile("ilvmatmul_arm64.s", b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
