package bonsai_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/spectest"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// spec is the speculative decoding of the tests, with the default drafter.
var spec = &bonsai.SpeculativeOptions{}

// specTiny is the tiny model with the pass costs of a GPU, every width as a step, so
// that the cost model drafts while drafts are accepted at all (above minSpecGain, 2%):
// the tests see drafts, and the same drafts from run to run.
func specTiny(t testing.TB, opts ...bonsai.Option) *bonsai.Model {
	m := tiny(t, opts...)
	bonsai.SetPassCosts(m, func(int) float64 { return 1 })
	return m
}

// runGen runs a generation on s, a session of the tiny models (spectest.Generate).
func runGen(t testing.TB, s *bonsai.Session, in bonsai.Input, opt bonsai.GenerateOptions) spectest.Run {
	t.Helper()
	return spectest.Generate(t, bonsai.ModelOf(s), s, in, opt)
}

// oracleOf returns speculative options drafting with an oracle of run.
func oracleOf(run spectest.Run, prompt int) *bonsai.SpeculativeOptions {
	return &bonsai.SpeculativeOptions{NewDrafter: func() bonsai.Drafter { return &spectest.Oracle{Want: run.Res.Tokens, Prompt: prompt, Vocab: 512} }}
}

// recorder wraps a Drafter and records where each verified draft stood and how
// much of it was accepted, so that a test knows which generated tokens came from a
// draft.
type recorder struct {
	d      bonsai.Drafter
	prompt int
	at     int      // the generated index of the last draft's first token
	runs   [][2]int // [first, end) generated indices of accepted drafted tokens
}

func (r *recorder) Draft(ctx []int32, k int, dst []int32) []int32 {
	r.at = len(ctx) - r.prompt
	return r.d.Draft(ctx, k, dst)
}

func (r *recorder) Accepted(drafted, accepted int) {
	r.d.Accepted(drafted, accepted)
	if accepted > 0 {
		r.runs = append(r.runs, [2]int{r.at, r.at + accepted})
	}
}

// drafted reports whether generated token i was accepted from a draft.
func (r *recorder) drafted(i int) bool {
	for _, run := range r.runs {
		if i >= run[0] && i < run[1] {
			return true
		}
	}
	return false
}

// Greedy speculative generation is the plain generation, token for token and report
// for report, and leaves the session as plain steps do, with the lookup drafter and
// with an oracle whose drafts are accepted in long runs and rejected (a random model's
// text seldom repeats, so lookup drafts are few and rarely right).
func TestGenerateSpeculativeGreedy(t *testing.T) {
	m := specTiny(t)
	s := session(t, m)
	chat := bonsai.Chat(bonsai.Message{Role: bonsai.RoleUser, Content: "Tell me a story."})
	var drafted, accepted, rejectedPasses int
	for i, c := range []struct {
		in  bonsai.Input
		opt bonsai.GenerateOptions
	}{
		{bonsai.Text("The quick brown fox"), bonsai.GenerateOptions{MaxTokens: 300}},
		{bonsai.TokenIDs(tokens(20, 512, 5)...), bonsai.GenerateOptions{MaxTokens: 257}},
		{bonsai.TokenIDs(tokens(30, 512, 6)...), bonsai.GenerateOptions{MaxTokens: 400}},
		{chat, bonsai.GenerateOptions{MaxTokens: 300}},
		{bonsai.Text("Once upon a time"), bonsai.GenerateOptions{MaxTokens: 200, LogProbs: true, TopLogProbs: 3}},
		{bonsai.Text("Once upon a time"), bonsai.GenerateOptions{MaxTokens: 200, SamplerOptions: bonsai.SamplerOptions{RepeatPenalty: 1.2, RepeatLastN: 16}}},
		{bonsai.Text("Once upon a time"), bonsai.GenerateOptions{MaxTokens: 150, StopTokens: []int32{300}}},
	} {
		msg := fmt.Sprintf("case %d", i)
		plain := runGen(t, s, c.in, c.opt)
		o := oracleOf(plain, plain.PromptLen())
		o3 := *o
		o3.MaxDraft = 3
		for _, so := range []*bonsai.SpeculativeOptions{spec, {MaxDraft: 3}, o, &o3} {
			d, a := spectest.Same(t, plain, runGen(t, s, c.in, spectest.With(c.opt, so)), msg)
			drafted += d
			accepted += a
			if a < d {
				rejectedPasses++
			}
		}
	}
	t.Logf("drafted %d, accepted %d", drafted, accepted)
	assert.Positive(t, accepted, "drafts were accepted")
	assert.Positive(t, rejectedPasses, "drafts were rejected")
}

// A generation that ends at a token accepted from a draft (a stop token, a stop
// string, the caller leaving the loop) ends as the plain one does, and the session
// holds what plain steps leave: the tokens before the last one.
func TestGenerateSpeculativeEndsInsideDraft(t *testing.T) {
	m := specTiny(t)
	s := session(t, m)
	tok := m.Tokenizer()
	in := bonsai.Text("The quick brown fox")
	base := bonsai.GenerateOptions{MaxTokens: 300}
	// Which tokens come from drafts.
	plainFull := runGen(t, s, in, base)
	n := plainFull.PromptLen()
	orc := oracleOf(plainFull, n)
	rec := &recorder{d: orc.NewDrafter(), prompt: n}
	// Always: the recorder takes each outcome reported for a verified draft, and the
	// cost model's shadow drafts, checked against the tokens generated, are not.
	full := runGen(t, s, in, spectest.With(base, &bonsai.SpeculativeOptions{Always: true, NewDrafter: func() bonsai.Drafter { return rec }}))
	spectest.Same(t, plainFull, full, "the whole run")
	gen := full.Res.Tokens
	// Where the tiny model samples an end token depends on the float kernels' rounding
	// (AVX-512 machines run all 300 tokens, the AVX2-only Zen 3 ended at 163): what the
	// test needs is a run long enough for the checks below (MaxTokens up to 123, a
	// context of 40 tokens past the prompt).
	require.Greater(t, len(gen), 123, "the generation (%s) is too short for the checks", full.Res.FinishReason)
	var stopTokens, stopStrings int
	seen := map[int32]bool{}
	for i, x := range gen {
		first := !seen[x]
		seen[x] = true
		if !rec.drafted(i) {
			continue
		}
		// A stop token at its first occurrence, accepted from a draft.
		if first && stopTokens < 6 {
			opt := base
			opt.StopTokens = []int32{x}
			plain := runGen(t, s, in, opt)
			require.Len(t, plain.Res.Tokens, i+1)
			spectest.Same(t, plain, runGen(t, s, in, spectest.With(opt, orc)), fmt.Sprintf("stop token %d at %d", x, i))
			stopTokens++
		}
		// A stop string that ends within token i's text, at its first occurrence.
		text := tok.Decode(gen[:i+1])
		prev := tok.Decode(gen[:i])
		if stopStrings < 6 && len(text) > len(prev) && strings.HasPrefix(text, prev) {
			stop := text[max(len(prev)-3, 0):]
			if !strings.Contains(prev, stop) && strings.TrimSpace(stop) != "" {
				opt := base
				opt.Stop = []string{stop}
				plain := runGen(t, s, in, opt)
				if plain.Res.StopSequence == stop && len(plain.Res.Tokens) == i+1 {
					spectest.Same(t, plain, runGen(t, s, in, spectest.With(opt, orc)), fmt.Sprintf("stop %q at %d", stop, i))
					stopStrings++
				}
			}
		}
	}
	t.Logf("%d stop tokens and %d stop strings inside drafts", stopTokens, stopStrings)
	assert.Positive(t, stopTokens)
	assert.Positive(t, stopStrings)

	// MaxTokens and the context's end: the drafts stop short of them, and the
	// generation ends as the plain one does.
	for _, mt := range []int{1, 2, 3, 9, 50, 123} {
		opt := base
		opt.MaxTokens = mt
		spectest.Same(t, runGen(t, s, in, opt), runGen(t, s, in, spectest.With(opt, orc)), fmt.Sprintf("MaxTokens %d", mt))
	}
	short := specTiny(t, bonsai.WithContextSize(n+40))
	ss := session(t, short)
	plain := runGen(t, ss, in, base)
	require.Equal(t, bonsai.FinishContextFull, plain.Res.FinishReason)
	spectest.Same(t, plain, runGen(t, ss, in, spectest.With(base, orc)), "context full")

	// The caller leaves the loop at a drafted token.
	i := -1
	for j := range gen {
		if j > 20 && rec.drafted(j) {
			i = j
			break
		}
	}
	require.Positive(t, i)
	leave := func(opt bonsai.GenerateOptions) ([]int32, []int32) {
		s.Reset()
		g := start(t, context.Background(), s, in, opt)
		n := 0
		for tk, err := range g.Tokens() {
			require.NoError(t, err)
			if tk.ID != bonsai.NoToken {
				n++
			}
			if n == i+1 {
				break
			}
		}
		res, err := g.Result()
		require.NoError(t, err)
		assert.Equal(t, bonsai.FinishCancelled, res.FinishReason)
		return res.Tokens, s.Tokens()
	}
	wantGen, wantHeld := leave(base)
	gotGen, gotHeld := leave(spectest.With(base, orc))
	assert.Equal(t, wantGen, gotGen)
	assert.Equal(t, wantHeld, gotHeld)
}

// Sessions generating at once, their passes batched, speculate as one alone does.
func TestGenerateSpeculativeConcurrent(t *testing.T) {
	m := specTiny(t)
	const n = 4
	want := make([]spectest.Run, n)
	in := func(i int) bonsai.Input { return bonsai.TokenIDs(tokens(10+i, 512, 20+i)...) }
	opt := bonsai.GenerateOptions{MaxTokens: 200}
	for i := range n {
		want[i] = runGen(t, session(t, m), in(i), opt)
	}
	sessions := make([]*bonsai.Session, n)
	for i := range sessions {
		sessions[i] = session(t, m)
	}
	got := make([]spectest.Run, n)
	var wg sync.WaitGroup
	for i := range n {
		o := oracleOf(want[i], want[i].PromptLen())
		wg.Go(func() { got[i] = runGen(t, sessions[i], in(i), spectest.With(opt, o)) })
	}
	wg.Wait()
	accepted := 0
	for i := range n {
		_, a := spectest.Same(t, want[i], got[i], fmt.Sprintf("session %d", i))
		accepted += a
	}
	assert.Positive(t, accepted)
}

// Speculation drafts nothing where it is excluded: a backend whose states cannot
// rewind. The output is the plain one. (Under a grammar and a thinking budget it
// drafts: TestGenerateSpeculativeGrammarGreedy.)
func TestGenerateSpeculativeExcluded(t *testing.T) {
	m := specTiny(t)
	s := session(t, m)
	// The backend cannot rewind: Verify is unsupported and the generation steps.
	nr := specTiny(t, bonsai.WithBackend(noRewindBackend{bonsai.CPU()}))
	in := bonsai.Text("The quick brown fox")
	opt := bonsai.GenerateOptions{MaxTokens: 200}
	plain := runGen(t, s, in, opt)
	ns := session(t, nr)
	_, err := ns.Verify(context.Background(), []int32{1})
	require.ErrorIs(t, err, errors.ErrUnsupported)
	d, _ := spectest.Same(t, plain, runGen(t, ns, in, spectest.With(opt, spec)), "no rewind")
	assert.Zero(t, d)
}

// noRewindBackend wraps the CPU backend in an engine whose states cannot rewind.
type noRewindBackend struct{ bonsai.Backend }

func (b noRewindBackend) Load(ctx context.Context, w backend.Model, opt backend.LoadOptions) (backend.Engine, error) {
	e, err := b.Backend.Load(ctx, w, opt)
	if err != nil {
		return nil, err
	}
	return noRewindEngine{e}, nil
}

type noRewindEngine struct{ backend.Engine }

// plainState hides its state's Rewind.
type plainState struct{ backend.State }

func (e noRewindEngine) NewState(opt backend.StateOptions) (backend.State, error) {
	st, err := e.Engine.NewState(opt)
	if err != nil {
		return nil, err
	}
	return plainState{st}, nil
}

func (e noRewindEngine) Forward(ctx context.Context, batch []backend.Sequence) error {
	inner := slices.Clone(batch)
	for i := range inner {
		inner[i].State = inner[i].State.(plainState).State
	}
	return e.Engine.Forward(ctx, inner)
}

// Speculative sampling draws the first tokens with the model's distribution: over
// many seeds, the frequencies of the first three tokens (top-k 3 at temperature 1:
// 27 sequences) match the exact probabilities, computed from the logits with
// Sampler.Distribution, by a chi-square test. A drafter proposes, after the first
// token, the most likely second token and the least likely third, so that drafts are
// accepted and rejected at both depths.
//
// The bound: the seeds are fixed, so the test is deterministic; the critical value is
// the chi-square's at p = 1e-4, so that a correct rule passes whatever the seeds (the
// plain generation is held to the same test, which checks the reference). A wrong
// rule fails by far: accepting a drafted token with probability p(x) + 0.15 instead of
// p(x), tried by editing verifyOne, gave a chi-square of 407 against a bound of 48;
// accepting every draft, or drawing the next token from p rather than from the
// residual after a rejection, shifts the drafted token's probability further.
func TestGenerateSpeculativeSamplingDistribution(t *testing.T) {
	m := specTiny(t)
	f := spectest.NewFirstTokens(t, m)
	const n = 2000
	s := session(t, m)
	f.Check(t, "plain", s, nil, n)
	f.Check(t, "speculative", s, &bonsai.SpeculativeOptions{NewDrafter: f.Drafter}, n)
	assert.Greater(t, f.Accepted, n/10, "drafts were accepted")
	assert.Less(t, f.Accepted, f.Drafted-n/10, "drafts were rejected")
}

// wildDrafter proposes more tokens than asked, some outside the vocabulary.
type wildDrafter struct{ n int }

func (d *wildDrafter) Draft(ctx []int32, k int, dst []int32) []int32 {
	d.n++
	for i := range k + 3 {
		x := int32(i * 37 % 512)
		if d.n%3 == 0 && i == 2 {
			x = 512 + int32(i)
		}
		dst = append(dst, x)
	}
	return dst
}

func (d *wildDrafter) Accepted(drafted, accepted int) {}

// A drafter that proposes more than asked, or tokens outside the vocabulary, changes
// nothing: the generation verifies only the first k valid ones.
func TestGenerateSpeculativeWildDrafter(t *testing.T) {
	m := specTiny(t)
	s := session(t, m)
	in := bonsai.Text("The quick brown fox")
	opt := bonsai.GenerateOptions{MaxTokens: 40}
	sp := &bonsai.SpeculativeOptions{MaxDraft: 4, NewDrafter: func() bonsai.Drafter { return &wildDrafter{} }}
	plain := runGen(t, s, in, opt)
	d, _ := spectest.Same(t, plain, runGen(t, s, in, spectest.With(opt, sp)), "wild drafter")
	assert.Positive(t, d)
	assert.LessOrEqual(t, d, 4*len(plain.Res.Tokens))
}

// On an engine that takes the argmax itself, the plain steps between drafts use it and
// the verifying passes read the logits: the output is still the plain one.
func TestGenerateSpeculativeGreedyEngine(t *testing.T) {
	path := synthtest.Path(t, "tiny", 11, ternary.PQ2_0)
	calls := 0
	dev := open(t, path, bonsai.WithThreads(2), bonsai.WithBackend(greedyBackend{bonsai.CPU(), &calls}))
	bonsai.SetPassCosts(dev, func(int) float64 { return 1 })
	s := session(t, specTiny(t))
	in := bonsai.Text("The quick brown fox")
	opt := bonsai.GenerateOptions{MaxTokens: 120}
	plain := runGen(t, s, in, opt)
	// The oracle drafts nothing after token 60, so that the engine's steps come last.
	head := plain
	head.Res.Tokens = plain.Res.Tokens[:60]
	o2 := oracleOf(head, plain.PromptLen())
	got := runGen(t, session(t, dev), in, spectest.With(opt, o2))
	_, a := spectest.Same(t, plain, got, "greedy engine")
	assert.Positive(t, a)
	assert.Positive(t, calls, "the steps without a draft went through ForwardGreedy")
}
