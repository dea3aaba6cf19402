package qwen35_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
)

// TestGDNRewind: after a kept pass over T tokens, Rewind(j) leaves the state bit for bit
// that of a state fed only the first j tokens one at a time (decode steps), for every j,
// and the kept pass's outputs are those steps' outputs. The pass comes in one call and in
// two (a sequence split across the chunks of a batch), with and without a worker pool,
// and rewinds to several positions of one pass in turn.
func TestGDNRewind(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	c := gdnConfig(4, 12, 32, 4)
	l := gdnLayer(rng, c, 1)
	g := qwen35.NewGDN(c)
	pool := parallel.NewPool(3)
	defer pool.Close()
	prefix := newGDNInputs(rng, c, 7, 0)
	for _, T := range []int{1, 2, 5, 9} {
		pass := newGDNInputs(rng, c, T, 0)
		// The reference: the prefix, then each of the pass's tokens as its own step,
		// with the state after each step.
		ref, rsc := g.NewState(), g.NewScratch(16)
		runGDN(g, c, prefix, l, ref, rsc, false)
		states := []*qwen35.GDNState{g.NewState()}
		states[0].CopyFrom(ref)
		var outs []float32
		for t := range T {
			outs = append(outs, runGDN(g, c, pass.slice(c, t, t+1), l, ref, rsc, false)...)
			s := g.NewState()
			s.CopyFrom(ref)
			states = append(states, s)
		}
		for _, split := range []int{0, T / 2} {
			for _, runner := range []qwen35.Runner{nil, pool} {
				st, sc := g.NewState(), g.NewScratch(16)
				sc.Runner = runner
				runGDN(g, c, prefix, l, st, sc, false)
				keep := g.NewKeep()
				out := make([]float32, T*c.InnerSize)
				for _, span := range [][2]int{{0, split}, {split, T}} {
					if span[0] == span[1] {
						continue
					}
					p := pass.slice(c, span[0], span[1])
					g.ForwardKept(out[span[0]*c.InnerSize:], p.qkv, p.z, p.alpha, p.beta, p.T, l, st, sc, keep)
				}
				require.Equal(t, T, keep.Len())
				require.Equal(t, outs, out, "T=%d: the kept pass's outputs are the steps'", T)
				require.Equal(t, states[T], st, "T=%d: the kept pass's state is the steps'", T)
				// Down from T to 0, then back up to T: every position of one pass.
				for _, j := range append(downUp(T), T) {
					g.Rewind(st, keep, j, l, sc)
					require.Equal(t, states[j], st, "T=%d split=%d rewound to %d", T, split, j)
				}
			}
		}
	}
}

// downUp returns T, T−1, …, 0, 1, …, T−1.
func downUp(T int) []int {
	var js []int
	for j := T; j >= 0; j-- {
		js = append(js, j)
	}
	for j := 1; j < T; j++ {
		js = append(js, j)
	}
	return js
}

// TestGDNKeepClear: a cleared keep starts a new pass from the state as it is then.
func TestGDNKeepClear(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 2))
	c := gdnConfig(2, 4, 16, 4)
	l := gdnLayer(rng, c, 1)
	g := qwen35.NewGDN(c)
	st, sc := g.NewState(), g.NewScratch(8)
	keep := g.NewKeep()
	a, b := newGDNInputs(rng, c, 3, 0), newGDNInputs(rng, c, 4, 0)
	out := make([]float32, 4*c.InnerSize)
	g.ForwardKept(out, a.qkv, a.z, a.alpha, a.beta, a.T, l, st, sc, keep)
	mid := g.NewState()
	mid.CopyFrom(st)
	keep.Clear()
	assert.Zero(t, keep.Len())
	g.ForwardKept(out, b.qkv, b.z, b.alpha, b.beta, b.T, l, st, sc, keep)
	g.Rewind(st, keep, 0, l, sc)
	assert.Equal(t, mid, st)
	assert.Panics(t, func() { g.Rewind(st, keep, 5, l, sc) })
	assert.Zero(t, testing.AllocsPerRun(5, func() {
		keep.Clear()
		g.ForwardKept(out, b.qkv, b.z, b.alpha, b.beta, b.T, l, st, sc, keep)
		g.Rewind(st, keep, 2, l, sc)
	}))
}
