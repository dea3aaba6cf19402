package qwen35_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gdnConfig returns a config with only the GDN sizes set.
func gdnConfig(kHeads, vHeads, d, kernel int) *qwen35.Config {
	return &qwen35.Config{
		KHeads: kHeads, VHeads: vHeads, StateSize: d, InnerSize: vHeads * d,
		ConvKernel: kernel, RMSEpsilon: 1e-6,
	}
}

// gdnLayer returns random GDN weights. aScale sets −ssm_a = exp(N(0,1))·aScale (0 for no
// decay at all).
func gdnLayer(rng *rand.Rand, c *qwen35.Config, aScale float64) *qwen35.Layer {
	l := &qwen35.Layer{
		Conv:    randVec(rng, c.QKVWidth()*c.ConvKernel, 0.5),
		DTBias:  randVec(rng, c.VHeads, 1),
		A:       make([]float32, c.VHeads),
		SSMNorm: randVec(rng, c.StateSize, 0.3),
	}
	for i := range l.A {
		l.A[i] = float32(-math.Exp(rng.NormFloat64()*0.5) * aScale)
	}
	for i := range l.SSMNorm {
		l.SSMNorm[i] += 1
	}
	return l
}

// gdnInputs are the raw projections of T tokens.
type gdnInputs struct {
	T                   int
	qkv, z, alpha, beta []float32
}

func newGDNInputs(rng *rand.Rand, c *qwen35.Config, T int, alphaShift float64) gdnInputs {
	in := gdnInputs{
		T:     T,
		qkv:   randVec(rng, T*c.QKVWidth(), 1),
		z:     randVec(rng, T*c.InnerSize, 1),
		alpha: randVec(rng, T*c.VHeads, 1),
		beta:  randVec(rng, T*c.VHeads, 1.5),
	}
	for i := range in.alpha {
		in.alpha[i] += float32(alphaShift)
	}
	return in
}

// slice returns tokens [a, b).
func (in gdnInputs) slice(c *qwen35.Config, a, b int) gdnInputs {
	w, n, v := c.QKVWidth(), c.InnerSize, c.VHeads
	return gdnInputs{T: b - a, qkv: in.qkv[a*w : b*w], z: in.z[a*n : b*n], alpha: in.alpha[a*v : b*v], beta: in.beta[a*v : b*v]}
}

// refGDN is a plain float64 Gated DeltaNet that works in GROUPED head order: it un-tiles
// every V-ordered input itself (grouped head g = K group g/rep, repeat g%rep, stored at
// tiled index (g%rep)·KHeads + g/rep) and keeps each head's state as S[i][j], i along the
// key and j along the value dimension.
type refGDN struct {
	c    *qwen35.Config
	l    *qwen35.Layer
	conv [][]float64   // the last ConvKernel−1 qkv rows, oldest first
	S    [][][]float64 // per grouped head: S[i][j]
}

func newRefGDN(c *qwen35.Config, l *qwen35.Layer) *refGDN {
	r := &refGDN{c: c, l: l}
	for i := 0; i < c.ConvKernel-1; i++ {
		r.conv = append(r.conv, make([]float64, c.QKVWidth()))
	}
	for g := 0; g < c.VHeads; g++ {
		s := make([][]float64, c.StateSize)
		for i := range s {
			s[i] = make([]float64, c.StateSize)
		}
		r.S = append(r.S, s)
	}
	return r
}

func (r *refGDN) tiled(g int) int {
	rep := r.c.VHeads / r.c.KHeads
	return (g%rep)*r.c.KHeads + g/rep
}

// forward returns T×InnerSize outputs, grouped.
func (r *refGDN) forward(in gdnInputs) []float64 {
	c, l := r.c, r.l
	W, K, d, nk := c.QKVWidth(), c.ConvKernel, c.StateSize, c.KHeads
	rep := c.VHeads / nk
	eps := c.RMSEpsilon
	out := make([]float64, in.T*c.InnerSize)
	for t := 0; t < in.T; t++ {
		x := make([]float64, W)
		for i := range x {
			x[i] = float64(in.qkv[t*W+i])
		}
		window := append(append([][]float64(nil), r.conv...), x)
		act := make([]float64, W)
		for ch := 0; ch < W; ch++ {
			var s float64
			for tap := 0; tap < K; tap++ { // tap 0 is the oldest row
				s += float64(l.Conv[ch*K+tap]) * window[tap][ch]
			}
			act[ch] = s / (1 + math.Exp(-s))
		}
		r.conv = window[1:]
		l2 := func(v []float64) []float64 {
			var ss float64
			for _, a := range v {
				ss += a * a
			}
			n := math.Max(math.Sqrt(ss), eps)
			o := make([]float64, len(v))
			for i, a := range v {
				o[i] = a / n
			}
			return o
		}
		for g := 0; g < c.VHeads; g++ {
			kh := g / rep
			tl := r.tiled(g)
			q := l2(act[kh*d : (kh+1)*d])
			k := l2(act[(nk+kh)*d : (nk+kh+1)*d])
			v := act[(2*nk+tl)*d : (2*nk+tl+1)*d]
			beta := 1 / (1 + math.Exp(-float64(in.beta[t*c.VHeads+tl])))
			a := float64(in.alpha[t*c.VHeads+tl]) + float64(l.DTBias[tl])
			sp := math.Log1p(math.Exp(a))
			if a > 20 {
				sp = a
			}
			decay := math.Exp(sp * float64(l.A[tl]))
			S := r.S[g]
			for i := range S {
				for j := range S[i] {
					S[i][j] *= decay
				}
			}
			delta := make([]float64, d)
			for j := 0; j < d; j++ {
				var sk float64
				for i := 0; i < d; i++ {
					sk += S[i][j] * k[i]
				}
				delta[j] = (v[j] - sk) * beta
			}
			o := make([]float64, d)
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					S[i][j] += k[i] * delta[j]
				}
			}
			for j := 0; j < d; j++ {
				for i := 0; i < d; i++ {
					o[j] += S[i][j] * q[i]
				}
				o[j] /= math.Sqrt(float64(d))
			}
			var ss float64
			for _, a := range o {
				ss += a * a
			}
			rs := 1 / math.Sqrt(ss/float64(d)+eps)
			for j := 0; j < d; j++ {
				zz := float64(in.z[t*c.InnerSize+tl*d+j])
				out[t*c.InnerSize+g*d+j] = o[j] * rs * float64(l.SSMNorm[j]) * zz / (1 + math.Exp(-zz))
			}
		}
	}
	return out
}

// stateErr compares a GDNState with the reference state, through the documented layout
// (tiled heads, S[i][j] at h·d² + j·d + i), relative to the largest state value.
func (r *refGDN) stateErr(st *qwen35.GDNState) float64 {
	d := r.c.StateSize
	var e, m float64
	for g := 0; g < r.c.VHeads; g++ {
		h := r.tiled(g)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				want := r.S[g][i][j]
				e = math.Max(e, math.Abs(float64(st.S[h*d*d+j*d+i])-want))
				m = math.Max(m, math.Abs(want))
			}
		}
	}
	for i, row := range r.conv {
		for ch, want := range row {
			e = math.Max(e, math.Abs(float64(st.Conv[i*r.c.QKVWidth()+ch])-want))
		}
	}
	return e / math.Max(m, 1)
}

func runGDN(g *qwen35.GDN, c *qwen35.Config, in gdnInputs, l *qwen35.Layer, st *qwen35.GDNState, sc *qwen35.GDNScratch, chunked bool) []float32 {
	out := make([]float32, in.T*c.InnerSize)
	g.Forward(out, in.qkv, in.z, in.alpha, in.beta, in.T, l, st, sc, chunked)
	return out
}

var gdnShapes = []struct {
	name                     string
	kHeads, vHeads, d, kernl int
}{
	{"tiny", 2, 6, 8, 4},
	{"mid", 4, 12, 32, 4},
	{"rep2-kernel3", 3, 6, 16, 3},
}

// TestGDNStepMatchesReference runs the step form token by token and in multi-token calls
// against the float64 recurrence; a wrong tiling, tap order, q scale, gate or norm shows
// as an O(1) error.
func TestGDNStepMatchesReference(t *testing.T) {
	for _, shape := range gdnShapes {
		t.Run(shape.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(shape.d)))
			c := gdnConfig(shape.kHeads, shape.vHeads, shape.d, shape.kernl)
			l := gdnLayer(rng, c, 1)
			g := qwen35.NewGDN(c)
			const N = 24
			in := newGDNInputs(rng, c, N, 0)
			ref := newRefGDN(c, l)
			want := ref.forward(in)
			st, sc := g.NewState(), g.NewScratch(1)
			worst := 0.0
			for tok := 0; tok < N; tok++ {
				got := runGDN(g, c, in.slice(c, tok, tok+1), l, st, sc, false)
				e := relErr(got, want[tok*c.InnerSize:(tok+1)*c.InnerSize], 1)
				worst = math.Max(worst, e)
				// 4e-6, not the 1e-6 the float32 arithmetic gives on amd64: on arm64 the Go
				// compiler fuses the generic kernels' multiply-adds (2.7e-6 seen).
				require.Less(t, e, 4e-6, "token %d", tok)
			}
			se := ref.stateErr(st)
			assert.Less(t, se, 4e-6)
			t.Logf("step vs float64: max output error %.2e, state error %.2e (relative to max |·|)", worst, se)
		})
	}
}

// TestGDNConvStateCarried splits 10 tokens into calls of 3, 1 and 6: the conv window and
// the recurrent state must carry across calls exactly.
func TestGDNConvStateCarried(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	c := gdnConfig(2, 6, 8, 4)
	l := gdnLayer(rng, c, 1)
	g := qwen35.NewGDN(c)
	in := newGDNInputs(rng, c, 10, 0)
	for _, chunked := range []bool{false, true} {
		whole := runGDN(g, c, in, l, g.NewState(), g.NewScratch(10), chunked)
		st, sc := g.NewState(), g.NewScratch(2)
		var parts []float32
		for _, span := range [][2]int{{0, 3}, {3, 4}, {4, 10}} {
			parts = append(parts, runGDN(g, c, in.slice(c, span[0], span[1]), l, st, sc, chunked)...)
		}
		if chunked {
			// Different chunk boundaries: equal up to rounding.
			want := make([]float64, len(whole))
			for i, x := range whole {
				want[i] = float64(x)
			}
			assert.Less(t, relErr(parts, want, 1), 2e-6)
		} else {
			assert.Equal(t, whole, parts)
		}
	}
	want := newRefGDN(c, l).forward(in)
	assert.Less(t, relErr(runGDN(g, c, in, l, g.NewState(), g.NewScratch(1), false), want, 1), 2e-6)
}

// TestGDNChunkedMatchesStep compares the chunked form with the step form from a non-zero
// state across chunk boundaries, and both with the float64 reference.
func TestGDNChunkedMatchesStep(t *testing.T) {
	cases := []struct {
		name       string
		aScale     float64
		alphaShift float64
	}{
		{"normal", 1, 0},
		{"strong-decay", 16, 6}, // ssm_a ≈ −16, softplus(alpha+bias) ≈ 6: e^g ≈ e^−100
		{"no-decay", 0, 0},      // ssm_a = 0: the state never forgets
	}
	for _, shape := range gdnShapes[:2] {
		for _, cs := range cases {
			t.Run(shape.name+"/"+cs.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(13, uint64(shape.d)))
				c := gdnConfig(shape.kHeads, shape.vHeads, shape.d, shape.kernl)
				l := gdnLayer(rng, c, cs.aScale)
				g := qwen35.NewGDN(c)
				prefix := newGDNInputs(rng, c, 5, cs.alphaShift)
				ref := newRefGDN(c, l)
				ref.forward(prefix)
				st0, sc := g.NewState(), g.NewScratch(64)
				runGDN(g, c, prefix, l, st0, sc, false)
				worstOut, worstState, worstRef := 0.0, 0.0, 0.0
				for _, T := range []int{1, 2, 63, 64, 65, 130, 200} {
					in := newGDNInputs(rng, c, T, cs.alphaShift)
					stStep, stChunk := g.NewState(), g.NewState()
					stStep.CopyFrom(st0)
					stChunk.CopyFrom(st0)
					step := runGDN(g, c, in, l, stStep, sc, false)
					chunk := runGDN(g, c, in, l, stChunk, sc, true)
					stepF := make([]float64, len(step))
					for i, x := range step {
						stepF[i] = float64(x)
					}
					e := relErr(chunk, stepF, 1)
					require.Less(t, e, 1e-5, "T=%d output", T)
					var se, sm float64
					for i := range stStep.S {
						se = math.Max(se, math.Abs(float64(stStep.S[i]-stChunk.S[i])))
						sm = math.Max(sm, math.Abs(float64(stStep.S[i])))
					}
					se /= math.Max(sm, 1)
					require.Less(t, se, 1e-5, "T=%d state", T)
					assert.Equal(t, stStep.Conv, stChunk.Conv)
					// Both against float64, continuing from the same prefix.
					r := newRefGDN(c, l)
					r.forward(prefix)
					want := r.forward(in)
					re := math.Max(relErr(chunk, want, 1), r.stateErr(stChunk))
					require.Less(t, re, 1e-5, "T=%d chunked vs float64", T)
					worstOut, worstState, worstRef = math.Max(worstOut, e), math.Max(worstState, se), math.Max(worstRef, re)
					for _, x := range chunk {
						require.False(t, math.IsNaN(float64(x)) || math.IsInf(float64(x), 0))
					}
				}
				t.Logf("chunked vs step: output %.2e, state %.2e; chunked vs float64 %.2e", worstOut, worstState, worstRef)
			})
		}
	}
}

func TestGDNStateCopyReset(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	c := gdnConfig(2, 6, 8, 4)
	l := gdnLayer(rng, c, 1)
	g := qwen35.NewGDN(c)
	sc := g.NewScratch(4)
	a := g.NewState()
	runGDN(g, c, newGDNInputs(rng, c, 4, 0), l, a, sc, false)
	b := g.NewState()
	b.CopyFrom(a)
	assert.Equal(t, a.S, b.S)
	assert.Equal(t, a.Conv, b.Conv)
	next := newGDNInputs(rng, c, 3, 0)
	oa := runGDN(g, c, next, l, a, sc, false)
	assert.NotEqual(t, a.S, b.S, "the copy is independent")
	ob := runGDN(g, c, next, l, b, sc, false)
	assert.Equal(t, oa, ob)
	assert.Zero(t, testing.AllocsPerRun(10, func() { b.CopyFrom(a) }))
	b.Reset()
	assert.Equal(t, g.NewState(), b)
}

// TestGDNNewStates checks that the states NewStates makes from one allocation are
// independent layers: zeroed, each as NewState's, and a layer's run or a copy into it
// leaves the others as they were (a state's S cannot grow into the next one's).
func TestGDNNewStates(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 1))
	c := gdnConfig(2, 6, 8, 4)
	l := gdnLayer(rng, c, 1)
	g := qwen35.NewGDN(c)
	sc := g.NewScratch(4)
	sts := g.NewStates(3)
	require.Len(t, sts, 3)
	for _, st := range sts {
		assert.Equal(t, g.NewState(), st)
		assert.Equal(t, len(st.S), cap(st.S), "a state's S ends where the next one's begins")
	}
	in := newGDNInputs(rng, c, 4, 0)
	want := g.NewState()
	runGDN(g, c, in, l, want, sc, false)
	runGDN(g, c, in, l, sts[1], sc, false)
	assert.Equal(t, want, sts[1])
	assert.Equal(t, g.NewState(), sts[0])
	assert.Equal(t, g.NewState(), sts[2])
	sts[2].CopyFrom(sts[1])
	assert.Equal(t, g.NewState(), sts[0])
	assert.Equal(t, want, sts[1])
	assert.Empty(t, g.NewStates(0))
}

func TestGDNForwardAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 1))
	c := gdnConfig(4, 12, 32, 4)
	l := gdnLayer(rng, c, 1)
	g := qwen35.NewGDN(c)
	st, sc := g.NewState(), g.NewScratch(64)
	one := newGDNInputs(rng, c, 1, 0)
	out := make([]float32, 64*c.InnerSize)
	assert.Zero(t, testing.AllocsPerRun(20, func() {
		g.Forward(out, one.qkv, one.z, one.alpha, one.beta, 1, l, st, sc, false)
	}))
	many := newGDNInputs(rng, c, 64, 0)
	assert.Zero(t, testing.AllocsPerRun(3, func() {
		g.Forward(out, many.qkv, many.z, many.alpha, many.beta, 64, l, st, sc, true)
	}))
}

// TestGDNRunner: with a worker pool the q/k heads run in parallel, with identical results.
func TestGDNRunner(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 1))
	c := gdnConfig(4, 12, 32, 4)
	l := gdnLayer(rng, c, 1)
	g := qwen35.NewGDN(c)
	pool := parallel.NewPool(4)
	defer pool.Close()
	in := newGDNInputs(rng, c, 100, 0)
	for _, chunked := range []bool{false, true} {
		seqSt, parSt := g.NewState(), g.NewState()
		seqSc, parSc := g.NewScratch(100), g.NewScratch(100)
		parSc.Runner = pool
		for _, span := range [][2]int{{0, 70}, {70, 71}, {71, 100}} {
			part := in.slice(c, span[0], span[1])
			want := runGDN(g, c, part, l, seqSt, seqSc, chunked)
			got := runGDN(g, c, part, l, parSt, parSc, chunked)
			require.Equal(t, want, got, "chunked=%v tokens %v", chunked, span)
		}
		assert.Equal(t, seqSt, parSt)
	}
	one := newGDNInputs(rng, c, 1, 0)
	st, sc := g.NewState(), g.NewScratch(1)
	sc.Runner = pool
	out := make([]float32, c.InnerSize)
	assert.Zero(t, testing.AllocsPerRun(20, func() {
		g.Forward(out, one.qkv, one.z, one.alpha, one.beta, 1, l, st, sc, false)
	}))
}
