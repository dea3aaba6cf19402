//go:build ignore

// This program writes ilvmatmul_avx2_amd64.s, the batched interleaved kernels for
// AVX2, and ilvmatmul_avx2_kernels_amd64.go, their declarations and dispatch; and
// ilvmatmul_avxvnni_amd64.s and ilvmatmul_avxvnni_kernels_amd64.go, the AVX2 family's
// batched kernels for CPUs with AVX-VNNI and their EVEX twins:
//
//	go run ilvmatmul_avx2_amd64_gen.go
//
// See interleave_matmul.go for the method, ilvTilesAVX2 (matvec_amd64.s) for how
// the four rows of a code byte are separated and summed, and ilvTilesAVXVNNI for the
// nested sums.
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
	passBegin(base, first, name)
	for st := range 8 {
		off := stepBegin(st, first)
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
	passEnd(nv, name)
	// I = Σ c·Q − Sum and acc = fma(fp16(d)·D, I, acc), as ilvTilesAVX2's ILV2SUMS and
	// ILV2FOLD1.
	fold(nv, g, h, rg.ones, code(0), rg.act, tmp, code(1))
}

// moveActs moves the activation pointers, BX and (past three vectors) CX, by op (ADDQ
// or SUBQ) n bytes.
func moveActs(nv int, op string, n int) {
	p("%s $%d, BX", op, n)
	if nv > 3 {
		p("%s $%d, CX", op, n)
	}
}

// passBegin opens a pass: its accs accumulators cleared, the block's first two lines
// prefetched on its first pass, and the loop over the four planes of steps.
func passBegin(accs int, first bool, name string) {
	for a := range accs {
		p("VPXOR Y%d, Y%d, Y%d", a, a, a)
	}
	if first {
		p("PREFETCHT1 (AX)(R9*1)")
		p("PREFETCHT1 64(AX)(R9*1)")
	}
	p("MOVQ AX, SI")
	p("MOVQ $4, DX")
	label(name)
}

// stepBegin returns the offset of step 8p+st's codes past the plane (SI moves 512 a
// plane; the vectors' dwords are ao+4·st past theirs, BX and CX moving 64 a plane),
// prefetching its line on a block's first pass.
func stepBegin(st int, first bool) int {
	off := 128 + 64*st
	if first {
		p("PREFETCHT1 %d(SI)(R9*1)", off)
	}
	return off
}

// passEnd closes the loop over the planes and brings the activations back to the
// block's.
func passEnd(nv int, name string) {
	p("ADDQ $512, SI")
	moveActs(nv, "ADDQ", 64)
	p("DECQ DX")
	p("JNZ %s", name)
	moveActs(nv, "SUBQ", 256)
}

// fold emits the fold of two planes' integers, rows 16(g+j)+8h … +7 (ilvTilesAVX2's
// Y_{2(g+j)+h}) in vector v's Y<2v+j>: I = Σ c·Q − Sum (int16 pairs widened by
// VPMADDWD with ones first, where ones is set) and acc = fma(fp16(d)·D, I, acc), as
// ilvTilesAVX2's ILV2SUMS and ILV2FOLD1. scale, tmp, prod and mem are scratch.
func fold(nv, g, h int, ones string, scale, tmp, prod, mem int) {
	for j := range 2 {
		i := 2*(g+j) + h
		p("VCVTPH2PS %d(AX), Y%d", 16*i, scale)
		for v := range nv {
			d, s := "(R10)", "(DI)"
			if v > 0 {
				p("IMUL3Q $%d, R14, R15", v)
				d, s = "(R10)(R15*1)", "(DI)(R15*1)"
			}
			a := 2*v + j
			if ones != "" {
				p("VPMADDWD %s, Y%d, Y%d", ones, a, a)
			}
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

// block emits one block: its four passes, then the step to the next block.
func block(nv int, odd bool, name string) {
	const np = 2
	for h := range 2 {
		for g := 0; g < 4; g += np {
			pass(nv, np, h, g, odd, fmt.Sprintf("%s%d%d", name, h, g))
		}
	}
	if !odd {
		// One body for both blocks of a pair: the activations move on 32 bytes after
		// an even block (R12's bit 8 clear) and 224 after an odd one.
		moveActs(nv, "ADDQ", 32)
		p("TESTQ $256, R12")
		p("JZ %snext", name)
		moveActs(nv, "ADDQ", 192)
		label(name + "next")
	}
	p("ADDQ $%d, AX", 2176)
	p("ADDQ $4, R10")
	p("ADDQ $4, DI")
	p("ADDQ $256, R12")
	p("ANDQ $2047, R12")
}

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

// passVNNI emits one pass over half h of a block: its 32 half steps multiplied, for every
// vector, with two of the code byte's four nested forms into two int32 accumulators
// (vector v's in Y2v and Y2v+1): the bytes masked with 0xF0 and 0xC0 (X₂, X₃: high)
// or the bytes and them masked with 0xFC (X₀, X₁). The first pass of a block also
// prefetches the block's lines pfd bytes on.
func passVNNI(vex bool, nv, h int, high, odd, first bool, name string) {
	ao := 0
	if odd {
		ao = 32
	}
	c0, c1, bc := 2*nv, 2*nv+1, 2*nv+2
	passBegin(2*nv, first, name)
	for st := range 8 {
		off := stepBegin(st, first)
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
	passEnd(nv, name)
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
	g := 0
	if high {
		g = 2
	}
	fold(nv, g, h, "", c0, bc, c1, 15)
}

// blockVNNI emits one block of the AVX-VNNI kernels: the high and low pass of each half, then the step to the next
// block.
func blockVNNI(vex bool, nv int, odd bool, name string) {
	for h := range 2 {
		passVNNI(vex, nv, h, true, odd, h == 0, fmt.Sprintf("%s%dh", name, h))
		passVNNI(vex, nv, h, false, odd, false, fmt.Sprintf("%s%dl", name, h))
	}
	p("ADDQ $%d, AX", 2176)
	p("ADDQ $4, R10")
	p("ADDQ $4, DI")
	p("ADDQ $256, R12")
	p("ANDQ $2047, R12")
}

// A variant is one set of kernels: the AVX2 ones, the AVX-VNNI ones and their EVEX
// twins.
type variant struct {
	name string // the kernels' prefix
	vnni bool
	vex  bool
}

var (
	avx2    = variant{"ilvMatAVX2", false, false}
	avxvnni = variant{"ilvMatAVXVNNI", true, true}
	vnni256 = variant{"ilvMatVNNI256", true, false}
)

func kernel(vr variant, nv int) {
	name := fmt.Sprintf("%s%d", vr.name, nv)
	line("")
	line(fmt.Sprintf("// func %s(a *ilvMatArgs)", name))
	frame := 0
	if vr.vnni {
		frame = 32 * width // each vector's X₂ between a half's two passes
	}
	line(fmt.Sprintf("TEXT ·%s(SB), NOSPLIT, $%d-8", name, frame))
	if !vr.vnni && plan(nv).mask == "Y15" {
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
	if vr.vnni {
		p("SHLQ $2, R8")
		p("XORQ R12, R12")
		label(name + "pair")
		blockVNNI(vr.vex, nv, false, name+"even")
		blockVNNI(vr.vex, nv, true, name+"odd")
		moveActs(nv, "ADDQ", 256)
		p("DECQ R8")
		p("JNZ %spair", name)
	} else {
		p("SHLQ $3, R8")
		p("XORQ R12, R12")
		label(name + "blk")
		block(nv, false, name+"b")
		p("DECQ R8")
		p("JNZ %sblk", name)
	}

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
	asmHeader()
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
	line("// One body serves a pair's even and odd blocks (the activations move on 32 or 224")
	line("// bytes after it, by R12's parity), where each had its own: the six-vector kernel")
	line("// went from ~3,400 instructions to ~1,700, which Zen 3's 4K-op cache holds with")
	line("// room; on the 2-core Zen 3 VM the prefill product (BenchmarkMatMulIlvAVX2, 256")
	line("// tokens, 2 threads, 4 alternated runs) went from 162 and 164 to 171 and 186 G")
	line("// multiply-adds/s (medians, 5120×17408 and 17408×5120), a 27B 256-token prefill from")
	line("// 173 and 163 to 180 and 199 G/s (examples/bench, alternated).")
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
		kernel(avx2, nv)
	}
	write("ilvmatmul_avx2_amd64.s", false)
	asmHeader()
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
	line("// No AVX-VNNI CPU was at hand to time them. On a 2-core Zen 4 VM (AVX-512, the EVEX")
	line("// twins; two runs each, one sitting) BenchmarkIlvMatKernelAVX2Impls ran 150–159 G")
	line("// multiply-adds per CPU second at six vectors, the AVX2 kernels 97–124; the prefill")
	line("// product (BenchmarkMatMulIlvAVX2Impls, two threads) 310–357 G/s against 169–238.")
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
	for _, vr := range []variant{avxvnni, vnni256} {
		for nv := 1; nv <= width; nv++ {
			kernel(vr, nv)
		}
	}
	write("ilvmatmul_avxvnni_amd64.s", false)

	goFile("ilvmatmul_avx2_kernels_amd64.go", []string{
		"// The batched interleaved kernels of ilvmatmul_avx2_amd64.s: ilvMatAVX2<nv> runs nv",
		"// vectors (see ilvMatGeneric for the contract).",
	}, []dispatch{{avx2, "archIlvMatAVX2", "AVX2 kernel"}})
	goFile("ilvmatmul_avxvnni_kernels_amd64.go", []string{
		"// The batched interleaved kernels of ilvmatmul_avxvnni_amd64.s: ilvMatAVXVNNI<nv>",
		"// and its EVEX twin ilvMatVNNI256<nv> run nv vectors (see ilvMatGeneric for the",
		"// contract).",
	}, []dispatch{{avxvnni, "archIlvMatAVXVNNI", "AVX-VNNI kernel"}, {vnni256, "archIlvMatVNNI256", "AVX-VNNI kernel's EVEX twin"}})
}

// asmHeader starts an assembly file.
func asmHeader() {
	line("// Code generated by ilvmatmul_avx2_amd64_gen.go; DO NOT EDIT.")
	line("")
	line("//go:build amd64 && !purego")
	line("")
	line(`#include "textflag.h"`)
	line("")
}

// dispatch is a generated function that runs a variant's kernel for nv vectors.
type dispatch struct {
	vr       variant
	fn, what string
}

// goFile writes the Go declarations of the kernels of ds and their dispatch functions.
func goFile(file string, doc []string, ds []dispatch) {
	b.Reset()
	line("// Code generated by ilvmatmul_avx2_amd64_gen.go; DO NOT EDIT.")
	line("")
	line("//go:build amd64 && !purego")
	line("")
	line("package ternary")
	line("")
	for _, l := range doc {
		line(l)
	}
	for _, d := range ds {
		for nv := 1; nv <= width; nv++ {
			line("")
			line("//go:noescape")
			line(fmt.Sprintf("func %s%d(a *ilvMatArgs)", d.vr.name, nv))
		}
	}
	for _, d := range ds {
		line("")
		line(fmt.Sprintf("// %s runs the %s for nv vectors, 1 ≤ nv ≤ ilvMatWidth.", d.fn, d.what))
		line(fmt.Sprintf("func %s(nv int, a *ilvMatArgs) {", d.fn))
		line("switch nv {")
		for nv := 1; nv <= width; nv++ {
			line(fmt.Sprintf("case %d:\n%s%d(a)", nv, d.vr.name, nv))
		}
		line(fmt.Sprintf("default:\npanic(\"ternary: %s: bad width\")", d.fn))
		line("}")
		line("}")
	}
	write(file, true)
}

// write writes the buffer to file (gofmt'd for Go) and empties it.
func write(file string, goSource bool) {
	src := b.Bytes()
	if goSource {
		var err error
		if src, err = format.Source(src); err != nil {
			panic(err)
		}
	}
	if err := os.WriteFile(file, src, 0o644); err != nil {
		panic(err)
	}
	b.Reset()
}
