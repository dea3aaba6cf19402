package ternary

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkIlv3MatKernel measures each batched base-3 kernel alone on one core, as
// BenchmarkIlvMatKernel does the 2-bit ones: one tile of 80 rows run over 60 vectors
// whose activations sit in the L2 cache, at every width (nv) and number of groups of
// vectors sharing a decoding (g), so that both are measured choices ("GMAC/s" = 10⁹ multiply-adds a second,
// "GMAC/cpu-s" per second of CPU time the process got).
func BenchmarkIlv3MatKernel(b *testing.B) {
	if !avx512VNNIMachine() {
		b.Skip("no AVX-512 VNNI")
	}
	for _, k := range []int{1024, 5120, 17408} {
		for nv := ilv3MatWidth; nv >= 1; nv-- {
			for g := ilv3MatGroups; g >= 1; g-- {
				b.Run(fmt.Sprintf("K=%d/nv=%d/g=%d", k, nv, g), func(b *testing.B) {
					const t = 64
					r := rand.New(rand.NewPCG(1, 2))
					w := randPTQ1Canon(r, k, Ilv3Rows, func() uint16 { return 0x2000 })
					v := ilv3Fill(b, w, k, Ilv3Rows)
					x := ilvBenchBatch(r, k, t)
					y := make([]float32, t*Ilv3Rows)
					var acc [ilv3MatGroups * ilv3MatWidth * 8 * Ilv3Rows]float32
					planes := benchAlloc(ilv3PlaneBytes)
					nb := k / BlockSize
					c0 := processCPUSeconds()
					for b.Loop() {
						for s0 := 0; s0+g*nv <= t; s0 += g * nv {
							a := ilv3MatArgs{w: &v.buf[0], nb8: nb / 8, q: &x.q[s0*q8QBytes(k)], qs: q8QBytes(k),
								d: &x.d[s0*nb], sum: &x.sum[s0*nb], ds: 4 * nb, acc: &acc[0], y: &y[s0*Ilv3Rows], ys: 4 * Ilv3Rows,
								groups: g, planes: &planes[0]}
							archIlv3Mat(nv, &a)
						}
					}
					macs := float64(k) * Ilv3Rows * float64(t/(g*nv)*g*nv) * float64(b.N) / 1e9
					b.ReportMetric(macs/b.Elapsed().Seconds(), "GMAC/s")
					b.ReportMetric(macs/(processCPUSeconds()-c0), "GMAC/cpu-s")
				})
			}
		}
	}
}

// BenchmarkMatMulIlv3 is the prefill product on the model's FFN matrices at 64 and 256
// tokens on T goroutines claiming rows as the model's pool does, three ways in the same
// run, pass by pass in turn so that all see the same machine:
//
//	ilv3  MatMulInterleaved3Range over the base-3 copy of a PTQ1_0 matrix
//	ilv2  MatMulInterleavedRange over the 2-bit copy of a PQ2_0 matrix
//	file  MatMulQ8Range over the PTQ1_0 file (today's tiled path, transcoding as it goes)
//
// Each reports the median and the best pass in 10⁹ multiply-adds a second
// ("<mode>-GMAC/s", "<mode>-best"), and ilv3 over each of the others at the median.
func BenchmarkMatMulIlv3(b *testing.B) {
	for _, sh := range [][2]int{{5120, 17408}, {17408, 5120}} {
		k, n := sh[0], sh[1]
		for _, t := range []int{64, 256} {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%dx%d/t=%d/threads=%d", k, n, t, threads), func(b *testing.B) {
					benchMatMulIlv3(b, k, n, t, threads)
				})
			}
		}
	}
}

func benchMatMulIlv3(b *testing.B, k, n, t, threads int) {
	if !Interleaved3BatchNative() || !InterleavedBatchNative() {
		b.Skip("no native batched interleaved kernels")
	}
	r := rand.New(rand.NewPCG(1, 2))
	w3 := randPTQ1Canon(r, k, n, func() uint16 { return 0x2000 })
	v3 := ilv3Fill(b, w3, k, n)
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
	sf := newStreamRowsOn(s3.pool, n, productGrain, func(_, lo, hi int) {
		MatMulQ8Range(PTQ1_0, w3, k, n, x, t, y, lo, hi)
	})
	modes := []struct {
		name string
		s    *streamRows
	}{{"ilv3", s3}, {"ilv2", s2}, {"file", sf}}
	rates := make([][]float64, len(modes))
	macs := float64(k) * float64(n) * float64(t) / 1e9
	for b.Loop() {
		for i, m := range modes {
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
	b.ReportMetric(med[0]/med[1], "ilv3/ilv2")
	b.ReportMetric(med[0]/med[2], "ilv3/file")
}
