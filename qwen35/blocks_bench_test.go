package qwen35_test

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
)

// bench27B is the 27B model's mixer sizes (the values in Config's comments).
func bench27B() *qwen35.Config {
	return &qwen35.Config{
		Heads: 24, KVHeads: 4, HeadDim: 256, RopeDims: 64, RopeBase: 1e7, RMSEpsilon: 1e-6,
		KHeads: 16, VHeads: 48, StateSize: 128, InnerSize: 6144, ConvKernel: 4,
	}
}

// BenchmarkGDN27B measures one GDN layer's core: a decode step (T=1) and a 64-token
// prefill in both forms, on one goroutine and on a pool of GOMAXPROCS workers.
func BenchmarkGDN27B(b *testing.B) {
	c := bench27B()
	rng := rand.New(rand.NewPCG(41, 1))
	l := gdnLayer(rng, c, 1)
	g := qwen35.NewGDN(c)
	pool := parallel.NewPool(runtime.GOMAXPROCS(0))
	defer pool.Close()
	for _, workers := range []int{1, pool.Workers()} {
		for _, tc := range []struct {
			T       int
			chunked bool
		}{{1, false}, {64, false}, {64, true}} {
			b.Run(fmt.Sprintf("workers=%d/T=%d/chunked=%v", workers, tc.T, tc.chunked), func(b *testing.B) {
				in := newGDNInputs(rng, c, tc.T, 0)
				st, sc := g.NewState(), g.NewScratch(tc.T)
				if workers > 1 {
					sc.Runner = pool
				}
				out := make([]float32, tc.T*c.InnerSize)
				g.Forward(out, in.qkv, in.z, in.alpha, in.beta, tc.T, l, st, sc, tc.chunked) // allocates the chunked buffers
				b.ReportAllocs()
				for b.Loop() {
					g.Forward(out, in.qkv, in.z, in.alpha, in.beta, tc.T, l, st, sc, tc.chunked)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(tc.T), "µs/token")
			})
		}
	}
}

// BenchmarkGDN27BDecode measures a decode step's GDN layers as the model runs them: 48
// layers, each with its own 3 MB state (151 MB in all, far past any cache), one token
// each, on the pool; the state is read and written once a layer, and GB/s counts that
// traffic (2 × 151 MB a token) against the time.
func BenchmarkGDN27BDecode(b *testing.B) {
	const layers = 48
	c := bench27B()
	rng := rand.New(rand.NewPCG(43, 1))
	l := gdnLayer(rng, c, 1)
	g := qwen35.NewGDN(c)
	pool := parallel.NewPool(runtime.GOMAXPROCS(0))
	defer pool.Close()
	states := g.NewStates(layers)
	sc := g.NewScratch(1)
	sc.Runner = pool
	in := newGDNInputs(rng, c, 1, 0)
	out := make([]float32, c.InnerSize)
	for b.Loop() {
		for _, st := range states {
			g.Forward(out, in.qkv, in.z, in.alpha, in.beta, 1, l, st, sc, false)
		}
	}
	perToken := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	stateBytes := float64(layers * c.VHeads * c.StateSize * c.StateSize * 4)
	b.ReportMetric(perToken/1e6, "ms/token")
	b.ReportMetric(2*stateBytes/perToken, "GB/s")
}

// BenchmarkAttention27B measures one attention layer's decode step (T=1) with the cache
// already holding ctx positions.
func BenchmarkAttention27B(b *testing.B) {
	c := bench27B()
	rng := rand.New(rand.NewPCG(42, 1))
	l := attnLayer(rng, c)
	a := qwen35.NewAttention(c)
	pool := parallel.NewPool(runtime.GOMAXPROCS(0))
	defer pool.Close()
	for _, workers := range []int{1, pool.Workers()} {
		for _, p := range []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8, backend.KVQ4} {
			for _, ctx := range []int{1024, 8192} {
				b.Run(fmt.Sprintf("workers=%d/%v/ctx=%d", workers, p, ctx), func(b *testing.B) {
					cache := a.NewKVCache(p, ctx+1)
					kv := randVec(rng, c.KVHeads*c.HeadDim, 1)
					for cache.Len() < ctx {
						if err := cache.Append(kv, kv); err != nil {
							b.Fatal(err)
						}
					}
					cache.Reserve(ctx + 1)
					in := newAttnInputs(rng, c, 1)
					sc := a.NewScratch(1)
					if workers > 1 {
						sc.Runner = pool
					}
					out := make([]float32, c.Heads*c.HeadDim)
					b.ReportAllocs()
					for b.Loop() {
						if err := a.Forward(out, in.qg, in.k, in.v, 1, ctx, l, cache, sc); err != nil {
							b.Fatal(err)
						}
						cache.Truncate(ctx) // attend at position ctx again next time
					}
				})
			}
		}
	}
}
