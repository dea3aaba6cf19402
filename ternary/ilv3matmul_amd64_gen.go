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
const width = 5

// Offsets of the ilv3MatArgs fields.
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

const (
	blockBytes = 2240 // ilv3BlockBytes
	codeOff    = 192  // ilv3CodeOff
	laneBytes  = 320  // one lane of 80 float accumulators
	vecAcc     = 8 * laneBytes
)

// qreg are the registers that walk the vectors' activations, one a vector, so that
// the VPDPBUSD's broadcast operands need no index register.
var qreg = [width]string{"BX", "R10", "R13", "R14", "R15"}

var b bytes.Buffer

func p(format string, args ...any) { fmt.Fprintf(&b, "\t"+format+"\n", args...) }
func label(l string)               { fmt.Fprintf(&b, "%s:\n", l) }
func line(s string)                { fmt.Fprintln(&b, s) }

// acc is the register of vector v's accumulator Pₙ.
func acc(v, n int) string { return fmt.Sprintf("Z%d", 6*v+n) }

// block emits one block: its 32 steps (a loop over the four planes of eight steps),
// then the fold of every vector's 80 row integers into its accumulator lane. odd says
// whether the block is the second of its pair (activations 32 bytes on).
func block(nv int, odd bool, name string) {
	ao := 0
	if odd {
		ao = 32
	}
	for i := range 6 * nv {
		p("VPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	p("MOVQ $4, CX")
	label(name)
	for st := range 8 {
		// Step 8p+st: codes at 192+64·st past the plane (AX moves 512 a plane), the
		// vectors' dwords at ao+4·st past theirs (which move 64 a plane). xₙ (Z30 for
		// even n, Z31 for odd) meets every vector before it is tripled into xₙ₊₁.
		off := codeOff + 64*st
		p("PREFETCHT1 %d(AX)(R9*1)", off)
		p("VMOVDQU64 %d(AX), Z30", off)
		for n := range 6 {
			x := fmt.Sprintf("Z%d", 30+n%2)
			if n > 0 {
				prev := fmt.Sprintf("Z%d", 30+(n-1)%2)
				p("VPADDB %s, %s, %s", prev, prev, x)
				p("VPADDB %s, %s, %s", prev, x, x)
			}
			for v := range nv {
				p("VPDPBUSD.BCST %d(%s), %s, %s", ao+4*st, qreg[v], x, acc(v, n))
			}
		}
	}
	p("ADDQ $512, AX")
	for v := range nv {
		p("ADDQ $64, %s", qreg[v])
	}
	p("DECQ CX")
	p("JNZ %s", name)
	if !odd {
		// Back to the pair's activations; after the odd block they are the next pair's.
		for v := range nv {
			p("SUBQ $256, %s", qreg[v])
		}
	}
	// AX is now 2048 past the block: its scales at −2048(AX), the next block at
	// 192(AX).
	for l := range 3 {
		p("PREFETCHT1 %d(AX)(R9*1)", -2048+64*l)
	}
	p("MOVQ a+0(FP), SI")
	p("MOVQ %d(SI), R9", argDS)
	p("MOVQ DX, SI")
	p("MOVQ DI, CX")
	for v := range nv {
		// Sₙ − Sum = (3Pₙ − Pₙ₊₁)>>8 − Sum as ilv3TilesVNNI's ILV3ROW, in place (Pₙ₊₁
		// is read before it is turned into its own row), then I → fma(fp16(d)·D, I,
		// acc) as its ILV3FOLD1.
		for n := range 5 {
			a := acc(v, n)
			p("VPADDD %s, %s, Z30", a, a)
			p("VPADDD Z30, %s, %s", a, a)
			p("VPSUBD %s, %s, %s", acc(v, n+1), a, a)
			p("VPSRAD $8, %s, %s", a, a)
			p("VPSUBD.BCST (CX), %s, %s", a, a)
		}
		for g := range 5 {
			a := acc(v, g)
			s := fmt.Sprintf("Z%d", 30+g%2)
			m := fmt.Sprintf("%d(R11)(R12*1)", vecAcc*v+64*g)
			p("VCVTPH2PS %d(AX), %s", -2048+32*g, s)
			p("VMULPS.BCST (SI), %s, %s", s, s)
			p("VCVTDQ2PS %s, %s", a, a)
			p("VFMADD213PS %s, %s, %s", m, s, a)
			p("VMOVUPS %s, %s", a, m)
		}
		if v < nv-1 {
			p("ADDQ R9, SI")
			p("ADDQ R9, CX")
		}
	}
	p("MOVQ a+0(FP), SI")
	p("MOVQ %d(SI), R9", argPFD)
	p("ADDQ $%d, AX", blockBytes-2048)
	p("ADDQ $4, DX")
	p("ADDQ $4, DI")
	p("XORQ SI, SI")
	p("ADDQ $%d, R12", laneBytes)
	p("CMPQ R12, $%d", vecAcc)
	p("CMOVQEQ SI, R12")
}

func kernel(nv int) {
	name := fmt.Sprintf("ilv3MatVNNI%d", nv)
	line("")
	line(fmt.Sprintf("// func %s(a *ilv3MatArgs)", name))
	line(fmt.Sprintf("TEXT ·%s(SB), NOSPLIT, $0-8", name))
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), AX", argW)
	p("MOVQ %d(R8), BX", argQ)
	p("MOVQ %d(R8), SI", argQS)
	for v := 1; v < nv; v++ {
		p("LEAQ (%s)(SI*1), %s", qreg[v-1], qreg[v])
	}
	p("MOVQ %d(R8), DX", argD)
	p("MOVQ %d(R8), DI", argSum)
	p("MOVQ %d(R8), R9", argPFD)
	p("MOVQ %d(R8), R11", argAcc)
	// Clear the accumulators: nv × 8 lanes × 80 floats.
	p("VPXORD Z0, Z0, Z0")
	p("MOVQ R11, SI")
	p("MOVQ $%d, CX", nv*vecAcc/64)
	label(name + "clear")
	p("VMOVUPS Z0, (SI)")
	p("ADDQ $64, SI")
	p("DECQ CX")
	p("JNZ %sclear", name)
	p("MOVQ %d(R8), R8", argNB8)
	p("SHLQ $2, R8")
	p("XORQ R12, R12")
	label(name + "pair")
	block(nv, false, name+"even")
	block(nv, true, name+"odd")
	p("DECQ R8")
	p("JNZ %spair", name)

	// Each vector's outputs: its eight lanes (320 bytes apart) added as
	// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), as ilv3TilesVNNI's ILV3TREE.
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), R14", argY)
	p("MOVQ %d(R8), R9", argYS)
	p("MOVQ R11, R15")
	for v := range nv {
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
		if v < nv-1 {
			p("ADDQ R9, R14")
			p("ADDQ $%d, R15", vecAcc)
		}
	}
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
	line("// runs one tile of 80 rows and nv vectors. Per 64-byte step the codes are loaded")
	line("// once into Z30 and tripled five times, x₀ … x₅ in Z30 and Z31 by turns, each meeting")
	line("// every vector's dword (a broadcast memory operand) into its accumulators")
	line("// Z6v…Z6v+5 (P₀ … P₅); the nv·6 independent accumulators hide VPDPBUSD's latency")
	line("// without ilv3TilesVNNI's two sets of steps.")
	line("//")
	line("// Registers: R8 the block pairs left, AX the weights, BX, R10, R13, R14, R15 the")
	line("// vectors' activations, DX and DI vector 0's D and Sum, R9 the distance to the")
	line("// bytes to prefetch (the D and Sum stride in the fold), R11 the accumulators (vector")
	line("// v's lane l at 2560v+320l), R12 the lane of the block, CX the planes left; SI and")
	line("// CX walk the vectors' D and Sum in the fold.")
	line("//")
	line("// Each step prefetches the line at its offset in the tile ilv3MatArgs.pfd bytes on")
	line("// (the next tile, on a tile's first call), into L2, as the 2-bit batched kernels do.")
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
