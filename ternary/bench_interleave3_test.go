package ternary

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// The base-3 interleaved benchmarks set MatVecInterleaved3Range (PTQ1_0, 28 bytes a
// block) beside MatVecInterleavedRange (PQ2_0, 34 bytes a block) on the same matrix
// shapes: in the cache on one core (BenchmarkIlv3Kernel) and streaming from memory on
// T goroutines against the plain read loop over the same bytes in the same run
// (BenchmarkIlv3Stream). "Gw/s" is 10⁹ weights a second; at equal weights a decode
// step's time is the weights over it, so the ratio of the two formats' Gw/s on the
// model's shapes is their ratio of tokens a second where the products dominate.

// BenchmarkIlv3Kernel: about 512 KiB of weights (L2), one goroutine, the base-3 and
// the 2-bit interleaves with each kernel family that runs natively (the AVX2 family
// under each implementation that has a base-3 kernel) and the generic twins, and the
// PTQ1_0 file's rows with each SIMD family ("PTQ1_0-file").
func BenchmarkIlv3Kernel(b *testing.B) {
	for _, k := range []int{5120, 17408} {
		r := rand.New(rand.NewPCG(1, 2))
		n3 := max(Ilv3Rows, (512<<10)/PTQ1_0.RowBytes(k)/Ilv3Rows*Ilv3Rows)
		n2 := max(IlvRows, (512<<10)/PQ2_0.RowBytes(k)/IlvRows*IlvRows)
		w3 := randPTQ1Canon(r, k, n3, func() uint16 { return 0x2000 })
		v3 := ilv3Fill(b, w3, k, n3)
		v2 := ilvFill(b, randPQ2(r, k, n2, func() uint16 { return 0x2000 }), k, n2)
		x := ilvBenchQ8(r, k)
		y := make([]float32, max(n2, n3))
		for _, kern := range q8Kernels {
			withKernel(kern, func() {
				if kern.id != q8Generic {
					b.Run(fmt.Sprintf("PTQ1_0-file/%s/K=%d", kern.name, k), func(b *testing.B) {
						benchRate(b, float64(n3*k), func() { MatVecQ8Range(PTQ1_0, w3, k, x, y, 0, n3) })
					})
				}
				eachAVX2ImplOf(kern.id, func(impl string) {
					if kern.id != q8Generic && !Interleaved3Native() {
						return
					}
					b.Run(fmt.Sprintf("PTQ1_0/%s%s/K=%d", kern.name, impl, k), func(b *testing.B) {
						benchRate(b, float64(n3*k), func() { MatVecInterleaved3Range(v3, x, y, 0, n3) })
					})
					b.Run(fmt.Sprintf("PQ2_0/%s%s/K=%d", kern.name, impl, k), func(b *testing.B) {
						benchRate(b, float64(n2*k), func() { MatVecInterleavedRange(v2, x, y, 0, n2) })
					})
				})
			})
		}
	}
}

// benchRate times f, which multiplies w weights, call by call and reports the median
// and the best rate ("Gw/s", "best-Gw/s"): on a shared machine the mean over b.N calls
// moves with every neighbour's burst, and the best call is the one that had its core.
func benchRate(b *testing.B, w float64, f func()) {
	var rates []float64
	for b.Loop() {
		t0 := time.Now()
		f()
		rates = append(rates, w/time.Since(t0).Seconds()/1e9)
	}
	b.ReportMetric(medianOf(rates), "Gw/s")
	b.ReportMetric(slices.Max(rates), "best-Gw/s")
}

// ilv3Shapes are the model's decode matrices (K×N): FFN gate/up, FFN down, and one
// whose rows are not a multiple of 80.
var ilv3Shapes = [][2]int{{5120, 17408}, {17408, 5120}, {5120, 6144}}

// BenchmarkIlv3Stream streams copies (≥ 512 MiB together per format, beyond the
// last-level cache) of the same K×N matrix in both interleaves through their kernels
// on T goroutines splitting tiles as the model splits rows, and, in the same run, each
// format's bytes through the widest read loop. The four passes alternate, so that all
// see the same machine; each metric is the median over the passes:
//
//	p3-GB/s, p2-GB/s      the kernels' rates in their own bytes
//	p3-Gw/s, p2-Gw/s      the same in weights
//	read-GB/s             the read loop (over the PTQ1_0 bytes)
//	p3-read%, p2-read%    each kernel against the read loop over its own bytes
//	p3/p2                 the ratio of weights a second: tokens a second, PTQ1_0 over PQ2_0
//	*-p90                 the same at the 90th percentile of the passes (on a shared
//	                      machine, the passes that had their cores)
func BenchmarkIlv3Stream(b *testing.B) { ilv3Stream(b) }

func ilv3Stream(b *testing.B) {
	rd := memReaders[len(memReaders)-1]
	for _, sh := range ilv3Shapes {
		k, n := sh[0], sh[1]
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%dx%d/threads=%d", k, n, threads), func(b *testing.B) {
				r := rand.New(rand.NewPCG(3, 4))
				one3 := ilv3Fill(b, randPTQ1Canon(r, k, n, func() uint16 { return 0x2000 }), k, n)
				one2 := ilvFill(b, randPQ2(r, k, n, func() uint16 { return 0x2000 }), k, n)
				c3 := max(2, (512<<20+one3.Bytes()-1)/one3.Bytes())
				c2 := max(2, (512<<20+one2.Bytes()-1)/one2.Bytes())
				v3 := make([]*Interleaved3, c3)
				for i := range v3 {
					v3[i], _ = NewInterleaved3(k, n)
					copy(v3[i].buf, one3.buf)
				}
				v2 := make([]*Interleaved, c2)
				for i := range v2 {
					v2[i], _ = NewInterleaved(k, n)
					copy(v2[i].buf, one2.buf)
				}
				x := ilvBenchQ8(r, k)
				y := make([]float32, n)
				var sink [64]atomic.Uint64
				read := func(p []byte) {
					sink[len(p)%64].Store(rd.read(&p[0], len(p)/rd.align*rd.align))
				}
				// mode: 0 base-3 kernel, 1 its bytes read, 2 2-bit kernel, 3 its bytes read.
				mode := 0
				tb3, tb2 := one3.tileBytes(), one2.tileBytes()
				s3 := newStreamRows((n+Ilv3Rows-1)/Ilv3Rows, 1, threads, func(cp, lo, hi int) {
					v := v3[cp]
					if mode == 1 {
						read(v.buf[lo*tb3 : hi*tb3])
						return
					}
					MatVecInterleaved3Range(v, x, y, lo*Ilv3Rows, min(hi*Ilv3Rows, n))
				})
				defer s3.stop()
				s2 := newStreamRowsOn(s3.pool, (n+IlvRows-1)/IlvRows, 1, func(cp, lo, hi int) {
					v := v2[cp]
					if mode == 3 {
						read(v.buf[lo*tb2 : hi*tb2])
						return
					}
					MatVecInterleavedRange(v, x, y, lo*IlvRows, min(hi*IlvRows, n))
				})
				var rates [4][]float64
				sizes := [4]float64{float64(one3.Bytes()), float64(one3.Bytes()), float64(one2.Bytes()), float64(one2.Bytes())}
				cp3, cp2 := 0, 0
				b.SetBytes(int64(one3.Bytes()))
				c0 := processCPUSeconds()
				for b.Loop() {
					for mode = range 4 {
						t0 := time.Now()
						if mode < 2 {
							s3.run(cp3)
							cp3 = (cp3 + 1) % c3
						} else {
							s2.run(cp2)
							cp2 = (cp2 + 1) % c2
						}
						rates[mode] = append(rates[mode], sizes[mode]/time.Since(t0).Seconds()/1e9)
					}
				}
				reportStream(b, sizes[0], c0, rates[0])
				m := [4]float64{medianOf(rates[0]), medianOf(rates[1]), medianOf(rates[2]), medianOf(rates[3])}
				w := float64(k) * float64(n)
				b.ReportMetric(m[0], "p3-GB/s")
				b.ReportMetric(m[2], "p2-GB/s")
				b.ReportMetric(m[0]/sizes[0]*w, "p3-Gw/s")
				b.ReportMetric(m[2]/sizes[2]*w, "p2-Gw/s")
				b.ReportMetric(m[1], "read-GB/s")
				b.ReportMetric(100*m[0]/m[1], "p3-read%")
				b.ReportMetric(100*m[2]/m[3], "p2-read%")
				b.ReportMetric(m[0]/sizes[0]/(m[2]/sizes[2]), "p3/p2")
				// The best passes (the 90th percentile): those that had their cores.
				p := [4]float64{pctOf(rates[0], 0.9), pctOf(rates[1], 0.9), pctOf(rates[2], 0.9), pctOf(rates[3], 0.9)}
				b.ReportMetric(p[0], "p3-GB/s-p90")
				b.ReportMetric(p[2], "p2-GB/s-p90")
				b.ReportMetric(p[1], "read-GB/s-p90")
				b.ReportMetric(p[0]/sizes[0]/(p[2]/sizes[2]), "p3/p2-p90")
			})
		}
	}
}

// BenchmarkIlv3Fill measures the base-3 repacking on one goroutine, in PTQ1_0 file
// bytes a second (non-canonical bytes among them, as a file may hold).
func BenchmarkIlv3Fill(b *testing.B) {
	for _, sh := range [][2]int{{5120, 17408}, {17408, 5120}} {
		k, n := sh[0], sh[1]
		b.Run(fmt.Sprintf("%dx%d", k, n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			w := randPTQ1(r, k, n, func() uint16 { return 0x2000 })
			v, err := NewInterleaved3(k, n)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(w)))
			c0 := processCPUSeconds()
			for b.Loop() {
				v.Fill(w, 0, n)
			}
			// The rate in CPU time too: on a shared machine the wall-clock MB/s is
			// whatever share of a core the goroutine got.
			b.ReportMetric(float64(len(w))*float64(b.N)/(processCPUSeconds()-c0)/1e6, "MB/cpu-s")
		})
	}
}

// pctOf returns the q-quantile of v (nearest rank).
func pctOf(v []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(v))
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
