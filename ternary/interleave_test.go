package ternary

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ilvShapes are the row widths and row counts the interleaved kernels are tested on:
// block counts below, off and at a group of 8 and the model's widths; row counts at,
// just off and between tiles.
var (
	ilvWidths = []int{128, 384, 5120, 6144, 17408}
	ilvRowsN  = []int{64, 65, 127, 128, 200, 5120}
)

// ilvFill returns w interleaved, filled by four goroutines over tile-aligned ranges.
func ilvFill(t testing.TB, w []byte, k, n int) *Interleaved {
	v, err := NewInterleaved(k, n)
	if err != nil {
		t.Fatal(err)
	}
	tiles := (n + IlvRows - 1) / IlvRows
	var wg sync.WaitGroup
	for g := range 4 {
		lo, hi := g*tiles/4*IlvRows, min((g+1)*tiles/4*IlvRows, n)
		wg.Go(func() { v.Fill(w, lo, hi) })
	}
	wg.Wait()
	return v
}

// ilvRanges returns tile-aligned row ranges of an n-row matrix: the whole, the first
// tile, everything after it, the last (possibly partial) tile, and an empty one.
func ilvRanges(n int) [][2]int {
	last := (n - 1) / IlvRows * IlvRows
	rs := [][2]int{{0, n}, {0, min(IlvRows, n)}, {last, n}, {last, last}}
	if n > IlvRows {
		rs = append(rs, [2]int{IlvRows, n})
	}
	return rs
}

func TestInterleavedRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, k := range ilvWidths {
		for _, n := range []int{1, 63, 64, 65, 127, 128, 200} {
			w := randPQ2(r, k, n, func() uint16 { return uint16(r.Uint32()) })
			v := ilvFill(t, w, k, n)
			if want := (n + 63) / 64 * (k / BlockSize) * ilvBlockBytes; v.Bytes() != want {
				t.Fatalf("%d×%d: %d bytes, want %d", n, k, v.Bytes(), want)
			}
			for _, rg := range ilvRanges(n) {
				got := make([]byte, len(w))
				v.Unpack(got, rg[0], rg[1])
				rb := PQ2_0.RowBytes(k)
				if !bytes.Equal(got[rg[0]*rb:rg[1]*rb], w[rg[0]*rb:rg[1]*rb]) {
					t.Fatalf("%d×%d rows %v: unpacked bytes differ from the file's", n, k, rg)
				}
			}
		}
	}
}

// TestInterleavedLayout checks single codes against the documented layout: row i,
// column e of block b lands at step 8p+s, dword L, byte j, bits 2g.
func TestInterleavedLayout(t *testing.T) {
	const k, n = 256, 130
	rb := PQ2_0.RowBytes(k)
	r := rand.New(rand.NewPCG(43, 44))
	for range 200 {
		i, e := r.IntN(n), r.IntN(k)
		c := byte(1 + r.IntN(3))
		w := make([]byte, n*rb)
		b, col := e/BlockSize, e%BlockSize
		w[i*rb+b*pq2BlockBytes+2+col/4] = c << (2 * (col % 4))
		w[i*rb+b*pq2BlockBytes] = 0x5a
		v := ilvFill(t, w, k, n)
		tile, ri := i/64, i%64
		g, L := ri/16, ri%16
		s, j, p := col/16, col%16/4, col%4
		blk := v.buf[(tile*(k/BlockSize)+b)*ilvBlockBytes:]
		at := 128 + 64*(8*p+s) + 4*L + j
		for x, got := range v.buf {
			want := byte(0)
			switch &v.buf[x] {
			case &blk[at]:
				want = c << (2 * g)
			case &blk[2*ri]:
				want = 0x5a
			}
			if got != want {
				t.Fatalf("row %d column %d code %d: byte %d = %#x, want %#x", i, e, c, x, got, want)
			}
		}
	}
}

func FuzzInterleavedRepack(f *testing.F) {
	f.Add(uint8(1), uint16(1), uint64(1))
	f.Add(uint8(40), uint16(65), uint64(2))
	f.Add(uint8(9), uint16(200), uint64(3))
	f.Fuzz(func(t *testing.T, nbs uint8, ns uint16, seed uint64) {
		k, n := (1+int(nbs)%48)*BlockSize, 1+int(ns)%300
		r := rand.New(rand.NewPCG(seed, 45))
		w := randPQ2(r, k, n, func() uint16 { return uint16(r.Uint32()) })
		v := ilvFill(t, w, k, n)
		got := make([]byte, len(w))
		v.Unpack(got, 0, n)
		if !bytes.Equal(got, w) {
			t.Fatalf("%d×%d: round trip differs", n, k)
		}
		// The padded rows of the last tile hold zeros.
		if pad := (n + 63) / 64 * 64; pad > n {
			last := (n - 1) / 64 * (k / BlockSize) * ilvBlockBytes
			tail := v.buf[last:]
			for i := n % 64; i < 64; i++ {
				for b := range k / BlockSize {
					blk := tail[b*ilvBlockBytes:]
					if blk[2*i] != 0 || blk[2*i+1] != 0 {
						t.Fatalf("%d×%d: padded row %d has a scale", n, k, i)
					}
				}
			}
		}
	})
}

// TestInterleavedExact checks every family against exact integer arithmetic (unit and
// zero scales, D = 1, every code value), an independent reference.
func TestInterleavedExact(t *testing.T) {
	r := rand.New(rand.NewPCG(46, 47))
	unit := func() uint16 { return [...]uint16{0x3c00, 0x3c00, 0x3c00, 0, 0x8000}[r.IntN(5)] }
	for _, k := range ilvWidths {
		n := 200
		w := randPQ2(r, k, n, unit)
		x := randQ8(r, k)
		rb := PQ2_0.RowBytes(k)
		v := ilvFill(t, w, k, n)
		want := make([]float32, n)
		for i := range want {
			e := exactQ8(w[i*rb:(i+1)*rb], x)
			if math.Abs(float64(e)) >= 1<<24 {
				t.Fatalf("k=%d: exact sum %d too large for the test", k, e)
			}
			want[i] = float32(e)
		}
		forEachIlvFamily(t, func(name string) {
			for _, rg := range ilvRanges(n) {
				y := nanVec(n)
				MatVecInterleavedRange(v, x, y, rg[0], rg[1])
				for i := range y {
					in := i >= rg[0] && i < rg[1]
					if in && y[i] != want[i] || !in && !math.IsNaN(float64(y[i])) {
						t.Fatalf("%s k=%d rows %v: y[%d] = %v, want %v", name, k, rg, i, y[i], want[i])
					}
				}
			}
		})
	}
}

// TestMatVecInterleaved checks that every family gives bit for bit what MatVecQ8Range
// gives over the file's bytes: random scales (zeros, subnormals and 65504 included),
// every code value, quantised Gaussian activations of varied magnitude.
func TestMatVecInterleaved(t *testing.T) {
	r := rand.New(rand.NewPCG(48, 49))
	for _, k := range ilvWidths {
		xf := make([]float32, k)
		for i := range xf {
			xf[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()))
		}
		x := NewQ8(k)
		x.Quantize(xf)
		for _, n := range ilvRowsN {
			w := randPQ2(r, k, n, func() uint16 { return randScale(r) })
			v := ilvFill(t, w, k, n)
			forEachIlvFamily(t, func(name string) {
				want := make([]float32, n)
				MatVecQ8Range(PQ2_0, w, k, x, want, 0, n)
				for _, rg := range ilvRanges(n) {
					y := nanVec(n)
					MatVecInterleavedRange(v, x, y, rg[0], rg[1])
					for i := range y {
						in := i >= rg[0] && i < rg[1]
						if in && math.Float32bits(y[i]) != math.Float32bits(want[i]) || !in && !math.IsNaN(float64(y[i])) {
							t.Fatalf("%s %d×%d rows %v: y[%d] = %v, MatVecQ8Range %v", name, n, k, rg, i, y[i], want[i])
						}
					}
				}
			})
		}
	}
}

// forEachIlvFamily runs f under each Q8 kernel whose bits the interleaved kernel
// reproduces: the generic one (the twin) and each SIMD family that has an interleaved
// kernel; it fails if one of the families that should (AVX2, AVX-512 VNNI, both NEON
// ones) has none.
func forEachIlvFamily(t *testing.T, f func(name string)) {
	for _, k := range q8Kernels {
		withKernel(k, func() {
			native := InterleavedNative()
			if !native && k.id != q8Generic {
				t.Fatalf("Q8 family %s: no SIMD interleaved kernel", k.name)
			}
			if k.id != q8Generic && !native {
				return
			}
			f(fmt.Sprintf("%s/native=%v", k.name, native))
		})
	}
}

func nanVec(n int) []float32 {
	y := make([]float32, n)
	for i := range y {
		y[i] = float32(math.NaN())
	}
	return y
}

func TestInterleavedNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(50, 51))
	const k, n = 1152, 130
	v := ilvFill(t, randPQ2(r, k, n, func() uint16 { return randScale(r) }), k, n)
	x := randQ8(r, k)
	y := make([]float32, n)
	if a := testing.AllocsPerRun(10, func() { MatVecInterleavedRange(v, x, y, 0, n) }); a != 0 {
		t.Fatalf("%v allocations per call", a)
	}
}

func TestInterleavedPanics(t *testing.T) {
	v, err := NewInterleaved(256, 130)
	if err != nil {
		t.Fatal(err)
	}
	x := NewQ8(256)
	y := make([]float32, 130)
	for name, f := range map[string]func(){
		"unaligned lo": func() { MatVecInterleavedRange(v, x, y, 1, 64) },
		"unaligned hi": func() { MatVecInterleavedRange(v, x, y, 0, 100) },
		"width":        func() { MatVecInterleavedRange(v, NewQ8(128), y, 0, 64) },
		"short y":      func() { MatVecInterleavedRange(v, x, y[:100], 0, 130) },
		"fill range":   func() { v.Fill(make([]byte, 130*PQ2_0.RowBytes(256)), 0, 65) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	for _, sh := range [][2]int{{0, 1}, {100, 1}, {128, 0}} {
		if _, err := NewInterleaved(sh[0], sh[1]); err == nil {
			t.Errorf("NewInterleaved(%d, %d): no error", sh[0], sh[1])
		}
	}
}

// TestNewInterleavedIn checks the layout in memory of the caller's: it refuses memory
// too short or not 64-byte aligned, naming the sizes, and over good memory interleaves
// as NewInterleaved does, in the caller's bytes.
func TestNewInterleavedIn(t *testing.T) {
	const k, n = 384, 70
	size, err := InterleavedSize(k, n)
	if err != nil || size != 2*3*ilvBlockBytes {
		t.Fatalf("InterleavedSize(%d, %d) = %d, %v; want %d", k, n, size, err, 2*3*ilvBlockBytes)
	}
	if _, err := InterleavedSize(100, n); err == nil {
		t.Error("InterleavedSize accepted k = 100")
	}
	mem := benchAlloc(size + 64)
	if _, err := NewInterleavedIn(mem[:size-1], k, n); err == nil {
		t.Error("NewInterleavedIn accepted memory one byte short")
	}
	if _, err := NewInterleavedIn(mem[1:size+1], k, n); err == nil {
		t.Error("NewInterleavedIn accepted memory off 64-byte alignment")
	}
	r := rand.New(rand.NewPCG(7, 8))
	w := randPQ2(r, k, n, func() uint16 { return uint16(r.Uint32()) })
	v, err := NewInterleavedIn(mem[:size], k, n)
	if err != nil {
		t.Fatal(err)
	}
	v.Fill(w, 0, n)
	if want := ilvFill(t, w, k, n); !bytes.Equal(mem[:size], want.buf) {
		t.Error("NewInterleavedIn's layout differs from NewInterleaved's")
	}
}

// ilvNativeKernels returns the Q8 kernels of this machine that have an interleaved SIMD
// kernel; on arm64 that must be every SIMD one (both NEON families).
func ilvNativeKernels(t *testing.T) []q8Kernel {
	var ks []q8Kernel
	for _, k := range q8Kernels[1:] {
		if archIlvFamily(k.id) != ilvGeneric {
			ks = append(ks, k)
		} else if runtime.GOARCH == "arm64" {
			t.Fatalf("arm64 Q8 kernel %s has no interleaved kernel", k.name)
		}
	}
	if len(ks) == 0 {
		t.Skip("no interleaved SIMD kernel on this machine")
	}
	return ks
}

// randQ8Full returns activations over the whole int8 range, −128 and 127 frequent, and
// scales D of varied magnitude.
func randQ8Full(r *rand.Rand, k int) *Q8 {
	x := NewQ8(k)
	for b := range k / BlockSize {
		var s int32
		for i := range BlockSize {
			v := int32(r.IntN(256)) - 128
			switch r.IntN(6) {
			case 0:
				v = -128
			case 1:
				v = 127
			}
			x.Q[q8Index(b*BlockSize+i)] = int8(v)
			s += v
		}
		x.D[b] = float32(math.Ldexp(0.5+r.Float64(), r.IntN(17)-12))
		x.Sum[b] = s
	}
	return x
}

// TestIlvBlockSums checks every SIMD family's block integers against the generic twin's,
// on random codes (every code value in every position) and on the extreme block: every
// code 3 against activations of −128 (the largest sums a lane adds).
func TestIlvBlockSums(t *testing.T) {
	r := rand.New(rand.NewPCG(52, 53))
	for _, kern := range ilvNativeKernels(t) {
		fam := archIlvFamily(kern.id)
		for nb := 1; nb <= 20; nb++ {
			k := nb * BlockSize
			for _, extreme := range []bool{false, true} {
				w := randPQ2(r, k, 64, func() uint16 { return randScale(r) })
				x := randQ8Full(r, k)
				if extreme {
					for i := range w {
						if i%pq2BlockBytes >= 2 {
							w[i] = 0xff
						}
					}
					for i := range x.Q {
						x.Q[i] = -128
					}
					for b := range x.Sum {
						x.Sum[b] = -128 * BlockSize
					}
				}
				v := ilvFill(t, w, k, 64)
				for b := range nb {
					blk := (*[ilvBlockBytes]byte)(v.buf[b*ilvBlockBytes:])
					var want, got [IlvRows]int32
					ilvBlockGeneric(&want, blk, x, b)
					archIlvBlock(fam, &blk[0], &x.Q[256*(b/2)+32*(b%2)], &x.Sum[b], &got[0])
					if got != want {
						t.Fatalf("%s k=%d block %d extreme=%v: sums %v, generic %v", kern.name, k, b, extreme, got, want)
					}
				}
			}
		}
	}
}

// TestIlvFamilies checks every SIMD family, forced in turn, against MatVecQ8Range on its
// Q8 family and (on arm64, whose Go fuses the twin's multiply-add as FMLA does) against
// the generic twin, bit for bit: k/128 = 1 … 20 (groups of 8 blocks and tails), row
// counts on and off the 64-row tile, random scales (zeros, subnormals, 65504), every
// code value, activations over the whole int8 range.
func TestIlvFamilies(t *testing.T) {
	r := rand.New(rand.NewPCG(54, 55))
	kerns := ilvNativeKernels(t)
	names := []string{"generic"}
	for _, k := range kerns {
		names = append(names, k.name)
	}
	t.Logf("interleaved kernels on this machine, by the Q8 family whose bits they give: %s", strings.Join(names, " "))
	for nb := 1; nb <= 20; nb++ {
		k := nb * BlockSize
		x := randQ8Full(r, k)
		for _, n := range []int{64, 65, 130} {
			w := randPQ2(r, k, n, func() uint16 { return randScale(r) })
			v := ilvFill(t, w, k, n)
			twin := make([]float32, n)
			withKernel(q8Kernels[0], func() { MatVecInterleavedRange(v, x, twin, 0, n) })
			for _, kern := range kerns {
				withKernel(kern, func() {
					if !InterleavedNative() {
						t.Fatalf("%s: InterleavedNative is false", kern.name)
					}
					want := make([]float32, n)
					MatVecQ8Range(PQ2_0, w, k, x, want, 0, n)
					for _, rg := range ilvRanges(n) {
						y := nanVec(n)
						MatVecInterleavedRange(v, x, y, rg[0], rg[1])
						for i := rg[0]; i < rg[1]; i++ {
							if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s %d×%d rows %v: y[%d] = %v, MatVecQ8Range %v", kern.name, n, k, rg, i, y[i], want[i])
							}
							if runtime.GOARCH == "arm64" && math.Float32bits(y[i]) != math.Float32bits(twin[i]) {
								t.Fatalf("%s %d×%d rows %v: y[%d] = %v, generic twin %v", kern.name, n, k, rg, i, y[i], twin[i])
							}
						}
					}
				})
			}
		}
	}
}

// FillRows, given a few tiles' rows at a time (the matrix's tail tile included), lays
// out the same bytes as Fill given the whole matrix, in both formats; and it refuses
// rows of the wrong length.
func TestFillRowsMatchesFill(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const k = 2 * BlockSize
	type layout interface {
		Fill(w []byte, lo, hi int)
		FillRows(rows []byte, lo, hi int)
	}
	for _, c := range []struct {
		f    Format
		tile int
		make func(t *testing.T, n int) (layout, func() []byte)
	}{
		{PQ2_0, IlvRows, func(t *testing.T, n int) (layout, func() []byte) {
			v, err := NewInterleaved(k, n)
			require.NoError(t, err)
			return v, func() []byte { return v.buf }
		}},
		{PTQ1_0, Ilv3Rows, func(t *testing.T, n int) (layout, func() []byte) {
			v, err := NewInterleaved3(k, n)
			require.NoError(t, err)
			return v, func() []byte { return v.buf }
		}},
	} {
		t.Run(c.f.String(), func(t *testing.T) {
			n := 2*c.tile + 7
			w := randomTernary(rng, c.f, k, n, 0.01)
			whole, wholeBuf := c.make(t, n)
			whole.Fill(w, 0, n)
			parts, partsBuf := c.make(t, n)
			rb := c.f.RowBytes(k)
			for _, r := range [][2]int{{c.tile, n}, {0, c.tile}} {
				parts.FillRows(append([]byte(nil), w[r[0]*rb:r[1]*rb]...), r[0], r[1])
			}
			assert.Equal(t, wholeBuf(), partsBuf())
			assert.Panics(t, func() { parts.FillRows(w[:rb], 0, c.tile) })
		})
	}
}
