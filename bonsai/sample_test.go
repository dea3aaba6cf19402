package bonsai_test

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newSampler(t *testing.T, vocab int, opt bonsai.SamplerOptions) *bonsai.Sampler {
	t.Helper()
	s, err := bonsai.NewSampler(vocab, opt)
	require.NoError(t, err)
	return s
}

// The penalties change the logits exactly as specified, computed by hand.
func TestSamplerPenalties(t *testing.T) {
	logits := []float32{2, -1, 0.5, -3, 4, 1}
	s := newSampler(t, len(logits), bonsai.SamplerOptions{
		RepeatPenalty: 2, RepeatLastN: 3, PresencePenalty: 0.5, FrequencyPenalty: 0.25,
	})
	s.Observe(0, 1, 2, 3) // the prompt
	s.Accept(4)
	s.Accept(4)
	// The window holds the last three tokens of 0 1 2 3 4 4: {3, 4}. Token 3's negative
	// logit is multiplied by 2, token 4's positive one divided by 2; token 4, generated
	// twice, then loses 0.5 + 2·0.25.
	want := []float32{2, -1, 0.5, -6, 4.0/2 - 0.5 - 2*0.25, 1}
	got := s.Penalize(make([]float32, len(logits)), logits)
	assert.Equal(t, want, got)
	assert.Equal(t, []float32{2, -1, 0.5, -3, 4, 1}, logits, "the input is not modified")

	// Presence and frequency count generated tokens only; the window covers the prompt.
	s = newSampler(t, len(logits), bonsai.SamplerOptions{PresencePenalty: 1, FrequencyPenalty: 1})
	s.Observe(0, 0, 0)
	s.Accept(5)
	assert.Equal(t, []float32{2, -1, 0.5, -3, 4, 1 - 1 - 1}, s.Penalize(make([]float32, len(logits)), logits))

	// RepeatLastN −1 is the whole sequence; 0 is 64 tokens.
	s = newSampler(t, len(logits), bonsai.SamplerOptions{RepeatPenalty: 4, RepeatLastN: -1})
	s.Observe(0)
	for range 100 {
		s.Accept(1)
	}
	assert.Equal(t, []float32{0.5, -4, 0.5, -3, 4, 1}, s.Penalize(make([]float32, len(logits)), logits))
	s = newSampler(t, len(logits), bonsai.SamplerOptions{RepeatPenalty: 4})
	s.Observe(0)
	for range 64 {
		s.Accept(1)
	}
	assert.Equal(t, []float32{2, -4, 0.5, -3, 4, 1}, s.Penalize(make([]float32, len(logits)), logits), "token 0 left the 64-token window")

	// A penalty makes greedy decoding avoid a repeated token.
	s = newSampler(t, len(logits), bonsai.SamplerOptions{RepeatPenalty: 3})
	s.Observe(4)
	assert.Equal(t, int32(0), s.Sample(logits))
}

// Reset forgets the penalties' history: a reset sampler draws as a new one does.
func TestSamplerReset(t *testing.T) {
	l := randomLogits(300, 5)
	a := newSampler(t, 300, bonsai.SamplerOptions{Temperature: 1, RepeatPenalty: 1.5, RepeatLastN: -1, FrequencyPenalty: 0.5, Seed: 1})
	for range 50 {
		a.Accept(a.Sample(l))
	}
	for _, opt := range []bonsai.SamplerOptions{
		{Temperature: 0.8, RepeatPenalty: 1.2, PresencePenalty: 0.4, Seed: 9},
		{Temperature: 0.8, RepeatPenalty: 1.2, RepeatLastN: -1, Seed: 9, TopP: 0.9},
		{Temperature: 1.1, TopK: 7, Seed: 9},
	} {
		require.NoError(t, a.Reset(opt))
		b := newSampler(t, 300, opt)
		for i := range 100 {
			x, y := a.Sample(l), b.Sample(l)
			require.Equal(t, y, x, "draw %d, %+v", i, opt)
			a.Accept(x)
			b.Accept(y)
		}
	}
	require.Error(t, a.Reset(bonsai.SamplerOptions{TopK: -3}))
}

func TestSamplerOptionErrors(t *testing.T) {
	for _, c := range []struct {
		opt    bonsai.SamplerOptions
		option string
	}{
		{bonsai.SamplerOptions{TopK: -1}, "TopK"}, {bonsai.SamplerOptions{TopP: -0.5}, "TopP"}, {bonsai.SamplerOptions{MinP: 2}, "MinP"},
		{bonsai.SamplerOptions{RepeatPenalty: -1}, "RepeatPenalty"}, {bonsai.SamplerOptions{RepeatLastN: -2}, "RepeatLastN"},
		{bonsai.SamplerOptions{Temperature: float32(math.NaN())}, "Temperature"}, {bonsai.SamplerOptions{PresencePenalty: float32(math.Inf(1))}, "PresencePenalty"},
	} {
		_, err := bonsai.NewSampler(10, c.opt)
		require.Error(t, err, "%+v", c.opt)
		assert.ErrorIs(t, err, bonsai.ErrInvalidOptions)
		oe, ok := errors.AsType[*bonsai.OptionError](err)
		require.True(t, ok)
		assert.Equal(t, c.option, oe.Option)
		assert.Equal(t, -1, oe.Tool)
		assert.Contains(t, err.Error(), "bonsai: option "+c.option+": ")
	}
}

func randomLogits(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 3)
	}
	return l
}

// Temperature 0 is greedy, which is the argmax (ties to the smallest id).
func TestSamplerGreedy(t *testing.T) {
	for seed := range uint64(20) {
		l := randomLogits(1000, seed)
		want := int32(slices.Index(l, slices.Max(l)))
		assert.Equal(t, want, newSampler(t, 1000, bonsai.SamplerOptions{}).Sample(l))
		assert.Equal(t, want, newSampler(t, 1000, bonsai.SamplerOptions{Temperature: 5, Greedy: true, TopK: 5, TopP: 0.5}).Sample(l))
	}
	tie := []float32{1, 3, 3, 0}
	assert.Equal(t, int32(1), newSampler(t, 4, bonsai.SamplerOptions{}).Sample(tie))
}

// The same seed gives the same draws; another seed other draws.
func TestSamplerSeed(t *testing.T) {
	l := randomLogits(500, 7)
	draw := func(seed uint64) []int32 {
		s := newSampler(t, 500, bonsai.SamplerOptions{Temperature: 1.5, TopP: 0.95, Seed: seed})
		out := make([]int32, 200)
		for i := range out {
			out[i] = s.Sample(l)
			s.Accept(out[i])
		}
		return out
	}
	assert.Equal(t, draw(42), draw(42))
	assert.Equal(t, draw(0), draw(0))
	assert.NotEqual(t, draw(42), draw(43))
}

// support computes, independently of the sampler, the tokens top-k, top-p and min-p leave
// (llama.cpp's order, on untempered probabilities) and their probabilities after
// temperature.
func support(l []float32, k int, p, minP, temp float64) map[int32]float64 {
	type c struct {
		id int32
		l  float64
	}
	cs := make([]c, len(l))
	for i, v := range l {
		cs[i] = c{int32(i), float64(v)}
	}
	slices.SortStableFunc(cs, func(a, b c) int { return cmp.Compare(b.l, a.l) })
	if k > 0 && k < len(cs) {
		cs = cs[:k]
	}
	norm := func(cs []c, t float64) []float64 {
		ps := make([]float64, len(cs))
		var sum float64
		for i, x := range cs {
			ps[i] = math.Exp((x.l - cs[0].l) / t)
			sum += ps[i]
		}
		for i := range ps {
			ps[i] /= sum
		}
		return ps
	}
	if p > 0 && p < 1 {
		ps := norm(cs, 1)
		var acc float64
		for i := range ps {
			acc += ps[i]
			if acc >= p {
				cs = cs[:i+1]
				break
			}
		}
	}
	if minP > 0 {
		ps := norm(cs, 1)
		var kept []c
		for i, x := range cs {
			if ps[i] >= minP*ps[0] {
				kept = append(kept, x)
			}
		}
		cs = kept
	}
	out := map[int32]float64{}
	for i, q := range norm(cs, temp) {
		out[cs[i].id] = q
	}
	return out
}

// Top-k, top-p and min-p never let out an excluded token, and the draws follow the
// tempered probabilities of the rest (a chi-square test at the 0.1% level).
func TestSamplerTruncationDistribution(t *testing.T) {
	l := []float32{3, 2.5, 2, 1.5, 1, 0.5, 0, -1, -2, -5, 2.2, 1.1}
	cases := []struct {
		name string
		opt  bonsai.SamplerOptions
	}{
		{"top-k", bonsai.SamplerOptions{Temperature: 1, TopK: 4}},
		{"top-p", bonsai.SamplerOptions{Temperature: 0.7, TopP: 0.8}},
		{"min-p", bonsai.SamplerOptions{Temperature: 1.3, MinP: 0.15}},
		{"all", bonsai.SamplerOptions{Temperature: 2, TopK: 6, TopP: 0.9, MinP: 0.1}},
		{"none", bonsai.SamplerOptions{Temperature: 1}},
	}
	// Chi-square critical values at p = 0.001 by degrees of freedom.
	crit := []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52, 22.46, 24.32, 26.12, 27.88, 29.59, 31.26}
	const draws = 40000
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := support(l, c.opt.TopK, float64(c.opt.TopP), float64(c.opt.MinP), float64(c.opt.Temperature))
			c.opt.Seed = 99
			s := newSampler(t, len(l), c.opt)
			counts := map[int32]int{}
			for range draws {
				counts[s.Sample(l)]++
			}
			for id := range counts {
				_, ok := want[id]
				require.True(t, ok, "token %d drawn, but it is outside the support %v", id, want)
			}
			var chi float64
			for id, p := range want {
				e := p * draws
				d := float64(counts[id]) - e
				chi += d * d / e
			}
			df := len(want) - 1
			t.Logf("%s: support %d tokens, chi-square %.2f (df %d, critical %.2f)", c.name, len(want), chi, df, crit[df])
			if df > 0 {
				assert.Less(t, chi, crit[df])
			}
			// Candidates reports the same support.
			got := map[int32]bool{}
			for _, x := range s.Candidates(l) {
				got[x.ID] = true
			}
			assert.Len(t, got, len(want))
			for id := range want {
				assert.True(t, got[id], "token %d", id)
			}
		})
	}
}

// Top-p's pre-filter (it sorts only the tokens that can matter) keeps exactly the
// nucleus a full sort finds, over a large vocabulary.
func TestSamplerTopPLargeVocabulary(t *testing.T) {
	for seed := range uint64(5) {
		l := randomLogits(20000, seed)
		for _, p := range []float32{0.1, 0.5, 0.9, 0.99} {
			want := support(l, 0, float64(p), 0, 1)
			s := newSampler(t, len(l), bonsai.SamplerOptions{Temperature: 1, TopP: p})
			got := s.Candidates(l)
			require.Len(t, got, len(want), "seed %d p %v", seed, p)
			for _, x := range got {
				_, ok := want[x.ID]
				require.True(t, ok, "seed %d p %v: token %d", seed, p, x.ID)
			}
		}
	}
}

func TestSamplerAllocatesNothing(t *testing.T) {
	l := randomLogits(4096, 3)
	for _, opt := range []bonsai.SamplerOptions{
		{},
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, PresencePenalty: 0.3, FrequencyPenalty: 0.2},
		{Temperature: 1, TopP: 0.9},
		{Temperature: 1, RepeatPenalty: 1.3, RepeatLastN: -1},
	} {
		s := newSampler(t, len(l), opt)
		for i := range 300 { // the penalty state's buffers reach their size
			s.Accept(int32(i % 50))
		}
		allocs := testing.AllocsPerRun(100, func() {
			s.Accept(s.Sample(l) % 50)
		})
		assert.Zero(t, allocs, "%+v", opt)
	}
}

func BenchmarkSample(b *testing.B) {
	l := randomLogits(248320, 1)
	for _, c := range []struct {
		name string
		opt  bonsai.SamplerOptions
	}{
		{"greedy", bonsai.SamplerOptions{}},
		{"top-k40-top-p0.95-temp0.8", bonsai.SamplerOptions{Temperature: 0.8, TopK: 40, TopP: 0.95}},
		{"top-p0.95-temp0.8", bonsai.SamplerOptions{Temperature: 0.8, TopP: 0.95}},
		{"min-p0.05-temp1", bonsai.SamplerOptions{Temperature: 1, MinP: 0.05}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, _ := bonsai.NewSampler(len(l), c.opt)
			for b.Loop() {
				s.Sample(l)
			}
		})
	}
}

// Logits that are not finite never crash a draw, whatever the truncation. NaN counts as
// −∞ (never drawn while any logit is above −∞); a +∞ logit is certain, and the first
// +∞ token is drawn; when every logit is −∞ or NaN the draw is the first −∞ token (token
// 0 if all are NaN), as greedy decoding picks. Candidates agrees with every draw.
func TestSamplerNonFiniteLogits(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	modes := []struct {
		name string
		opt  bonsai.SamplerOptions
	}{
		{"greedy", bonsai.SamplerOptions{}},
		{"temperature", bonsai.SamplerOptions{Temperature: 1}},
		{"hot", bonsai.SamplerOptions{Temperature: 50}},
		{"cold", bonsai.SamplerOptions{Temperature: 1e-30}},
		{"top-k", bonsai.SamplerOptions{Temperature: 1, TopK: 2}},
		{"top-k 1", bonsai.SamplerOptions{Temperature: 1, TopK: 1}},
		{"top-p", bonsai.SamplerOptions{Temperature: 1, TopP: 0.9}},
		{"top-p tiny", bonsai.SamplerOptions{Temperature: 1, TopP: 1e-6}},
		{"min-p", bonsai.SamplerOptions{Temperature: 1, MinP: 0.2}},
		{"combined", bonsai.SamplerOptions{Temperature: 0.8, TopK: 3, TopP: 0.95, MinP: 0.05}},
		{"top-p and min-p", bonsai.SamplerOptions{Temperature: 1.2, TopP: 0.99, MinP: 0.01}},
		{"penalties", bonsai.SamplerOptions{Temperature: 1, TopP: 0.9, RepeatPenalty: 1.3, PresencePenalty: 0.5, FrequencyPenalty: 0.5}},
	}
	cases := []struct {
		name   string
		l      []float32
		choose func(mode string) []int32 // the tokens a draw may give
	}{
		{
			// +∞ wins; the first of two +∞ tokens is the draw.
			"+Inf", []float32{1, nan, -inf, 2, inf, nan, inf, 0.5, -inf},
			func(string) []int32 { return []int32{4} },
		},
		{
			"+Inf first", []float32{inf, nan, -inf, 1e30, inf},
			func(string) []int32 { return []int32{0} },
		},
		{
			// No +∞: NaN and −∞ are never drawn; the truncations apply to the rest.
			"NaN and -Inf", []float32{nan, -inf, 1, nan, 3, -inf, 2.5, nan},
			func(mode string) []int32 {
				switch mode {
				case "greedy", "cold", "top-k 1", "top-p tiny":
					return []int32{4}
				case "top-k":
					return []int32{4, 6}
				}
				return []int32{2, 4, 6}
			},
		},
		{
			// Finite logits beside them whose differences overflow float32.
			"extremes", []float32{-3e38, nan, 3e38, -inf, 3e38},
			func(string) []int32 { return []int32{2, 4} },
		},
		{
			"all -Inf or NaN", []float32{nan, -inf, nan, -inf},
			func(string) []int32 { return []int32{1} },
		},
		{
			"all NaN", []float32{nan, nan, nan},
			func(string) []int32 { return []int32{0} },
		},
		{
			"all -Inf", []float32{-inf, -inf, -inf},
			func(string) []int32 { return []int32{0} },
		},
	}
	for _, c := range cases {
		for _, m := range modes {
			t.Run(c.name+"/"+m.name, func(t *testing.T) {
				allowed := c.choose(m.name)
				if m.name == "greedy" {
					allowed = allowed[:1] // the argmax, ties to the smaller id
				}
				seen := map[int32]int{}
				for seed := range uint64(200) {
					opt := m.opt
					opt.Seed = seed
					s := newSampler(t, len(c.l), opt)
					s.Observe(0, 2, 4) // the prompt, for the repetition penalty
					s.Accept(4)
					var id int32
					require.NotPanics(t, func() { id = s.Sample(c.l) }, "seed %d", seed)
					require.Contains(t, allowed, id, "seed %d: %v", seed, c.l)
					seen[id]++
					var cands []bonsai.TokenLogProb
					require.NotPanics(t, func() { cands = s.Candidates(c.l) })
					require.NotEmpty(t, cands)
					var sum float64
					for _, x := range cands {
						require.False(t, math.IsNaN(float64(x.LogProb)), "candidate %d", x.ID)
						p := math.Exp(float64(x.LogProb))
						if !slices.Contains(allowed, x.ID) {
							// A finite logit far below the top: in the support, never drawn.
							require.Zero(t, p, "candidate %d", x.ID)
							require.False(t, math.IsNaN(float64(c.l[x.ID])) || math.IsInf(float64(c.l[x.ID]), 0), "candidate %d", x.ID)
						}
						sum += p
					}
					require.InDelta(t, 1, sum, 1e-5, "the candidates' probabilities sum to 1")
				}
				if len(allowed) == 1 {
					assert.Equal(t, 200, seen[allowed[0]])
				}
			})
		}
	}
}
