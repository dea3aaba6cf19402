package bonsai_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
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

// specRun is what a generation says: its reports, its result with the timings
// cleared (they differ from run to run), and the tokens the session holds after it.
type specRun struct {
	reports []bonsai.Token
	res     bonsai.Result
	held    []int32
}

func runGen(t testing.TB, s *bonsai.Session, in bonsai.Input, opt bonsai.GenerateOptions) specRun {
	t.Helper()
	s.Reset()
	reports, res := collect(t, start(t, context.Background(), s, in, opt))
	u := &res.Usage
	u.PrefillTokensPerSecond, u.DecodeTokensPerSecond, u.TimeToFirstToken = 0, 0, 0
	return specRun{reports, res, s.Tokens()}
}

// promptLen returns the length of a run's prompt: the session holds it and every
// generated token but the last.
func promptLen(r specRun) int { return len(r.held) - len(r.res.Tokens) + 1 }

// withSpec returns opt with speculation on.
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

// oracle drafts what a plain run generated, want, with every seventh generated token
// replaced by another, so that drafts are accepted in long runs and rejected.
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

// oracleOf returns speculative options drafting with an oracle of run.
func oracleOf(run specRun, prompt int) *bonsai.SpeculativeOptions {
	return &bonsai.SpeculativeOptions{NewDrafter: func() bonsai.Drafter { return &oracle{want: run.res.Tokens, prompt: prompt} }}
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
		o := oracleOf(plain, promptLen(plain))
		o3 := *o
		o3.MaxDraft = 3
		for _, so := range []*bonsai.SpeculativeOptions{spec, {MaxDraft: 3}, o, &o3} {
			d, a := sameRun(t, plain, runGen(t, s, c.in, withSpec(c.opt, so)), msg)
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
	n := promptLen(plainFull)
	orc := oracleOf(plainFull, n)
	rec := &recorder{d: orc.NewDrafter(), prompt: n}
	// Always: the recorder takes each outcome reported for a verified draft, and the
	// cost model's shadow drafts, checked against the tokens generated, are not.
	full := runGen(t, s, in, withSpec(base, &bonsai.SpeculativeOptions{Always: true, NewDrafter: func() bonsai.Drafter { return rec }}))
	sameRun(t, plainFull, full, "the whole run")
	gen := full.res.Tokens
	require.Len(t, gen, 300)
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
			require.Len(t, plain.res.Tokens, i+1)
			sameRun(t, plain, runGen(t, s, in, withSpec(opt, orc)), fmt.Sprintf("stop token %d at %d", x, i))
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
				if plain.res.StopSequence == stop && len(plain.res.Tokens) == i+1 {
					sameRun(t, plain, runGen(t, s, in, withSpec(opt, orc)), fmt.Sprintf("stop %q at %d", stop, i))
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
		sameRun(t, runGen(t, s, in, opt), runGen(t, s, in, withSpec(opt, orc)), fmt.Sprintf("MaxTokens %d", mt))
	}
	short := specTiny(t, bonsai.WithContextSize(n+40))
	ss := session(t, short)
	plain := runGen(t, ss, in, base)
	require.Equal(t, bonsai.FinishContextFull, plain.res.FinishReason)
	sameRun(t, plain, runGen(t, ss, in, withSpec(base, orc)), "context full")

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
	gotGen, gotHeld := leave(withSpec(base, orc))
	assert.Equal(t, wantGen, gotGen)
	assert.Equal(t, wantHeld, gotHeld)
}

// Sessions generating at once, their passes batched, speculate as one alone does.
func TestGenerateSpeculativeConcurrent(t *testing.T) {
	m := specTiny(t)
	const n = 4
	want := make([]specRun, n)
	in := func(i int) bonsai.Input { return bonsai.TokenIDs(tokens(10+i, 512, 20+i)...) }
	opt := bonsai.GenerateOptions{MaxTokens: 200}
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
		o := oracleOf(want[i], promptLen(want[i]))
		wg.Go(func() { got[i] = runGen(t, sessions[i], in(i), withSpec(opt, o)) })
	}
	wg.Wait()
	accepted := 0
	for i := range n {
		_, a := sameRun(t, want[i], got[i], fmt.Sprintf("session %d", i))
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
	d, _ := sameRun(t, plain, runGen(t, ns, in, withSpec(opt, spec)), "no rewind")
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
	prompt := tokens(8, 512, 41)
	so := bonsai.SamplerOptions{Temperature: 1, TopK: 3}
	smp, err := bonsai.NewSampler(512, so)
	require.NoError(t, err)
	// The exact distribution of the first three tokens (shorter when one ends the
	// generation), with Step and Distribution.
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
	const n = 2000
	s := session(t, m)
	count := func(sp *bonsai.SpeculativeOptions) (map[string]int, int, int) {
		counts := map[string]int{}
		var drafted, accepted int
		for seed := range n {
			// MaxTokens 4 leaves room for a draft of two after the first token.
			opt := bonsai.GenerateOptions{MaxTokens: 4, SamplerOptions: so, Speculative: sp}
			opt.Seed = uint64(seed) + 1
			r := runGen(t, s, bonsai.TokenIDs(prompt...), opt)
			counts[fmt.Sprint(r.res.Tokens[:min(3, len(r.res.Tokens))])]++
			drafted += r.res.Usage.DraftedTokens
			accepted += r.res.Usage.AcceptedTokens
		}
		return counts, drafted, accepted
	}
	for _, c := range []struct {
		name string
		sp   *bonsai.SpeculativeOptions
	}{{"plain", nil}, {"speculative", &bonsai.SpeculativeOptions{NewDrafter: drafter}}} {
		counts, drafted, accepted := count(c.sp)
		chi, cells := chiSquareAgainst(t, c.name, exact, counts, n)
		crit := chiSquareCritical(cells-1, 3.719) // z of p = 1e-4
		t.Logf("%s: chi-square %.1f (critical %.1f, %d cells); drafted %d, accepted %d", c.name, chi, crit, cells, drafted, accepted)
		assert.Less(t, chi, crit, c.name)
		if c.sp != nil {
			assert.Greater(t, accepted, n/10, "drafts were accepted")
			assert.Less(t, accepted, drafted-n/10, "drafts were rejected")
		}
	}
}

// exactFirstTokens enumerates, with Step and the Sampler's Distribution over the
// logits that logits gives after the prompt and seq, the exact probability of every
// sequence of the first three generated tokens (shorter when one ends the generation),
// keyed by fmt.Sprint of the tokens; best and worst give, after each prefix, its most
// likely next token and its least likely one with a chance.
func exactFirstTokens(t *testing.T, m *bonsai.Model, prompt []int32, smp *bonsai.Sampler,
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
	root := session(t, m)
	require.NoError(t, root.Prefill(ctx, prompt))
	walk(root, nil, 1)
	return exact, best, worst
}

// chiSquareAgainst returns the chi-square statistic of counts (n draws) against the
// exact probabilities, and its number of cells: sequences expected fewer than 5 times
// are pooled into one cell, as the approximation needs. A counted sequence of
// probability 0 fails the test.
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
	d, _ := sameRun(t, plain, runGen(t, s, in, withSpec(opt, sp)), "wild drafter")
	assert.Positive(t, d)
	assert.LessOrEqual(t, d, 4*len(plain.res.Tokens))
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
	head.res.Tokens = plain.res.Tokens[:60]
	o2 := oracleOf(head, promptLen(plain))
	got := runGen(t, session(t, dev), in, withSpec(opt, o2))
	_, a := sameRun(t, plain, got, "greedy engine")
	assert.Positive(t, a)
	assert.Positive(t, calls, "the steps without a draft went through ForwardGreedy")
}
