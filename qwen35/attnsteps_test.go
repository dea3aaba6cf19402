package qwen35_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
)

// TestAttentionForwardAsSteps: T tokens through ForwardAsSteps give bit for bit the
// outputs and cache of T calls of one token, at contexts below, across and above the
// length from which a step splits its positions, at every KV precision, with a pool.
func TestAttentionForwardAsSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 3))
	c := attnConfig(6, 2, 64, 16, 1e7)
	l := attnLayer(rng, c)
	a := qwen35.NewAttention(c)
	pool := parallel.NewPool(3)
	defer pool.Close()
	const N = 1100
	in := newAttnInputs(rng, c, N)
	row := c.KVHeads * c.HeadDim
	for _, p := range kvPrecisions {
		for _, pos0 := range []int{0, 100, 500, 509, 572, 600, 765, 1090} {
			// One prefix for both, fed in one call, and kept for every T (truncated
			// back to it): feeding it again for each T made the test three times as
			// long, nearly two minutes under qemu.
			steps, kept := a.NewKVCache(p, N), a.NewKVCache(p, N)
			sc := a.NewScratch(N)
			sc.Runner = pool
			if pos0 > 0 {
				runAttn(t, a, c, in.slice(c, 0, pos0), 0, l, steps, sc)
				runAttn(t, a, c, in.slice(c, 0, pos0), 0, l, kept, sc)
			}
			for _, T := range []int{2, 5, 9} {
				if pos0+T > N {
					continue
				}
				steps.Truncate(pos0)
				kept.Truncate(pos0)
				var want []float32
				for i := pos0; i < pos0+T; i++ {
					want = append(want, runAttn(t, a, c, in.slice(c, i, i+1), i, l, steps, sc)...)
				}
				pass := in.slice(c, pos0, pos0+T)
				got := make([]float32, T*c.Heads*c.HeadDim)
				require.NoError(t, a.ForwardAsSteps(got, pass.qg, pass.k, pass.v, T, pos0, l, kept, sc))
				require.Equal(t, want, got, "%v: %d tokens at %d", p, T, pos0)
				kb, vb, ks, vs := make([]float32, row), make([]float32, row), make([]float32, row), make([]float32, row)
				for pos := pos0; pos < pos0+T; pos++ {
					kept.Row(pos, kb, vb)
					steps.Row(pos, ks, vs)
					require.Equal(t, ks, kb, "%v keys at %d", p, pos)
					require.Equal(t, vs, vb, "%v values at %d", p, pos)
				}
			}
		}
	}
}
