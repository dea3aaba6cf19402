//go:build ignore

// This program writes ilvmatmul_amd64.s, the batched interleaved kernels for amd64
// (AVX-512 VNNI), and ilvmatmul_kernels_amd64.go, their declarations and dispatch:
//
//	go run ilvmatmul_amd64_gen.go
//
// See interleave_matmul.go for the method and ilvTilesVNNI (matvec_amd64.s) for how
// the four rows of a code byte are separated.
package main

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
)

// width is the widest kernel (ilvMatWidth); there is one for every width up to it.
const width = 6

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
func line(s string)                { fmt.Fprintln(&b, s) }

// act returns the address of vector v's activation dword at displacement off from its
// current position: BX is vector 0's, R10 vector 3's, R13 the stride.
func act(v, off int) string {
	switch v {
	case 0:
		return fmt.Sprintf("%d(BX)", off)
	case 1:
		return fmt.Sprintf("%d(BX)(R13*1)", off)
	case 2:
		return fmt.Sprintf("%d(BX)(R13*2)", off)
	case 3:
		return fmt.Sprintf("%d(R10)", off)
	case 4:
		return fmt.Sprintf("%d(R10)(R13*1)", off)
	default:
		return fmt.Sprintf("%d(R10)(R13*2)", off)
	}
}

// block emits one block: its 32 steps (a loop over the four planes of eight steps),
// then the fold of every vector's 64 row integers into its accumulator lane. odd says
// whether the block is the second of its pair (activations 32 bytes on).
func block(nv int, odd bool, name string) {
	ao := 0
	if odd {
		ao = 32
	}
	for i := range 4 * nv {
		p("VPXORD Z%d, Z%d, Z%d", i, i, i)
	}
	p("MOVQ $4, CX")
	label(name)
	for st := range 8 {
		// Step 8p+st: codes at 128+64·st past the plane (AX moves 512 a plane), the
		// vectors' dwords at ao+4·st past theirs (BX and R10 move 64 a plane).
		p("PREFETCHT1 %d(AX)(R9*1)", 128+64*st)
		p("VMOVDQU64 %d(AX), Z24", 128+64*st)
		p("VPANDD Z28, Z24, Z25")
		p("VPANDD Z29, Z24, Z26")
		p("VPANDD Z30, Z24, Z27")
		for v := range nv {
			p("VPBROADCASTD %s, Z31", act(v, ao+4*st))
			for g := range 4 {
				p("VPDPBUSD Z31, Z%d, Z%d", 24+g, 4*v+g)
			}
		}
	}
	p("ADDQ $512, AX")
	p("ADDQ $64, BX")
	if nv > 3 {
		p("ADDQ $64, R10")
	}
	p("DECQ CX")
	p("JNZ %s", name)
	p("SUBQ $256, BX")
	if nv > 3 {
		p("SUBQ $256, R10")
	}
	// The block's scales (AX is now 2048 past the block), shared by every vector; the
	// masks' registers are free until the next block.
	for g := range 4 {
		p("VCVTPH2PS %d(AX), Z%d", -2048+32*g, 24+g)
	}
	p("PREFETCHT1 -2048(AX)(R9*1)")
	p("PREFETCHT1 -1984(AX)(R9*1)")
	p("ADDQ $128, AX")
	p("MOVQ a+0(FP), R15")
	p("MOVQ %d(R15), R9", argDS)
	p("MOVQ DX, R14")
	p("MOVQ DI, SI")
	p("MOVQ R11, R15")
	for v := range nv {
		a := 4 * v
		// Xᵢ → S_g as ilvTilesVNNI's ILVSUMS, then I = S − Sum and
		// acc = fma(fp16(d)·D, I, acc) as its ILVFOLD1.
		p("VPSUBD Z%d, Z%d, Z%d", a+1, a, a)
		p("VPSUBD Z%d, Z%d, Z%d", a+2, a+1, a+1)
		p("VPSUBD Z%d, Z%d, Z%d", a+3, a+2, a+2)
		p("VPSRAD $2, Z%d, Z%d", a+1, a+1)
		p("VPSRAD $4, Z%d, Z%d", a+2, a+2)
		p("VPSRAD $6, Z%d, Z%d", a+3, a+3)
		p("VPBROADCASTD (SI), Z31")
		p("VBROADCASTSS (R14), Z28")
		for g := range 4 {
			p("VPSUBD Z31, Z%d, Z%d", a+g, a+g)
			p("VCVTDQ2PS Z%d, Z%d", a+g, a+g)
			p("VMULPS Z28, Z%d, Z29", 24+g)
			p("VMOVUPS %d(R15)(R12*1), Z30", 64*g)
			p("VFMADD231PS Z%d, Z29, Z30", a+g)
			p("VMOVUPS Z30, %d(R15)(R12*1)", 64*g)
		}
		if v < nv-1 {
			p("ADDQ R9, R14")
			p("ADDQ R9, SI")
			p("ADDQ $2048, R15")
		}
	}
	p("MOVQ a+0(FP), R15")
	p("MOVQ %d(R15), R9", argPFD)
	p("ADDQ $4, DX")
	p("ADDQ $4, DI")
	p("ADDQ $256, R12")
	p("ANDQ $2047, R12")
	masks()
}

// masks loads the three code masks: 0xFC, 0xF0 and 0xC0 in every byte.
func masks() {
	for i, m := range []string{"0xfcfcfcfc", "0xf0f0f0f0", "0xc0c0c0c0"} {
		p("MOVL $%s, R14", m)
		p("VPBROADCASTD R14, Z%d", 28+i)
	}
}

func kernel(nv int) {
	name := fmt.Sprintf("ilvMatVNNI%d", nv)
	line("")
	line(fmt.Sprintf("// func %s(a *ilvMatArgs)", name))
	line(fmt.Sprintf("TEXT ·%s(SB), NOSPLIT, $0-8", name))
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), AX", argW)
	p("MOVQ %d(R8), BX", argQ)
	p("MOVQ %d(R8), R13", argQS)
	if nv > 3 {
		p("LEAQ (BX)(R13*2), R10")
		p("ADDQ R13, R10")
	}
	p("MOVQ %d(R8), DX", argD)
	p("MOVQ %d(R8), DI", argSum)
	p("MOVQ %d(R8), R9", argPFD)
	p("MOVQ %d(R8), R11", argAcc)
	// Clear the accumulators: nv × 8 lanes × 64 floats.
	p("VPXORD Z0, Z0, Z0")
	p("MOVQ R11, R15")
	p("MOVQ $%d, CX", nv*2048/64)
	label(name + "clear")
	p("VMOVUPS Z0, (R15)")
	p("ADDQ $64, R15")
	p("DECQ CX")
	p("JNZ %sclear", name)
	p("MOVQ %d(R8), R8", argNB8)
	p("SHLQ $2, R8")
	p("XORQ R12, R12")
	masks()
	label(name + "pair")
	block(nv, false, name+"even")
	block(nv, true, name+"odd")
	p("ADDQ $256, BX")
	if nv > 3 {
		p("ADDQ $256, R10")
	}
	p("DECQ R8")
	p("JNZ %spair", name)

	// Each vector's outputs: its eight lanes (256 bytes apart) added as
	// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), as ilvTilesVNNI's ILVTREE.
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), R14", argY)
	p("MOVQ %d(R8), R9", argYS)
	p("MOVQ R11, R15")
	for v := range nv {
		for g := range 4 {
			p("VMOVUPS %d(R15), Z0", 64*g)
			p("VADDPS %d(R15), Z0, Z0", 1024+64*g)
			p("VMOVUPS %d(R15), Z1", 512+64*g)
			p("VADDPS %d(R15), Z1, Z1", 1536+64*g)
			p("VADDPS Z1, Z0, Z0")
			p("VMOVUPS %d(R15), Z2", 256+64*g)
			p("VADDPS %d(R15), Z2, Z2", 1280+64*g)
			p("VMOVUPS %d(R15), Z3", 768+64*g)
			p("VADDPS %d(R15), Z3, Z3", 1792+64*g)
			p("VADDPS Z3, Z2, Z2")
			p("VADDPS Z2, Z0, Z0")
			p("VMOVUPS Z0, %d(R14)", 64*g)
		}
		if v < nv-1 {
			p("ADDQ R9, R14")
			p("ADDQ $2048, R15")
		}
	}
	p("VZEROUPPER")
	p("RET")
}

func main() {
	line("// Code generated by ilvmatmul_amd64_gen.go; DO NOT EDIT.")
	line("")
	line("//go:build amd64 && !purego")
	line("")
	line(`#include "textflag.h"`)
	line("")
	line("// The batched interleaved kernels (see interleave_matmul.go): ilvMatVNNI<nv> runs one")
	line("// tile of 64 rows and nv vectors. Per 64-byte step the codes are loaded and masked")
	line("// once (Z24…Z27, masks Z28…Z30) and each vector's broadcast dword (Z31) meets all")
	line("// four, into its accumulators Z4v…Z4v+3; the nv·4 independent accumulators hide")
	line("// VPDPBUSD's latency without ilvTilesVNNI's four sets of steps.")
	line("//")
	line("// Registers: R8 the block pairs left, AX the weights, BX vector 0's activations and")
	line("// R10 vector 3's (R13 apart), DX and DI vector 0's D and Sum, R9 the distance to the")
	line("// bytes to prefetch (the D and Sum stride in the fold), R11 the accumulators (vector")
	line("// v's lane l at 2048v+256l), R12 the lane of the block, CX the planes left; R14, SI")
	line("// and R15 walk the vectors in the fold.")
	line("//")
	line("// Each step prefetches the line at its offset in the tile ilvMatArgs.pfd bytes on")
	line("// (the next tile, on a tile's first call), into L2: the tiles of a range then")
	line("// stream from memory while the previous one is computed.")
	for nv := 1; nv <= width; nv++ {
		kernel(nv)
	}
	if err := os.WriteFile("ilvmatmul_amd64.s", b.Bytes(), 0o644); err != nil {
		panic(err)
	}

	b.Reset()
	line("// Code generated by ilvmatmul_amd64_gen.go; DO NOT EDIT.")
	line("")
	line("//go:build amd64 && !purego")
	line("")
	line("package ternary")
	line("")
	line("// The batched interleaved kernels of ilvmatmul_amd64.s: ilvMatVNNI<nv> runs nv")
	line("// vectors (see ilvMatGeneric for the contract).")
	for nv := 1; nv <= width; nv++ {
		line("")
		line("//go:noescape")
		line(fmt.Sprintf("func ilvMatVNNI%d(a *ilvMatArgs)", nv))
	}
	line("")
	line("// archIlvMat runs the AVX-512 VNNI kernel for nv vectors, 1 ≤ nv ≤ ilvMatWidth.")
	line("func archIlvMat(nv int, a *ilvMatArgs) {")
	line("switch nv {")
	for nv := 1; nv <= width; nv++ {
		line(fmt.Sprintf("case %d:\nilvMatVNNI%d(a)", nv, nv))
	}
	line("default:\npanic(\"ternary: archIlvMat: bad width\")")
	line("}")
	line("}")
	src, err := format.Source(b.Bytes())
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile("ilvmatmul_kernels_amd64.go", src, 0o644); err != nil {
		panic(err)
	}
}
