package bonsai

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refDist is the sampling distribution by its definition, for the options it supports
// (temperature, greedy, top-k, presence and frequency penalties): an independent
// reference for Sampler.Distribution.
func refDist(t *testing.T, logits []float32, opt SamplerOptions, generated []int32) []float64 {
	t.Helper()
	require.Zero(t, opt.TopP+opt.MinP+opt.RepeatPenalty, "refDist supports temperature, top-k and the OpenAI penalties")
	l := make([]float64, len(logits))
	for i, v := range logits {
		l[i] = float64(v)
	}
	counts := map[int32]int{}
	for _, g := range generated {
		counts[g]++
	}
	for g, c := range counts {
		l[g] -= float64(opt.PresencePenalty) + float64(c)*float64(opt.FrequencyPenalty)
	}
	p := make([]float64, len(l))
	if opt.Greedy || opt.Temperature <= 0 {
		best := 0
		for i := range l {
			if l[i] > l[best] {
				best = i
			}
		}
		p[best] = 1
		return p
	}
	ids := make([]int, len(l))
	for i := range ids {
		ids[i] = i
	}
	slices.SortFunc(ids, func(a, b int) int {
		if c := cmp.Compare(l[b], l[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	if opt.TopK > 0 && opt.TopK < len(ids) {
		ids = ids[:opt.TopK]
	}
	var sum float64
	for _, i := range ids {
		p[i] = math.Exp((l[i] - l[ids[0]]) / float64(opt.Temperature))
		sum += p[i]
	}
	for _, i := range ids {
		p[i] /= sum
	}
	return p
}

// Distribution is the distribution of the definition, and agrees with Candidates where
// the reference does not reach (top-p, min-p, the repetition penalty).
func TestSamplerDistribution(t *testing.T) {
	logits := []float32{0.5, 2, -1, 2, 0.25, 1.5, -3, 0}
	gen := []int32{1, 5, 1}
	for _, opt := range []SamplerOptions{
		{Temperature: 1},
		{Temperature: 0.5, TopK: 3},
		{Temperature: 1.3, TopK: 4, PresencePenalty: 0.4, FrequencyPenalty: 0.2},
		{Temperature: 0},
		{Temperature: 1, Greedy: true, PresencePenalty: 1},
	} {
		s := newSampler(len(logits), opt)
		for _, g := range gen {
			s.Accept(g)
		}
		got := s.Distribution(make([]float64, len(logits)), logits)
		want := refDist(t, logits, opt, gen)
		assert.InDeltaSlice(t, want, got, 1e-6, "%+v", opt)
	}
	for _, opt := range []SamplerOptions{
		{Temperature: 0.8, TopP: 0.7},
		{Temperature: 1.2, MinP: 0.3},
		{Temperature: 0.9, RepeatPenalty: 1.5, RepeatLastN: 2, TopK: 6},
	} {
		s := newSampler(len(logits), opt)
		for _, g := range gen {
			s.Accept(g)
		}
		got := slices.Clone(s.Distribution(make([]float64, len(logits)), logits))
		want := make([]float64, len(logits))
		for _, c := range s.Candidates(logits) {
			want[c.ID] = math.Exp(float64(c.LogProb))
		}
		assert.InDeltaSlice(t, want, got, 1e-6, "%+v", opt)
	}
}

// logitsLog is a logits callback over fixed rows that records the positions asked.
type logitsLog struct {
	rows  [][]float32
	asked []int
}

func (l *logitsLog) at(i int) []float32 {
	l.asked = append(l.asked, i)
	return l.rows[i]
}

// Greedy verification keeps a drafted token exactly when it is the argmax (ties to the
// lowest id), on logits built by hand.
func TestVerifyDraftGreedy(t *testing.T) {
	rows := [][]float32{
		{0, 1, 3, 2, 1, 0},   // 2
		{1, 0, 0.5, 0, 2, 1}, // 4
		{0, 0, 0, 4, 1, 4},   // 3, tied with 5
		{9, 0, 0, 0, 0, 0},   // 0
	}
	for _, c := range []struct {
		draft []int32
		n     int
		next  int32
		asked []int
	}{
		{[]int32{2, 4, 5}, 2, 3, []int{0, 1, 2}}, // 5 ties with 3, and loses
		{[]int32{2, 4, 3}, 3, 0, []int{0, 1, 2, 3}},
		{[]int32{1, 4, 3}, 0, 2, []int{0}},
		{[]int32{2, 0}, 1, 4, []int{0, 1}},
		{nil, 0, 2, []int{0}},
		{[]int32{-1}, 0, 2, []int{0}},
	} {
		s := newSampler(6, SamplerOptions{})
		l := &logitsLog{rows: rows}
		n, next := s.VerifyDraft(c.draft, nil, l.at)
		assert.Equal(t, c.n, n, "draft %v", c.draft)
		assert.Equal(t, c.next, next, "draft %v", c.draft)
		assert.Equal(t, c.asked, l.asked, "draft %v", c.draft)
	}

	// The penalties see the accepted drafted tokens: after 2, its logit 5 loses 0.5 and
	// 4 (4.8) is the argmax.
	pen := [][]float32{{0, 0, 5, 0, 0, 0}, {0, 0, 5, 0, 4.8, 0}, {0, 1, 0, 0, 0, 0}}
	s := newSampler(6, SamplerOptions{PresencePenalty: 0.5})
	n, next := s.VerifyDraft([]int32{2, 2}, nil, (&logitsLog{rows: pen}).at)
	assert.Equal(t, 1, n)
	assert.Equal(t, int32(4), next)
	s = newSampler(6, SamplerOptions{PresencePenalty: 0.5})
	n, next = s.VerifyDraft([]int32{2, 4}, nil, (&logitsLog{rows: pen}).at)
	assert.Equal(t, 2, n)
	assert.Equal(t, int32(1), next)
	// Both drafted tokens are recorded, next is not.
	assert.Equal(t, []float32{0, 0, -0.5, 0, -0.5, 0}, s.Penalize(make([]float32, 6), make([]float32, 6)))
}

// Over long generations with drafts right and wrong at every position, greedy
// verification yields exactly the tokens of greedy sampling one at a time.
func TestVerifyDraftGreedyLong(t *testing.T) {
	const vocab = 16
	r := rand.New(rand.NewPCG(11, 12))
	// The model: the logits depend on the last two tokens; small integers make ties.
	table := make([][]float32, vocab*vocab)
	for i := range table {
		table[i] = make([]float32, vocab)
		for j := range table[i] {
			table[i][j] = float32(r.IntN(6))
		}
	}
	model := func(seq []int32) []float32 {
		a, b := int32(0), int32(0)
		if len(seq) > 0 {
			a = seq[len(seq)-1]
		}
		if len(seq) > 1 {
			b = seq[len(seq)-2]
		}
		return table[a*vocab+b]
	}
	opt := SamplerOptions{RepeatPenalty: 1.3, RepeatLastN: 8, FrequencyPenalty: 0.2}
	prompt := []int32{3, 1, 4}

	ref := newSampler(vocab, opt)
	ref.Observe(prompt...)
	want := slices.Clone(prompt)
	for len(want) < len(prompt)+400 {
		id := ref.Sample(model(want))
		ref.Accept(id)
		want = append(want, id)
	}

	s := newSampler(vocab, opt)
	s.Observe(prompt...)
	got := slices.Clone(prompt)
	rejectedAt := make([]int, 6)
	for len(got) < len(want) {
		// A draft of 0 to 5 tokens: the true continuation, wrong from a random point.
		k := r.IntN(6)
		wrong := r.IntN(k + 2)
		draft := make([]int32, 0, k)
		for i := range k {
			pos := len(got) + i
			if i >= wrong || pos >= len(want) {
				draft = append(draft, int32(r.IntN(vocab)))
			} else {
				draft = append(draft, want[pos])
			}
		}
		n, next := s.VerifyDraft(draft, nil, func(i int) []float32 {
			return model(append(slices.Clone(got), draft[:i]...))
		})
		if n < len(draft) {
			rejectedAt[n]++
		}
		got = append(got, draft[:n]...)
		s.Accept(next)
		got = append(got, next)
	}
	assert.Equal(t, want, got[:len(want)])
	for i := range 5 {
		assert.Positive(t, rejectedAt[i], "a rejection at draft position %d", i)
	}
}

// The statistical test of the sampling rule. A toy model over 8 tokens gives the logits
// of the first token (l0) and of the second after each first (l1[a]); the exact joint
// distribution of the first two tokens follows from refDist. Each seed generates the
// first two tokens by a verification rule, with drafts of two tokens that a toy drafter
// draws from its own distributions (q1, then q2[d1]) with its own generator; the counts
// over the seeds are compared with the exact distribution by a chi-square test at
// α = 10⁻⁶. The seeds are fixed, so the test is deterministic; a correct rule fails it
// with probability 10⁻⁶ for a random seed set, and each wrong rule below fails it.

const specVocab = 8

type specToy struct {
	l0 []float32
	l1 [][]float32
	q1 []float32
	q2 [][]float32
}

func newSpecToy() specToy {
	r := rand.New(rand.NewPCG(7, 8))
	row := func(spread float64) []float32 {
		v := make([]float32, specVocab)
		for i := range v {
			v[i] = float32(math.Round(r.Float64()*spread*8) / 8) // eighths, as by hand
		}
		return v
	}
	prob := func() []float32 {
		v := row(2.5)
		var sum float32
		for i := range v {
			v[i] = float32(math.Exp(float64(v[i])))
			sum += v[i]
		}
		for i := range v {
			v[i] /= sum
		}
		return v
	}
	toy := specToy{l0: row(3), q1: prob()}
	for range specVocab {
		toy.l1 = append(toy.l1, row(3))
		toy.q2 = append(toy.q2, prob())
	}
	return toy
}

// logits is the model: the logits after seq.
func (m specToy) logits(seq []int32) []float32 {
	switch len(seq) {
	case 0:
		return m.l0
	case 1:
		return m.l1[seq[0]]
	}
	return m.l0 // the third token's, never counted
}

func drawFrom(r *rand.Rand, p []float32) int32 {
	u := float32(r.Float64())
	var acc float32
	for i, v := range p {
		acc += v
		if u < acc {
			return int32(i)
		}
	}
	return int32(len(p) - 1)
}

// verifyRule is a verification rule with VerifyDraft's contract.
type verifyRule func(s *Sampler, draft []int32, q [][]float32, logits func(int) []float32) (int, int32)

// firstTwo generates the first two tokens with rule; pointMass passes no q (the drafter
// claims its draft is certain).
func (m specToy) firstTwo(s *Sampler, dr *rand.Rand, rule verifyRule, pointMass bool) (int32, int32) {
	var seq []int32
	for len(seq) < 2 {
		var draft []int32
		var q [][]float32
		at := m.q1
		if len(seq) == 1 {
			at = m.q2[seq[0]]
		}
		for len(seq)+len(draft) < 2 {
			d := drawFrom(dr, at)
			draft, q = append(draft, d), append(q, at)
			at = m.q2[d]
		}
		if pointMass {
			q = nil
		}
		prefix := slices.Clone(seq)
		n, next := rule(s, draft, q, func(i int) []float32 {
			return m.logits(append(slices.Clone(prefix), draft[:i]...))
		})
		s.Accept(next)
		seq = append(append(seq, draft[:n]...), next)
	}
	return seq[0], seq[1]
}

// chiSquare returns the statistic of counts against the expected probabilities, the
// degrees of freedom, and the count that fell where the probability is 0.
func chiSquare(counts []int, want []float64, n int) (stat float64, df, impossible int) {
	for i, p := range want {
		if p == 0 {
			impossible += counts[i]
			continue
		}
		e := p * float64(n)
		d := float64(counts[i]) - e
		stat += d * d / e
		df++
	}
	return stat, df - 1, impossible
}

// chiSquareCritical is the chi-square quantile of 1 − 10⁻⁶ by the Wilson–Hilferty
// approximation (z = 4.7534, the normal quantile of 1 − 10⁻⁶).
func chiSquareCritical(df int) float64 {
	k := float64(df)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+4.7534*math.Sqrt(a), 3)
}

// specChiSquare runs rule over the fixed seeds and returns the chi-square statistic,
// its critical value and the count of impossible outcomes.
func specChiSquare(t *testing.T, opt SamplerOptions, rule verifyRule, pointMass bool) (stat, crit float64, impossible int) {
	t.Helper()
	const seeds = 40000
	m := newSpecToy()
	want := make([]float64, specVocab*specVocab)
	p0 := refDist(t, m.l0, opt, nil)
	for a := range specVocab {
		p1 := refDist(t, m.l1[a], opt, []int32{int32(a)})
		for b := range specVocab {
			want[a*specVocab+b] = p0[a] * p1[b]
		}
	}
	counts := make([]int, len(want))
	s := newSampler(specVocab, opt)
	for seed := range uint64(seeds) {
		o := opt
		o.Seed = seed
		s.reset(o)
		dr := rand.New(rand.NewPCG(seed, 99)) // the drafter's own generator
		a, b := m.firstTwo(s, dr, rule, pointMass)
		counts[int(a)*specVocab+int(b)]++
	}
	stat, df, impossible := chiSquare(counts, want, seeds)
	return stat, chiSquareCritical(df), impossible
}

var specOptions = []SamplerOptions{
	{Temperature: 1},
	{Temperature: 0.7, TopK: 5, PresencePenalty: 0.8, FrequencyPenalty: 0.3},
}

// noDrafts samples one token at a time, ignoring the draft: the reference the rule must
// be indistinguishable from.
func noDrafts(s *Sampler, _ []int32, _ [][]float32, logits func(int) []float32) (int, int32) {
	return 0, s.Sample(logits(0))
}

// With drafts, the first two tokens are distributed as without: for point-mass and for
// general drafts, plain and with top-k and penalties; sampling without drafts passes
// the same test.
func TestVerifyDraftDistribution(t *testing.T) {
	for _, opt := range specOptions {
		for _, c := range []struct {
			name      string
			rule      verifyRule
			pointMass bool
		}{
			{"no drafts", noDrafts, true},
			{"point mass", (*Sampler).VerifyDraft, true},
			{"general q", (*Sampler).VerifyDraft, false},
		} {
			stat, crit, impossible := specChiSquare(t, opt, c.rule, c.pointMass)
			t.Logf("%+v %s: χ² = %.1f (critical %.1f)", opt, c.name, stat, crit)
			assert.Less(t, stat, crit, "%+v %s", opt, c.name)
			assert.Zero(t, impossible, "%+v %s: tokens outside the support", opt, c.name)
		}
	}
}

// alwaysAccept keeps every drafted token: wrong.
func alwaysAccept(s *Sampler, draft []int32, _ [][]float32, logits func(int) []float32) (int, int32) {
	for _, x := range draft {
		s.Accept(x)
	}
	return len(draft), s.Sample(logits(len(draft)))
}

// resampleFromP accepts by the right ratio but, on a rejection, draws from p rather
// than from the residual: wrong, the rejected token comes back too often.
func resampleFromP(s *Sampler, draft []int32, q [][]float32, logits func(int) []float32) (int, int32) {
	p := make([]float64, s.vocab)
	for i, x := range draft {
		l := logits(i)
		s.Distribution(p, l)
		qx := 1.0
		if q != nil {
			qx = float64(q[i][x])
		}
		if s.rng.Float64()*qx >= p[x] {
			return i, s.Sample(l)
		}
		s.Accept(x)
	}
	return len(draft), s.Sample(logits(len(draft)))
}

// pointResidual accepts by q's ratio min(1, p/q) but draws a rejection's replacement
// from the point mass's residual (p without x) rather than from (p − q)⁺: wrong. (The
// point-mass rule applied whole to a sampled draft, ignoring q, is not wrong: given x,
// it emits exactly p, whatever x was drawn from; it only accepts less.)
func pointResidual(s *Sampler, draft []int32, q [][]float32, logits func(int) []float32) (int, int32) {
	p := make([]float64, s.vocab)
	for i, x := range draft {
		l := logits(i)
		s.Distribution(p, l)
		if s.rng.Float64()*float64(q[i][x]) >= p[x] {
			p[x] = 0
			var sum float64
			for _, v := range p {
				sum += v
			}
			u, acc := s.rng.Float64()*sum, 0.0
			for j, v := range p {
				if acc += v; u < acc {
					return i, int32(j)
				}
			}
			return i, int32(len(p) - 1)
		}
		s.Accept(x)
	}
	return len(draft), s.Sample(logits(len(draft)))
}

// ignoreQ treats every draft as a point mass, whatever q it came from.
func ignoreQ(s *Sampler, draft []int32, _ [][]float32, logits func(int) []float32) (int, int32) {
	return s.VerifyDraft(draft, nil, logits)
}

// Ignoring q keeps the distribution exact (see pointResidual).
func TestVerifyDraftIgnoringQIsExact(t *testing.T) {
	for _, opt := range specOptions {
		stat, crit, impossible := specChiSquare(t, opt, ignoreQ, false)
		assert.Less(t, stat, crit, "%+v", opt)
		assert.Zero(t, impossible, "%+v", opt)
	}
}

// The same test fails wrong rules, so that it has the power to catch one.
func TestVerifyDraftDistributionCatchesWrongRules(t *testing.T) {
	for _, opt := range specOptions {
		for _, c := range []struct {
			name      string
			rule      verifyRule
			pointMass bool
		}{
			{"always accept", alwaysAccept, true},
			{"always accept, general q", alwaysAccept, false},
			{"resample from p", resampleFromP, true},
			{"resample from p, general q", resampleFromP, false},
			{"point-mass residual, general q", pointResidual, false},
		} {
			stat, crit, impossible := specChiSquare(t, opt, c.rule, c.pointMass)
			t.Logf("%+v %s: χ² = %.1f (critical %.1f), %d impossible", opt, c.name, stat, crit, impossible)
			assert.True(t, stat > crit || impossible > 0, "%+v %s: χ² = %.1f passes", opt, c.name, stat)
		}
	}
}

// A seeded speculative run is reproducible, and its draws come from the Sampler's
// generator: another seed gives other tokens.
func TestVerifyDraftSeeded(t *testing.T) {
	m := newSpecToy()
	run := func(seed uint64) []int32 {
		s := newSampler(specVocab, SamplerOptions{Temperature: 1, Seed: seed})
		var out []int32
		for i := range 200 {
			dr := rand.New(rand.NewPCG(uint64(i), 1)) // the same drafts for every seed
			a, b := m.firstTwo(s, dr, (*Sampler).VerifyDraft, i%2 == 0)
			out = append(out, a, b)
		}
		return out
	}
	assert.Equal(t, run(42), run(42))
	assert.NotEqual(t, run(42), run(43))
}

// Verification allocates nothing.
func TestVerifyDraftAllocs(t *testing.T) {
	m := newSpecToy()
	s := newSampler(specVocab, SamplerOptions{Temperature: 0.9, TopK: 6, PresencePenalty: 0.2})
	draft := []int32{1, 2}
	q := [][]float32{m.q1, m.q2[1]}
	logits := func(i int) []float32 { return m.l1[i] }
	allocs := testing.AllocsPerRun(200, func() {
		s.VerifyDraft(draft, q, logits)
		s.VerifyDraft(draft, nil, logits)
	})
	assert.Zero(t, allocs)
}
