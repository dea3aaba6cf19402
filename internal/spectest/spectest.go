// Package spectest holds what the speculative-decoding tests of several packages share:
// a generation's whole say (reports, result, the session's tokens) and its comparison
// with a plain run, drafters whose drafts are known (an oracle of the plain run with
// errors at known places, a table), and the exact distribution of a generation's
// first tokens with a chi-square test against it. bonsai's own tests and the GPU
// backends' (metal/emulator) run the same checks with it.
package spectest

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
)

// Session returns a new session of m, closed when the test ends.
func Session(t testing.TB, m *bonsai.Model) *bonsai.Session {
	t.Helper()
	s, err := m.NewSession()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// Tokens returns n pseudo-random token ids below vocab, the same for the same seed.
func Tokens(n, vocab int, seed int) []int32 {
	ids := make([]int32, n)
	x := uint32(seed*2654435761 + 1)
	for i := range ids {
		x = x*1664525 + 1013904223
		ids[i] = int32(x>>8) % int32(vocab)
	}
	return ids
}

// Run is what a generation says: its reports, its result with the timings cleared
// (they differ from run to run), and the tokens the session holds after it.
type Run struct {
	Reports []bonsai.Token
	Res     bonsai.Result
	Held    []int32
}

// Generate resets s, a session of m, and runs a generation of in on it.
func Generate(t testing.TB, m *bonsai.Model, s *bonsai.Session, in bonsai.Input, opt bonsai.GenerateOptions) Run {
	t.Helper()
	s.Reset()
	p, err := m.Prepare(in, opt)
	require.NoError(t, err)
	reports, res := Collect(t, s.Generate(context.Background(), p))
	u := &res.Usage
	u.PrefillTokensPerSecond, u.DecodeTokensPerSecond, u.TimeToFirstToken = 0, 0, 0
	return Run{reports, res, s.Tokens()}
}

// Collect runs a generation through its token iterator, and returns its reports and
// result.
func Collect(t testing.TB, g *bonsai.Generation) ([]bonsai.Token, bonsai.Result) {
	t.Helper()
	var toks []bonsai.Token
	for tok, err := range g.Tokens() {
		require.NoError(t, err)
		toks = append(toks, tok)
	}
	res, err := g.Result()
	require.NoError(t, err)
	return toks, res
}

// PromptLen returns the length of a run's prompt: the session holds it and every
// generated token but the last.
func (r Run) PromptLen() int { return len(r.Held) - len(r.Res.Tokens) + 1 }

// With returns opt with speculation so.
func With(opt bonsai.GenerateOptions, so *bonsai.SpeculativeOptions) bonsai.GenerateOptions {
	opt.Speculative = so
	return opt
}

// Same asserts that a speculative run said what the plain one did — result, reports
// and the session's tokens — and returns its draft counts.
func Same(t *testing.T, plain, sp Run, msg string) (drafted, accepted int) {
	t.Helper()
	drafted, accepted = sp.Res.Usage.DraftedTokens, sp.Res.Usage.AcceptedTokens
	require.Zero(t, plain.Res.Usage.DraftedTokens, msg)
	require.Equal(t, sp.Res.Usage.DraftPasses > 0, drafted > 0, msg)
	sp.Res.Usage.DraftedTokens, sp.Res.Usage.AcceptedTokens, sp.Res.Usage.DraftPasses = 0, 0, 0
	require.Equal(t, plain.Res, sp.Res, msg)
	require.Equal(t, plain.Reports, sp.Reports, msg)
	require.Equal(t, plain.Held, sp.Held, "%s: the session holds what plain steps leave", msg)
	assert.LessOrEqual(t, accepted, drafted, msg)
	return drafted, accepted
}

// Oracle drafts what a plain run generated, Want, with every seventh generated token
// replaced by another (below Vocab), so that drafts are accepted in long runs and
// rejected. Prompt is the length of the run's prompt.
type Oracle struct {
	Want          []int32
	Prompt, Vocab int
}

func (o *Oracle) Draft(ctx []int32, k int, dst []int32) []int32 {
	for i := len(ctx) - o.Prompt; i < len(o.Want) && k > 0; i, k = i+1, k-1 {
		x := o.Want[i]
		if i%7 == 3 {
			x = (x + 1) % int32(o.Vocab)
		}
		dst = append(dst, x)
	}
	return dst
}

func (o *Oracle) Accepted(drafted, accepted int) {}

// Table proposes what Next says for the tokens generated so far (after Prompt).
type Table struct {
	Prompt int
	Next   func(gen []int32) []int32
}

func (d *Table) Draft(ctx []int32, k int, dst []int32) []int32 {
	p := d.Next(ctx[d.Prompt:])
	return append(dst, p[:min(k, len(p))]...)
}

func (d *Table) Accepted(drafted, accepted int) {}

// ExactFirstTokens enumerates, with Step and the Sampler's Distribution over the
// logits that logits gives after the prompt and seq, the exact probability of every
// sequence of the first three generated tokens (shorter when one ends the generation),
// keyed by fmt.Sprint of the tokens; best and worst give, after each prefix, its most
// likely next token and its least likely one with a chance.
func ExactFirstTokens(t *testing.T, m *bonsai.Model, prompt []int32, smp *bonsai.Sampler,
	logits func(s *bonsai.Session, seq []int32) []float32) (exact map[string]float64, best, worst map[string]int32) {
	t.Helper()
	ctx := context.Background()
	tok := m.Tokenizer()
	exact, best, worst = map[string]float64{}, map[string]int32{}, map[string]int32{}
	dist := make([]float64, m.Vocab())
	var walk func(s *bonsai.Session, seq []int32, p float64)
	walk = func(s *bonsai.Session, seq []int32, p float64) {
		if len(seq) == 3 || len(seq) > 0 && tok.IsEndOfGeneration(seq[len(seq)-1]) {
			exact[fmt.Sprint(seq)] += p
			return
		}
		d := slices.Clone(smp.Distribution(dist, logits(s, seq)))
		key := fmt.Sprint(seq)
		best[key], worst[key] = -1, -1
		for x, px := range d {
			if px == 0 {
				continue
			}
			if best[key] < 0 || px > d[best[key]] {
				best[key] = int32(x)
			}
			if worst[key] < 0 || px < d[worst[key]] {
				worst[key] = int32(x)
			}
			c, err := s.Clone()
			require.NoError(t, err)
			require.NoError(t, c.Step(ctx, int32(x)))
			walk(c, append(slices.Clone(seq), int32(x)), p*px)
			c.Close()
		}
	}
	root, err := m.NewSession()
	require.NoError(t, err)
	defer root.Close()
	require.NoError(t, root.Prefill(ctx, prompt))
	walk(root, nil, 1)
	return exact, best, worst
}

// ChiSquare returns the chi-square statistic of counts (n draws) against the exact
// probabilities, and its number of cells: sequences expected fewer than 5 times are
// pooled into one cell, as the approximation needs. A counted sequence of probability
// 0 fails the test.
func ChiSquare(t *testing.T, name string, exact map[string]float64, counts map[string]int, n int) (chi float64, cells int) {
	t.Helper()
	counts = maps.Clone(counts)
	var restE float64
	restN := 0
	for k, p := range exact {
		e := float64(n) * p
		if e < 5 {
			restE += e
			restN += counts[k]
		} else {
			d := float64(counts[k]) - e
			chi += d * d / e
			cells++
		}
		delete(counts, k)
	}
	assert.Empty(t, counts, "%s: sequences of probability 0", name)
	if restE > 0 {
		d := float64(restN) - restE
		chi += d * d / restE
		cells++
	}
	return chi, cells
}

// ChiSquareCritical approximates the chi-square quantile of df degrees of freedom at
// the normal quantile z (Wilson–Hilferty).
func ChiSquareCritical(df int, z float64) float64 {
	k := float64(df)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}

// FirstTokens is a sampling check of speculative decoding: generations of up to four
// tokens, top-k 3 at temperature 1, after a fixed prompt, whose first three tokens'
// frequencies over many seeds are held against their exact probabilities (a
// chi-square test at p = 1e-4, so that a correct rule passes whatever the fixed
// seeds). Drafter proposes, after the first token, the most likely second token and
// the least likely third, so that drafts are accepted and rejected at both depths.
type FirstTokens struct {
	m                 *bonsai.Model
	prompt            []int32
	opt               bonsai.SamplerOptions
	exact             map[string]float64
	best, worst       map[string]int32
	Drafted, Accepted int // the last Check's drafts
}

// NewFirstTokens computes m's exact distribution of the first three tokens after the
// check's prompt (m's vocabulary at least 512).
func NewFirstTokens(t *testing.T, m *bonsai.Model) *FirstTokens {
	t.Helper()
	f := &FirstTokens{m: m, prompt: Tokens(8, 512, 41), opt: bonsai.SamplerOptions{Temperature: 1, TopK: 3}}
	smp, err := bonsai.NewSampler(m.Vocab(), f.opt)
	require.NoError(t, err)
	f.exact, f.best, f.worst = ExactFirstTokens(t, m, f.prompt, smp, func(s *bonsai.Session, _ []int32) []float32 { return s.Logits() })
	return f
}

// Drafter returns a new drafter of the check's drafts.
func (f *FirstTokens) Drafter() bonsai.Drafter {
	return &Table{Prompt: len(f.prompt), Next: func(gen []int32) []int32 {
		if len(gen) != 1 {
			return nil
		}
		second := f.best[fmt.Sprint(gen)]
		return []int32{second, f.worst[fmt.Sprint([]int32{gen[0], second})]}
	}}
}

// Check runs n seeds with speculation sp (nil: plain steps) on s, a session of the
// model, and asserts that the first tokens' chi-square is below the critical value; it
// leaves the drafts' counts in Drafted and Accepted.
func (f *FirstTokens) Check(t *testing.T, name string, s *bonsai.Session, sp *bonsai.SpeculativeOptions, n int) {
	t.Helper()
	counts := map[string]int{}
	f.Drafted, f.Accepted = 0, 0
	for seed := range n {
		// MaxTokens 4 leaves room for a draft of two after the first token.
		opt := bonsai.GenerateOptions{MaxTokens: 4, SamplerOptions: f.opt, Speculative: sp}
		opt.Seed = uint64(seed) + 1
		r := Generate(t, f.m, s, bonsai.TokenIDs(f.prompt...), opt)
		counts[fmt.Sprint(r.Res.Tokens[:min(3, len(r.Res.Tokens))])]++
		f.Drafted += r.Res.Usage.DraftedTokens
		f.Accepted += r.Res.Usage.AcceptedTokens
	}
	chi, cells := ChiSquare(t, name, f.exact, counts, n)
	crit := ChiSquareCritical(cells-1, 3.719) // z of p = 1e-4
	t.Logf("%s: chi-square %.1f (critical %.1f, %d cells); drafted %d, accepted %d", name, chi, crit, cells, f.Drafted, f.Accepted)
	assert.Less(t, chi, crit, name)
}
