package qwen35_test

import (
	"fmt"
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
//
// bound holds, per output value, how far quantising the query for integer scoring (the
// int8 and q4 caches) may move it. Quantising q per block of 32 to s_b·a_i with
// s_b = max_b|q|/127 (q scaled by 1/√D) moves each q_i by at most s_b/2, so the logit of
// position p moves by Δ_p, |Δ_p| ≤ δ_p = Σ_b (s_b/2)·Σ_{i∈b}|k_pi|. The weights become
// w'_p = w_p·e^{Δ_p}/Z', Z' = Σ w_j·e^{Δ_j} ∈ [Zlo, Zhi] = [Σ w_j·e^{−δ_j}, Σ w_j·e^{δ_j}],
// so |w'_p − w_p| ≤ w_p·m_p with m_p = max(e^{δ_p} − Zlo, Zhi − e^{−δ_p})/Zlo; and since
// the weights' changes sum to 0, out_i moves by Σ_p (w'_p − w_p)·(v_pi − o_i), at most
// Σ_p w_p·m_p·|v_pi − o_i|, times the gate's sigmoid.
func refAttentionCached(c *qwen35.Config, l *qwen35.Layer, in attnInputs, pos0 int, keys, vals []float32) (out, bound []float64) {
	H, KV, D, R := c.Heads, c.KVHeads, c.HeadDim, c.RopeDims
	row := KV * D
	out = make([]float64, in.T*H*D)
	bound = make([]float64, in.T*H*D)
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
			half := make([]float64, D) // s_b/2 of value i's block
			for b0 := 0; b0 < D; b0 += 32 {
				var amax float64
				for _, a := range q[b0:min(b0+32, D)] {
					amax = math.Max(amax, math.Abs(a)/math.Sqrt(float64(D)))
				}
				for i := b0; i < min(b0+32, D); i++ {
					half[i] = amax / 127 / 2
				}
			}
			kv := h / (H / KV)
			scores := make([]float64, pos+1)
			delta := make([]float64, pos+1)
			mx := math.Inf(-1)
			for s := range scores {
				k := keys[s*row+kv*D : s*row+(kv+1)*D]
				for i := range q {
					scores[s] += q[i] * float64(k[i])
					delta[s] += half[i] * math.Abs(float64(k[i]))
				}
				scores[s] /= math.Sqrt(float64(D))
				mx = math.Max(mx, scores[s])
			}
			var z float64
			for s := range scores {
				scores[s] = math.Exp(scores[s] - mx)
				z += scores[s]
			}
			var zlo, zhi float64
			for s := range scores {
				scores[s] /= z
				zlo += scores[s] * math.Exp(-delta[s])
				zhi += scores[s] * math.Exp(delta[s])
			}
			for s := range delta { // delta becomes w_p·m_p
				delta[s] = scores[s] * math.Max(math.Exp(delta[s])-zlo, zhi-math.Exp(-delta[s])) / zlo
			}
			for i := 0; i < D; i++ {
				var o float64
				for s := range scores {
					o += scores[s] * float64(vals[s*row+kv*D+i])
				}
				var e float64
				for s := range scores {
					e += delta[s] * math.Abs(float64(vals[s*row+kv*D+i])-o)
				}
				g := 1 / (1 + math.Exp(-float64(in.qg[base+D+i])))
				out[(t*H+h)*D+i] = o * g
				bound[(t*H+h)*D+i] = e * g
			}
		}
	}
	return out, bound
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
				want, bound := refAttentionCached(c, l, in.slice(c, span[0], span[1]), ctx+span[0], keys, vals)
				if p != backend.KVInt8 && p != backend.KVQ4 {
					e := relErr(got[i], want, 0)
					worst = max(worst, e)
					require.Less(t, e, 2e-5, "tokens %v", span)
					continue
				}
				checkQuantBound(t, got[i], want, bound, fmt.Sprintf("tokens %v", span))
			}
			if p != backend.KVInt8 && p != backend.KVQ4 {
				t.Logf("%v cache, %d positions: max error %.2e against float64 over the cached rows", p, ctx, worst)
			}
		})
	}
}

// checkQuantBound checks an int8 or q4 cache's outputs against the float64 reference
// over the cached rows: within the bound of refAttentionCached on what quantising the
// queries changes, plus float32's 2e-5 of the largest output. It logs how much of the
// bound the worst value used.
func checkQuantBound(t *testing.T, got []float32, want, bound []float64, what string) {
	t.Helper()
	var m float64
	for _, w := range want {
		m = math.Max(m, math.Abs(w))
	}
	worst, used := 0.0, 0.0
	for i := range want {
		e := math.Abs(float64(got[i]) - want[i])
		require.LessOrEqual(t, e, bound[i]+2e-5*m, "%s: out[%d] = %v, want %v ± %.2e", what, i, got[i], want[i], bound[i])
		worst = max(worst, e/m)
		if bound[i] > 0 {
			used = max(used, e/(bound[i]+2e-5*m))
		}
	}
	t.Logf("%s: max error %.2e of max |out|, at most %.1f%% of the bound", what, worst, 100*used)
}

var kvPrecisions = []backend.KVPrecision{backend.KVFloat32, backend.KVFloat16, backend.KVInt8, backend.KVQ4}

// TestAttentionIntegerScores checks decode steps over int8 and q4 caches at the model's
// head dim (the SIMD kernels' size) against the float64 reference over the cached rows,
// at several context lengths, within the bound on what quantising the queries changes
// (refAttentionCached).
func TestAttentionIntegerScores(t *testing.T) {
	for _, p := range []backend.KVPrecision{backend.KVInt8, backend.KVQ4} {
		rng := rand.New(rand.NewPCG(29, uint64(p)))
		c := attnConfig(12, 2, 256, 64, 1e7) // two KV heads of six query heads
		l := attnLayer(rng, c)
		a := qwen35.NewAttention(c)
		sc := a.NewScratch(1)
		row := c.KVHeads * c.HeadDim
		for _, ctx := range []int{0, 31, 700, 2500} {
			cache := a.NewKVCache(p, ctx+1)
			for cache.Len() < ctx {
				require.NoError(t, cache.Append(randVec(rng, row, 0.4), randVec(rng, row, 1)))
			}
			in := newAttnInputs(rng, c, 1)
			got := runAttn(t, a, c, in, ctx, l, cache, sc)
			keys, vals := cachedRows(cache, row)
			want, bound := refAttentionCached(c, l, in, ctx, keys, vals)
			checkQuantBound(t, got, want, bound, fmt.Sprintf("%v, %d positions", p, ctx+1))
		}
	}
}
