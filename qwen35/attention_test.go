package qwen35_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func attnConfig(heads, kvHeads, headDim, ropeDims int, base float64) *qwen35.Config {
	return &qwen35.Config{Heads: heads, KVHeads: kvHeads, HeadDim: headDim, RopeDims: ropeDims, RopeBase: base, RMSEpsilon: 1e-6}
}

func attnLayer(rng *rand.Rand, c *qwen35.Config) *qwen35.Layer {
	l := &qwen35.Layer{Attention: true, QNorm: randVec(rng, c.HeadDim, 0.2), KNorm: randVec(rng, c.HeadDim, 0.2)}
	for i := range l.QNorm {
		l.QNorm[i] += 1
		l.KNorm[i] += 1
	}
	return l
}

type attnInputs struct {
	T        int
	qg, k, v []float32
}

func newAttnInputs(rng *rand.Rand, c *qwen35.Config, T int) attnInputs {
	return attnInputs{
		T:  T,
		qg: randVec(rng, T*c.Heads*2*c.HeadDim, 1),
		k:  randVec(rng, T*c.KVHeads*c.HeadDim, 1),
		v:  randVec(rng, T*c.KVHeads*c.HeadDim, 1),
	}
}

func (in attnInputs) slice(c *qwen35.Config, a, b int) attnInputs {
	q, kv := c.Heads*2*c.HeadDim, c.KVHeads*c.HeadDim
	return attnInputs{T: b - a, qg: in.qg[a*q : b*q], k: in.k[a*kv : b*kv], v: in.v[a*kv : b*kv]}
}

// refAttention is plain float64 gated attention over all tokens of in, from position 0:
// per-head RMSNorm, NeoX RoPE on the first RopeDims dims written out from the formula,
// query head h reading KV head h/(Heads/KVHeads), a causal softmax, the sigmoid gate.
func refAttention(c *qwen35.Config, l *qwen35.Layer, in attnInputs) []float64 {
	H, KV, D, R := c.Heads, c.KVHeads, c.HeadDim, c.RopeDims
	norm := func(x []float32, gain []float32) []float64 {
		var ss float64
		for _, a := range x {
			ss += float64(a) * float64(a)
		}
		r := 1 / math.Sqrt(ss/float64(len(x))+c.RMSEpsilon)
		o := make([]float64, len(x))
		for i, a := range x {
			o[i] = float64(a) * r * float64(gain[i])
		}
		return o
	}
	rope := func(x []float64, pos int) {
		for i := 0; i < R/2; i++ {
			theta := float64(pos) * math.Pow(c.RopeBase, -2*float64(i)/float64(R))
			a, b := x[i], x[i+R/2]
			x[i] = a*math.Cos(theta) - b*math.Sin(theta)
			x[i+R/2] = a*math.Sin(theta) + b*math.Cos(theta)
		}
	}
	keys := make([][][]float64, in.T) // [pos][kv head]
	for p := 0; p < in.T; p++ {
		for h := 0; h < KV; h++ {
			k := norm(in.k[(p*KV+h)*D:(p*KV+h+1)*D], l.KNorm)
			rope(k, p)
			keys[p] = append(keys[p], k)
		}
	}
	out := make([]float64, in.T*H*D)
	for p := 0; p < in.T; p++ {
		for h := 0; h < H; h++ {
			base := (p*H + h) * 2 * D
			q := norm(in.qg[base:base+D], l.QNorm)
			rope(q, p)
			kv := h / (H / KV)
			scores := make([]float64, p+1)
			mx := math.Inf(-1)
			for s := 0; s <= p; s++ { // causal: positions up to and including p
				for i := 0; i < D; i++ {
					scores[s] += q[i] * keys[s][kv][i]
				}
				scores[s] /= math.Sqrt(float64(D))
				mx = math.Max(mx, scores[s])
			}
			var z float64
			for s := range scores {
				scores[s] = math.Exp(scores[s] - mx)
				z += scores[s]
			}
			for i := 0; i < D; i++ {
				var o float64
				for s := 0; s <= p; s++ {
					o += scores[s] / z * float64(in.v[(s*KV+kv)*D+i])
				}
				gate := float64(in.qg[base+D+i])
				out[(p*H+h)*D+i] = o / (1 + math.Exp(-gate))
			}
		}
	}
	return out
}

func runAttn(t *testing.T, a *qwen35.Attention, c *qwen35.Config, in attnInputs, pos0 int, l *qwen35.Layer, cache *qwen35.KVCache, sc *qwen35.AttentionScratch) []float32 {
	t.Helper()
	out := make([]float32, in.T*c.Heads*c.HeadDim)
	require.NoError(t, a.Forward(out, in.qg, in.k, in.v, in.T, pos0, l, cache, sc))
	return out
}

var attnShapes = []struct {
	name                       string
	heads, kv, dim, rope, base int
}{
	{"tiny", 4, 2, 16, 8, 10000},
	{"gqa3-partial-rope", 6, 2, 64, 16, 10000000},
	{"mha-full-rope", 2, 2, 32, 32, 500},
	{"gqa6", 6, 1, 64, 16, 10000000}, // the 27B model's six query heads a KV head (its own kernels)
}

// TestAttentionMatchesReference runs 300 tokens as a prefill from an empty cache
// followed by continuations of several sizes, crossing pages and blocks, against the
// float64 reference.
func TestAttentionMatchesReference(t *testing.T) {
	for _, shape := range attnShapes {
		t.Run(shape.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, uint64(shape.dim)))
			c := attnConfig(shape.heads, shape.kv, shape.dim, shape.rope, float64(shape.base))
			l := attnLayer(rng, c)
			a := qwen35.NewAttention(c)
			const N = 300
			in := newAttnInputs(rng, c, N)
			want := refAttention(c, l, in)
			cache := a.NewKVCache(backend.KVFloat32, 1000)
			sc := a.NewScratch(8)
			row := c.Heads * c.HeadDim
			worst := 0.0
			for _, span := range [][2]int{{0, 40}, {40, 41}, {41, 170}, {170, 171}, {171, 236}, {236, 300}} {
				got := runAttn(t, a, c, in.slice(c, span[0], span[1]), span[0], l, cache, sc)
				e := relErr(got, want[span[0]*row:span[1]*row], 1)
				worst = math.Max(worst, e)
				require.Less(t, e, 2e-6, "tokens %v", span)
			}
			assert.Equal(t, N, cache.Len())
			t.Logf("f32 cache vs float64: max error %.2e (relative to max |out|)", worst)
		})
	}
}

// TestAttentionBatchEqualsSteps: T tokens in one call and T calls of one token leave the
// same cache and give the same outputs (the per-query arithmetic does not depend on T).
func TestAttentionBatchEqualsSteps(t *testing.T) {
	for _, shape := range []struct{ kvHeads, n int }{{2, 150}, {1, 70}} { // three and six query heads a KV head
		kvHeads, N := shape.kvHeads, shape.n
		rng := rand.New(rand.NewPCG(22, 1))
		c := attnConfig(6, kvHeads, 64, 16, 1e7)
		l := attnLayer(rng, c)
		a := qwen35.NewAttention(c)
		in := newAttnInputs(rng, c, N)
		for _, p := range kvPrecisions {
			batch := a.NewKVCache(p, 512)
			steps := a.NewKVCache(p, 512)
			sc := a.NewScratch(1)
			gotBatch := append(runAttn(t, a, c, in.slice(c, 0, 20), 0, l, batch, sc), runAttn(t, a, c, in.slice(c, 20, N), 20, l, batch, sc)...)
			var gotSteps []float32
			for i := 0; i < N; i++ {
				gotSteps = append(gotSteps, runAttn(t, a, c, in.slice(c, i, i+1), i, l, steps, sc)...)
			}
			for i := range gotBatch {
				require.InDelta(t, gotSteps[i], gotBatch[i], 1e-6, "%v value %d", p, i)
			}
			kb, vb := make([]float32, c.KVHeads*c.HeadDim), make([]float32, c.KVHeads*c.HeadDim)
			ks, vs := make([]float32, c.KVHeads*c.HeadDim), make([]float32, c.KVHeads*c.HeadDim)
			for pos := 0; pos < N; pos++ {
				batch.Row(pos, kb, vb)
				steps.Row(pos, ks, vs)
				require.Equal(t, ks, kb, "%v keys at %d", p, pos)
				require.Equal(t, vs, vb, "%v values at %d", p, pos)
			}
		}
	}
}

// TestAttentionCachePrecision bounds the drift of the fp16 and int8 caches from the f32
// cache over a 260-token sequence (outputs are O(1): gated averages of unit normals).
func TestAttentionCachePrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	c := attnConfig(6, 2, 64, 16, 1e7)
	l := attnLayer(rng, c)
	a := qwen35.NewAttention(c)
	in := newAttnInputs(rng, c, 260)
	sc := a.NewScratch(64)
	run := func(p backend.KVPrecision) []float32 {
		cache := a.NewKVCache(p, 260)
		var out []float32
		for i := 0; i < 260; i += 65 {
			out = append(out, runAttn(t, a, c, in.slice(c, i, i+65), i, l, cache, sc)...)
		}
		return out
	}
	exact := run(backend.KVFloat32)
	ref := make([]float64, len(exact))
	for i, x := range exact {
		ref[i] = float64(x)
	}
	for _, tc := range []struct {
		p     backend.KVPrecision
		bound float64
	}{{backend.KVFloat16, 1e-3}, {backend.KVInt8, 2e-2}, {backend.KVQ4, 1.5e-1}} {
		e := relErr(run(tc.p), ref, 1)
		assert.Less(t, e, tc.bound, tc.p.String())
		assert.Greater(t, e, 0.0, "%v should differ from f32 at all", tc.p)
		t.Logf("%v cache vs f32: max error %.2e (relative to max |out|), bound %.0e", tc.p, e, tc.bound)
	}
}

func TestAttentionErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 1))
	c := attnConfig(4, 2, 16, 8, 1e4)
	l := attnLayer(rng, c)
	a := qwen35.NewAttention(c)
	in := newAttnInputs(rng, c, 12)
	sc := a.NewScratch(4)
	cache := a.NewKVCache(backend.KVFloat16, 10)
	out := make([]float32, 12*c.Heads*c.HeadDim)
	// Position must match the cache length.
	err := a.Forward(out, in.qg, in.k, in.v, 1, 3, l, cache, sc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "qwen35: ")
	require.NoError(t, a.Forward(out, in.qg, in.k, in.v, 8, 0, l, cache, sc))
	// Three more do not fit in 10: nothing is appended.
	err = a.Forward(out, in.qg, in.k, in.v, 3, 8, l, cache, sc)
	require.ErrorIs(t, err, qwen35.ErrContextFull)
	assert.Contains(t, err.Error(), "10")
	assert.Equal(t, 8, cache.Len())
	require.NoError(t, a.Forward(out, in.qg, in.k, in.v, 2, 8, l, cache, sc))
	err = a.Forward(out, in.qg, in.k, in.v, 1, 10, l, cache, sc)
	require.ErrorIs(t, err, qwen35.ErrContextFull)
	// A cache of the wrong shape.
	err = a.Forward(out, in.qg, in.k, in.v, 1, 0, l, qwen35.NewKVCache(3, 16, backend.KVFloat16, 10), sc)
	require.Error(t, err)
}

func TestAttentionForwardAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 1))
	c := attnConfig(6, 2, 64, 16, 1e7)
	l := attnLayer(rng, c)
	a := qwen35.NewAttention(c)
	in := newAttnInputs(rng, c, 1)
	for _, p := range kvPrecisions {
		cache := a.NewKVCache(p, 1000)
		cache.Reserve(1000)
		sc := a.NewScratch(1)
		out := make([]float32, c.Heads*c.HeadDim)
		allocs := testing.AllocsPerRun(200, func() {
			if err := a.Forward(out, in.qg, in.k, in.v, 1, cache.Len(), l, cache, sc); err != nil {
				panic(err)
			}
		})
		assert.Zero(t, allocs, p.String())
	}
}

func TestAttentionCacheFork(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	c := attnConfig(4, 2, 16, 8, 1e4)
	l := attnLayer(rng, c)
	a := qwen35.NewAttention(c)
	in := newAttnInputs(rng, c, 60)
	sc := a.NewScratch(40)
	base := a.NewKVCache(backend.KVInt8, 100)
	runAttn(t, a, c, in.slice(c, 0, 40), 0, l, base, sc)
	fork := a.NewKVCache(backend.KVInt8, 100)
	fork.CopyFrom(base)
	// Both continue with the same tokens: same outputs.
	x := runAttn(t, a, c, in.slice(c, 40, 50), 40, l, base, sc)
	y := runAttn(t, a, c, in.slice(c, 40, 50), 40, l, fork, sc)
	assert.Equal(t, x, y)
}

// TestAttentionRunnerAndTruncate: KV groups in parallel give identical results, and a
// cache truncated back to a prefix replays a continuation exactly.
func TestAttentionRunnerAndTruncate(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	c := attnConfig(8, 4, 32, 16, 1e6)
	l := attnLayer(rng, c)
	a := qwen35.NewAttention(c)
	pool := parallel.NewPool(4)
	defer pool.Close()
	in := newAttnInputs(rng, c, 120)
	seq, par := a.NewKVCache(backend.KVFloat16, 200), a.NewKVCache(backend.KVFloat16, 200)
	seqSc, parSc := a.NewScratch(100), a.NewScratch(100)
	parSc.Runner = pool
	for _, span := range [][2]int{{0, 100}, {100, 101}, {101, 120}} {
		part := in.slice(c, span[0], span[1])
		want := runAttn(t, a, c, part, span[0], l, seq, seqSc)
		got := runAttn(t, a, c, part, span[0], l, par, parSc)
		require.Equal(t, want, got, "tokens %v", span)
	}
	seq.Truncate(101)
	first := runAttn(t, a, c, in.slice(c, 101, 120), 101, l, seq, seqSc)
	seq.Truncate(101)
	other := newAttnInputs(rng, c, 5)
	runAttn(t, a, c, other, 101, l, seq, seqSc) // a different continuation
	seq.Truncate(101)
	again := runAttn(t, a, c, in.slice(c, 101, 120), 101, l, seq, seqSc)
	assert.Equal(t, first, again)
	assert.Panics(t, func() { seq.Truncate(121) })
	out := make([]float32, c.Heads*c.HeadDim)
	par.Reserve(200)
	assert.Zero(t, testing.AllocsPerRun(20, func() {
		if err := a.Forward(out, in.qg, in.k, in.v, 1, par.Len(), l, par, parSc); err != nil {
			panic(err)
		}
	}))
}

// cachedRows decodes every position the cache holds with Row: keys and values,
// position-major, KVHeads×HeadDim each.
func cachedRows(cache *qwen35.KVCache, row int) (keys, vals []float32) {
	n := cache.Len()
	keys, vals = make([]float32, n*row), make([]float32, n*row)
	for p := range n {
		cache.Row(p, keys[p*row:(p+1)*row], vals[p*row:(p+1)*row])
	}
	return keys, vals
}

// refAttentionCached is float64 gated attention of the tokens of in at positions
// pos0…pos0+T−1 over the cached rows keys and vals (cachedRows), as Forward left them:
// the queries normed and roped in float64, the keys and values those the cache stores,
// so that any cache precision is checked to float32 accuracy.
func refAttentionCached(c *qwen35.Config, l *qwen35.Layer, in attnInputs, pos0 int, keys, vals []float32) []float64 {
	H, KV, D, R := c.Heads, c.KVHeads, c.HeadDim, c.RopeDims
	row := KV * D
	out := make([]float64, in.T*H*D)
	for t := 0; t < in.T; t++ {
		pos := pos0 + t
		for h := 0; h < H; h++ {
			base := (t*H + h) * 2 * D
			x := in.qg[base : base+D]
			var ss float64
			for _, a := range x {
				ss += float64(a) * float64(a)
			}
			r := 1 / math.Sqrt(ss/float64(D)+c.RMSEpsilon)
			q := make([]float64, D)
			for i, a := range x {
				q[i] = float64(a) * r * float64(l.QNorm[i])
			}
			for i := 0; i < R/2; i++ {
				theta := float64(pos) * math.Pow(c.RopeBase, -2*float64(i)/float64(R))
				a, b := q[i], q[i+R/2]
				q[i] = a*math.Cos(theta) - b*math.Sin(theta)
				q[i+R/2] = a*math.Sin(theta) + b*math.Cos(theta)
			}
			kv := h / (H / KV)
			scores := make([]float64, pos+1)
			mx := math.Inf(-1)
			for s := range scores {
				k := keys[s*row+kv*D : s*row+(kv+1)*D]
				for i := range q {
					scores[s] += q[i] * float64(k[i])
				}
				scores[s] /= math.Sqrt(float64(D))
				mx = math.Max(mx, scores[s])
			}
			var z float64
			for s := range scores {
				scores[s] = math.Exp(scores[s] - mx)
				z += scores[s]
			}
			for i := 0; i < D; i++ {
				var o float64
				for s := range scores {
					o += scores[s] * float64(vals[s*row+kv*D+i])
				}
				gate := float64(in.qg[base+D+i])
				out[(t*H+h)*D+i] = o / z / (1 + math.Exp(-gate))
			}
		}
	}
	return out
}

// TestAttentionLongContext checks attention over 4,096 cached positions against the
// float64 reference over the same cached rows, at every cache precision: a decode step
// (its positions split into spans and merged), a prefill of six tokens after it (a token
// block, past the decode split's four) and the decode step after that. The cache is filled directly with keys whose scores
// spread over several units, so that the softmax is neither flat nor one-hot, plus a few
// keys far back that dominate: the merge must carry an early span's maximum.
func TestAttentionLongContext(t *testing.T) {
	const ctx = 4096
	for _, p := range kvPrecisions {
		t.Run(p.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(28, uint64(p)))
			c := attnConfig(6, 1, 64, 16, 1e7) // six query heads a KV head, as the 27B model
			l := attnLayer(rng, c)
			a := qwen35.NewAttention(c)
			cache := a.NewKVCache(p, ctx+64)
			row := c.KVHeads * c.HeadDim
			for pos := 0; pos < ctx; pos++ {
				k, v := randVec(rng, row, 0.3), randVec(rng, row, 1)
				if pos%1000 == 7 {
					for i := range k {
						k[i] *= 30
					}
				}
				require.NoError(t, cache.Append(k, v))
			}
			in := newAttnInputs(rng, c, 1+6+1)
			sc := a.NewScratch(6)
			pool := parallel.NewPool(3)
			defer pool.Close()
			sc.Runner = pool
			spans := [][2]int{{0, 1}, {1, 7}, {7, 8}}
			var got [][]float32
			for _, span := range spans {
				got = append(got, runAttn(t, a, c, in.slice(c, span[0], span[1]), ctx+span[0], l, cache, sc))
			}
			keys, vals := cachedRows(cache, row) // what each call appended stays as it was
			worst := 0.0
			for i, span := range spans {
				want := refAttentionCached(c, l, in.slice(c, span[0], span[1]), ctx+span[0], keys, vals)
				e := relErr(got[i], want, 0)
				worst = max(worst, e)
				require.Less(t, e, 2e-5, "tokens %v", span)
			}
			t.Logf("%v cache, %d positions: max error %.2e against float64 over the cached rows", p, ctx, worst)
		})
	}
}

var kvPrecisions = []backend.KVPrecision{backend.KVFloat32, backend.KVFloat16, backend.KVInt8, backend.KVQ4}
