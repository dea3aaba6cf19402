package serve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
)

// Job is one generation for Run, validated by its dialect and prepared with the
// server's Model().Prepare, so that a bad request is answered before it queues.
type Job struct {
	Endpoint string // names the generation in GenerationEnd
	// Prompt is the generation, a prompt of the server's model: the pool gives the job
	// the idle session holding the longest prefix of its tokens.
	Prompt *bonsai.Prompt
}

// Result is a generation's result and what Run counted of it.
type Result struct {
	bonsai.Result
	ReasoningTokens int // tokens of the think block (Token.Reasoning)
}

// Run waits for a session and runs j's prompt on it: start is called before the first
// report, or at the end of a generation that yielded none (a stream's head goes out
// then, so that a refusal can still be a status; not at all when the generation fails
// first), tok with each report (false stops the generation). A generation cut short
// because the client left (ctx ended) has FinishCancelled and no error; the errors are
// ErrQueueFull, ErrShuttingDown (the server stopped it, or stops) and the
// generation's own.
func (s *Server) Run(ctx context.Context, j Job, start func(), tok func(bonsai.Token) bool) (Result, error) {
	res, err := s.run(ctx, j, start, tok)
	outcome := outcomeCompleted
	switch {
	case errors.Is(err, ErrQueueFull) || errors.Is(err, ErrShuttingDown) && res.FinishReason != bonsai.FinishCancelled:
		outcome = outcomeRejected
	case err != nil:
		outcome = outcomeError
	case res.FinishReason == bonsai.FinishCancelled:
		outcome = outcomeCancelled
	}
	setOutcome(ctx, outcome)
	return res, err
}

// run is Run but for the request's outcome.
func (s *Server) run(ctx context.Context, j Job, start func(), tok func(bonsai.Token) bool) (Result, error) {
	if s.hard.Err() != nil {
		return Result{}, ErrShuttingDown
	}
	s.active.Add(1)
	defer s.active.Done()
	clientCtx := ctx
	// The generation ends when the client leaves or when CancelAll is called.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.hard, cancel)()

	arrived := time.Now()
	sl, err := s.pool.acquire(ctx, j.Prompt.Tokens())
	if err != nil {
		switch {
		case errors.Is(err, ErrQueueFull):
			s.rejected.Add(1)
			return Result{}, fmt.Errorf("%w: %d generations are running and %d requests are queued", ErrQueueFull, s.cfg.Parallel, s.cfg.Queue)
		case s.hard.Err() != nil || errors.Is(err, bonsai.ErrClosed):
			return Result{}, ErrShuttingDown
		case clientCtx.Err() != nil:
			return Result{Result: bonsai.Result{FinishReason: bonsai.FinishCancelled}}, nil
		}
		return Result{}, fmt.Errorf("no session: %w", err)
	}
	s.metrics.queueWait.observe(since(arrived))
	held := true
	release := func() {
		if held {
			held = false
			s.pool.release(sl)
		}
	}
	defer release()
	// start waits for the first token: a generation that fails before any still gets a
	// status of its own.
	started := false
	begin := func() {
		if !started && start != nil {
			start()
		}
		started = true
	}

	t0 := time.Now()
	g := sl.s.Generate(ctx, j.Prompt)
	reasoning, first := 0, true
	for t, err := range g.Tokens() {
		if err != nil {
			break // Result returns it
		}
		if first && t.ID != bonsai.NoToken {
			first = false
			s.metrics.firstToken.observe(since(arrived))
		}
		if t.Reasoning {
			reasoning++
		}
		begin()
		if !tok(t) {
			break // the client is gone: leaving the loop cancels the generation
		}
		if s.cfg.tokenHook != nil {
			s.cfg.tokenHook(ctx)
		}
	}
	res, genErr := g.Result()
	if genErr != nil {
		sl.s.Reset() // start the next request afresh
	}
	sl.finished(j.Prompt.Tokens(), j.Prompt.Checkpoint(), res.Usage.CachedTokens, genErr != nil)
	release()
	s.generations.Add(1)
	if genErr == nil && res.FinishReason == bonsai.FinishCancelled {
		s.cancelled.Add(1)
	}
	s.metrics.promptTokens.Add(int64(res.Usage.PromptTokens))
	s.metrics.cachedTokens.Add(int64(res.Usage.CachedTokens))
	s.metrics.completionTokens.Add(int64(res.Usage.CompletionTokens))
	if s.cfg.OnGenerationEnd != nil {
		s.cfg.OnGenerationEnd(GenerationEnd{Endpoint: j.Endpoint, FinishReason: res.FinishReason, Err: genErr,
			PromptTokens: res.Usage.PromptTokens, CachedTokens: res.Usage.CachedTokens, CompletionTokens: res.Usage.CompletionTokens,
			Started: t0, Ended: time.Now()})
	}
	if genErr == nil && res.FinishReason != bonsai.FinishCancelled {
		begin()
	}
	out := Result{Result: res, ReasoningTokens: reasoning}
	if genErr == nil && res.FinishReason == bonsai.FinishCancelled && clientCtx.Err() == nil && s.hard.Err() != nil {
		return out, fmt.Errorf("%w: the generation was stopped", ErrShuttingDown)
	}
	return out, genErr
}
