package ternary

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestMatMulInterleaved3 checks the batched base-3 product bit for bit against the
// existing batched path over the PTQ1_0 file (MatMulQ8Range) and against each vector
// alone (MatVecInterleaved3Range), on every family whose bits it reproduces: widths of
// 1 to 20 blocks (below, at and off groups of 8), every batch size of ilvMatTs, 170
// rows (a last tile of 10) and every tile-aligned range, random scales (zeros,
// subnormals and 65504 included), every trit byte (the 13 the encoder never writes
// too) and activations over −128…127 (−127 where the PTQ1_0 kernels store them
// negated, see ptq1FileBatch).
func TestMatMulInterleaved3(t *testing.T) {
	r := rand.New(rand.NewPCG(80, 81))
	const n = 170
	for nb := 1; nb <= 20; nb++ {
		k := nb * BlockSize
		w := randPTQ1(r, k, n, func() uint16 { return randScale(r) })
		v := ilv3Fill(t, w, k, n)
		xb := ptq1FileBatch(randIlvBatch(r, k, 64, false))
		forEachIlv3Family(t, func(name string) {
			for _, tv := range ilvMatTs {
				want := make([]float32, tv*n)
				MatMulQ8Range(PTQ1_0, w, k, n, xb, tv, want, 0, n)
				for s := range tv {
					alone := make([]float32, n)
					MatVecInterleaved3Range(v, xb.Row(s), alone, 0, n)
					for i, a := range alone {
						if math.Float32bits(a) != math.Float32bits(want[s*n+i]) {
							t.Fatalf("%s k=%d t=%d: vector %d row %d: MatVecInterleaved3Range %v, MatMulQ8Range %v", name, k, tv, s, i, a, want[s*n+i])
						}
					}
				}
				rgs := ilv3Ranges(n)
				if tv != 64 && tv%5 != 1 {
					rgs = rgs[:1] // the ranges on a few batch sizes are enough
				}
				for _, rg := range rgs {
					y := nanVec(tv * n)
					MatMulInterleaved3Range(v, xb, tv, y, rg[0], rg[1])
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

// ptq1FileBatch returns xb with −128 replaced by −127 (Sum kept exact) where the
// PTQ1_0 file kernels store the activations negated (ptq1ActNeg), which takes |Q| ≤ 127
// as Quantize writes it: there MatMulQ8Range over the file is no reference for −128.
// The interleaved kernels take −128 on every platform (TestMatMulInterleaved3Exact).
func ptq1FileBatch(xb *Q8Batch) *Q8Batch {
	if !ptq1ActNeg {
		return xb
	}
	for s := range xb.T {
		x := xb.Row(s)
		for b := range x.K / BlockSize {
			for e := range BlockSize {
				if i := q8Index(b*BlockSize + e); x.Q[i] == -128 {
					x.Q[i]++
					x.Sum[b]++
				}
			}
		}
		xb.derive(s)
	}
	return xb
}

// TestMatMulInterleaved3Exact checks the batched base-3 product against exact integer
// arithmetic on the trits as UnpackPTQ1_0 reads them (unit and zero scales, D = 1, so
// that every output is an integer float32 holds exactly, −128 among the activations),
// on each family.
func TestMatMulInterleaved3Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(82, 83))
	unit := func() uint16 { return [...]uint16{0x3c00, 0x3c00, 0x3c00, 0, 0x8000}[r.IntN(5)] }
	const n, tv = 200, 17
	for _, k := range []int{128, 1024, 1408, 5120} {
		w := randPTQ1(r, k, n, unit)
		v := ilv3Fill(t, w, k, n)
		xb := randIlvBatch(r, k, tv, true)
		rb := PTQ1_0.RowBytes(k)
		want := make([]float32, tv*n)
		for s := range tv {
			for i := range n {
				e := ilv3Exact(w[i*rb:(i+1)*rb], xb.Row(s))
				if math.Abs(float64(e)) >= 1<<24 {
					t.Fatalf("k=%d: exact sum %d too large for the test", k, e)
				}
				want[s*n+i] = float32(e)
			}
		}
		forEachIlv3Family(t, func(name string) {
			y := nanVec(tv * n)
			MatMulInterleaved3Range(v, xb, tv, y, 0, n)
			for i, g := range y {
				if g != want[i] {
					t.Fatalf("%s k=%d: vector %d row %d = %v, want %v", name, k, i/n, i%n, g, want[i])
				}
			}
		})
	}
}

// TestIlv3MatKernels checks each batched base-3 kernel, called directly on one tile at
// every width and number of groups, against the matrix-vector kernel of its family run on each vector
// alone, bit for bit: the SIMD kernels against ilv3TilesVNNI, the twin against
// ilv3TilesGeneric. A nonzero prefetch distance (into the tile after) must not matter.
func TestIlv3MatKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(84, 85))
	fams := []struct {
		name   string
		native bool
		mat    func(int, *ilv3MatArgs)
	}{{"generic", false, ilv3MatGeneric}, {"vnni", true, archIlv3Mat}}
	if !avx512VNNIMachine() {
		fams = fams[:1]
	}
	for _, k := range []int{1024, 2048, 5120} {
		w := randPTQ1(r, k, 2*Ilv3Rows, func() uint16 { return randScale(r) })
		v := ilv3Fill(t, w, k, 2*Ilv3Rows)
		xb := randIlvBatch(r, k, ilv3MatGroups*ilv3MatWidth, false)
		for _, f := range fams {
			for nv := 1; nv <= ilv3MatWidth; nv++ {
				for g := 1; g <= ilv3MatGroups; g++ {
					var acc [ilv3MatGroups * ilv3MatWidth * 8 * Ilv3Rows]float32
					var planes [ilv3PlaneBytes]byte
					y := nanVec(g * nv * Ilv3Rows)
					a := ilv3MatArgs{w: &v.buf[0], nb8: k / 1024, q: &xb.q[0], qs: q8QBytes(k),
						d: &xb.d[0], sum: &xb.sum[0], ds: 4 * (k / BlockSize), acc: &acc[0], y: &y[0], ys: 4 * Ilv3Rows,
						pfd: v.tileBytes(), groups: g, planes: &planes[0]}
					f.mat(nv, &a)
					for s := range g * nv {
						var acc1 [8 * Ilv3Rows]float32
						want := nanVec(Ilv3Rows)
						ilv3Tiles(f.native, v.buf, 1, k/BlockSize, xb.Row(s), &acc1, want)
						for i, got := range y[s*Ilv3Rows : (s+1)*Ilv3Rows] {
							if math.Float32bits(got) != math.Float32bits(want[i]) {
								t.Fatalf("%s k=%d nv=%d groups=%d: vector %d row %d = %v, alone %v", f.name, k, nv, g, s, i, got, want[i])
							}
						}
					}
				}
			}
		}
	}
}

func TestMatMulInterleaved3NoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(86, 87))
	const k, n, tv = 1152, 170, 9
	v := ilv3Fill(t, randPTQ1(r, k, n, func() uint16 { return randScale(r) }), k, n)
	xb := randIlvBatch(r, k, tv, false)
	y := make([]float32, tv*n)
	forEachIlv3Family(t, func(name string) {
		if a := testing.AllocsPerRun(10, func() { MatMulInterleaved3Range(v, xb, tv, y, 0, n) }); a != 0 {
			t.Fatalf("%s: %v allocations per call", name, a)
		}
	})
}

func TestMatMulInterleaved3Panics(t *testing.T) {
	r := rand.New(rand.NewPCG(88, 89))
	const k, n = 1024, 170
	v := ilv3Fill(t, randPTQ1(r, k, n, func() uint16 { return randScale(r) }), k, n)
	xb := randIlvBatch(r, k, 4, false)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"unaligned lo", func() { MatMulInterleaved3Range(v, xb, 2, make([]float32, 2*n), 1, n) }},
		{"unaligned hi", func() { MatMulInterleaved3Range(v, xb, 2, make([]float32, 2*n), 0, 100) }},
		{"hi past n", func() { MatMulInterleaved3Range(v, xb, 2, make([]float32, 2*n), 0, n+1) }},
		{"short y", func() { MatMulInterleaved3Range(v, xb, 2, make([]float32, 2*n-1), 0, n) }},
		{"over capacity", func() { MatMulInterleaved3Range(v, xb, 5, make([]float32, 5*n), 0, n) }},
		{"negative t", func() { MatMulInterleaved3Range(v, xb, -1, make([]float32, n), 0, n) }},
		{"width", func() { MatMulInterleaved3Range(v, NewQ8Batch(2*k, 2), 2, make([]float32, 2*n), 0, n) }},
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

// TestIlv3MatArgsLayout pins the field offsets the assembly kernels use (the constants
// of ilv3matmul_amd64_gen.go): a change to ilv3MatArgs must be made there too.
func TestIlv3MatArgsLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the assembly kernels are 64-bit only")
	}
	var a ilv3MatArgs
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
		{"groups", unsafe.Offsetof(a.groups), 88},
		{"planes", unsafe.Offsetof(a.planes), 96},
	} {
		if c.got != c.want {
			t.Errorf("ilv3MatArgs.%s at %d, the assembly kernels read %d", c.name, c.got, c.want)
		}
	}
}

// TestMatMulInterleaved3Extreme runs the sums to their bounds, where the kernel's float
// row step must still be exact: every trit byte 0xff (every xₙ 255 and every trit 2)
// or 0xf2 (a canonical byte of large xₙ), every activation −128 or 127.
func TestMatMulInterleaved3Extreme(t *testing.T) {
	const k, n, tv = 2048, 160, 8
	for _, c := range []byte{0xff, 0xf2} {
		w := make([]byte, n*PTQ1_0.RowBytes(k))
		for i := range w {
			w[i] = c
		}
		for b := 0; b < len(w); b += ptq1BlockBytes {
			w[b+26], w[b+27] = 0x00, 0x3c // 1
		}
		v := ilv3Fill(t, w, k, n)
		xb := NewQ8Batch(k, tv)
		for s := range tv {
			x := xb.Row(s)
			q := int8(-128)
			if s%2 == 1 {
				q = 127
			}
			for b := range k / BlockSize {
				for e := range BlockSize {
					x.Q[q8Index(b*BlockSize+e)] = q
				}
				x.Sum[b], x.D[b] = int32(q)*BlockSize, 1
			}
			xb.derive(s)
		}
		rb := PTQ1_0.RowBytes(k)
		forEachIlv3Family(t, func(name string) {
			y := nanVec(tv * n)
			MatMulInterleaved3Range(v, xb, tv, y, 0, n)
			for s := range tv {
				for i := range n {
					if want := float32(ilv3Exact(w[i*rb:(i+1)*rb], xb.Row(s))); y[s*n+i] != want {
						t.Fatalf("%s byte %#x: vector %d row %d = %v, want %v", name, c, s, i, y[s*n+i], want)
					}
				}
			}
		})
	}
}

// TestIlv3PairKernel checks each multi-vector kernel (the base-3 batches of the families
// without a batched kernel: the AVX2 family's pair kernel on AVX-VNNI and its EVEX
// twin; the NEON SDOT family's pair and four-vector kernels), called directly on one
// tile, against the family's decode kernel run on each vector alone, bit for bit:
// random bytes and activations (−128 included), and the extremes (every byte 0xff
// against all −128 and all 127).
func TestIlv3PairKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(90, 91))
	ran := false
	forEachIlv3Family(t, func(name string) {
		if !Interleaved3Native() || archIlv3Batched(q8Sel.id) {
			return
		}
		ran = true
		t.Run(name, func(t *testing.T) {
			testIlv3MultiKernel(t, r, 2, archIlv3Pair)
			if archIlv3Quads {
				testIlv3MultiKernel(t, r, 4, archIlv3Quad)
			}
		})
	})
	if !ran {
		if avx512VNNIMachine() {
			t.Fatal("AVX-512 VNNI machine: the pair kernel's EVEX twin never ran")
		}
		t.Skip("CPU has none of AVX-VNNI, AVX-512 VNNI and SDOT: no base-3 pair kernel runs here")
	}
}

// ilv3MultiFunc is the signature of archIlv3Pair and archIlv3Quad.
type ilv3MultiFunc func(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int)

// testIlv3MultiKernel checks the kernel f of nv vectors, whose outputs it asks for two
// tiles' rows apart, so that the rows between must stay untouched.
func testIlv3MultiKernel(t *testing.T, r *rand.Rand, nv int, f ilv3MultiFunc) {
	for _, k := range []int{1024, 2048, 5120} {
		for _, extreme := range []bool{false, true} {
			w := randPTQ1(r, k, Ilv3Rows, func() uint16 { return randScale(r) })
			v := ilv3Fill(t, w, k, Ilv3Rows)
			xb := randIlvBatch(r, k, nv, false)
			if extreme {
				for i := range v.buf {
					if i%ilv3BlockBytes >= ilv3CodeOff {
						v.buf[i] = 0xff
					}
				}
				for s := range nv {
					q := []int8{-128, 127}[s%2]
					x := xb.Row(s)
					for i := range x.Q {
						x.Q[i] = q
					}
					for b := range x.Sum {
						x.Sum[b] = int32(q) * BlockSize
					}
				}
			}
			nb := k / BlockSize
			acc := make([]float32, nv*8*Ilv3Rows)
			y := nanVec((2*nv - 1) * Ilv3Rows)
			f(&v.buf[0], nb/8, &xb.q[0], q8QBytes(k), &xb.d[0], &xb.sum[0], 4*nb, &acc[0], &y[0], 4*2*Ilv3Rows)
			for s := range nv {
				var acc1 [8 * Ilv3Rows]float32
				want := nanVec(Ilv3Rows)
				ilv3Tiles(true, v.buf, 1, nb, xb.Row(s), &acc1, want)
				for i, got := range y[2*s*Ilv3Rows : (2*s+1)*Ilv3Rows] {
					if math.Float32bits(got) != math.Float32bits(want[i]) {
						t.Fatalf("%d vectors, k=%d extreme=%v: vector %d row %d = %v, alone %v", nv, k, extreme, s, i, got, want[i])
					}
				}
				if s == nv-1 {
					break
				}
				for i, g := range y[(2*s+1)*Ilv3Rows : (2*s+2)*Ilv3Rows] {
					if !math.IsNaN(float64(g)) {
						t.Fatalf("%d vectors: y[%d] written between the vectors' outputs", nv, (2*s+1)*Ilv3Rows+i)
					}
				}
			}
		}
	}
}
