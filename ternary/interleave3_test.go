package ternary

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// ilv3RowsN are the row counts the base-3 kernels are tested on: at, just off and
// between tiles of 80, and the model's counts that are not multiples of 80.
var ilv3RowsN = []int{1, 79, 80, 81, 159, 160, 200, 6144}

// ilv3Fill returns w interleaved, filled by four goroutines over tile-aligned ranges.
func ilv3Fill(t testing.TB, w []byte, k, n int) *Interleaved3 {
	v, err := NewInterleaved3(k, n)
	if err != nil {
		t.Fatal(err)
	}
	tiles := (n + Ilv3Rows - 1) / Ilv3Rows
	var wg sync.WaitGroup
	for g := range 4 {
		lo, hi := g*tiles/4*Ilv3Rows, min((g+1)*tiles/4*Ilv3Rows, n)
		wg.Go(func() { v.Fill(w, lo, hi) })
	}
	wg.Wait()
	return v
}

// ilv3Ranges returns tile-aligned row ranges of an n-row matrix: the whole, the first
// tile, everything after it, the last (possibly partial) tile, and an empty one.
func ilv3Ranges(n int) [][2]int {
	last := (n - 1) / Ilv3Rows * Ilv3Rows
	rs := [][2]int{{0, n}, {0, min(Ilv3Rows, n)}, {last, n}, {last, last}}
	if n > Ilv3Rows {
		rs = append(rs, [2]int{Ilv3Rows, n})
	}
	return rs
}

// randPTQ1Canon returns n PTQ1_0 rows of width k as the encoder writes them: uniform
// random trits, scales from scale.
func randPTQ1Canon(r *rand.Rand, k, n int, scale func() uint16) []byte {
	w := make([]byte, n*PTQ1_0.RowBytes(k))
	var codes [BlockSize]uint8
	for b := 0; b < len(w); b += ptq1BlockBytes {
		for i := range codes {
			codes[i] = uint8(r.IntN(3))
		}
		packPTQ1_0(w[b:], &codes, scale())
	}
	return w
}

// trit3 is trit n of byte c computed as the n-th base-3 digit of the fraction c/256:
// ⌊c·3ⁿ⁺¹/256⌋ mod 3, an independent form of SPEC's (uint8(c·3ⁿ)·3) >> 8.
func trit3(c byte, n int) int {
	p := 3
	for range n {
		p *= 3
	}
	return int(c) * p / 256 % 3
}

func TestIlv3Trits(t *testing.T) {
	for c := range 256 {
		for n := range 5 {
			if got, want := int(tritTab[c][n]), trit3(byte(c), n); got != want {
				t.Fatalf("byte %d trit %d: tritTab %d, digit %d", c, n, got, want)
			}
		}
	}
}

func TestIlv3RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	for _, k := range []int{128, 384, 1152, 5120} {
		for _, n := range []int{1, 16, 79, 80, 81, 159, 160, 200} {
			w := randPTQ1Canon(r, k, n, func() uint16 { return uint16(r.Uint32()) })
			v := ilv3Fill(t, w, k, n)
			if want := (n + 79) / 80 * (k / BlockSize) * ilv3BlockBytes; v.Bytes() != want {
				t.Fatalf("%d×%d: %d bytes, want %d", n, k, v.Bytes(), want)
			}
			if v.K() != k || v.N() != n {
				t.Fatalf("%d×%d: K, N = %d, %d", n, k, v.K(), v.N())
			}
			rb := PTQ1_0.RowBytes(k)
			for _, rg := range ilv3Ranges(n) {
				got := make([]byte, len(w))
				v.Unpack(got, rg[0], rg[1])
				if !bytes.Equal(got[rg[0]*rb:rg[1]*rb], w[rg[0]*rb:rg[1]*rb]) {
					t.Fatalf("%d×%d rows %v: unpacked bytes differ from the file's", n, k, rg)
				}
			}
		}
	}
}

// TestIlv3Layout checks every trit and scale of a matrix (non-canonical bytes
// included) against the documented layout, decoding the file with UnpackPTQ1_0 and the
// interleave with the base-3 digits: row i, column e of block b is trit g of byte
// 4L+j of step 8p+s.
func TestIlv3Layout(t *testing.T) {
	const k, n = 384, 170
	r := rand.New(rand.NewPCG(63, 64))
	w := randPTQ1(r, k, n, func() uint16 { return uint16(r.Uint32()) })
	v := ilv3Fill(t, w, k, n)
	rb := PTQ1_0.RowBytes(k)
	nb := k / BlockSize
	var codes [BlockSize]uint8
	for i := range (n + 79) / 80 * 80 {
		tile, ri := i/80, i%80
		g, L := ri/16, ri%16
		for b := range nb {
			var h uint16
			if i < n {
				h = UnpackPTQ1_0(&codes, w[i*rb+b*ptq1BlockBytes:])
			} else {
				for e := range codes {
					codes[e] = 1
				}
			}
			blk := v.buf[(tile*nb+b)*ilv3BlockBytes:][:ilv3BlockBytes]
			if got := binary.LittleEndian.Uint16(blk[2*ri:]); got != h {
				t.Fatalf("row %d block %d: scale %#x, want %#x", i, b, got, h)
			}
			for e, c := range codes {
				p, s, j := e%4, e/16, e%16/4
				if got := trit3(blk[192+64*(8*p+s)+4*L+j], g); got != int(c) {
					t.Fatalf("row %d block %d column %d: trit %d, want %d", i, b, e, got, c)
				}
			}
			for x := 160; x < 192; x++ {
				if blk[x] != 0 {
					t.Fatalf("tile %d block %d: byte %d = %#x, want 0", tile, b, x, blk[x])
				}
			}
		}
	}
}

// ilv3Exact returns Σ_b [d_b ≠ 0]·Σ_j (u_j − 1)·Q_j for one PTQ1_0 row whose scales
// are all 0, −0 or 1, from the trits in element order.
func ilv3Exact(row []byte, x *Q8) int64 {
	var codes [BlockSize]uint8
	var total int64
	for b := range x.K / BlockSize {
		h := UnpackPTQ1_0(&codes, row[b*ptq1BlockBytes:])
		if h&0x7fff == 0 {
			continue
		}
		for e, c := range codes {
			total += int64(int(c)-1) * int64(x.Q[q8Index(b*BlockSize+e)])
		}
	}
	return total
}

// randQ8Extreme is randQ8 with −128 among the values (which Quantize never writes
// but the integer kernels must take) and Sum kept exact.
func randQ8Extreme(r *rand.Rand, k int) *Q8 {
	x := randQ8(r, k)
	for b := range k / BlockSize {
		var s int32
		for e := range BlockSize {
			i := q8Index(b*BlockSize + e)
			if r.IntN(6) == 0 {
				x.Q[i] = -128
			}
			s += int32(x.Q[i])
		}
		x.Sum[b] = s
	}
	return x
}

// TestIlv3BlockSums checks the integer block sums of both kernels against Σ (u−1)·Q
// computed from the base-3 digits, for every byte value in every position (raw bytes,
// so the 13 the encoder never writes too) and activations from −128 to 127.
func TestIlv3BlockSums(t *testing.T) {
	r := rand.New(rand.NewPCG(65, 66))
	const k = 256
	v, _ := NewInterleaved3(k, Ilv3Rows)
	for iter := range 64 {
		x := randQ8Extreme(r, k)
		for i := range v.buf {
			v.buf[i] = byte(r.Uint32())
		}
		for i := range 64 {
			// Walk every byte value through every position of the first step.
			v.buf[ilv3CodeOff+i] = byte(4*iter + i)
		}
		for b := range 2 {
			blk := (*[ilv3BlockBytes]byte)(v.buf[b*ilv3BlockBytes:])
			var want [Ilv3Rows]int64
			for e := range BlockSize {
				p, s, j := e%4, e/16, e%16/4
				a := int64(x.Q[q8Index(b*BlockSize+e)])
				for L := range 16 {
					c := blk[ilv3CodeOff+64*(8*p+s)+4*L+j]
					for g := range 5 {
						want[16*g+L] += int64(trit3(c, g)-1) * a
					}
				}
			}
			var gen [Ilv3Rows]int32
			ilv3BlockGeneric(&gen, blk, x, b)
			check := func(name string, got *[Ilv3Rows]int32) {
				for r := range got {
					if int64(got[r]) != want[r] {
						t.Fatalf("%s iter %d block %d row %d: %d, want %d", name, iter, b, r, got[r], want[r])
					}
				}
			}
			check("generic", &gen)
			for _, k := range q8Kernels {
				withKernel(k, func() {
					eachAVX2ImplOf(k.id, func(impl string) {
						if ilv3Native() {
							var simd [Ilv3Rows]int32
							archIlv3Block(&blk[0], &x.Q[256*(b/2)+32*(b%2)], &x.Sum[b], &simd[0])
							check(k.name+impl, &simd)
						}
					})
				})
			}
		}
	}
}

// TestIlv3Exact checks every family against exact integer arithmetic (unit and zero
// scales, D = 1, −128 among the activations) for k/128 = 1 … 20.
func TestIlv3Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(67, 68))
	unit := func() uint16 { return [...]uint16{0x3c00, 0x3c00, 0x3c00, 0, 0x8000}[r.IntN(5)] }
	for nb := 1; nb <= 20; nb++ {
		k, n := nb*BlockSize, 81+r.IntN(160)
		w := randPTQ1(r, k, n, unit)
		x := randQ8Extreme(r, k)
		rb := PTQ1_0.RowBytes(k)
		v := ilv3Fill(t, w, k, n)
		want := make([]float32, n)
		for i := range want {
			e := ilv3Exact(w[i*rb:(i+1)*rb], x)
			if math.Abs(float64(e)) >= 1<<24 {
				t.Fatalf("k=%d: exact sum %d too large for the test", k, e)
			}
			want[i] = float32(e)
		}
		forEachIlv3Family(t, func(name string) {
			for _, rg := range ilv3Ranges(n) {
				y := nanVec(n)
				MatVecInterleaved3Range(v, x, y, rg[0], rg[1])
				for i := range y {
					in := i >= rg[0] && i < rg[1]
					if in && y[i] != want[i] || !in && !math.IsNaN(float64(y[i])) {
						t.Fatalf("%s %d×%d rows %v: y[%d] = %v, want %v", name, n, k, rg, i, y[i], want[i])
					}
				}
			}
		})
	}
}

// TestMatVecIlv3 checks that every family gives bit for bit what MatVecQ8Range gives
// over the PTQ1_0 file (its own PTQ1_0 path, and the PQ2_0 transcode): random scales
// (zeros, subnormals and 65504 included), every byte value, quantised Gaussian
// activations of varied magnitude.
func TestMatVecIlv3(t *testing.T) {
	r := rand.New(rand.NewPCG(69, 70))
	var widths []int
	for nb := 1; nb <= 20; nb++ {
		widths = append(widths, nb*BlockSize)
	}
	widths = append(widths, 5120, 17408)
	for _, k := range widths {
		xf := make([]float32, k)
		for i := range xf {
			xf[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()))
		}
		x := NewQ8(k)
		x.Quantize(xf)
		for _, n := range ilv3RowsN {
			if k > 2560 && n > 200 {
				continue
			}
			w := randPTQ1(r, k, n, func() uint16 { return randScale(r) })
			w2 := toPQ2(t, w, k, n)
			v := ilv3Fill(t, w, k, n)
			forEachIlv3Family(t, func(name string) {
				want := make([]float32, n)
				MatVecQ8Range(PTQ1_0, w, k, x, want, 0, n)
				pq2 := make([]float32, n)
				MatVecQ8Range(PQ2_0, w2, k, x, pq2, 0, n)
				for _, rg := range ilv3Ranges(n) {
					y := nanVec(n)
					MatVecInterleaved3Range(v, x, y, rg[0], rg[1])
					for i := range y {
						in := i >= rg[0] && i < rg[1]
						if !in {
							if !math.IsNaN(float64(y[i])) {
								t.Fatalf("%s %d×%d rows %v: y[%d] = %v written", name, n, k, rg, i, y[i])
							}
							continue
						}
						if math.Float32bits(y[i]) != math.Float32bits(want[i]) || math.Float32bits(y[i]) != math.Float32bits(pq2[i]) {
							t.Fatalf("%s %d×%d rows %v: y[%d] = %v, MatVecQ8Range PTQ1_0 %v, PQ2_0 %v", name, n, k, rg, i, y[i], want[i], pq2[i])
						}
					}
				}
			})
		}
	}
}

// forEachIlv3Family runs f under each Q8 kernel whose bits the base-3 kernel
// reproduces: the generic one (the twin) and, where they run, the AVX-512 VNNI ones
// and the AVX2 family under each of its implementations with a base-3 kernel (AVX-VNNI,
// or its EVEX twin on an AVX-512 VNNI machine); it fails if a machine with AVX-512 VNNI
// ran no SIMD kernel of either family.
func forEachIlv3Family(t *testing.T, f func(name string)) {
	ran := map[q8ID]bool{}
	for _, k := range q8Kernels {
		withKernel(k, func() {
			eachAVX2ImplOf(k.id, func(impl string) {
				if k.id != q8Generic && !Interleaved3Native() {
					return
				}
				ran[k.id] = ran[k.id] || Interleaved3Native()
				f(fmt.Sprintf("%s%s/native=%v", k.name, impl, Interleaved3Native()))
			})
		})
	}
	if avx512VNNIMachine() && (!ran[q8AVX512] && !ran[q8GFNI] || !ran[q8AVX2]) {
		t.Fatalf("AVX-512 VNNI machine: the SIMD base-3 kernels ran for %v", ran)
	}
}

func TestIlv3NoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	const k, n = 1152, 170
	v := ilv3Fill(t, randPTQ1(r, k, n, func() uint16 { return randScale(r) }), k, n)
	x := randQ8(r, k)
	y := make([]float32, n)
	forEachIlv3Family(t, func(name string) {
		if a := testing.AllocsPerRun(10, func() { MatVecInterleaved3Range(v, x, y, 0, n) }); a != 0 {
			t.Fatalf("%s: %v allocations per call", name, a)
		}
	})
}

func TestIlv3Panics(t *testing.T) {
	v, err := NewInterleaved3(256, 170)
	if err != nil {
		t.Fatal(err)
	}
	x := NewQ8(256)
	y := make([]float32, 170)
	for name, f := range map[string]func(){
		"unaligned lo": func() { MatVecInterleaved3Range(v, x, y, 1, 80) },
		"unaligned hi": func() { MatVecInterleaved3Range(v, x, y, 0, 100) },
		"width":        func() { MatVecInterleaved3Range(v, NewQ8(128), y, 0, 80) },
		"short y":      func() { MatVecInterleaved3Range(v, x, y[:100], 0, 170) },
		"fill range":   func() { v.Fill(make([]byte, 170*PTQ1_0.RowBytes(256)), 0, 81) },
		"fill short":   func() { v.Fill(make([]byte, 169*PTQ1_0.RowBytes(256)), 0, 80) },
		"unpack short": func() { v.Unpack(make([]byte, 100), 0, 80) },
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
		if _, err := NewInterleaved3(sh[0], sh[1]); err == nil {
			t.Errorf("NewInterleaved3(%d, %d): no error", sh[0], sh[1])
		}
	}
}

// TestNewInterleaved3In checks the base-3 layout in memory of the caller's, as
// TestNewInterleavedIn does the 2-bit one.
func TestNewInterleaved3In(t *testing.T) {
	const k, n = 384, 90
	size, err := Interleaved3Size(k, n)
	if err != nil || size != 2*3*ilv3BlockBytes {
		t.Fatalf("Interleaved3Size(%d, %d) = %d, %v; want %d", k, n, size, err, 2*3*ilv3BlockBytes)
	}
	if _, err := Interleaved3Size(k, 0); err == nil {
		t.Error("Interleaved3Size accepted n = 0")
	}
	mem := benchAlloc(size + 64)
	if _, err := NewInterleaved3In(mem[:size-1], k, n); err == nil {
		t.Error("NewInterleaved3In accepted memory one byte short")
	}
	if _, err := NewInterleaved3In(mem[8:size+8], k, n); err == nil {
		t.Error("NewInterleaved3In accepted memory off 64-byte alignment")
	}
	r := rand.New(rand.NewPCG(9, 10))
	w := randPTQ1Canon(r, k, n, func() uint16 { return uint16(r.Uint32()) })
	v, err := NewInterleaved3In(mem[:size], k, n)
	if err != nil {
		t.Fatal(err)
	}
	v.Fill(w, 0, n)
	if want := ilv3Fill(t, w, k, n); !bytes.Equal(mem[:size], want.buf) {
		t.Error("NewInterleaved3In's layout differs from NewInterleaved3's")
	}
}

// Interleaved3Kernel names the kernel each family runs: the generic twin where none is
// native, the AVX-512 VNNI one for the AVX-512 families, the AVX2 family's
// implementation's for the AVX2 family, the SDOT one for the NEON SDOT family.
func TestInterleaved3Kernel(t *testing.T) {
	for _, k := range q8Kernels {
		withKernel(k, func() {
			eachAVX2ImplOf(k.id, func(impl string) {
				want := "generic"
				switch {
				case !Interleaved3Native():
				case k.id == q8AVX2:
					want = strings.TrimPrefix(impl, "/")
				case k.id == q8NEONDot:
					want = "neondot"
				default:
					want = "avx512vnni"
				}
				if got := Interleaved3Kernel(); got != want {
					t.Errorf("%s%s: Interleaved3Kernel() = %q, want %q", k.name, impl, got, want)
				}
			})
		})
	}
}
