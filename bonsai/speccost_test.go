package bonsai_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/spectest"
)

// wrongDrafter drafts, at each position, a token that the plain run did not generate
// there: every draft is rejected at its first token.
type wrongDrafter struct {
	want   []int32
	prompt int
	shadow int // drafts asked for after the cost model stopped verifying them
}

func (d *wrongDrafter) Draft(ctx []int32, k int, dst []int32) []int32 {
	for i := len(ctx) - d.prompt; i < len(d.want) && k > 0; i, k = i+1, k-1 {
		dst = append(dst, (d.want[i]+1)%512)
	}
	return dst
}

func (d *wrongDrafter) Accepted(drafted, accepted int) {}

// Drafts that are never accepted stop after a bounded number of passes, the bound
// following from the acceptance estimate (α after n rejections, from one success and
// one failure weighted by 7/8 a draft: (7/8)^n / (2·(7/8)^n + 8·(1 − (7/8)^n))) and the
// pass costs:
//   - CPU-like, cost(t) = 1 + 0.375(t − 1): α = 1/2 drafts one token (1.5/1.375 =
//     1.09), after one rejection α = 0.318 and 1.318/1.375 < 1.02: 1 pass.
//   - GPU-like, every pass as a step: drafting goes on while E(8) = Σ α^i > 1.02, that
//     is while α > 0.0196: α after 14 rejections is 0.0218, after 15 0.0188: 15 passes.
//
// The output stays the plain run's.
func TestGenerateSpeculativeCostModelStops(t *testing.T) {
	in := bonsai.Text("The quick brown fox")
	opt := bonsai.GenerateOptions{MaxTokens: 60}
	for _, c := range []struct {
		name   string
		cost   func(t int) float64
		passes int
	}{
		{"cpu", func(t int) float64 { return 1 + 0.375*float64(t-1) }, 1},
		{"gpu", func(int) float64 { return 1 }, 15},
	} {
		m := tiny(t)
		bonsai.SetPassCosts(m, c.cost)
		s := session(t, m)
		plain := runGen(t, s, in, opt)
		require.Len(t, plain.Res.Tokens, 60, "the generation is long enough to see the bound")
		d := &wrongDrafter{want: plain.Res.Tokens, prompt: plain.PromptLen()}
		got := runGen(t, s, in, spectest.With(opt, &bonsai.SpeculativeOptions{NewDrafter: func() bonsai.Drafter { return d }}))
		assert.Equal(t, c.passes, got.Res.Usage.DraftPasses, c.name)
		assert.Zero(t, got.Res.Usage.AcceptedTokens, c.name)
		spectest.Same(t, plain, got, c.name)
	}
}

// countDrafter counts its drafter's calls and the tokens they drafted.
type countDrafter struct {
	bonsai.Drafter
	calls, tokens int
}

func (d *countDrafter) Draft(ctx []int32, k int, dst []int32) []int32 {
	n := len(dst)
	dst = d.Drafter.Draft(ctx, k, dst)
	d.calls++
	d.tokens += len(dst) - n
	return dst
}

// An always-wrong drafter whose own time counts stops drafting sooner, and is then
// asked for one-token shadow drafts spaced so that they cost at most 2% of the steps.
// With every pass costing one step and the drafter 0.1 step a token, drafting k pays
// while max_k E(k)/(1 + 0.1k) > 1.02; that maximum is at k = 1 for small α, so while
// (1 + α)/1.1 > 1.02, α > 0.122. After n rejections α = (7/8)^n / (2·(7/8)^n +
// 8·(1 − (7/8)^n)): 0.131 after 4, 0.104 after 5, so 5 passes draft (the drafter
// without a cost drafted for 15, TestGenerateSpeculativeCostModelStops). A probe of one
// token costs 0.1 step, so each waits ⌈0.1/0.02⌉ − 1 = 4 steps after the last settled:
// over the 55 tokens left at most 55/5 + 1 probes of one token each.
// A drafter at 2 steps a token, which could not pay even if every token were accepted
// ((k+1)/(1 + 2k) < 1), is never asked.
func TestGenerateSpeculativeDrafterCostStops(t *testing.T) {
	in := bonsai.Text("The quick brown fox")
	opt := bonsai.GenerateOptions{MaxTokens: 60}
	for _, c := range []struct {
		name            string
		draft           float64
		passes, maxCall int
	}{
		{"0.1 step a token", 0.1, 5, 5 + 55/5 + 1},
		{"2 steps a token", 2, 0, 0},
	} {
		m := tiny(t)
		bonsai.SetPassCosts(m, func(int) float64 { return 1 })
		bonsai.SetDraftCost(m, c.draft)
		s := session(t, m)
		plain := runGen(t, s, in, opt)
		require.Len(t, plain.Res.Tokens, 60, "the generation is long enough to see the bound")
		d := &countDrafter{Drafter: &wrongDrafter{want: plain.Res.Tokens, prompt: plain.PromptLen()}}
		got := runGen(t, s, in, spectest.With(opt, &bonsai.SpeculativeOptions{NewDrafter: func() bonsai.Drafter { return d }}))
		assert.Equal(t, c.passes, got.Res.Usage.DraftPasses, c.name)
		assert.Zero(t, got.Res.Usage.AcceptedTokens, c.name)
		assert.LessOrEqual(t, d.calls, c.maxCall, c.name)
		probes := d.calls - got.Res.Usage.DraftPasses
		assert.Equal(t, got.Res.Usage.DraftedTokens+probes, d.tokens, "%s: every probe drafts one token", c.name)
		t.Logf("%s: %d draft passes, %d calls, %d tokens drafted", c.name, got.Res.Usage.DraftPasses, d.calls, d.tokens)
		spectest.Same(t, plain, got, c.name)
	}
}

// With an oracle whose drafts are accepted in runs of up to six tokens, the cost model
// drafts shorter on the CPU-like costs than on the GPU-like ones, where every pass
// costs a step and the longest draft pays (at α = 0.86 on the CPU: 1.86/1.375 = 1.35 for one
// token, 3.24/2.125 = 1.52 for three, 5.31/4 = 1.33 for eight), and the output is
// the plain run's either way.
func TestGenerateSpeculativeCostModelWidth(t *testing.T) {
	in := bonsai.Text("The quick brown fox")
	opt := bonsai.GenerateOptions{MaxTokens: 150}
	mean := map[string]float64{}
	for _, c := range []struct {
		name string
		cost func(t int) float64
	}{
		{"cpu", func(t int) float64 { return 1 + 0.375*float64(t-1) }},
		{"gpu", func(int) float64 { return 1 }},
	} {
		m := tiny(t)
		bonsai.SetPassCosts(m, c.cost)
		s := session(t, m)
		plain := runGen(t, s, in, opt)
		got := runGen(t, s, in, spectest.With(opt, oracleOf(plain, plain.PromptLen())))
		d, a := spectest.Same(t, plain, got, c.name)
		require.Positive(t, a, c.name)
		mean[c.name] = float64(d) / float64(got.Res.Usage.DraftPasses)
		t.Logf("%s: drafted %d, accepted %d in %d passes", c.name, d, a, got.Res.Usage.DraftPasses)
	}
	assert.Less(t, mean["cpu"], mean["gpu"])
	assert.Less(t, mean["cpu"], 8.0, "the CPU's costs cap the drafts below MaxDraft")
}

// A model times its passes, and the cost model decides from the times.
func TestGenerateSpeculativePassTimes(t *testing.T) {
	m := tiny(t)
	assert.Nil(t, m.PassTimes(4), "no pass timed yet")
	s := session(t, m)
	in := bonsai.Text("The quick brown fox")
	opt := bonsai.GenerateOptions{MaxTokens: 40}
	plain := runGen(t, s, in, opt)
	pt := m.PassTimes(4)
	require.Len(t, pt, 4)
	for i, d := range pt {
		assert.Positive(t, d, "width %d", i+1)
	}
	got := runGen(t, s, in, spectest.With(opt, oracleOf(plain, plain.PromptLen())))
	spectest.Same(t, plain, got, "measured costs")
}
