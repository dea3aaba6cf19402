package ternary

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// ilvMatTs are the batch sizes of the batched interleaved tests: every size up to
// three kernels of ilvMatWidth (each rest after whole ones) and the model's chunk of 64.
var ilvMatTs = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 64}

// randIlvBatch returns t vectors of width k quantised by hand: Q over −128…127 (the
// extremes, −128 included, favoured; Quantize never writes −128, a hand-built batch
// may), Sum their exact sum, and D = 1 where unit, else random magnitudes.
func randIlvBatch(r *rand.Rand, k, t int, unit bool) *Q8Batch {
	xb := NewQ8Batch(k, t)
	for s := range t {
		x := xb.Row(s)
		for b := range k / BlockSize {
			var sum int32
			for i := range BlockSize {
				var q int32
				switch r.IntN(8) {
				case 0:
					q = -128
				case 1:
					q = 127
				case 2:
					q = -127
				default:
					q = int32(r.IntN(256)) - 128
				}
				x.Q[q8Index(b*BlockSize+i)] = int8(q)
				sum += q
			}
			x.Sum[b], x.D[b] = sum, 1
			if !unit {
				x.D[b] = float32(math.Exp(r.NormFloat64()*3 - 8))
			}
		}
		xb.derive(s)
	}
	return xb
}

// TestMatMulInterleaved checks the batched interleaved product bit for bit against the
// existing batched path over the file's bytes (MatMulQ8Range) and against each vector
// alone (MatVecInterleavedRange), on every family whose bits it reproduces: widths of 1
// to 20 blocks (below, at and off groups of 8), every batch size of ilvMatTs, 130 rows
// (a last tile of 2) and every tile-aligned range, random scales (zeros, subnormals and
// 65504 included), codes uniform over 0…3 and activations over −128…127.
func TestMatMulInterleaved(t *testing.T) {
	r := rand.New(rand.NewPCG(60, 61))
	const n = 130
	for nb := 1; nb <= 20; nb++ {
		k := nb * BlockSize
		w := randPQ2(r, k, n, func() uint16 { return randScale(r) })
		v := ilvFill(t, w, k, n)
		xb := randIlvBatch(r, k, 64, false)
		forEachIlvFamily(t, func(name string) {
			for _, tv := range ilvMatTs {
				want := make([]float32, tv*n)
				MatMulQ8Range(PQ2_0, w, k, n, xb, tv, want, 0, n)
				for s := range tv {
					alone := make([]float32, n)
					MatVecInterleavedRange(v, xb.Row(s), alone, 0, n)
					for i, a := range alone {
						if math.Float32bits(a) != math.Float32bits(want[s*n+i]) {
							t.Fatalf("%s k=%d t=%d: vector %d row %d: MatVecInterleavedRange %v, MatMulQ8Range %v", name, k, tv, s, i, a, want[s*n+i])
						}
					}
				}
				rgs := ilvRanges(n)
				if tv != 64 && tv%4 != 1 {
					rgs = rgs[:1] // the ranges on a few batch sizes are enough
				}
				for _, rg := range rgs {
					y := nanVec(tv * n)
					MatMulInterleavedRange(v, xb, tv, y, rg[0], rg[1])
					for s := range tv {
						for i := range n {
							got := y[s*n+i]
							in := i >= rg[0] && i < rg[1]
							if in && math.Float32bits(got) != math.Float32bits(want[s*n+i]) || !in && !math.IsNaN(float64(got)) {
								t.Fatalf("%s k=%d t=%d rows %v: vector %d row %d = %v, MatMulQ8Range %v", name, k, tv, rg, s, i, got, want[s*n+i])
							}
						}
					}
				}
			}
		})
	}
}

// TestMatMulInterleavedExact checks the batched interleaved product against exact
// integer arithmetic on unpacked codes (unit and zero scales, D = 1, so that every
// output is an integer float32 holds exactly), on each family.
func TestMatMulInterleavedExact(t *testing.T) {
	r := rand.New(rand.NewPCG(62, 63))
	unit := func() uint16 { return [...]uint16{0x3c00, 0x3c00, 0x3c00, 0, 0x8000}[r.IntN(5)] }
	const n, tv = 200, 17
	for _, k := range []int{128, 1024, 1408, 5120} {
		w := randPQ2(r, k, n, unit)
		v := ilvFill(t, w, k, n)
		xb := randIlvBatch(r, k, tv, true)
		rb := PQ2_0.RowBytes(k)
		want := make([]float32, tv*n)
		for s := range tv {
			for i := range n {
				e := exactQ8(w[i*rb:(i+1)*rb], xb.Row(s))
				if math.Abs(float64(e)) >= 1<<24 {
					t.Fatalf("k=%d: exact sum %d too large for the test", k, e)
				}
				want[s*n+i] = float32(e)
			}
		}
		forEachIlvFamily(t, func(name string) {
			y := nanVec(tv * n)
			MatMulInterleavedRange(v, xb, tv, y, 0, n)
			for i, g := range y {
				if g != want[i] {
					t.Fatalf("%s k=%d: vector %d row %d = %v, want %v", name, k, i/n, i%n, g, want[i])
				}
			}
		})
	}
}

// TestIlvMatKernels checks each batched kernel, called directly on one tile at every
// width, against the matrix-vector kernel of its family run on each vector alone, bit
// for bit: each SIMD kernel against its family's (ilvTilesVNNI, ilvTilesNEONDot), the
// twin against ilvTilesGeneric.
// (The two families differ in the last bits: one fuses the multiply-add.)
func TestIlvMatKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(64, 65))
	fams := []struct {
		name  string
		fam   ilvFamily
		width int
		mat   func(int, *ilvMatArgs)
	}{{"generic", ilvGeneric, ilvMatWidth, ilvMatGeneric}}
	for _, k := range q8Kernels {
		fam := archIlvFamily(k.id)
		if k.id == q8Generic || archIlvMatWidth(fam) == 0 {
			continue
		}
		fams = append(fams, struct {
			name  string
			fam   ilvFamily
			width int
			mat   func(int, *ilvMatArgs)
		}{k.name, fam, archIlvMatWidth(fam), func(nv int, a *ilvMatArgs) { archIlvMatFam(fam, nv, a) }})
	}
	for _, k := range []int{1024, 2048, 5120} {
		w := randPQ2(r, k, IlvRows, func() uint16 { return randScale(r) })
		v := ilvFill(t, w, k, IlvRows)
		xb := randIlvBatch(r, k, ilvMatWidth, false)
		for _, f := range fams {
			t.Logf("%s k=%d: widths 1…%d", f.name, k, f.width)
			for nv := 1; nv <= f.width; nv++ {
				var acc [ilvMatWidth * 8 * IlvRows]float32
				y := nanVec(nv * IlvRows)
				a := ilvMatArgs{w: &v.buf[0], nb8: k / 1024, q: &xb.q[0], qs: q8QBytes(k),
					d: &xb.d[0], sum: &xb.sum[0], ds: 4 * (k / BlockSize), acc: &acc[0], y: &y[0], ys: 4 * IlvRows}
				f.mat(nv, &a)
				for s := range nv {
					var acc1 [8 * IlvRows]float32
					want := nanVec(IlvRows)
					ilvTiles(f.fam, v.buf, 1, k/BlockSize, xb.Row(s), &acc1, want)
					for i, g := range y[s*IlvRows : (s+1)*IlvRows] {
						if math.Float32bits(g) != math.Float32bits(want[i]) {
							t.Fatalf("%s k=%d nv=%d: vector %d row %d = %v, alone %v", f.name, k, nv, s, i, g, want[i])
						}
					}
				}
			}
		}
	}
}

func TestMatMulInterleavedNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(66, 67))
	const k, n, tv = 1152, 130, 9
	v := ilvFill(t, randPQ2(r, k, n, func() uint16 { return randScale(r) }), k, n)
	xb := randIlvBatch(r, k, tv, false)
	y := make([]float32, tv*n)
	if a := testing.AllocsPerRun(10, func() { MatMulInterleavedRange(v, xb, tv, y, 0, n) }); a != 0 {
		t.Fatalf("%v allocations per call", a)
	}
}

func TestMatMulInterleavedPanics(t *testing.T) {
	r := rand.New(rand.NewPCG(68, 69))
	const k, n = 1024, 130
	v := ilvFill(t, randPQ2(r, k, n, func() uint16 { return randScale(r) }), k, n)
	xb := randIlvBatch(r, k, 4, false)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"unaligned lo", func() { MatMulInterleavedRange(v, xb, 2, make([]float32, 2*n), 1, n) }},
		{"unaligned hi", func() { MatMulInterleavedRange(v, xb, 2, make([]float32, 2*n), 0, 100) }},
		{"short y", func() { MatMulInterleavedRange(v, xb, 2, make([]float32, 2*n-1), 0, n) }},
		{"over capacity", func() { MatMulInterleavedRange(v, xb, 5, make([]float32, 5*n), 0, n) }},
		{"width", func() { MatMulInterleavedRange(v, NewQ8Batch(2*k, 2), 2, make([]float32, 2*n), 0, n) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", c.name)
				}
			}()
			c.f()
		}()
	}
}

// TestIlvMatArgsLayout pins the field offsets the assembly kernels use (the constants
// of ilvmatmul_amd64_gen.go and ilvmatmul_arm64_gen.go): a change to ilvMatArgs must be
// made there too.
func TestIlvMatArgsLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the assembly kernels are 64-bit only")
	}
	var a ilvMatArgs
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"w", unsafe.Offsetof(a.w), 0},
		{"nb8", unsafe.Offsetof(a.nb8), 8},
		{"q", unsafe.Offsetof(a.q), 16},
		{"qs", unsafe.Offsetof(a.qs), 24},
		{"d", unsafe.Offsetof(a.d), 32},
		{"sum", unsafe.Offsetof(a.sum), 40},
		{"ds", unsafe.Offsetof(a.ds), 48},
		{"acc", unsafe.Offsetof(a.acc), 56},
		{"y", unsafe.Offsetof(a.y), 64},
		{"ys", unsafe.Offsetof(a.ys), 72},
		{"pfd", unsafe.Offsetof(a.pfd), 80},
	} {
		if c.got != c.want {
			t.Errorf("ilvMatArgs.%s at %d, the assembly kernels read %d", c.name, c.got, c.want)
		}
	}
}

// ilvHasVNNI reports whether one of this machine's Q8 families runs the AVX-512 VNNI
// interleaved kernels.
func ilvHasVNNI() bool {
	for _, k := range q8Kernels {
		if k.id != q8Generic && archIlvFamily(k.id) == ilvVNNI {
			return true
		}
	}
	return false
}

// ilvAVX2Kernel returns the Q8 family whose interleaved kernels are the AVX2 ones, if
// this machine has it.
func ilvAVX2Kernel() (q8Kernel, bool) {
	for _, k := range q8Kernels {
		if k.id != q8Generic && archIlvFamily(k.id) == ilvAVX2 {
			return k, true
		}
	}
	return q8Kernel{}, false
}

// TestMatMulInterleavedAVX2 runs TestMatMulInterleaved's checks on the AVX2 family
// alone (selected as the AVX2 Q8 kernel, as on an AVX2-only machine, even where
// AVX-512 is there too), with the codes' extremes and activation −128 made frequent:
// widths of 1 to 20 blocks, every batch size of ilvMatTs, 130 rows, every vector bit
// for bit what MatVecInterleavedRange and MatMulQ8Range give it on that family; on
// amd64 for each implementation of the family's kernels (AVX2, AVX-VNNI and its EVEX
// twin, as the CPU has them).
func TestMatMulInterleavedAVX2(t *testing.T) {
	k8, ok := ilvAVX2Kernel()
	if !ok {
		t.Skip("no AVX2 (with FMA and F16C): no AVX2 interleaved kernels")
	}
	eachAVX2Impl(t, func(t *testing.T) { testMatMulInterleavedAVX2(t, k8) })
}

func testMatMulInterleavedAVX2(t *testing.T, k8 q8Kernel) {
	r := rand.New(rand.NewPCG(70, 71))
	const n = 130
	withKernel(k8, func() {
		if !InterleavedBatchNative() {
			t.Fatal("AVX2 family: InterleavedBatchNative() = false")
		}
		for nb := 1; nb <= 20; nb++ {
			k := nb * BlockSize
			w := randPQ2(r, k, n, func() uint16 { return randScale(r) })
			if nb%2 == 0 {
				// Every code 3 in some rows and columns: the extreme the int16
				// partial sums must hold with activation −128.
				for i := range w {
					if i%pq2BlockBytes >= 2 && r.IntN(3) == 0 {
						w[i] = 0xff
					}
				}
			}
			v := ilvFill(t, w, k, n)
			xb := randIlvBatch(r, k, 64, false)
			if nb%3 == 0 {
				for s := range 64 {
					x := xb.Row(s)
					for b := range nb {
						x.Sum[b] = 0
						for i := range BlockSize {
							j := q8Index(b*BlockSize + i)
							if r.IntN(2) == 0 {
								x.Q[j] = -128
							}
							x.Sum[b] += int32(x.Q[j])
						}
					}
					xb.derive(s)
				}
			}
			for _, tv := range ilvMatTs {
				want := make([]float32, tv*n)
				MatMulQ8Range(PQ2_0, w, k, n, xb, tv, want, 0, n)
				y := nanVec(tv * n)
				MatMulInterleavedRange(v, xb, tv, y, 0, n)
				for s := range tv {
					alone := nanVec(n)
					MatVecInterleavedRange(v, xb.Row(s), alone, 0, n)
					for i := range n {
						g, a, q := y[s*n+i], alone[i], want[s*n+i]
						if math.Float32bits(g) != math.Float32bits(a) || math.Float32bits(g) != math.Float32bits(q) {
							t.Fatalf("k=%d t=%d: vector %d row %d = %v, alone %v, MatMulQ8Range %v", k, tv, s, i, g, a, q)
						}
					}
				}
			}
		}
	})
}

// TestMatMulInterleavedExtremes runs the batched product where every code is 3 and
// every activation −128, the largest magnitude each kernel's integers reach (the SDOT
// kernels' shifted row groups among them), against each vector alone and MatMulQ8Range.
func TestMatMulInterleavedExtremes(t *testing.T) {
	r := rand.New(rand.NewPCG(70, 71))
	const n, tv = 130, 17
	for _, k := range []int{1024, 2560} {
		w := randPQ2(r, k, n, func() uint16 { return 0x3c00 })
		for b := 0; b < len(w); b += pq2BlockBytes {
			for i := 2; i < pq2BlockBytes; i++ {
				w[b+i] = 0xff
			}
		}
		v := ilvFill(t, w, k, n)
		xb := NewQ8Batch(k, tv)
		for s := range tv {
			x := xb.Row(s)
			for i := range x.Q {
				x.Q[i] = -128
			}
			for b := range k / BlockSize {
				x.Sum[b], x.D[b] = -128*BlockSize, 1
			}
			xb.derive(s)
		}
		forEachIlvFamily(t, func(name string) {
			want := make([]float32, tv*n)
			MatMulQ8Range(PQ2_0, w, k, n, xb, tv, want, 0, n)
			y := nanVec(tv * n)
			MatMulInterleavedRange(v, xb, tv, y, 0, n)
			for s := range tv {
				alone := nanVec(n)
				MatVecInterleavedRange(v, xb.Row(s), alone, 0, n)
				for i := range n {
					g := y[s*n+i]
					if math.Float32bits(g) != math.Float32bits(alone[i]) || math.Float32bits(g) != math.Float32bits(want[s*n+i]) {
						t.Fatalf("%s k=%d: vector %d row %d = %v, alone %v, MatMulQ8Range %v", name, k, s, i, g, alone[i], want[s*n+i])
					}
				}
			}
		})
	}
}
