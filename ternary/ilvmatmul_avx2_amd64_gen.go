//go:build ignore

// This program writes ilvmatmul_avx2_amd64.s, the batched interleaved kernels for
// AVX2, and ilvmatmul_avx2_kernels_amd64.go, their declarations and dispatch:
//
//	go run ilvmatmul_avx2_amd64_gen.go
//
// See interleave_matmul.go for the method and ilvTilesAVX2 (matvec_amd64.s) for how
// the four rows of a code byte are separated and summed.
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

// pass emits one pass over a block: the 32 half steps of half h, plane g (rows
// 16g+8h … 16g+8h+7, ilvTilesAVX2's Y_{2g+h}), each vector's int16 sums in Y<v>, then
// their fold into the vectors' accumulator lanes. The first pass of a block also
// prefetches the block's lines pfd bytes on.
func pass(nv, h, g int, odd bool, name string) {
	ao := 0
	if odd {
		ao = 32
	}
	first := h == 0 && g == 0
	for v := range nv {
		p("VPXOR Y%d, Y%d, Y%d", v, v, v)
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
		p("VMOVDQU %d(SI), Y8", off+32*h)
		if g > 0 {
			p("VPSRLW $%d, Y8, Y8", 2*g)
		}
		p("VPAND Y15, Y8, Y8")
		for v := range nv {
			p("VPBROADCASTD %s, Y14", act(v, ao+4*st))
			p("VPMADDUBSW Y14, Y8, Y9")
			p("VPADDW Y9, Y%d, Y%d", v, v)
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
	// I = Σ c·Q − Sum and acc = fma(fp16(d)·D, I, acc), as ilvTilesAVX2's ILV2SUMS and
	// ILV2FOLD1.
	i := 2*g + h
	p("VCVTPH2PS %d(AX), Y10", 16*i)
	for v := range nv {
		d, s := "(R10)", "(DI)"
		if v > 0 {
			p("IMUL3Q $%d, R14, R15", v)
			d, s = "(R10)(R15*1)", "(DI)(R15*1)"
		}
		p("VPMADDWD Y13, Y%d, Y%d", v, v)
		p("VPBROADCASTD %s, Y14", s)
		p("VPSUBD Y14, Y%d, Y%d", v, v)
		p("VCVTDQ2PS Y%d, Y%d", v, v)
		p("VBROADCASTSS %s, Y14", d)
		p("VMULPS Y14, Y10, Y9")
		p("VMOVUPS %d(R11)(R12*1), Y11", 2048*v+32*i)
		p("VFMADD231PS Y%d, Y9, Y11", v)
		p("VMOVUPS Y11, %d(R11)(R12*1)", 2048*v+32*i)
	}
}

// block emits one block: its eight passes, then the step to the next block.
func block(nv int, odd bool, name string) {
	for h := range 2 {
		for g := range 4 {
			pass(nv, h, g, odd, fmt.Sprintf("%s%d%d", name, h, g))
		}
	}
	p("ADDQ $%d, AX", 2176)
	p("ADDQ $4, R10")
	p("ADDQ $4, DI")
	p("ADDQ $256, R12")
	p("ANDQ $2047, R12")
}

func kernel(nv int) {
	name := fmt.Sprintf("ilvMatAVX2%d", nv)
	line("")
	line(fmt.Sprintf("// func %s(a *ilvMatArgs)", name))
	line(fmt.Sprintf("TEXT ·%s(SB), NOSPLIT, $0-8", name))
	// The code mask and the int16 ones, as ilvTilesAVX2's ILV2CONST.
	p("MOVL $0x03030303, AX")
	p("VMOVD AX, X15")
	p("VPBROADCASTD X15, Y15")
	p("MOVL $0x00010001, AX")
	p("VMOVD AX, X13")
	p("VPBROADCASTD X13, Y13")
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
	block(nv, false, name+"even")
	block(nv, true, name+"odd")
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
	line("// Code generated by ilvmatmul_avx2_amd64_gen.go; DO NOT EDIT.")
	line("")
	line("//go:build amd64 && !purego")
	line("")
	line(`#include "textflag.h"`)
	line("")
	line("// The batched interleaved kernels for AVX2 (see interleave_matmul.go): ilvMatAVX2<nv>")
	line("// runs one tile of 64 rows and nv vectors. Sixteen registers do not hold")
	line("// ilvTilesAVX2's eight int16 accumulators for more than one vector, so a block is")
	line("// run in eight passes, one per half step and plane (eight rows): a pass loads and")
	line("// extracts each of its 32 code vectors once (Y8, mask Y15) and multiplies it with")
	line("// every vector's broadcast dword (Y14, product Y9) into that vector's int16")
	line("// accumulator Y<v>; the block (2176 bytes) stays in L1 across its passes. Per 32")
	line("// codes a vector costs a broadcast, a VPMADDUBSW and a VPADDW, the extraction")
	line("// (load, shift, AND) is shared by the nv vectors. Each pass then folds its eight rows")
	line("// as ilvTilesAVX2 does (VPMADDWD by ones Y13, minus Sum, fp16(d)·D, FMA into the")
	line("// block's lane), so every vector's bits are ilvTilesAVX2's: integer sums do not")
	line("// depend on the order of their terms, and the float operations are the same.")
	line("//")
	line("// Registers: R8 the block pairs left, AX the block, SI the pass's plane of steps, DX")
	line("// the planes left, BX vector 0's activations and CX vector 3's (R13 apart), R10 and")
	line("// DI vector 0's D and Sum (R14 apart, R15 v·R14 in the fold), R9 the distance to the")
	line("// bytes to prefetch, R11 the accumulators (vector v's lane l at 2048v+256l), R12 the")
	line("// lane of the block.")
	line("//")
	line("// A block's first pass prefetches each of its lines ilvMatArgs.pfd bytes on (the")
	line("// next tile, on a tile's first call) into L2, as the VNNI kernels do.")
	for nv := 1; nv <= width; nv++ {
		kernel(nv)
	}
	if err := os.WriteFile("ilvmatmul_avx2_amd64.s", b.Bytes(), 0o644); err != nil {
		panic(err)
	}

	b.Reset()
	line("// Code generated by ilvmatmul_avx2_amd64_gen.go; DO NOT EDIT.")
	line("")
	line("//go:build amd64 && !purego")
	line("")
	line("package ternary")
	line("")
	line("// The batched interleaved kernels of ilvmatmul_avx2_amd64.s: ilvMatAVX2<nv> runs nv")
	line("// vectors (see ilvMatGeneric for the contract).")
	for nv := 1; nv <= width; nv++ {
		line("")
		line("//go:noescape")
		line(fmt.Sprintf("func ilvMatAVX2%d(a *ilvMatArgs)", nv))
	}
	line("")
	line("// archIlvMatAVX2 runs the AVX2 kernel for nv vectors, 1 ≤ nv ≤ ilvMatWidth.")
	line("func archIlvMatAVX2(nv int, a *ilvMatArgs) {")
	line("switch nv {")
	for nv := 1; nv <= width; nv++ {
		line(fmt.Sprintf("case %d:\nilvMatAVX2%d(a)", nv, nv))
	}
	line("default:\npanic(\"ternary: archIlvMatAVX2: bad width\")")
	line("}")
	line("}")
	src, err := format.Source(b.Bytes())
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile("ilvmatmul_avx2_kernels_amd64.go", src, 0o644); err != nil {
		panic(err)
	}
}
