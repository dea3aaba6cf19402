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

// regs is a kernel's register plan: each pass runs two planes (two int16
// accumulators a vector, Y0 … Y2nv−1), then the two code vectors, the product and the
// broadcast dword; the code mask and the int16 ones stay in Y15 and Y13 while there is
// room (nv ≤ 5) and are memory operands from ilvavx2<> at six.
type regs struct {
	act        int
	mask, ones string
}

func plan(nv int) regs {
	if 2*nv+3 <= 13 {
		return regs{14, "Y15", "Y13"}
	}
	return regs{15, "ilvavx2<>+0(SB)", "ilvavx2<>+32(SB)"}
}

// pass emits one pass over a block: the 32 half steps of half h, planes g+j (j < np;
// rows 16(g+j)+8h … +7, ilvTilesAVX2's Y_{2(g+j)+h}), each vector's int16 sums in
// Y<np·v+j>, then their fold into the vectors' accumulator lanes. The first
// pass of a block also prefetches the block's lines pfd bytes on.
func pass(nv, np, h, g int, odd bool, name string) {
	rg := plan(nv)
	ao := 0
	if odd {
		ao = 32
	}
	first := h == 0 && g == 0
	base := nv * np
	code := func(j int) int { return base + j }
	tmp := base + np
	for a := range base {
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
		p("VMOVDQU %d(SI), Y%d", off+32*h, code(0))
		for j := np - 1; j >= 0; j-- {
			if g+j > 0 {
				p("VPSRLW $%d, Y%d, Y%d", 2*(g+j), code(0), code(j))
			}
			p("VPAND %s, Y%d, Y%d", rg.mask, code(j), code(j))
		}
		for v := range nv {
			p("VPBROADCASTD %s, Y%d", act(v, ao+4*st), rg.act)
			for j := range np {
				p("VPMADDUBSW Y%d, Y%d, Y%d", rg.act, code(j), tmp)
				p("VPADDW Y%d, Y%d, Y%d", tmp, np*v+j, np*v+j)
			}
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
	scale, prod, mem := code(0), tmp, code(1)
	for j := range np {
		i := 2*(g+j) + h
		p("VCVTPH2PS %d(AX), Y%d", 16*i, scale)
		for v := range nv {
			d, s := "(R10)", "(DI)"
			if v > 0 {
				p("IMUL3Q $%d, R14, R15", v)
				d, s = "(R10)(R15*1)", "(DI)(R15*1)"
			}
			a := np*v + j
			p("VPMADDWD %s, Y%d, Y%d", rg.ones, a, a)
			p("VPBROADCASTD %s, Y%d", s, rg.act)
			p("VPSUBD Y%d, Y%d, Y%d", rg.act, a, a)
			p("VCVTDQ2PS Y%d, Y%d", a, a)
			p("VBROADCASTSS %s, Y%d", d, rg.act)
			p("VMULPS Y%d, Y%d, Y%d", rg.act, scale, prod)
			p("VMOVUPS %d(R11)(R12*1), Y%d", 2048*v+32*i, mem)
			p("VFMADD231PS Y%d, Y%d, Y%d", a, prod, mem)
			p("VMOVUPS Y%d, %d(R11)(R12*1)", mem, 2048*v+32*i)
		}
	}
}

// block emits one block: its four passes, then the step to the next block.
func block(nv int, odd bool, name string) {
	const np = 2
	for h := range 2 {
		for g := 0; g < 4; g += np {
			pass(nv, np, h, g, odd, fmt.Sprintf("%s%d%d", name, h, g))
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
	if plan(nv).mask == "Y15" {
		// The code mask and the int16 ones, as ilvTilesAVX2's ILV2CONST.
		p("MOVL $0x03030303, AX")
		p("VMOVD AX, X15")
		p("VPBROADCASTD X15, Y15")
		p("MOVL $0x00010001, AX")
		p("VMOVD AX, X13")
		p("VPBROADCASTD X13, Y13")
	}
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
	line("// run in four passes, one per half step and pair of planes (two sets of eight rows):")
	line("// a pass loads each of its 32 half steps once, extracts two code vectors (shift,")
	line("// AND) and multiplies them with every vector's broadcast dword into that vector's two")
	line("// int16 accumulators; the block (2176 bytes) stays in L1 across its passes. Per 32")
	line("// codes a vector then costs a VPMADDUBSW, a VPADDW and half a broadcast, and the")
	line("// extraction is shared by the nv vectors. Each pass folds its sixteen rows as")
	line("// ilvTilesAVX2 does (VPMADDWD by ones, minus Sum, fp16(d)·D, FMA into the block's")
	line("// lane), so every vector's bits are ilvTilesAVX2's: integer sums do not depend on the")
	line("// order of their terms, and the float operations are the same.")
	line("//")
	line("// The vector ALUs bound it: at six vectors 2.3 of them per 32 products, about 40")
	line("// products a cycle. On a shared 2-core AVX-512 Xeon VM (load 4–6, AVX2 family; medians")
	line("// of 5 alternated runs at K = 1024, 5120, 17408), BenchmarkIlvMatKernelAVX2 ran 92,")
	line("// 102 and 101 G multiply-adds per CPU second at six vectors, 63–65 at one, and the")
	line("// AVX2 tiled kernel 83, 99 and 80 (BenchmarkIlvMatKernelTiled); one plane a pass, six")
	line("// vectors in registers with the mask and ones, ran 2–8% slower. In the prefill")
	line("// product (BenchmarkMatMulIlvAVX2, 5120×17408 and 17408×5120, 64 and 256 tokens)")
	line("// the medians were 93–98 against 59–64 vector by vector and 50–90 over the file.")
	line("//")
	line("// Registers: Y0 … Y2nv−1 the accumulators (vector v's at 2v, 2v+1), then the two code")
	line("// vectors and the product; the broadcast dword in Y14, the mask in Y15 and the ones")
	line("// in Y13 up to five vectors; at six the dword takes Y15 and the mask and ones are")
	line("// memory operands. R8 the block pairs left, AX the block, SI the pass's plane of")
	line("// steps, DX the planes left, BX vector 0's activations and CX vector 3's (R13")
	line("// apart), R10 and DI vector 0's D and Sum (R14 apart, R15 v·R14 in the fold), R9 the")
	line("// distance to the bytes to prefetch, R11 the accumulators (vector v's lane l at")
	line("// 2048v+256l), R12 the lane of the block.")
	line("//")
	line("// A block's first pass prefetches each of its lines ilvMatArgs.pfd bytes on (the")
	line("// next tile, on a tile's first call) into L2, as the VNNI kernels do.")
	line("")
	line("// ilvavx2<> holds the code mask (0x03 in every byte) and the int16 ones for the kernel")
	line("// whose accumulators leave them no register.")
	for i := 0; i < 32; i += 8 {
		line(fmt.Sprintf("DATA ilvavx2<>+%d(SB)/8, $0x0303030303030303", i))
	}
	for i := 32; i < 64; i += 8 {
		line(fmt.Sprintf("DATA ilvavx2<>+%d(SB)/8, $0x0001000100010001", i))
	}
	line("GLOBL ilvavx2<>(SB), RODATA|NOPTR, $64")
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
