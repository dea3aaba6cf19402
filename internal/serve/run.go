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
	// Prefilled, when set, is called with the prompt's usage (PromptTokens and
	// CachedTokens) once the prompt is prefilled, just before Run's start: what a
	// stream's first event states, consistent with the final usage.
	Prefilled func(bonsai.Usage)
}

// FinishDrained is the finish reason of a generation that the server ended cleanly while
// it drained (Server.StopAll): it keeps what it generated and is answered as a reply cut
// short at a limit, not as an error, so that a client gets a whole response and a
// stream its last event.
const FinishDrained bonsai.FinishReason = "drained"

// Result is a generation's result and what Run counted of it.
type Result struct {
	bonsai.Result
	ReasoningTokens int // tokens of the think block (Token.Reasoning)
}

// Run waits for a session and runs j's prompt on it: start is called before the first
// report, or at the end of a generation that yielded none (a stream's head goes out
// then, so that a refusal can still be a status; not at all when the generation fails
// first), tok with each report (false stops the generation). A generation cut short
// because the client left (ctx ended) has FinishCancelled and no error, one ended by
// StopAll FinishDrained and no error; the errors are ErrQueueFull, ErrShuttingDown (the
// server drains and takes no new work, or CancelAll stopped it) and the generation's
// own.
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
	if !s.enter() {
		return Result{}, ErrShuttingDown
	}
	defer s.leave()
	clientCtx := ctx
	// The generation ends when the client leaves, when StopAll is called (a clean
	// finish) or when CancelAll is (an error).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.hard, cancel)()
	defer context.AfterFunc(s.soft, cancel)()

	arrived := time.Now()
	sl, err := s.pool.acquire(ctx, j.Prompt.Tokens())
	if err != nil {
		switch {
		case errors.Is(err, ErrQueueFull):
			s.rejected.Add(1)
			return Result{}, fmt.Errorf("%w: %d generations are running and %d requests are queued", ErrQueueFull, s.cfg.Parallel, s.cfg.Queue)
		case s.hard.Err() != nil || s.soft.Err() != nil || errors.Is(err, bonsai.ErrClosed):
			// Still queued when the drain ended: nothing was sent, a 503 lets the client
			// retry on another replica.
			return Result{}, ErrShuttingDown
		case clientCtx.Err() != nil:
			return Result{Result: bonsai.Result{FinishReason: bonsai.FinishCancelled}}, nil
		}
		return Result{}, fmt.Errorf("no session: %w", err)
	}
	s.metrics.queueWait.observe(since(arrived))
	promptLen := int64(j.Prompt.Len())
	sl.kv.Store(promptLen)
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
	t0 := time.Now()
	g := sl.s.Generate(ctx, j.Prompt)
	begin := func() {
		if !started {
			if j.Prefilled != nil {
				j.Prefilled(g.Prefilled())
			}
			if start != nil {
				start()
			}
		}
		started = true
	}
	reasoning, generated := 0, int64(0)
	for t, err := range g.Tokens() {
		if err != nil {
			break // Result returns it
		}
		if t.ID != bonsai.NoToken {
			if generated == 0 {
				s.metrics.firstToken.observe(since(arrived))
			}
			generated++
			// The session holds the prompt and the tokens generated but this one, which
			// is fed with the next step.
			sl.kv.Store(promptLen + generated - 1)
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
	if genErr == nil && res.FinishReason == bonsai.FinishCancelled && clientCtx.Err() == nil && s.hard.Err() == nil &&
		s.soft.Err() != nil {
		res.FinishReason = FinishDrained
	}
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
	s.metrics.draftedTokens.Add(int64(res.Usage.DraftedTokens))
	s.metrics.acceptedTokens.Add(int64(res.Usage.AcceptedTokens))
	s.metrics.draftPasses.Add(int64(res.Usage.DraftPasses))
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

// SetTokenHook makes each generation call hook after each token it yields, with the
// generation's context, so that a test can hold or slow it (the serve command's test
// knob uses it too). It is not part of Config: no server needs it.
func SetTokenHook(cfg *Config, hook func(context.Context)) { cfg.tokenHook = hook }
