package bonsai_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Sessions generating at once on one model are batched — their steps share forward
// passes — and each gets the tokens and logits it gets alone.
func TestConcurrentSessionsBatch(t *testing.T) {
	path := synthtest.Path(t, "tiny", 7, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2))
	prompts := []string{"The quick brown fox", "Once upon a time", "In the beginning the", "Colourless green ideas"}
	opt := bonsai.GenerateOptions{MaxTokens: 24, SamplerOptions: bonsai.SamplerOptions{Seed: 5, Temperature: 0.8, TopK: 20}}
	alone := make([]bonsai.Result, len(prompts))
	for i, p := range prompts {
		alone[i] = generate(t, session(t, m), bonsai.Text(p), opt)
	}
	before := m.Stats().Batch
	got := make([]bonsai.Result, len(prompts))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, p := range prompts {
		s := session(t, m)
		wg.Go(func() {
			<-start
			got[i] = generate(t, s, bonsai.Text(p), opt)
		})
	}
	close(start)
	wg.Wait()
	for i := range prompts {
		require.Equal(t, alone[i].Tokens, got[i].Tokens, "prompt %d: tokens generated concurrently", i)
		require.Equal(t, alone[i].Text, got[i].Text)
	}
	after := m.Stats().Batch
	steps, seqs := after.Steps-before.Steps, after.Sequences-before.Sequences
	t.Logf("4 concurrent generations: %d forward passes for %d sequence-steps (%.2f per pass), at most %d at once",
		steps, seqs, float64(seqs)/float64(steps), after.MaxBatch)
	require.Greater(t, after.MaxBatch, 1, "concurrent steps were never batched")
	require.Less(t, steps, seqs, "batching must save forward passes")
}

// With a small batch, a long prompt is prefilled a few rows per step, interleaved with
// the running stream's decode steps, which keep coming while it is fed.
func TestLongPromptInterleaves(t *testing.T) {
	path := synthtest.Path(t, "tiny", 7, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2), bonsai.WithBatchTokens(8))
	ctx := context.Background()
	runner := session(t, m)
	require.NoError(t, runner.Prefill(ctx, []int32{1, 2, 3}))
	long := session(t, m)
	prompt := tokens(200, m.Vocab(), 3)

	var steps []time.Time
	var prefillDone time.Time
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			require.NoError(t, runner.Step(ctx, 5))
			steps = append(steps, time.Now())
		}
	})
	time.Sleep(20 * time.Millisecond) // let the stream run
	began := time.Now()
	require.NoError(t, long.Prefill(ctx, prompt))
	prefillDone = time.Now()
	close(stop)
	wg.Wait()
	during, last := 0, began
	var gap time.Duration // the longest wait of the stream for a step during the prefill
	for _, at := range steps {
		if at.After(began) && at.Before(prefillDone) {
			during++
			gap = max(gap, at.Sub(last))
			last = at
		}
	}
	total := prefillDone.Sub(began)
	t.Logf("200-token prompt at 8 tokens a pass, %v: the running stream made %d steps meanwhile, its longest wait %v", total, during, gap)
	// 200 tokens at 8 a pass take 25 passes or more; the stream joins every pass it is
	// ready for (between two of its steps it must submit the next, and a pass may start
	// without it), so it keeps stepping throughout instead of waiting for the prompt.
	assert.GreaterOrEqual(t, during, 8)
	assert.Less(t, gap, total/4, "the stream waited for a large part of the prompt")
	require.Equal(t, 200, long.Len())

	// The prompt's logits are those of the same prompt fed alone.
	solo := session(t, m)
	require.NoError(t, solo.Prefill(ctx, prompt))
	require.Equal(t, solo.Logits(), long.Logits())
}

// Cancelling one session's call ends it at the next step boundary with the tokens it
// completed; the other sessions' calls in the same steps run on untouched.
func TestCancelOneOfABatch(t *testing.T) {
	path := synthtest.Path(t, "tiny", 7, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2), bonsai.WithBatchTokens(8))
	bg := context.Background()
	a, b := session(t, m), session(t, m)
	pa, pb := tokens(120, m.Vocab(), 4), tokens(120, m.Vocab(), 5)
	// Cancelled at its fourth step boundary, not after a sleep: a fast machine fed the
	// whole prompt in the 30 ms the test once slept.
	ctx := cancelAtCheck(bg, 4)
	var errA, errB error
	var wg sync.WaitGroup
	wg.Go(func() { errA = a.Prefill(ctx, pa) })
	wg.Go(func() { errB = b.Prefill(bg, pb) })
	wg.Wait()
	require.NoError(t, errB)
	require.True(t, errors.Is(errA, context.Canceled), "%v", errA)
	require.Less(t, a.Len(), len(pa), "the cancelled prompt stopped early")
	require.Equal(t, a.Tokens(), pa[:a.Len()], "it holds a prefix of its prompt")

	solo := session(t, m)
	require.NoError(t, solo.Prefill(bg, pb))
	require.Equal(t, solo.Logits(), b.Logits(), "the other session's prompt is unaffected")
	// The cancelled one continues as a session fed that prefix.
	ref := session(t, m)
	if n := a.Len(); n > 0 {
		require.NoError(t, ref.Prefill(bg, pa[:n]))
	}
	require.NoError(t, a.Prefill(bg, pa[a.Len():]))
	require.NoError(t, ref.Prefill(bg, pa[ref.Len():]))
	require.Equal(t, ref.Logits(), a.Logits())
}

// cancelAtCheck returns a context cancelled when its Err is called the n-th time: the
// batcher asks each request's Err at every step boundary, so the request is cancelled
// after a known number of passes whatever the machine's speed.
func cancelAtCheck(parent context.Context, n int32) context.Context {
	ctx, cancel := context.WithCancel(parent)
	c := &countingContext{Context: ctx, cancel: cancel}
	c.left.Store(n)
	return c
}

type countingContext struct {
	context.Context
	cancel context.CancelFunc
	left   atomic.Int32
}

func (c *countingContext) Err() error {
	if c.left.Add(-1) == 0 {
		c.cancel()
	}
	return c.Context.Err()
}

// Many sessions stepping at once, some cancelled midway, all end cleanly (run under
// -race in CI).
func TestBatcherChurn(t *testing.T) {
	path := synthtest.Path(t, "tiny", 7, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2), bonsai.WithBatchTokens(16))
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			s, err := m.NewSession()
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(5+i*7)*time.Millisecond)
			defer cancel()
			err = s.Prefill(ctx, tokens(30+i*5, m.Vocab(), i))
			for err == nil {
				err = s.Step(ctx, int32(i))
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("session %d: %v", i, fmt.Sprint(err))
			}
			if got := len(s.Tokens()); got != s.Len() {
				t.Errorf("session %d lists %d tokens, holds %d", i, got, s.Len())
			}
		})
	}
	wg.Wait()
	require.Zero(t, m.Stats().Batch.Active)
}

// A prompt is fed even when the running streams alone would fill every pass: a step
// that has a prompt waiting leaves it a row at least, and the streams beyond the pass
// take turns.
func TestPromptNotStarved(t *testing.T) {
	path := synthtest.Path(t, "tiny", 7, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2), bonsai.WithBatchTokens(2))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	steps := make([]int, 3)
	for i := range steps {
		s := session(t, m)
		require.NoError(t, s.Prefill(context.Background(), []int32{1, 2}))
		wg.Go(func() {
			for s.Step(ctx, 3) == nil {
				steps[i]++
			}
		})
	}
	time.Sleep(10 * time.Millisecond)
	p := session(t, m)
	done := make(chan error, 1)
	go func() { done <- p.Prefill(context.Background(), tokens(20, m.Vocab(), 1)) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the prompt was not fed while three streams filled the passes")
	}
	cancel()
	wg.Wait()
	t.Logf("20-token prompt fed beside 3 streams at 2 tokens a pass; the streams made %v steps", steps)
	for i, n := range steps {
		assert.Positive(t, n, "stream %d never stepped", i)
	}
}

// Four streams stepping at once share nearly every pass: the leader lingers for the
// streams the last pass answered (its own among them), so they do not split into
// alternating half batches (which gave 2.5 sequences a pass).
func TestStreamsShareEveryPass(t *testing.T) {
	path := synthtest.Path(t, "tiny", 7, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2))
	// The tiny model's steps take well under a millisecond, so the batcher's shortest
	// wait (100 µs) decides; on a loaded machine a goroutine can wait longer than that
	// for a core (2.5–2.7 sequences a pass at load 5–8). The test is of the waiting,
	// not of the machine's scheduling.
	bonsai.SetLingerMin(m, 20*time.Millisecond)
	ctx := context.Background()
	const streams, steps = 4, 30
	ss := make([]*bonsai.Session, streams)
	for i := range ss {
		ss[i] = session(t, m)
		require.NoError(t, ss[i].Prefill(ctx, tokens(5, m.Vocab(), i)))
	}
	before := m.Stats().Batch
	stepTogether(t, ss, steps)
	after := m.Stats().Batch
	passes, seqs := after.Steps-before.Steps, after.Sequences-before.Sequences
	per := float64(seqs) / float64(passes)
	t.Logf("%d streams × %d steps: %d passes, %.2f sequences a pass", streams, steps, passes, per)
	require.EqualValues(t, streams*steps, seqs)
	require.GreaterOrEqual(t, per, 3.0)
}

// Streams released together after a lone session's step (a burst of requests after a
// quiet spell) share their first pass: the leader gathers the others, which are
// runnable but not yet submitted, rather than running its step alone and putting every
// other stream a whole pass behind (which made each burst of 2 steps take 3 passes).
func TestBurstSharesFirstPass(t *testing.T) {
	path := synthtest.Path(t, "tiny", 7, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2))
	ctx := context.Background()
	const streams, steps, bursts = 4, 2, 10
	ss := make([]*bonsai.Session, streams)
	for i := range ss {
		ss[i] = session(t, m)
		require.NoError(t, ss[i].Prefill(ctx, tokens(5, m.Vocab(), i)))
	}
	passes := int64(0)
	for burst := range bursts {
		// One lone step first, so that the burst's leader finds only itself answered.
		require.NoError(t, ss[0].Step(ctx, int32(burst)))
		before := m.Stats().Batch
		stepTogether(t, ss, steps)
		after := m.Stats().Batch
		require.EqualValues(t, streams*steps, after.Sequences-before.Sequences)
		passes += after.Steps - before.Steps
	}
	t.Logf("%d bursts of %d streams × %d steps: %d passes (%d if each burst shares every pass)", bursts, streams, steps, passes, bursts*steps)
	// Without gathering every burst takes steps+1 passes; allow a few bursts to miss
	// (a goroutine descheduled for longer than the gathering window).
	require.LessOrEqual(t, passes, int64(bursts*steps+bursts/2))
}

// stepTogether releases one goroutine per session at once, each stepping its session
// steps times (session i feeds token i), and waits for them all.
func stepTogether(t *testing.T, ss []*bonsai.Session, steps int) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range ss {
		wg.Go(func() {
			<-start
			for range steps {
				if err := s.Step(ctx, int32(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
}

// Stats.Profile counts every forward pass of the model opened WithProfiling, those of
// concurrent sessions and of sessions since closed among them: one token each time a
// token runs, and no more time than the passes took. A phase's is the difference of two
// readings. Without WithProfiling it stays zero.
func TestStatsProfile(t *testing.T) {
	path := synthtest.Path(t, "tiny", 7, ternary.PQ2_0)
	ctx := context.Background()
	m := open(t, path, bonsai.WithThreads(2), bonsai.WithProfiling(true))
	prompts := [][]int32{tokens(20, m.Vocab(), 1), tokens(9, m.Vocab(), 2), tokens(70, m.Vocab(), 3)}
	var wg sync.WaitGroup
	for _, p := range prompts {
		s := session(t, m)
		wg.Go(func() {
			defer s.Close()
			assert.NoError(t, s.Prefill(ctx, p))
			assert.NoError(t, s.Step(ctx, 1))
		})
	}
	wg.Wait()
	prefill := m.Stats()
	p := prefill.Profile
	assert.Equal(t, 20+9+70+3, p.Tokens)
	assert.Equal(t, prefill.Batch.Tokens, int64(p.Tokens))
	assert.Positive(t, p.Ternary)
	assert.Positive(t, p.GDN)
	assert.Positive(t, p.Attention)
	assert.LessOrEqual(t, p.Total(), prefill.Batch.StepTime, "the passes' time, shared out")

	s := session(t, m)
	require.NoError(t, s.Prefill(ctx, []int32{1}))
	for range 5 {
		require.NoError(t, s.Step(ctx, 2))
	}
	after := m.Stats()
	decode := after.Profile.Sub(prefill.Profile)
	assert.Equal(t, 6, decode.Tokens)
	assert.Positive(t, decode.Ternary)
	assert.LessOrEqual(t, decode.Total(), after.Batch.StepTime-prefill.Batch.StepTime)

	plain := open(t, path, bonsai.WithThreads(2))
	require.NoError(t, session(t, plain).Prefill(ctx, prompts[0]))
	assert.Equal(t, bonsai.OpProfile{}, plain.Stats().Profile)
	assert.Equal(t, int64(20), plain.Stats().Batch.Tokens)
}
