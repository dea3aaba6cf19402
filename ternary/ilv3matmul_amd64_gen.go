//go:build ignore

// This program writes ilv3matmul_amd64.s, the batched base-3 interleaved kernels for
// amd64 (AVX-512 VNNI), and ilv3matmul_kernels_amd64.go, their declarations and
// dispatch:
//
//	go run ilv3matmul_amd64_gen.go
//
// See interleave3_matmul.go for the method and interleave3_amd64.s for how the five
// rows of a code byte are separated.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
)

// width is the widest kernel (ilv3MatWidth); there is one for every width up to it.
const width = 4

// Offsets of the ilv3MatArgs fields.
const (
	argW      = 0
	argNB8    = 8
	argQ      = 16
	argQS     = 24
	argD      = 32
	argSum    = 40
	argDS     = 48
	argAcc    = 56
	argY      = 64
	argYS     = 72
	argPFD    = 80
	argGroups = 88
	argPlanes = 96
)

const (
	blockBytes = 2240 // ilv3BlockBytes
	codeOff    = 192  // ilv3CodeOff
	laneBytes  = 320  // one lane of 80 float accumulators
	vecAcc     = 8 * laneBytes
	planeBytes = 32 * 6 * 64 // a block's six decoded byte vectors a step
)

// qreg are the registers that walk the vectors' activations, one a vector, so that
// the VPDPBUSD's broadcast operands need no index register.
var qreg = [width]string{"BX", "R10", "R13", "R14"}

var b bytes.Buffer

func p(format string, args ...any) { fmt.Fprintf(&b, "\t"+format+"\n", args...) }
func label(l string)               { fmt.Fprintf(&b, "%s:\n", l) }
func line(s string)                { fmt.Fprintln(&b, s) }

// acc is the register of vector v's accumulator Pₙ.
func acc(v, n int) string { return fmt.Sprintf("Z%d", 6*v+n) }

// Frame slots of the kernels' state kept across the group loop.
const (
	fPairs  = 0  // block pairs left
	fGroups = 8  // groups left
	fW      = 16 // the pair's first tile × block
	fQ      = 24 // group 0's vector 0's Q at the pair
	fD      = 32 // group 0's vector 0's D at the pair's first block
	fSum    = 40 // … and Sum
	fLane   = 48 // the pair's first lane (0, 640, 1280, 1920)
	fGQ     = 56 // the group's vector 0's Q at the pair
	frame   = 64
)

// decode emits the decoding of the pair's two tile × blocks (from R9) into the
// scratch planes (AX): step s of block b to 12288b + 384s, xₙ at 64n, then the
// prefetch of the pair's three lines of scales each.
func decode(name string) {
	p("MOVQ $4, CX")
	label(name)
	for st := range 8 {
		for blk := range 2 {
			off := blockBytes*blk + codeOff + 64*st
			dst := planeBytes*blk + 384*st
			p("PREFETCHT1 %d(R9)(SI*1)", off)
			p("VMOVDQU64 %d(R9), Z30", off)
			p("VMOVDQU64 Z30, %d(AX)", dst)
			for n := 1; n < 6; n++ {
				x := fmt.Sprintf("Z%d", 30+n%2)
				prev := fmt.Sprintf("Z%d", 30+(n-1)%2)
				p("VPADDB %s, %s, %s", prev, prev, x)
				p("VPADDB %s, %s, %s", prev, x, x)
				p("VMOVDQU64 %s, %d(AX)", x, dst+64*n)
			}
		}
	}
	p("ADDQ $512, R9")
	p("ADDQ $3072, AX")
	p("DECQ CX")
	p("JNZ %s", name)
	for blk := range 2 {
		for l := range 3 {
			p("PREFETCHT1 %d(R9)(SI*1)", blockBytes*blk-2048+64*l)
		}
	}
}

// block emits one block of one group: its 32 steps (a loop over the four planes of
// eight steps) from the decoded planes, then the fold of every vector's 80 row
// integers into its accumulator lane. blk says whether the block is the second of its
// pair (activations 32 bytes on, D and Sum 4, lanes 320).
func block(nv, blk int, name string) {
	ao := 32 * blk
	for i := range 6 * nv {
		p("VPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	p("MOVQ a+0(FP), AX")
	p("MOVQ %d(AX), AX", argPlanes)
	if blk == 1 {
		p("ADDQ $%d, AX", planeBytes)
	}
	p("MOVQ $4, CX")
	label(name)
	for st := range 8 {
		// Step 8p+st: xₙ at 384·st+64n past the plane's (AX moves 3072 a plane) into
		// Z24+n, the vectors' dwords at ao+4·st past theirs (which move 64 a plane),
		// each broadcast once (Z30, Z31 by turns) to meet the six.
		for n := range 6 {
			p("VMOVDQU64 %d(AX), Z%d", 384*st+64*n, 24+n)
		}
		for v := range nv {
			bc := fmt.Sprintf("Z%d", 30+v%2)
			p("VPBROADCASTD %d(%s), %s", ao+4*st, qreg[v], bc)
			for n := range 6 {
				p("VPDPBUSD %s, Z%d, %s", bc, 24+n, acc(v, n))
			}
		}
	}
	p("ADDQ $3072, AX")
	for v := range nv {
		p("ADDQ $64, %s", qreg[v])
	}
	p("DECQ CX")
	p("JNZ %s", name)
	if blk == 0 {
		// Back to the pair's activations; after the odd block they are the next pair's.
		for v := range nv {
			p("SUBQ $256, %s", qreg[v])
		}
	}
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), R8", argDS)
	p("MOVQ DX, SI")
	p("MOVQ DI, CX")
	// The constants of the row step: 3 and 2⁻⁸.
	p("MOVL $0x40400000, R9")
	p("VPBROADCASTD R9, Z28")
	p("MOVL $0x3b800000, R9")
	p("VPBROADCASTD R9, Z29")
	// The block's scales at blockBytes·blk(R9).
	p("MOVQ %d(SP), R9", fW)
	for v := range nv {
		// I = Sₙ − Sum = (3Pₙ − Pₙ₊₁)/256 − Sum, ilv3TilesVNNI's ILV3ROW, in floats: two
		// fused steps for its five integer ones, in place (Pₙ₊₁ is read before it is
		// turned into its own row). Every value is exact: |Pₙ| ≤ 255·128·128 < 2²³,
		// 3Pₙ − Pₙ₊₁ = 256·Sₙ with |Sₙ| ≤ 2·128·128 (so |·| < 2²⁴), and I an integer
		// of at most 2¹⁵: the floats are those VCVTDQ2PS makes of ILV3ROW's integers.
		// Then I → fma(fp16(d)·D, I, acc) as its ILV3FOLD1.
		for n := range 6 {
			p("VCVTDQ2PS %s, %s", acc(v, n), acc(v, n))
		}
		p("VCVTDQ2PS.BCST %d(CX), Z27", 4*blk)
		for n := range 5 {
			a := acc(v, n)
			p("VFMSUB213PS %s, Z28, %s", acc(v, n+1), a)
			p("VFMSUB213PS Z27, Z29, %s", a)
		}
		for g := range 5 {
			a := acc(v, g)
			s := fmt.Sprintf("Z%d", 30+g%2)
			m := fmt.Sprintf("%d(R11)(R12*1)", vecAcc*v+laneBytes*blk+64*g)
			p("VCVTPH2PS %d(R9), %s", blockBytes*blk+32*g, s)
			p("VMULPS.BCST %d(SI), %s, %s", 4*blk, s, s)
			p("VFMADD213PS %s, %s, %s", m, s, a)
			p("VMOVUPS %s, %s", a, m)
		}
		if v < nv-1 {
			p("ADDQ R8, SI")
			p("ADDQ R8, CX")
		}
	}
}

func kernel(nv int) {
	name := fmt.Sprintf("ilv3MatVNNI%d", nv)
	line("")
	line(fmt.Sprintf("// func %s(a *ilv3MatArgs)", name))
	line(fmt.Sprintf("TEXT ·%s(SB), NOSPLIT, $%d-8", name, frame))
	p("MOVQ a+0(FP), R8")
	// Clear the accumulators: groups × nv × 8 lanes × 80 floats.
	p("MOVQ %d(R8), CX", argGroups)
	p("IMULQ $%d, CX", nv*vecAcc/64)
	p("MOVQ %d(R8), SI", argAcc)
	p("VPXORD Z0, Z0, Z0")
	label(name + "clear")
	p("VMOVUPS Z0, (SI)")
	p("ADDQ $64, SI")
	p("DECQ CX")
	p("JNZ %sclear", name)
	p("MOVQ %d(R8), CX", argNB8)
	p("SHLQ $2, CX")
	p("MOVQ CX, %d(SP)", fPairs)
	for _, f := range [][2]int{{argW, fW}, {argQ, fQ}, {argD, fD}, {argSum, fSum}} {
		p("MOVQ %d(R8), CX", f[0])
		p("MOVQ CX, %d(SP)", f[1])
	}
	p("MOVQ $0, %d(SP)", fLane)
	label(name + "pair")
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), AX", argPlanes)
	p("MOVQ %d(R8), SI", argPFD)
	p("MOVQ %d(SP), R9", fW)
	decode(name + "dec")
	// The groups: group g's vector v is vector nv·g+v.
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), CX", argGroups)
	p("MOVQ CX, %d(SP)", fGroups)
	p("MOVQ %d(R8), R11", argAcc)
	p("MOVQ %d(SP), CX", fQ)
	p("MOVQ CX, %d(SP)", fGQ)
	p("MOVQ %d(SP), DX", fD)
	p("MOVQ %d(SP), DI", fSum)
	p("MOVQ %d(SP), R12", fLane)
	label(name + "group")
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), R8", argQS)
	p("MOVQ %d(SP), BX", fGQ)
	for v := 1; v < nv; v++ {
		p("LEAQ (%s)(R8*1), %s", qreg[v-1], qreg[v])
	}
	block(nv, 0, name+"even")
	block(nv, 1, name+"odd")
	// The next group: its Q, D and Sum nv vectors on, its accumulators nv·2560 bytes.
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), SI", argQS)
	p("IMULQ $%d, SI", nv)
	p("ADDQ SI, %d(SP)", fGQ)
	p("MOVQ %d(R8), SI", argDS)
	p("IMULQ $%d, SI", nv)
	p("ADDQ SI, DX")
	p("ADDQ SI, DI")
	p("ADDQ $%d, R11", nv*vecAcc)
	p("DECQ %d(SP)", fGroups)
	p("JNZ %sgroup", name)
	// The next pair.
	p("ADDQ $%d, %d(SP)", 2*blockBytes, fW)
	p("ADDQ $256, %d(SP)", fQ)
	p("ADDQ $8, %d(SP)", fD)
	p("ADDQ $8, %d(SP)", fSum)
	p("MOVQ %d(SP), CX", fLane)
	p("ADDQ $%d, CX", 2*laneBytes)
	p("XORQ SI, SI")
	p("CMPQ CX, $%d", vecAcc)
	p("CMOVQEQ SI, CX")
	p("MOVQ CX, %d(SP)", fLane)
	p("DECQ %d(SP)", fPairs)
	p("JNZ %spair", name)

	// Each vector's outputs: its eight lanes (320 bytes apart) added as
	// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), as ilv3TilesVNNI's ILV3TREE.
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), R14", argY)
	p("MOVQ %d(R8), R9", argYS)
	p("MOVQ %d(R8), R15", argAcc)
	p("MOVQ %d(R8), CX", argGroups)
	p("IMULQ $%d, CX", nv)
	label(name + "tree")
	for g := range 5 {
		l := func(i int) int { return laneBytes*i + 64*g }
		p("VMOVUPS %d(R15), Z0", l(0))
		p("VADDPS %d(R15), Z0, Z0", l(4))
		p("VMOVUPS %d(R15), Z1", l(2))
		p("VADDPS %d(R15), Z1, Z1", l(6))
		p("VADDPS Z1, Z0, Z0")
		p("VMOVUPS %d(R15), Z2", l(1))
		p("VADDPS %d(R15), Z2, Z2", l(5))
		p("VMOVUPS %d(R15), Z3", l(3))
		p("VADDPS %d(R15), Z3, Z3", l(7))
		p("VADDPS Z3, Z2, Z2")
		p("VADDPS Z2, Z0, Z0")
		p("VMOVUPS Z0, %d(R14)", 64*g)
	}
	p("ADDQ R9, R14")
	p("ADDQ $%d, R15", vecAcc)
	p("DECQ CX")
	p("JNZ %stree", name)
	p("VZEROUPPER")
	p("RET")
}

func main() {
	line("// Code generated by ilv3matmul_amd64_gen.go; DO NOT EDIT.")
	line("")
	line("//go:build amd64 && !purego")
	line("")
	line(`#include "textflag.h"`)
	line("")
	line("// The batched base-3 interleaved kernels (see interleave3_matmul.go): ilv3MatVNNI<nv>")
	line("// runs one tile of 80 rows and groups of nv vectors. For each block pair it first")
	line("// decodes the pair's 64 steps into the scratch planes (x₀ … x₅ of step s of block b at")
	line("// 12288b + 384s + 64n, two VPADDB each from the last), then runs every group over")
	line("// them: per step the six byte vectors are loaded into Z24…Z29 and each vector's")
	line("// broadcast dword (Z30, Z31 by turns) meets all six, into its accumulators Z6v…Z6v+5")
	line("// (P₀ … P₅); the nv·6 independent accumulators hide VPDPBUSD's latency.")
	line("//")
	line("// Registers, in a group: AX the planes, BX, R10, R13, R14 the vectors' activations,")
	line("// DX and DI the group's vector 0's D and Sum, R9 the pair's tile × blocks (their")
	line("// scales), R11 the group's accumulators (vector v's lane l at 2560v+320l), R12 the")
	line("// pair's first lane, CX the planes left; SI, CX and R8 walk the vectors' D and Sum")
	line("// in the fold. The pairs and groups left and the pair's pointers live in the frame.")
	line("//")
	line("// The decoding prefetches each line of the pair at ilv3MatArgs.pfd bytes on (the next")
	line("// tile, on a tile's first call), into L2, as the 2-bit batched kernels do.")
	for nv := 1; nv <= width; nv++ {
		kernel(nv)
	}
	if err := os.WriteFile("ilv3matmul_amd64.s", b.Bytes(), 0o644); err != nil {
		panic(err)
	}

	b.Reset()
	line("// Code generated by ilv3matmul_amd64_gen.go; DO NOT EDIT.")
	line("")
	line("//go:build amd64 && !purego")
	line("")
	line("package ternary")
	line("")
	line("// The batched base-3 interleaved kernels of ilv3matmul_amd64.s: ilv3MatVNNI<nv> runs")
	line("// nv vectors (see ilv3MatGeneric for the contract).")
	for nv := 1; nv <= width; nv++ {
		line("")
		line("//go:noescape")
		line(fmt.Sprintf("func ilv3MatVNNI%d(a *ilv3MatArgs)", nv))
	}
	line("")
	line("// archIlv3Mat runs the AVX-512 VNNI kernel for nv vectors, 1 ≤ nv ≤ ilv3MatWidth.")
	line("func archIlv3Mat(nv int, a *ilv3MatArgs) {")
	line("switch nv {")
	for nv := 1; nv <= width; nv++ {
		line(fmt.Sprintf("case %d:\nilv3MatVNNI%d(a)", nv, nv))
	}
	line("default:\npanic(\"ternary: archIlv3Mat: bad width\")")
	line("}")
	line("}")
	src, err := format.Source(b.Bytes())
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile("ilv3matmul_kernels_amd64.go", src, 0o644); err != nil {
		panic(err)
	}
}
