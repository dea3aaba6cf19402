package emulator_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/spectest"
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
	s := spectest.Session(t, m)
	opt := bonsai.GenerateOptions{MaxTokens: 40}
	in := bonsai.TokenIDs(spectest.Tokens(12, 512, 5)...)
	plain := spectest.Generate(t, m, s, in, opt)
	p := plain.PromptLen()
	// The lookup drafter on a prompt that repeats itself. (It drafted nothing on this
	// model in these runs, so only the identity is asserted; the oracles draft.)
	rep := spectest.Tokens(6, 512, 9)
	lin := bonsai.TokenIDs(append(append(append([]int32(nil), rep...), rep...), rep...)...)
	lplain := spectest.Generate(t, m, s, lin, opt)
	ld, la := spectest.Same(t, lplain, spectest.Generate(t, m, s, lin, spectest.With(opt, &bonsai.SpeculativeOptions{Always: true})), "the lookup drafter")
	t.Logf("lookup drafter: drafted %d, accepted %d", ld, la)
	var drafted, accepted, rejected int
	for i, so := range []*bonsai.SpeculativeOptions{
		{Always: true},
		{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter { return &spectest.Oracle{Want: plain.Res.Tokens, Prompt: p, Vocab: 512} }},
		{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter { return &shiftOracle{want: plain.Res.Tokens, prompt: p} }},
	} {
		d, a := spectest.Same(t, plain, spectest.Generate(t, m, s, in, spectest.With(opt, so)), fmt.Sprintf("drafter %d", i))
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
	want := make([]spectest.Run, n)
	in := func(i int) bonsai.Input { return bonsai.TokenIDs(spectest.Tokens(10+i, 512, 20+i)...) }
	opt := bonsai.GenerateOptions{MaxTokens: 30}
	for i := range n {
		want[i] = spectest.Generate(t, m, spectest.Session(t, m), in(i), opt)
	}
	sessions := make([]*bonsai.Session, n)
	for i := range sessions {
		sessions[i] = spectest.Session(t, m)
	}
	got := make([]spectest.Run, n)
	var wg sync.WaitGroup
	for i := range n {
		p := want[i].PromptLen()
		so := &bonsai.SpeculativeOptions{Always: true, MaxDraft: 4, NewDrafter: func() bonsai.Drafter {
			if i%2 == 0 {
				return &shiftOracle{want: want[i].Res.Tokens, prompt: p}
			}
			return &spectest.Oracle{Want: want[i].Res.Tokens, Prompt: p, Vocab: 512}
		}}
		wg.Go(func() { got[i] = spectest.Generate(t, m, sessions[i], in(i), spectest.With(opt, so)) })
	}
	wg.Wait()
	drafted, accepted := 0, 0
	for i := range n {
		d, a := spectest.Same(t, want[i], got[i], fmt.Sprintf("session %d", i))
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
	f := spectest.NewFirstTokens(t, m)
	n := gpuDistributionSeeds
	f.Check(t, "speculative", spectest.Session(t, m), &bonsai.SpeculativeOptions{NewDrafter: f.Drafter, Always: true}, n)
	assert.Greater(t, f.Accepted, n/10, "drafts were accepted")
	assert.Less(t, f.Accepted, f.Drafted-n/10, "drafts were rejected")
}

// gpuDistributionSeeds is the seeds of TestGenerateSpeculativeSamplingDistributionGPU.
var gpuDistributionSeeds = 50
