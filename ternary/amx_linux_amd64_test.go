//go:build linux && amd64 && !purego

package ternary

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/cpu"
)

// needAMX skips where the CPU has no AMX-INT8, and fails where it has but Linux
// refused this process the tile data (a kernel before 5.16, or a signal stack too small).
func needAMX(t testing.TB) {
	t.Helper()
	if !cpu.X86.HasAMXTile || !cpu.X86.HasAMXInt8 || !hasAVX512VNNI() {
		t.Skip("no AMX-INT8 (with AVX-512 VNNI) on this CPU")
	}
	if !amxAvailable() {
		t.Fatal("the CPU has AMX-INT8 but arch_prctl(ARCH_REQ_XCOMP_PERM) refused its tile data")
	}
}

// TestMatMulInterleavedAMX checks the AMX product bit for bit against each vector alone
// (MatVecInterleavedRange, on the AVX-512 VNNI family whose bits it keeps) and against
// the VNNI batched kernels: widths of 8 to 20 blocks and the model's 40 and 136 (whole
// groups of 8 and tails after them), batches below, at and past whole groups of 16
// vectors (the kernel reads a last partial group whole), 130 rows (a last tile of 2)
// and every tile-aligned range, random scales (zeros, subnormals and 65504 included),
// codes over 0…3 and activations over −128…127 (−128 and 127 favoured).
func TestMatMulInterleavedAMX(t *testing.T) {
	needAMX(t)
	r := rand.New(rand.NewPCG(70, 71))
	const n = 130
	for _, nb := range []int{8, 9, 15, 16, 17, 20, 40, 136} {
		k := nb * BlockSize
		w := randPQ2(r, k, n, func() uint16 { return randScale(r) })
		v := ilvFill(t, w, k, n)
		xb := randIlvBatch(r, k, 64, false)
		for _, tv := range []int{1, 15, 16, 17, 31, 33, 64} {
			alone := make([]float32, tv*n)
			for s := range tv {
				MatVecInterleavedRange(v, xb.Row(s), alone[s*n:(s+1)*n], 0, n)
			}
			vnni := nanVec(tv * n)
			amxOff.Store(true)
			MatMulInterleavedRange(v, xb, tv, vnni, 0, n)
			amxOff.Store(false)
			rgs := ilvRanges(n)
			if nb != 17 {
				rgs = rgs[:1]
			}
			checkAMXRanges(t, k, n, tv, rgs, alone, vnni, func(y []float32, lo, hi int) {
				matMulInterleavedAMX(v, xb, tv, y, lo, hi)
			})
		}
	}
}

// checkAMXRanges runs an AMX product of tv vectors over each range of rows and checks
// its outputs bit for bit against each vector's alone and the VNNI batch's, the rows
// outside the range untouched.
func checkAMXRanges(t *testing.T, k, n, tv int, rgs [][2]int, alone, vnni []float32, run func(y []float32, lo, hi int)) {
	t.Helper()
	for _, rg := range rgs {
		y := nanVec(tv * n)
		run(y, rg[0], rg[1])
		for s := range tv {
			for i := range n {
				got := y[s*n+i]
				if i < rg[0] || i >= rg[1] {
					if !math.IsNaN(float64(got)) {
						t.Fatalf("k=%d t=%d rows [%d,%d): vector %d row %d written", k, tv, rg[0], rg[1], s, i)
					}
					continue
				}
				if math.Float32bits(got) != math.Float32bits(alone[s*n+i]) || math.Float32bits(got) != math.Float32bits(vnni[s*n+i]) {
					t.Fatalf("k=%d t=%d rows [%d,%d): vector %d row %d: AMX %v, alone %v, VNNI batch %v", k, tv, rg[0], rg[1], s, i, got, alone[s*n+i], vnni[s*n+i])
				}
			}
		}
	}
}

// TestMatMulInterleavedAMXSums checks the AMX path's integers exactly, with every scale
// 1 (so each output is a block integer sum in float32, exact below 2²⁴), against the
// float64 formula Σ (c−1)·Q over the codes as the file stores them: every code 0…3 at
// every activation −128…127 and the extremes of a block (all codes 3 at all −128, all
// 0 at all 127). A kernel that forgot Sum, misplaced a row group or a chunk, or mixed
// two blocks' activations fails here.
func TestMatMulInterleavedAMXSums(t *testing.T) {
	needAMX(t)
	r := rand.New(rand.NewPCG(72, 73))
	const k, n, tv = 8 * BlockSize, 128, 32
	for _, mode := range []string{"random", "max", "min"} {
		w := randPQ2(r, k, n, func() uint16 { return 0x3c00 }) // fp16 1
		xb := NewQ8Batch(k, tv)
		for s := range tv {
			x := xb.Row(s)
			for b := range k / BlockSize {
				var sum int32
				for i := range BlockSize {
					q := int32(r.IntN(256)) - 128
					switch mode {
					case "max":
						q = -128
					case "min":
						q = 127
					}
					x.Q[q8Index(b*BlockSize+i)] = int8(q)
					sum += q
				}
				x.Sum[b], x.D[b] = sum, 1
			}
			xb.derive(s)
		}
		if mode != "random" { // every code 3 (value +2) or 0 (value −1)
			code := byte(0xff)
			if mode == "min" {
				code = 0
			}
			for i := 0; i < n; i++ {
				row := w[i*PQ2_0.RowBytes(k):]
				for b := range k / BlockSize {
					blk := row[b*pq2BlockBytes:]
					for j := range BlockSize / 4 {
						blk[2+j] = code
					}
				}
			}
		}
		v := ilvFill(t, w, k, n)
		y := nanVec(tv * n)
		matMulInterleavedAMX(v, xb, tv, y, 0, n)
		codes := make([][BlockSize]uint8, n*(k/BlockSize))
		for i := range n {
			for b := range k / BlockSize {
				UnpackPQ2_0(&codes[i*(k/BlockSize)+b], w[i*PQ2_0.RowBytes(k)+b*pq2BlockBytes:])
			}
		}
		for s := range tv {
			x := xb.Row(s)
			for i := range n {
				var want float64
				for e := range k {
					c := codes[i*(k/BlockSize)+e/BlockSize][e%BlockSize]
					want += float64(int(c)-1) * float64(x.Q[q8Index(e)])
				}
				if float64(y[s*n+i]) != want {
					t.Fatalf("%s: vector %d row %d: AMX %v, Σ(c−1)·Q %v", mode, s, i, y[s*n+i], want)
				}
			}
		}
	}
}

// TestMatMulInterleavedAMXUsed checks that MatMulInterleavedRange takes AMX where it
// should (the AVX-512 VNNI family, 16 vectors or more) and not elsewhere.
func TestMatMulInterleavedAMXUsed(t *testing.T) {
	t.Logf("the AMX kernels on this machine: %v (AMX-INT8 %v, tile data allowed %v)",
		amxAvailable(), cpu.X86.HasAMXInt8, amxAvailable())
	needAMX(t)
	for _, c := range []struct {
		fam  ilvFamily
		t    int
		want bool
	}{{ilvVNNI, amxMinBatch, true}, {ilvVNNI, 256, true}, {ilvVNNI, amxMinBatch - 1, false}, {ilvVNNI, 1, false},
		{ilvAVX2, 64, false}, {ilvGeneric, 64, false}} {
		if got := amxUse(c.fam, c.t); got != c.want {
			t.Errorf("amxUse(%d, %d) = %v, want %v", c.fam, c.t, got, c.want)
		}
	}
}

// TestAMXEncoding checks the hand-encoded AMX instructions of amxProducts (and
// amx3Products, below) with binutils' objdump (an independent decoder): the tile
// configuration and release and, in the block loop, the four TILEZERO, the ten loads (two activation chunks
// from SI with DX's stride, eight weight tiles from R8 with BX's), the eight TDPBSSD
// (chunk c's activations, tmm4+c, by row groups j and j+1's weights into tmm j and
// j+1) and the four stores (R9, stepping over the row groups, with R11's stride), each
// where the kernel means it.
func TestAMXEncoding(t *testing.T) {
	// No AMX needed: objdump reads the code, nothing runs it.
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		if os.Getenv("TERNARY_OBJDUMP_REQUIRE") != "" {
			t.Fatal("objdump (binutils) not found and TERNARY_OBJDUMP_REQUIRE is set")
		}
		t.Skip("objdump (binutils) not installed: the AMX encodings are unchecked")
	}
	block := []string{"tilezero %tmm0", "tilezero %tmm1", "tilezero %tmm2", "tilezero %tmm3",
		"tileloadd (%rsi,%rdx,1),%tmm4", "tileloadd 0x40(%rsi,%rdx,1),%tmm5"}
	for _, j := range []int{0, 2} {
		for c := range 2 {
			block = append(block,
				fmt.Sprintf("tileloadd 0x%x(%%r8,%%rbx,1),%%tmm6", 2048*j+1024*c),
				fmt.Sprintf("tileloadd 0x%x(%%r8,%%rbx,1),%%tmm7", 2048*j+2048+1024*c),
				fmt.Sprintf("tdpbssd %%tmm6,%%tmm%d,%%tmm%d", 4+c, j),
				fmt.Sprintf("tdpbssd %%tmm7,%%tmm%d,%%tmm%d", 4+c, j+1))
		}
	}
	for j := range 4 {
		block = append(block, fmt.Sprintf("tilestored %%tmm%d,(%%r9,%%r11,1)", j))
	}
	want := append(append([]string{"ldtilecfg (%rax)"}, block...), "tilerelease")
	checkAMXInsns(t, objdump, amxProducts, want)

	// The base-3 kernel: five C tiles, one activation chunk at a time in tmm5.
	block = []string{"tilezero %tmm0", "tilezero %tmm1", "tilezero %tmm2", "tilezero %tmm3", "tilezero %tmm4"}
	for c := range 2 {
		block = append(block, fmt.Sprintf("tileloadd 0x%x(%%rsi,%%rdx,1),%%tmm5", 64*c))
		for _, j := range []int{0, 2} {
			block = append(block,
				fmt.Sprintf("tileloadd 0x%x(%%r8,%%rbx,1),%%tmm6", 2048*j+1024*c),
				fmt.Sprintf("tileloadd 0x%x(%%r8,%%rbx,1),%%tmm7", 2048*j+2048+1024*c),
				fmt.Sprintf("tdpbssd %%tmm6,%%tmm5,%%tmm%d", j),
				fmt.Sprintf("tdpbssd %%tmm7,%%tmm5,%%tmm%d", j+1))
		}
		block = append(block, fmt.Sprintf("tileloadd 0x%x(%%r8,%%rbx,1),%%tmm6", 8192+1024*c), "tdpbssd %tmm6,%tmm5,%tmm4")
	}
	for j := range 5 {
		block = append(block, fmt.Sprintf("tilestored %%tmm%d,(%%r9,%%r11,1)", j))
	}
	checkAMXInsns(t, objdump, amx3Products, append(append([]string{"ldtilecfg (%rax)"}, block...), "tilerelease"))
}

// checkAMXInsns compares the AMX instructions objdump reads in f with want.
func checkAMXInsns(t *testing.T, objdump string, f any, want []string) {
	t.Helper()
	name, insns, _ := disassemble(t, objdump, f)
	var amx []string
	for _, s := range insns {
		if strings.HasPrefix(s, "tile") || strings.HasPrefix(s, "tdp") || strings.HasPrefix(s, "ldtilecfg") {
			amx = append(amx, s)
		}
	}
	norm := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "0x0(", "("), " ", "") }
	if len(amx) != len(want) {
		t.Fatalf("%s has %d AMX instructions, want %d:\n%s", name, len(amx), len(want), strings.Join(amx, "\n"))
	}
	for i := range want {
		if norm(amx[i]) != norm(want[i]) {
			t.Errorf("%s: AMX instruction %d: objdump reads %q, the kernel means %q", name, i, amx[i], want[i])
		}
	}
}

// BenchmarkMatMulIlvAMX is BenchmarkMatMulIlv's interleaved product with AMX ("amx")
// and without ("vnni": the AVX-512 VNNI batched kernels), alternated, at 16, 64 and 256
// vectors on the model's two largest shapes.
func BenchmarkMatMulIlvAMX(b *testing.B) {
	needAMX(b)
	for _, sh := range matMulShapes[:2] {
		k, n := sh[0], sh[1]
		for _, t := range []int{16, 24, 32, 48, 64, 256} {
			for _, threads := range []int{1, 2} {
				for _, mode := range []string{"vnni", "amx"} {
					b.Run(fmt.Sprintf("%dx%d/t=%d/threads=%d/%s", k, n, t, threads, mode), func(b *testing.B) {
						amxOff.Store(mode == "vnni")
						defer amxOff.Store(false)
						benchMatMulIlvMode(b, k, n, t, threads, "interleaved")
					})
				}
			}
		}
	}
}

// BenchmarkAMXKernel measures amxProducts alone on one core, one 64-row tile for 16
// vectors over and over (unpacking not timed): at K = 1024 its codes and activations
// sit in L1 and L2, at 17408 in L2 and beyond.
func BenchmarkAMXKernel(b *testing.B) {
	needAMX(b)
	for _, k := range []int{1024, 5120, 17408} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			w := randPQ2(r, k, IlvRows, func() uint16 { return 0x2000 })
			v := ilvFill(b, w, k, IlvRows)
			x := ilvBenchBatch(r, k, amxVectors)
			nb := k / BlockSize
			sc := new(amxScratch)
			sc.grow(nb, 8192)
			sc.c = make([]int32, nb*amxVectors*IlvRows) // one call over all the blocks
			amxUnpack(&v.buf[0], nb, &sc.bt[0], &sc.wf[0])
			a := amxArgs{a: &x.aq[0], as: amxActBytes(k), bt: &sc.bt[0], wf: &sc.wf[0], nb8: nb / 8,
				d: &x.d[0], ds: 4 * nb, c: &sc.c[0], y: &sc.y[0], cfg: &amxConfig[0], lanes: &sc.lanes[0], flags: 3, groups: 4}
			for b.Loop() {
				amxProducts(&a)
				amxFold(&a)
			}
			macs := float64(k) * IlvRows * amxVectors * float64(b.N) / 1e9
			b.ReportMetric(macs/b.Elapsed().Seconds(), "GMAC/s")
		})
	}
}

// TestMatMulInterleaved3AMX is TestMatMulInterleavedAMX for PTQ1_0's base-3 layout:
// every raw trit byte (the 13 the encoder never writes too), 170 rows (a last tile of
// 10), against each vector alone on the AVX-512 VNNI family and the VNNI batched kernel.
func TestMatMulInterleaved3AMX(t *testing.T) {
	needAMX(t)
	r := rand.New(rand.NewPCG(74, 75))
	const n = 170
	for _, nb := range []int{8, 9, 16, 17, 40, 136} {
		k := nb * BlockSize
		w := randPTQ1(r, k, n, func() uint16 { return randScale(r) })
		v := ilv3Fill(t, w, k, n)
		xb := randIlvBatch(r, k, 64, false)
		for _, tv := range []int{1, 16, 17, 33, 64} {
			alone := make([]float32, tv*n)
			for s := range tv {
				MatVecInterleaved3Range(v, xb.Row(s), alone[s*n:(s+1)*n], 0, n)
			}
			vnni := nanVec(tv * n)
			amxOff.Store(true)
			MatMulInterleaved3Range(v, xb, tv, vnni, 0, n)
			amxOff.Store(false)
			rgs := ilv3Ranges(n)
			if nb != 17 {
				rgs = rgs[:1]
			}
			checkAMXRanges(t, k, n, tv, rgs, alone, vnni, func(y []float32, lo, hi int) {
				matMulInterleaved3AMX(v, xb, tv, y, lo, hi)
			})
		}
	}
}

// TestMatMulInterleaved3AMXExact checks the base-3 AMX path's integers against exact
// arithmetic on the trits as UnpackPTQ1_0 reads them (ilv3Exact): scales 1, 0 and −0,
// D = 1, activations over −128…127 with −128 favoured, so every output is an integer.
func TestMatMulInterleaved3AMXExact(t *testing.T) {
	needAMX(t)
	r := rand.New(rand.NewPCG(76, 77))
	unit := func() uint16 { return [...]uint16{0x3c00, 0x3c00, 0x3c00, 0, 0x8000}[r.IntN(5)] }
	const n, tv = 90, 40
	for _, k := range []int{8 * BlockSize, 19 * BlockSize} {
		w := randPTQ1(r, k, n, unit)
		v := ilv3Fill(t, w, k, n)
		xb := randIlvBatch(r, k, tv, true)
		y := nanVec(tv * n)
		matMulInterleaved3AMX(v, xb, tv, y, 0, n)
		rb := PTQ1_0.RowBytes(k)
		for s := range tv {
			for i := range n {
				if want := ilv3Exact(w[i*rb:(i+1)*rb], xb.Row(s)); float64(y[s*n+i]) != float64(want) {
					t.Fatalf("k=%d: vector %d row %d: AMX %v, exact %d", k, s, i, y[s*n+i], want)
				}
			}
		}
	}
}

// BenchmarkMatMulAMXFormats is the prefill product of both interleaved layouts (ilv2:
// PQ2_0's, ilv3: PTQ1_0's base-3) with AMX and without (the AVX-512 VNNI batched
// kernels), the four modes alternated pass by pass on one worker pool: the median and
// best pass of each in 10⁹ multiply-adds a second, and AMX over VNNI at the median.
func BenchmarkMatMulAMXFormats(b *testing.B) {
	needAMX(b)
	for _, sh := range [][2]int{{5120, 17408}, {17408, 5120}} {
		k, n := sh[0], sh[1]
		for _, t := range []int{32, 64, 256} {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%dx%d/t=%d/threads=%d", k, n, t, threads), func(b *testing.B) {
					benchMatMulAMXFormats(b, k, n, t, threads)
				})
			}
		}
	}
}

func benchMatMulAMXFormats(b *testing.B, k, n, t, threads int) {
	r := rand.New(rand.NewPCG(1, 2))
	v3 := ilv3Fill(b, randPTQ1Canon(r, k, n, func() uint16 { return 0x2000 }), k, n)
	v2 := ilvFill(b, randPQ2(r, k, n, func() uint16 { return 0x2000 }), k, n)
	x := ilvBenchBatch(r, k, t)
	y := make([]float32, n*t)
	s3 := newStreamRows((n+Ilv3Rows-1)/Ilv3Rows, 1, threads, func(_, lo, hi int) {
		MatMulInterleaved3Range(v3, x, t, y, lo*Ilv3Rows, min(hi*Ilv3Rows, n))
	})
	defer s3.stop()
	s2 := newStreamRowsOn(s3.pool, (n+IlvRows-1)/IlvRows, 1, func(_, lo, hi int) {
		MatMulInterleavedRange(v2, x, t, y, lo*IlvRows, min(hi*IlvRows, n))
	})
	modes := []struct {
		name string
		s    *streamRows
		amx  bool
	}{{"ilv3-amx", s3, true}, {"ilv3-vnni", s3, false}, {"ilv2-amx", s2, true}, {"ilv2-vnni", s2, false}}
	defer amxOff.Store(false)
	rates := make([][]float64, len(modes))
	macs := float64(k) * float64(n) * float64(t) / 1e9
	for b.Loop() {
		for i, m := range modes {
			amxOff.Store(!m.amx)
			t0 := time.Now()
			m.s.run(0)
			rates[i] = append(rates[i], macs/time.Since(t0).Seconds())
		}
	}
	med := make([]float64, len(modes))
	for i, m := range modes {
		med[i] = medianOf(rates[i])
		b.ReportMetric(med[i], m.name+"-GMAC/s")
		b.ReportMetric(slices.Max(rates[i]), m.name+"-best")
	}
	b.ReportMetric(med[0]/med[1], "ilv3-amx/vnni")
	b.ReportMetric(med[2]/med[3], "ilv2-amx/vnni")
}
