package emulator_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/metal/emulator"
	"github.com/bonsai-go/sdk/ternary"
)

// Speculative decoding on the GPU engine's kept passes and Rewind
// (internal/gpu/engine/rewind.go), through bonsai on the emulated Metal backend. The
// tests are bonsai's speculative tests (bonsai/speculative_test.go) on this backend;
// they live here, with copies of those tests' helpers, because the emulator runs a
// generation in about a second, which bonsai's package, already long, cannot afford.

// gpuTiny is the tiny synthetic model (bonsai's tests' seed) on the emulated Metal
// backend, skipping where the emulator cannot run: it needs clang.
func gpuTiny(t *testing.T) *bonsai.Model {
	t.Helper()
	if err := emulator.Available(); err != nil {
		if os.Getenv("MSLEMU_REQUIRE") != "" {
			t.Fatalf("MSL emulator unavailable: %v", err)
		}
		t.Skipf("MSL emulator unavailable (it needs clang): %v", err)
	}
	m, err := bonsai.Open(synthtest.Path(t, "tiny", 11, ternary.PQ2_0), bonsai.WithBackend(emulator.New()), bonsai.WithThreads(2))
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func session(t testing.TB, m *bonsai.Model) *bonsai.Session {
	t.Helper()
	s, err := m.NewSession()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// tokens returns n pseudo-random token ids below vocab (bonsai's tests' tokens).
func tokens(n, vocab int, seed int) []int32 {
	ids := make([]int32, n)
	x := uint32(seed*2654435761 + 1)
	for i := range ids {
		x = x*1664525 + 1013904223
		ids[i] = int32(x>>8) % int32(vocab)
	}
	return ids
}

// specRun is what a generation says: its reports, its result with the timings
// cleared, and the tokens the session holds after it.
type specRun struct {
	reports []bonsai.Token
	res     bonsai.Result
	held    []int32
}

func runGen(t testing.TB, m *bonsai.Model, s *bonsai.Session, in bonsai.Input, opt bonsai.GenerateOptions) specRun {
	t.Helper()
	s.Reset()
	p, err := m.Prepare(in, opt)
	require.NoError(t, err)
	g := s.Generate(context.Background(), p)
	var reports []bonsai.Token
	for tok, err := range g.Tokens() {
		require.NoError(t, err)
		reports = append(reports, tok)
	}
	res, err := g.Result()
	require.NoError(t, err)
	u := &res.Usage
	u.PrefillTokensPerSecond, u.DecodeTokensPerSecond, u.TimeToFirstToken = 0, 0, 0
	return specRun{reports, res, s.Tokens()}
}

// promptLen returns the length of a run's prompt.
func promptLen(r specRun) int { return len(r.held) - len(r.res.Tokens) + 1 }

func withSpec(opt bonsai.GenerateOptions, so *bonsai.SpeculativeOptions) bonsai.GenerateOptions {
	opt.Speculative = so
	return opt
}

// sameRun asserts that a speculative run said what the plain one did, and returns its
// draft counts.
func sameRun(t *testing.T, plain, sp specRun, msg string) (drafted, accepted int) {
	t.Helper()
	drafted, accepted = sp.res.Usage.DraftedTokens, sp.res.Usage.AcceptedTokens
	require.Zero(t, plain.res.Usage.DraftedTokens, msg)
	require.Equal(t, sp.res.Usage.DraftPasses > 0, drafted > 0, msg)
	sp.res.Usage.DraftedTokens, sp.res.Usage.AcceptedTokens, sp.res.Usage.DraftPasses = 0, 0, 0
	require.Equal(t, plain.res, sp.res, msg)
	require.Equal(t, plain.reports, sp.reports, msg)
	require.Equal(t, plain.held, sp.held, "%s: the session holds what plain steps leave", msg)
	assert.LessOrEqual(t, accepted, drafted, msg)
	return drafted, accepted
}

// oracle drafts what a plain run generated, with every seventh generated token
// replaced by another.
type oracle struct {
	want   []int32
	prompt int
}

func (o *oracle) Draft(ctx []int32, k int, dst []int32) []int32 {
	for i := len(ctx) - o.prompt; i < len(o.want) && k > 0; i, k = i+1, k-1 {
		x := o.want[i]
		if i%7 == 3 {
			x = (x + 1) % 512
		}
		dst = append(dst, x)
	}
	return dst
}

func (o *oracle) Accepted(drafted, accepted int) {}

// tableDrafter proposes what next says for the tokens generated so far.
type tableDrafter struct {
	prompt int
	next   func(gen []int32) []int32
}

func (d *tableDrafter) Draft(ctx []int32, k int, dst []int32) []int32 {
	p := d.next(ctx[d.prompt:])
	return append(dst, p[:min(k, len(p))]...)
}

func (d *tableDrafter) Accepted(drafted, accepted int) {}

// exactFirstTokens enumerates, with Step and the Sampler's Distribution over the
// session's logits, the exact probability of every sequence of the first three
// generated tokens (shorter when one ends the generation); best and worst give, after
// each prefix, its most likely next token and its least likely one with a chance.
func exactFirstTokens(t *testing.T, m *bonsai.Model, prompt []int32, smp *bonsai.Sampler) (exact map[string]float64, best, worst map[string]int32) {
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
		d := slices.Clone(smp.Distribution(dist, s.Logits()))
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
	root := session(t, m)
	require.NoError(t, root.Prefill(ctx, prompt))
	walk(root, nil, 1)
	return exact, best, worst
}

// chiSquareAgainst returns the chi-square statistic of counts (n draws) against the
// exact probabilities, sequences expected fewer than 5 times pooled into one cell.
func chiSquareAgainst(t *testing.T, name string, exact map[string]float64, counts map[string]int, n int) (chi float64, cells int) {
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

// chiSquareCritical approximates the chi-square quantile of df degrees of freedom at
// the normal quantile z (Wilson–Hilferty).
func chiSquareCritical(df int, z float64) float64 {
	k := float64(df)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}

// shiftOracle drafts what a plain run generated, want, with the token at one position
// of each draft replaced by another, the position moving on by one at every draft
// (and one draft in every k+1 left right), so that the verifications reject at every
// position of a draft and the engine rewinds to each.
type shiftOracle struct {
	want   []int32
	prompt int
	n      int // drafts made
}

func (o *shiftOracle) Draft(ctx []int32, k int, dst []int32) []int32 {
	wrong := o.n % (k + 1)
	o.n++
	for i, d := len(ctx)-o.prompt, 0; i < len(o.want) && d < k; i, d = i+1, d+1 {
		x := o.want[i]
		if d == wrong {
			x = (x + 1) % 512
		}
		dst = append(dst, x)
	}
	return dst
}

func (o *shiftOracle) Accepted(drafted, accepted int) {}

// Greedy speculative generation on a GPU backend — kept passes verified on the engine
// and its states rewound by replaying the kept rows (internal/gpu/engine/rewind.go) —
// is the plain generation, token for token, with the lookup drafter, the oracle (every
// seventh token wrong) and a shifting oracle (a wrong token at every position of a
// draft in turn), all forced to draft at every pass (Always).
func TestGenerateSpeculativeGreedyGPU(t *testing.T) {
	m := gpuTiny(t)
	s := session(t, m)
	opt := bonsai.GenerateOptions{MaxTokens: 40}
	in := bonsai.TokenIDs(tokens(12, 512, 5)...)
	plain := runGen(t, m, s, in, opt)
	p := promptLen(plain)
	// The lookup drafter on a prompt that repeats itself. (It drafted nothing on this
	// model in these runs, so only the identity is asserted; the oracles draft.)
	rep := tokens(6, 512, 9)
	lin := bonsai.TokenIDs(append(append(append([]int32(nil), rep...), rep...), rep...)...)
	lplain := runGen(t, m, s, lin, opt)
	ld, la := sameRun(t, lplain, runGen(t, m, s, lin, withSpec(opt, &bonsai.SpeculativeOptions{Always: true})), "the lookup drafter")
	t.Logf("lookup drafter: drafted %d, accepted %d", ld, la)
	var drafted, accepted, rejected int
	for i, so := range []*bonsai.SpeculativeOptions{
		{Always: true},
		{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter { return &oracle{want: plain.res.Tokens, prompt: p} }},
		{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter { return &shiftOracle{want: plain.res.Tokens, prompt: p} }},
	} {
		d, a := sameRun(t, plain, runGen(t, m, s, in, withSpec(opt, so)), fmt.Sprintf("drafter %d", i))
		t.Logf("drafter %d: drafted %d, accepted %d", i, d, a)
		if i > 0 {
			drafted += d
			accepted += a
			if a < d {
				rejected++
			}
		}
	}
	assert.Positive(t, drafted, "the oracles drafted")
	assert.Positive(t, accepted, "drafts were accepted")
	assert.Positive(t, rejected, "drafts were rejected")
}

// Sessions generating speculatively at once, their kept passes batched by the model's
// batcher into shared command buffers, each give the plain generation.
func TestGenerateSpeculativeConcurrentGPU(t *testing.T) {
	m := gpuTiny(t)
	const n = 3
	want := make([]specRun, n)
	in := func(i int) bonsai.Input { return bonsai.TokenIDs(tokens(10+i, 512, 20+i)...) }
	opt := bonsai.GenerateOptions{MaxTokens: 30}
	for i := range n {
		want[i] = runGen(t, m, session(t, m), in(i), opt)
	}
	sessions := make([]*bonsai.Session, n)
	for i := range sessions {
		sessions[i] = session(t, m)
	}
	got := make([]specRun, n)
	var wg sync.WaitGroup
	for i := range n {
		p := promptLen(want[i])
		so := &bonsai.SpeculativeOptions{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter {
			if i%2 == 0 {
				return &shiftOracle{want: want[i].res.Tokens, prompt: p}
			}
			return &oracle{want: want[i].res.Tokens, prompt: p}
		}}
		wg.Go(func() { got[i] = runGen(t, m, sessions[i], in(i), withSpec(opt, so)) })
	}
	wg.Wait()
	drafted, accepted := 0, 0
	for i := range n {
		d, a := sameRun(t, want[i], got[i], fmt.Sprintf("session %d", i))
		drafted += d
		accepted += a
	}
	require.Positive(t, drafted)
	assert.Positive(t, accepted)
	assert.Less(t, accepted, drafted, "drafts were rejected")
}

// Sampled speculative generation on a GPU backend draws the first three tokens from
// the model's exact distribution, as bonsai's TestGenerateSpeculativeSamplingDistribution
// checks on the CPU (its drafter, exact distribution and chi-square), with fewer seeds
// and only the speculative arm: the emulator runs a generation in about a second (the
// plain arm, which checks the enumeration, runs there, and the GPU's logits are held
// to the CPU's by the engine's parity tests).
//
// The bound: the critical value is the chi-square's at p = 1e-4, as there, so that a
// correct rule passes whatever the (fixed) seeds. 50 seeds (a generation takes one to
// four seconds on the emulator, on two loaded cores) make the test weak against a
// subtle error and strong against a gross one. A chi-square's expected excess over its
// degrees of freedom grows with the draws, so the subtle wrong rule that gave 407 over
// ~10 cells at 2,000 seeds (accepting a draft with probability p(x) + 0.15) would give
// about 397·50/2000 + 3 ≈ 13 here, under the critical value (24 at 5 cells, 100 seeds
// logged 5 cells): not caught. Accepting every draft is: the second draft, the least
// likely third token w after the likeliest second, would end every generation whose
// first two tokens are (a, best) — n·P(a, best) of them, about 50 × 0.3 = 15 — where
// n·P(a, best, w) ≤ 15 × 1/3 = 5 are expected (w is the least of at most TopK = 3), a
// chi-square term of at least (15 − 5)²/5 = 20 from that cell alone, and the cells
// of (a, best, x ≠ w) drained to zero add their expectations (≥ 5 each, or pooled),
// over the critical value.
func TestGenerateSpeculativeSamplingDistributionGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 50 generations on the MSL emulator (minutes); TestGenerateSpeculativeGreedyGPU covers the GPU's rewind")
	}
	m := gpuTiny(t)
	prompt := tokens(8, 512, 41)
	so := bonsai.SamplerOptions{Temperature: 1, TopK: 3}
	smp, err := bonsai.NewSampler(512, so)
	require.NoError(t, err)
	exact, best, worst := exactFirstTokens(t, m, prompt, smp)
	drafter := func() bonsai.Drafter {
		return &tableDrafter{prompt: len(prompt), next: func(gen []int32) []int32 {
			if len(gen) != 1 {
				return nil
			}
			second := best[fmt.Sprint(gen)]
			return []int32{second, worst[fmt.Sprint([]int32{gen[0], second})]}
		}}
	}
	n := gpuDistributionSeeds
	s := session(t, m)
	sp := &bonsai.SpeculativeOptions{NewDrafter: drafter, Always: true}
	counts := map[string]int{}
	var drafted, accepted int
	for seed := range n {
		opt := bonsai.GenerateOptions{MaxTokens: 4, SamplerOptions: so, Speculative: sp}
		opt.Seed = uint64(seed) + 1
		r := runGen(t, m, s, bonsai.TokenIDs(prompt...), opt)
		counts[fmt.Sprint(r.res.Tokens[:min(3, len(r.res.Tokens))])]++
		drafted += r.res.Usage.DraftedTokens
		accepted += r.res.Usage.AcceptedTokens
	}
	chi, cells := chiSquareAgainst(t, "speculative", exact, counts, n)
	crit := chiSquareCritical(cells-1, 3.719) // z of p = 1e-4
	t.Logf("chi-square %.1f (critical %.1f, %d cells); drafted %d, accepted %d", chi, crit, cells, drafted, accepted)
	assert.Less(t, chi, crit)
	assert.Greater(t, accepted, n/10, "drafts were accepted")
	assert.Less(t, accepted, drafted-n/10, "drafts were rejected")
}

// gpuDistributionSeeds is the seeds of TestGenerateSpeculativeSamplingDistributionGPU.
var gpuDistributionSeeds = 50
