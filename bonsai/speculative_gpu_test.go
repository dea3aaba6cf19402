package bonsai_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/gpu/mslemu"
	"github.com/bonsai-go/sdk/metal/emulator"
)

// gpuTiny is specTiny on the Metal backend over the MSL emulator (the GPU engine's
// kept passes and Rewind), skipping where the emulator cannot run: it needs clang.
func gpuTiny(t *testing.T) *bonsai.Model {
	t.Helper()
	d, err := mslemu.New()
	if err != nil {
		if os.Getenv("MSLEMU_REQUIRE") != "" {
			t.Fatalf("MSL emulator unavailable: %v", err)
		}
		t.Skipf("MSL emulator unavailable (it needs clang): %v", err)
	}
	d.Close()
	return specTiny(t, bonsai.WithBackend(emulator.New()))
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
	plain := runGen(t, s, in, opt)
	p := promptLen(plain)
	// The lookup drafter on a prompt that repeats itself, so that it finds something to
	// draft.
	rep := tokens(6, 512, 9)
	lin := bonsai.TokenIDs(append(append(append([]int32(nil), rep...), rep...), rep...)...)
	lplain := runGen(t, s, lin, opt)
	ld, la := sameRun(t, lplain, runGen(t, s, lin, withSpec(opt, &bonsai.SpeculativeOptions{Always: true})), "the lookup drafter")
	t.Logf("lookup drafter: drafted %d, accepted %d", ld, la)
	assert.Positive(t, ld, "the lookup drafter drafted")
	var drafted, accepted, rejected int
	for i, so := range []*bonsai.SpeculativeOptions{
		{Always: true},
		{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter { return &oracle{want: plain.res.Tokens, prompt: p} }},
		{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter { return &shiftOracle{want: plain.res.Tokens, prompt: p} }},
	} {
		d, a := sameRun(t, plain, runGen(t, s, in, withSpec(opt, so)), fmt.Sprintf("drafter %d", i))
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
		want[i] = runGen(t, session(t, m), in(i), opt)
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
		wg.Go(func() { got[i] = runGen(t, sessions[i], in(i), withSpec(opt, so)) })
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
// the model's exact distribution, as TestGenerateSpeculativeSamplingDistribution
// checks on the CPU (the drafter, the exact distribution and the chi-square are its),
// with fewer seeds and only the speculative arm: the emulator runs a generation in
// about a second (the plain arm, which checks the enumeration, runs there on the CPU,
// and the GPU's logits are held to the CPU's by the engine's parity tests).
//
// The bound: the critical value is the chi-square's at p = 1e-4, as there. The seeds
// are fewer, so the test's power is less: a chi-square's excess over its degrees of
// freedom grows in proportion to the number of draws, so the wrong rule that gave 407
// over ~10 cells at 2,000 seeds gives about (407 − 10)·n/2000 + 10 at n: 70 at
// n = 300, against a critical value of at most 40 for the ≤ 15 cells that 300 draws
// can have of expectation ≥ 5.
func TestGenerateSpeculativeSamplingDistributionGPU(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 300 generations on the MSL emulator (minutes); TestGenerateSpeculativeGreedyGPU covers the GPU's rewind")
	}
	m := gpuTiny(t)
	prompt := tokens(8, 512, 41)
	so := bonsai.SamplerOptions{Temperature: 1, TopK: 3}
	smp, err := bonsai.NewSampler(512, so)
	require.NoError(t, err)
	exact, best, worst := exactFirstTokens(t, m, prompt, smp, func(s *bonsai.Session, _ []int32) []float32 { return s.Logits() })
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
		r := runGen(t, s, bonsai.TokenIDs(prompt...), opt)
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
var gpuDistributionSeeds = 300
