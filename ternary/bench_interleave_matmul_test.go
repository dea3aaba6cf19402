package ternary

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// BenchmarkIlvMatKernel measures each batched interleaved kernel alone on one core: one
// tile of 64 rows run over 72 vectors whose activations sit in the L2 cache, at the
// widest kernel and some narrower ones (nv): the ceiling of BenchmarkMatMulIlv, and the
// counterpart of BenchmarkQ8TileKernel ("GMAC/s" = 10⁹ multiply-adds a second;
// "GMAC/cpu-s" per second of CPU time the process got, steadier on a shared machine).
func BenchmarkIlvMatKernel(b *testing.B) {
	if !ilvHasVNNI() {
		b.Skip("no AVX-512 VNNI")
	}
	benchIlvMatKernel(b, func(nv int, a *ilvMatArgs) { archIlvMatFam(ilvVNNI, nv, a) })
}

// BenchmarkIlvMatKernelAVX2 is BenchmarkIlvMatKernel for the AVX2 kernels.
func BenchmarkIlvMatKernelAVX2(b *testing.B) {
	if _, ok := ilvAVX2Kernel(); !ok {
		b.Skip("no AVX2 (with FMA and F16C)")
	}
	benchIlvMatKernel(b, func(nv int, a *ilvMatArgs) { archIlvMatFam(ilvAVX2, nv, a) })
}

func benchIlvMatKernel(b *testing.B, mat func(int, *ilvMatArgs)) {
	for _, nv := range []int{ilvMatWidth, 4, 2, 1} {
		for _, k := range []int{1024, 5120, 17408} {
			b.Run(fmt.Sprintf("K=%d/nv=%d", k, nv), func(b *testing.B) {
				const t = 72
				r := rand.New(rand.NewPCG(1, 2))
				w := randPQ2(r, k, IlvRows, func() uint16 { return 0x2000 })
				v := ilvFill(b, w, k, IlvRows)
				x := ilvBenchBatch(r, k, t)
				y := make([]float32, t*IlvRows)
				var acc [ilvMatWidth * 8 * IlvRows]float32
				nb := k / BlockSize
				c0 := processCPUSeconds()
				for b.Loop() {
					for s0 := 0; s0+nv <= t; s0 += nv {
						a := ilvMatArgs{w: &v.buf[0], nb8: nb / 8, q: &x.q[s0*q8QBytes(k)], qs: q8QBytes(k),
							d: &x.d[s0*nb], sum: &x.sum[s0*nb], ds: 4 * nb, acc: &acc[0], y: &y[s0*IlvRows], ys: 4 * IlvRows}
						mat(nv, &a)
					}
				}
				macs := float64(k) * IlvRows * float64(t/nv*nv) * float64(b.N) / 1e9
				b.ReportMetric(macs/b.Elapsed().Seconds(), "GMAC/s")
				b.ReportMetric(macs/(processCPUSeconds()-c0), "GMAC/cpu-s")
			})
		}
	}
}

// BenchmarkIlvMatKernelTiled is BenchmarkQ8TileKernel's widest tiled kernel of each
// SIMD family measured as BenchmarkIlvMatKernel is (72 vectors, CPU seconds), for
// a side-by-side figure: one repacked tile of rows, no repacking timed.
func BenchmarkIlvMatKernelTiled(b *testing.B) {
	for _, kern := range q8Kernels[1:] {
		withKernel(kern, func() { benchIlvMatKernelTiled(b) })
	}
}

func benchIlvMatKernelTiled(b *testing.B) {
	for _, k := range []int{1024, 5120, 17408} {
		b.Run(fmt.Sprintf("K=%d/%s", k, Q8Kernel()), func(b *testing.B) {
			const t = q8BatchMax
			r := rand.New(rand.NewPCG(1, 2))
			rp, tv := q8TilePairs(), q8TileWidth()
			rows := 2 * rp
			w := randPQ2(r, k, rows, func() uint16 { return 0x2000 })
			x := ilvBenchBatch(r, k, t)
			y := make([]float32, rows*t)
			nb := k / BlockSize
			ng := nb / 8
			buf := make([]byte, ng*rp*q8PairBytes)
			q8RepackTile(buf, PQ2_0, w, PQ2_0.RowBytes(k), 0, rows, 0, ng)
			facc := make([]float32, rp*t*16)
			descs := make([]q8TileDesc, t/tv)
			tb := q8TileBytes(k)
			for s := range t / tv * tv {
				dc := &descs[s/tv]
				dc.act[s%tv] = &x.tq[s*tb]
				dc.d[s%tv] = &x.d[s*nb]
				dc.sum[s%tv] = &x.sum[s*nb]
				dc.y[s%tv] = &y[s*rows]
				dc.pf = uintptr(unsafe.Pointer(&w[0]))
			}
			c0 := processCPUSeconds()
			for b.Loop() {
				a := q8TileArgs{w: &buf[0], ng: ng, facc: &facc[0], tiles: t / tv, desc: &descs[0], flags: q8First | q8Last, pfStep: 64}
				q8Tile(rp, tv, &a)
			}
			macs := float64(k) * float64(rows) * float64(t/tv*tv) * float64(b.N) / 1e9
			b.ReportMetric(macs/b.Elapsed().Seconds(), "GMAC/s")
			b.ReportMetric(macs/(processCPUSeconds()-c0), "GMAC/cpu-s")
		})
	}
}

func ilvBenchBatch(r *rand.Rand, k, t int) *Q8Batch {
	xf := make([]float32, k*t)
	for i := range xf {
		xf[i] = float32(r.NormFloat64())
	}
	x := NewQ8Batch(k, t)
	x.Quantize(xf, t)
	return x
}

// BenchmarkMatMulIlv is the prefill product on the model's matrices (matMulShapes) at
// 64 and 256 tokens, on T goroutines claiming rows (whole tiles for the interleaved
// layout) as the model's pool does: "file" is MatMulQ8Range over the file's PQ2_0 rows
// (the tiled kernels, repacking as they go), "interleaved" MatMulInterleavedRange over
// the interleaved copy. Run them alternately (-count) on a shared machine.
func BenchmarkMatMulIlv(b *testing.B) {
	for _, sh := range matMulShapes {
		k, n := sh[0], sh[1]
		for _, t := range []int{64, 256} {
			for _, threads := range []int{1, 2} {
				for _, mode := range []string{"file", "interleaved"} {
					b.Run(fmt.Sprintf("%dx%d/t=%d/threads=%d/%s", k, n, t, threads, mode), func(b *testing.B) {
						benchMatMulIlv(b, k, n, t, threads, mode == "interleaved")
					})
				}
			}
		}
	}
}

// BenchmarkMatMulIlvAVX2 is BenchmarkMatMulIlv on the AVX2 family (selected as the
// AVX2 Q8 kernel, as on an AVX2-only machine) on 5120×17408 and 17408×5120, with a
// third mode, "vector": the interleaved decode kernel run vector by vector, which is
// what MatMulInterleavedRange did on AVX2 before it had a batched kernel.
func BenchmarkMatMulIlvAVX2(b *testing.B) {
	k8, ok := ilvAVX2Kernel()
	if !ok {
		b.Skip("no AVX2 (with FMA and F16C)")
	}
	for _, sh := range matMulShapes[:2] {
		k, n := sh[0], sh[1]
		for _, t := range []int{64, 256} {
			for _, threads := range []int{1, 2} {
				for _, mode := range []string{"file", "interleaved", "vector"} {
					b.Run(fmt.Sprintf("%dx%d/t=%d/threads=%d/%s", k, n, t, threads, mode), func(b *testing.B) {
						withKernel(k8, func() { benchMatMulIlvMode(b, k, n, t, threads, mode) })
					})
				}
			}
		}
	}
}

func benchMatMulIlv(b *testing.B, k, n, t, threads int, ilv bool) {
	mode := "file"
	if ilv {
		mode = "interleaved"
	}
	benchMatMulIlvMode(b, k, n, t, threads, mode)
}

func benchMatMulIlvMode(b *testing.B, k, n, t, threads int, mode string) {
	if mode == "interleaved" && !InterleavedBatchNative() {
		b.Skip("no native batched interleaved kernel")
	}
	r := rand.New(rand.NewPCG(1, 2))
	w := randPQ2(r, k, n, func() uint16 { return 0x2000 })
	x := ilvBenchBatch(r, k, t)
	y := make([]float32, n*t)
	var s *streamRows
	switch mode {
	case "interleaved":
		v := ilvFill(b, w, k, n)
		w = nil
		s = newStreamRows((n+IlvRows-1)/IlvRows, 1, threads, func(_, lo, hi int) {
			MatMulInterleavedRange(v, x, t, y, lo*IlvRows, min(hi*IlvRows, n))
		})
	case "vector":
		v := ilvFill(b, w, k, n)
		w = nil
		s = newStreamRows((n+IlvRows-1)/IlvRows, 1, threads, func(_, lo, hi int) {
			for i := range t {
				MatVecInterleavedRange(v, &x.rows[i], y[i*n:(i+1)*n], lo*IlvRows, min(hi*IlvRows, n))
			}
		})
	default:
		s = newStreamRows(n, productGrain, threads, func(_, lo, hi int) {
			MatMulQ8Range(PQ2_0, w, k, n, x, t, y, lo, hi)
		})
	}
	defer s.stop()
	c0 := processCPUSeconds()
	for b.Loop() {
		s.run(0)
	}
	el := b.Elapsed().Seconds()
	macs := float64(k) * float64(n) * float64(t) * float64(b.N) / 1e9
	cpu := processCPUSeconds() - c0
	b.ReportMetric(macs/el, "GMAC/s")
	b.ReportMetric(cpu/el, "cpu")
	// On a shared machine the rate per CPU second the process got is the steadier one.
	b.ReportMetric(macs/cpu, "GMAC/cpu-s")
}
