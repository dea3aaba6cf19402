package ternary

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// The interleaved benchmarks compare MatVecInterleavedRange with MatVecQ8Range on the
// same matrices: in the cache on one core (BenchmarkIlvKernel, "Gw/s" = 10⁹ weights a
// second), and streaming from memory (BenchmarkIlvStream) as a share of the plain read
// loop measured over the same bytes in the same run ("read%").

// ilvBenchQ8 returns Gaussian activations of width k, quantised.
func ilvBenchQ8(r *rand.Rand, k int) *Q8 {
	xf := make([]float32, k)
	for i := range xf {
		xf[i] = float32(r.NormFloat64())
	}
	x := NewQ8(k)
	x.Quantize(xf)
	return x
}

// BenchmarkIlvKernel: 512 KiB of weights (L2), one goroutine, each interleaved family
// against the Q8 kernel it reproduces.
func BenchmarkIlvKernel(b *testing.B) {
	for _, k := range []int{5120, 17408} {
		w, v, x, y := ilvKernelBench(b, k)
		n := len(y)
		for _, kern := range q8Kernels {
			withKernel(kern, func() {
				b.Run(fmt.Sprintf("file/%s/K=%d", kern.name, k), func(b *testing.B) {
					for b.Loop() {
						MatVecQ8Range(PQ2_0, w, k, x, y, 0, n)
					}
					b.ReportMetric(float64(n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gw/s")
				})
				if kern.id != q8Generic && !InterleavedNative() {
					return
				}
				b.Run(fmt.Sprintf("interleaved/%s/K=%d", kern.name, k), func(b *testing.B) {
					for b.Loop() {
						MatVecInterleavedRange(v, x, y, 0, n)
					}
					b.ReportMetric(float64(n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gw/s")
				})
			})
		}
	}
}

// BenchmarkIlvKernelTile: one tile of 64 rows (278 KiB at K = 17408), which stays in
// the L2 of the cores whose L2 is 512 KiB (Zen 2–4), where BenchmarkIlvKernel's
// 512 KiB partly spill: the interleaved decode kernel in use here, one goroutine.
func BenchmarkIlvKernelTile(b *testing.B) {
	for _, k := range []int{5120, 17408} {
		r := rand.New(rand.NewPCG(1, 2))
		w := randPQ2(r, k, IlvRows, func() uint16 { return 0x2000 })
		v := ilvFill(b, w, k, IlvRows)
		x := ilvBenchQ8(r, k)
		y := make([]float32, IlvRows)
		b.Run(fmt.Sprintf("%s/K=%d", InterleavedKernel(), k), func(b *testing.B) {
			for b.Loop() {
				MatVecInterleavedRange(v, x, y, 0, IlvRows)
			}
			b.ReportMetric(float64(IlvRows*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gw/s")
		})
	}
}

// ilvKernelBench returns BenchmarkIlvKernel's operands for row width k: 512 KiB of
// PQ2_0 weights, their interleaved copy, activations and the outputs.
func ilvKernelBench(b *testing.B, k int) (w []byte, v *Interleaved, x *Q8, y []float32) {
	r := rand.New(rand.NewPCG(1, 2))
	n := (512 << 10) / PQ2_0.RowBytes(k) / IlvRows * IlvRows
	w = randPQ2(r, k, n, func() uint16 { return 0x2000 })
	return w, ilvFill(b, w, k, n), ilvBenchQ8(r, k), make([]float32, n)
}

// BenchmarkIlvStream streams copies of an interleaved matrix (≥ 512 MiB together, far
// beyond the last-level cache) through MatVecInterleavedRange on T goroutines splitting
// tiles as the model splits rows, and, in the same run, the same bytes through the
// widest read loop; it reports both rates and their ratio ("read%"). BenchmarkMatVec
// and BenchmarkMemoryRead are the same measure for the file's layout.
func BenchmarkIlvStream(b *testing.B) { ilvStream(b) }

// BenchmarkIlvStreamAVX2 is BenchmarkIlvStream on the AVX2 family's kernel, which an
// AVX-512 machine does not otherwise run.
func BenchmarkIlvStreamAVX2(b *testing.B) {
	for _, k := range q8Kernels {
		if k.id == q8AVX2 {
			withKernel(k, func() { ilvStream(b) })
			return
		}
	}
	b.Skip("no AVX2 Q8 family on this machine")
}

func ilvStream(b *testing.B) {
	if d := os.Getenv("TERNARY_ILVPF"); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			b.Fatalf("TERNARY_ILVPF=%q: want a distance in bytes", d)
		}
		defer setIlvPrefetch(n)()
	}
	rd := memReaders[len(memReaders)-1]
	for _, sh := range [][2]int{{5120, 17408}, {17408, 5120}, {5120, 6144}} {
		k, n := sh[0], sh[1]
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%dx%d/threads=%d", k, n, threads), func(b *testing.B) {
				r := rand.New(rand.NewPCG(3, 4))
				w := randPQ2(r, k, n, func() uint16 { return 0x2000 })
				one := ilvFill(b, w, k, n)
				copies := max(2, (512<<20+one.Bytes()-1)/one.Bytes())
				vs := make([]*Interleaved, copies)
				for i := range vs {
					v, _ := NewInterleaved(k, n)
					copy(v.buf, one.buf)
					vs[i] = v
				}
				x := ilvBenchQ8(r, k)
				y := make([]float32, n)
				tiles := (n + IlvRows - 1) / IlvRows
				tb := one.tileBytes()
				var sink [64]atomic.Uint64
				read := false
				s := newStreamRows(tiles, 1, threads, func(cp, lo, hi int) {
					v := vs[cp]
					if read {
						p := v.buf[lo*tb : hi*tb]
						sink[lo%64].Store(rd.read(&p[0], len(p)/rd.align*rd.align))
						return
					}
					MatVecInterleavedRange(v, x, y, lo*IlvRows, min(hi*IlvRows, n))
				})
				defer s.stop()
				size := float64(one.Bytes())
				pass := func(rates *[]float64, cp int) {
					t0 := time.Now()
					s.run(cp)
					*rates = append(*rates, size/time.Since(t0).Seconds()/1e9)
				}
				b.SetBytes(int64(size))
				var kr, rr []float64
				cp := 0
				c0 := processCPUSeconds()
				for b.Loop() {
					// Alternate kernel and read passes, so that both see the same machine.
					read = false
					pass(&kr, cp)
					cp = (cp + 1) % copies
					read = true
					pass(&rr, cp)
					cp = (cp + 1) % copies
				}
				reportStream(b, size, c0, kr)
				b.ReportMetric(medianOf(rr), "readGB/s")
				b.ReportMetric(100*medianOf(kr)/medianOf(rr), "read%")
			})
		}
	}
}

// BenchmarkIlvFill measures the repacking on one goroutine, in file bytes a second.
func BenchmarkIlvFill(b *testing.B) {
	for _, sh := range [][2]int{{5120, 17408}, {17408, 5120}} {
		k, n := sh[0], sh[1]
		b.Run(fmt.Sprintf("%dx%d", k, n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			w := randPQ2(r, k, n, func() uint16 { return 0x2000 })
			v, err := NewInterleaved(k, n)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(w)))
			for b.Loop() {
				v.Fill(w, 0, n)
			}
		})
	}
}
