//go:build ignore

// This program writes ilvmatmul_avxvnni_amd64.s, the batched interleaved kernels for
// AVX-VNNI, and ilvmatmul_avxvnni_kernels_amd64.go, their declarations and dispatch:
//
//	go run ilvmatmul_avxvnni_amd64_gen.go
//
// See ilvmatmul_avx2_amd64_gen.go for the AVX2 kernels these replace where the CPU has
// AVX-VNNI, and ilvTilesAVXVNNI (matvec_amd64.s) for the nested sums.
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

// dp emits VPDPBUSD Yrm, Yv, Yd (Yd += Σ₄ u8(Yv)·s8(Yrm) a dword): in the VEX encoding
// of AVX-VNNI (VEX.256.66.0F38.W0 50 /r), which Go's assembler does not write, or in
// the EVEX one (AVX512-VNNI with VL) for the twin the tests run.
func dp(vex bool, rm, v, d int) {
	if !vex {
		p("VPDPBUSD Y%d, Y%d, Y%d", rm, v, d)
		return
	}
	b1 := 0xE2 ^ (d>>3)<<7 ^ (rm>>3)<<5
	b2 := 0x05 | (15-v)<<3
	modrm := 0xC0 | (d&7)<<3 | rm&7
	p("BYTE $0xC4; BYTE $%#02x; BYTE $%#02x; BYTE $0x50; BYTE $%#02x // VPDPBUSD Y%d, Y%d, Y%d", b1, b2, modrm, rm, v, d)
}

// act returns the address of vector v's activation dword at displacement off from its
// current position: BX is vector 0's, CX vector 3's, R13 the stride.
func act(v, off int) string {
	switch v {
	case 0:
		return fmt.Sprintf("%d(BX)", off)
	case 1:
		return fmt.Sprintf("%d(BX)(R13*1)", off)
	case 2:
		return fmt.Sprintf("%d(BX)(R13*2)", off)
	case 3:
		return fmt.Sprintf("%d(CX)", off)
	case 4:
		return fmt.Sprintf("%d(CX)(R13*1)", off)
	default:
		return fmt.Sprintf("%d(CX)(R13*2)", off)
	}
}

// pass emits one pass over half h of a block: its 32 half steps multiplied, for every
// vector, with two of the code byte's four nested forms into two int32 accumulators
// (vector v's in Y2v and Y2v+1): the bytes masked with 0xF0 and 0xC0 (X₂, X₃: high)
// or the bytes and them masked with 0xFC (X₀, X₁). The first pass of a block also
// prefetches the block's lines pfd bytes on.
func pass(vex bool, nv, h int, high, odd, first bool, name string) {
	ao := 0
	if odd {
		ao = 32
	}
	c0, c1, bc := 2*nv, 2*nv+1, 2*nv+2
	for a := range 2 * nv {
		p("VPXOR Y%d, Y%d, Y%d", a, a, a)
	}
	if first {
		p("PREFETCHT1 (AX)(R9*1)")
		p("PREFETCHT1 64(AX)(R9*1)")
	}
	p("MOVQ AX, SI")
	p("MOVQ $4, DX")
	label(name)
	for st := range 8 {
		// Step 8p+st: codes at 128+64·st past the plane (SI moves 512 a plane), the
		// vectors' dwords at ao+4·st past theirs (BX and CX move 64 a plane).
		off := 128 + 64*st
		if first {
			p("PREFETCHT1 %d(SI)(R9*1)", off)
		}
		if high {
			p("VMOVDQU %d(SI), Y%d", off+32*h, c1)
			p("VPAND ilvymask<>+32(SB), Y%d, Y%d", c1, c0)
			p("VPAND ilvymask<>+64(SB), Y%d, Y%d", c1, c1)
		} else {
			p("VMOVDQU %d(SI), Y%d", off+32*h, c0)
			p("VPAND ilvymask<>+0(SB), Y%d, Y%d", c0, c1)
		}
		for v := range nv {
			p("VPBROADCASTD %s, Y%d", act(v, ao+4*st), bc)
			dp(vex, bc, c0, 2*v)
			dp(vex, bc, c1, 2*v+1)
		}
	}
	p("ADDQ $512, SI")
	p("ADDQ $64, BX")
	if nv > 3 {
		p("ADDQ $64, CX")
	}
	p("DECQ DX")
	p("JNZ %s", name)
	p("SUBQ $256, BX")
	if nv > 3 {
		p("SUBQ $256, CX")
	}
	// The nested sums to S_g, as ILVYSUMS: X₂ is kept on the stack for the low pass.
	for v := range nv {
		a0, a1 := 2*v, 2*v+1
		if high {
			p("VMOVDQU Y%d, %d(SP)", a0, 32*v)
			p("VPSUBD Y%d, Y%d, Y%d", a1, a0, a0)
			p("VPSRAD $4, Y%d, Y%d", a0, a0)
			p("VPSRAD $6, Y%d, Y%d", a1, a1)
		} else {
			p("VPSUBD Y%d, Y%d, Y%d", a1, a0, a0)
			p("VPSUBD %d(SP), Y%d, Y%d", 32*v, a1, a1)
			p("VPSRAD $2, Y%d, Y%d", a1, a1)
		}
	}
	// I = S − Sum and acc = fma(fp16(d)·D, I, acc) for rows 16g+8h … +7
	// (ilvTilesAVX2's Y_{2g+h}), as ILV2FOLD1.
	scale, tmp, prod, mem := c0, bc, c1, 15
	g0 := 0
	if high {
		g0 = 2
	}
	for j := range 2 {
		i := 2*(g0+j) + h
		p("VCVTPH2PS %d(AX), Y%d", 16*i, scale)
		for v := range nv {
			d, s := "(R10)", "(DI)"
			if v > 0 {
				p("IMUL3Q $%d, R14, R15", v)
				d, s = "(R10)(R15*1)", "(DI)(R15*1)"
			}
			a := 2*v + j
			p("VPBROADCASTD %s, Y%d", s, tmp)
			p("VPSUBD Y%d, Y%d, Y%d", tmp, a, a)
			p("VCVTDQ2PS Y%d, Y%d", a, a)
			p("VBROADCASTSS %s, Y%d", d, tmp)
			p("VMULPS Y%d, Y%d, Y%d", tmp, scale, prod)
			p("VMOVUPS %d(R11)(R12*1), Y%d", 2048*v+32*i, mem)
			p("VFMADD231PS Y%d, Y%d, Y%d", a, prod, mem)
			p("VMOVUPS Y%d, %d(R11)(R12*1)", mem, 2048*v+32*i)
		}
	}
}

// block emits one block: the high and low pass of each half, then the step to the next
// block.
func block(vex bool, nv int, odd bool, name string) {
	for h := range 2 {
		pass(vex, nv, h, true, odd, h == 0, fmt.Sprintf("%s%dh", name, h))
		pass(vex, nv, h, false, odd, false, fmt.Sprintf("%s%dl", name, h))
	}
	p("ADDQ $%d, AX", 2176)
	p("ADDQ $4, R10")
	p("ADDQ $4, DI")
	p("ADDQ $256, R12")
	p("ANDQ $2047, R12")
}

func kernel(vex bool, name string, nv int) {
	name = fmt.Sprintf("%s%d", name, nv)
	line("")
	line(fmt.Sprintf("// func %s(a *ilvMatArgs)", name))
	// The frame holds each vector's X₂ between a half's two passes.
	line(fmt.Sprintf("TEXT ·%s(SB), NOSPLIT, $%d-8", name, 32*width))
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), AX", argW)
	p("MOVQ %d(R8), BX", argQ)
	p("MOVQ %d(R8), R13", argQS)
	if nv > 3 {
		p("LEAQ (BX)(R13*2), CX")
		p("ADDQ R13, CX")
	}
	p("MOVQ %d(R8), R10", argD)
	p("MOVQ %d(R8), DI", argSum)
	p("MOVQ %d(R8), R14", argDS)
	p("MOVQ %d(R8), R9", argPFD)
	p("MOVQ %d(R8), R11", argAcc)
	// Clear the accumulators: nv × 8 lanes × 64 floats.
	p("VPXOR Y0, Y0, Y0")
	p("MOVQ R11, R15")
	p("MOVQ $%d, DX", nv*2048/32)
	label(name + "clear")
	p("VMOVUPS Y0, (R15)")
	p("ADDQ $32, R15")
	p("DECQ DX")
	p("JNZ %sclear", name)
	p("MOVQ %d(R8), R8", argNB8)
	p("SHLQ $2, R8")
	p("XORQ R12, R12")
	label(name + "pair")
	block(vex, nv, false, name+"even")
	block(vex, nv, true, name+"odd")
	p("ADDQ $256, BX")
	if nv > 3 {
		p("ADDQ $256, CX")
	}
	p("DECQ R8")
	p("JNZ %spair", name)

	// Each vector's outputs: its eight lanes (256 bytes apart) added as
	// ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)), as ilvTilesAVX2's ILV2TREE.
	p("MOVQ a+0(FP), R8")
	p("MOVQ %d(R8), DX", argY)
	p("MOVQ %d(R8), R9", argYS)
	p("MOVQ R11, R15")
	for v := range nv {
		for i := range 8 {
			p("VMOVUPS %d(R15), Y0", 32*i)
			p("VADDPS %d(R15), Y0, Y0", 1024+32*i)
			p("VMOVUPS %d(R15), Y1", 512+32*i)
			p("VADDPS %d(R15), Y1, Y1", 1536+32*i)
			p("VADDPS Y1, Y0, Y0")
			p("VMOVUPS %d(R15), Y2", 256+32*i)
			p("VADDPS %d(R15), Y2, Y2", 1280+32*i)
			p("VMOVUPS %d(R15), Y3", 768+32*i)
			p("VADDPS %d(R15), Y3, Y3", 1792+32*i)
			p("VADDPS Y3, Y2, Y2")
			p("VADDPS Y2, Y0, Y0")
			p("VMOVUPS Y0, %d(DX)", 32*i)
		}
		if v < nv-1 {
			p("ADDQ R9, DX")
			p("ADDQ $2048, R15")
		}
	}
	p("VZEROUPPER")
	p("RET")
}

func main() {
	line("// Code generated by ilvmatmul_avxvnni_amd64_gen.go; DO NOT EDIT.")
	line("")
	line("//go:build amd64 && !purego")
	line("")
	line(`#include "textflag.h"`)
	line("")
	line("// The batched interleaved kernels for AVX-VNNI (see interleave_matmul.go):")
	line("// ilvMatAVXVNNI<nv> runs one tile of 64 rows and nv vectors with ilvTilesAVXVNNI's")
	line("// nested sums. Sixteen registers hold two of a half step's four nested sums for six")
	line("// vectors, so each half of a block takes two passes over its 32 half steps (the")
	line("// block, 2176 bytes, stays in L1): the high pass multiplies the bytes masked with")
	line("// 0xF0 and 0xC0 (X₂, X₃), whence S₂ and S₃, and keeps X₂ on the stack; the low pass")
	line("// the bytes and them masked with 0xFC (X₀, X₁), whence S₀ and S₁. Per 32 codes a")
	line("// vector costs a VPDPBUSD, half a broadcast and a sixth of the load and masking,")
	line("// against the AVX2 kernels' VPMADDUBSW and VPADDW for 16. Each S_g is folded as")
	line("// ilvTilesAVX2 folds it, so every vector's bits are ilvTilesAVX2's: the integer sums")
	line("// are exact, and the float operations the same.")
	line("//")
	line("// ilvMatVNNI256<nv> is the same code with VPDPBUSD in its EVEX encoding, for the")
	line("// tests on AVX-512 VNNI machines (TestIlvAVXVNNIEncoding compares the two).")
	line("//")
	line("// Registers: Y0 … Y2nv−1 the accumulators (vector v's at 2v, 2v+1), then the two code")
	line("// forms and the broadcast dword; Y15 in the fold. R8 the block pairs left, AX the")
	line("// block, SI the pass's plane of steps, DX the planes left, BX vector 0's")
	line("// activations and CX vector 3's (R13 apart), R10 and DI vector 0's D and Sum (R14")
	line("// apart, R15 v·R14 in the fold), R9 the distance to the bytes to prefetch, R11 the")
	line("// accumulators (vector v's lane l at 2048v+256l), R12 the lane of the block.")
	line("")
	line("// ilvymask<> holds the code masks 0xFC, 0xF0, 0xC0, each in 32 bytes.")
	for i, m := range []string{"0xfcfcfcfcfcfcfcfc", "0xf0f0f0f0f0f0f0f0", "0xc0c0c0c0c0c0c0c0"} {
		for j := 0; j < 32; j += 8 {
			line(fmt.Sprintf("DATA ilvymask<>+%d(SB)/8, $%s", 32*i+j, m))
		}
	}
	line("GLOBL ilvymask<>(SB), RODATA|NOPTR, $96")
	for nv := 1; nv <= width; nv++ {
		kernel(true, "ilvMatAVXVNNI", nv)
	}
	for nv := 1; nv <= width; nv++ {
		kernel(false, "ilvMatVNNI256", nv)
	}
	if err := os.WriteFile("ilvmatmul_avxvnni_amd64.s", b.Bytes(), 0o644); err != nil {
		panic(err)
	}

	b.Reset()
	line("// Code generated by ilvmatmul_avxvnni_amd64_gen.go; DO NOT EDIT.")
	line("")
	line("//go:build amd64 && !purego")
	line("")
	line("package ternary")
	line("")
	line("// The batched interleaved kernels of ilvmatmul_avxvnni_amd64.s: ilvMatAVXVNNI<nv>")
	line("// and its EVEX twin ilvMatVNNI256<nv> run nv vectors (see ilvMatGeneric for the")
	line("// contract).")
	for _, name := range []string{"ilvMatAVXVNNI", "ilvMatVNNI256"} {
		for nv := 1; nv <= width; nv++ {
			line("")
			line("//go:noescape")
			line(fmt.Sprintf("func %s%d(a *ilvMatArgs)", name, nv))
		}
	}
	for _, k := range []struct{ fn, name, what string }{
		{"archIlvMatAVXVNNI", "ilvMatAVXVNNI", "AVX-VNNI kernel"},
		{"archIlvMatVNNI256", "ilvMatVNNI256", "AVX-VNNI kernel's EVEX twin"},
	} {
		line("")
		line(fmt.Sprintf("// %s runs the %s for nv vectors, 1 ≤ nv ≤ ilvMatWidth.", k.fn, k.what))
		line(fmt.Sprintf("func %s(nv int, a *ilvMatArgs) {", k.fn))
		line("switch nv {")
		for nv := 1; nv <= width; nv++ {
			line(fmt.Sprintf("case %d:\n%s%d(a)", nv, k.name, nv))
		}
		line(fmt.Sprintf("default:\npanic(\"ternary: %s: bad width\")", k.fn))
		line("}")
		line("}")
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile("ilvmatmul_avxvnni_kernels_amd64.go", src, 0o644); err != nil {
		panic(err)
	}
}
