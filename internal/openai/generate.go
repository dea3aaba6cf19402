package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/sse"
)

// job is one validated generation request.
type job struct {
	endpoint     string
	promptParam  string         // the parameter the prompt came in, for errors
	p            *bonsai.Prompt // the prepared generation
	stream       bool
	includeUsage bool
}

// piece is one report's output.
type piece struct {
	text, thinking string
	frags          []bonsai.ToolCallFragment // pieces of tool calls
	reasoning      bool                      // a token of the think block
	lp             *tokenLP                  // its log-probabilities, when asked for
}

type tokenLP struct {
	id      int32
	token   string // the token's bytes (JSON shows invalid UTF-8 as U+FFFD)
	logprob float32
	top     []bonsai.TokenLogProb
}

// usage is the usage object of a response.
type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// responder shapes one endpoint's output.
type responder interface {
	// head is the first event of a stream, or nil.
	head() any
	// chunk is the event of one piece, or nil to send none.
	chunk(p piece) any
	// tail is the event that carries the finish reason.
	tail(finish string) any
	// usage is the event that carries the usage (stream_options.include_usage).
	usage(u usage) any
	// whole is the response of a request that did not stream.
	whole(res bonsai.Result, pieces []piece, finish string, u usage) any
}

// Errors of Execute, for other APIs' handlers to map to their own shapes.
var (
	// ErrQueueFull: every session is busy and the queue is full; retry later.
	ErrQueueFull = errQueueFull
	// ErrShuttingDown: the server is stopping and takes no more generations, or stopped
	// this one.
	ErrShuttingDown = errors.New("openai: the server is shutting down")
)

// execute queues a job for a session and runs it: start is called before the first
// token, or at the end of a generation that yielded none (a stream's head goes out
// then, so that a refusal can still be a status), tok with each token (false stops
// the generation). It returns the result and how many
// tokens were thinking. A generation cut short because the client left has
// FinishCancelled and no error; one stopped by CancelAll, ErrShuttingDown.
func (s *Server) execute(ctx context.Context, j *job, start func(), tok func(bonsai.Token) bool) (bonsai.Result, int, error) {
	res, reasoning, err := s.generate(ctx, j, start, tok)
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
	return res, reasoning, err
}

// generate is execute but for the request's outcome.
func (s *Server) generate(ctx context.Context, j *job, start func(), tok func(bonsai.Token) bool) (bonsai.Result, int, error) {
	if s.hard.Err() != nil {
		return bonsai.Result{}, 0, ErrShuttingDown
	}
	s.active.Add(1)
	defer s.active.Done()
	clientCtx := ctx
	// The generation ends when the client leaves or when CancelAll is called.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.hard, cancel)()

	arrived := time.Now()
	sl, err := s.pool.acquire(ctx, j.p.Tokens())
	if err != nil {
		switch {
		case errors.Is(err, errQueueFull):
			s.rejected.Add(1)
			return bonsai.Result{}, 0, fmt.Errorf("%w: %d generations are running and %d requests are queued", ErrQueueFull, s.cfg.Parallel, s.cfg.Queue)
		case s.hard.Err() != nil || errors.Is(err, bonsai.ErrClosed):
			return bonsai.Result{}, 0, ErrShuttingDown
		case clientCtx.Err() != nil:
			return bonsai.Result{FinishReason: bonsai.FinishCancelled}, 0, nil
		}
		return bonsai.Result{}, 0, fmt.Errorf("no session: %w", err)
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
	// start waits for the first token: options the engine refuses (a hostile schema)
	// fail before any, and still get a status of their own.
	started := false
	begin := func() {
		if !started && start != nil {
			start()
		}
		started = true
	}

	t0 := time.Now()
	g := sl.s.Generate(ctx, j.p)
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
	sl.finished(j.p.Tokens(), j.p.Checkpoint(), res.Usage.CachedTokens, genErr != nil)
	release()
	s.generations.Add(1)
	if genErr == nil && res.FinishReason == bonsai.FinishCancelled {
		s.cancelled.Add(1)
	}
	s.metrics.promptTokens.Add(int64(res.Usage.PromptTokens))
	s.metrics.cachedTokens.Add(int64(res.Usage.CachedTokens))
	s.metrics.completionTokens.Add(int64(res.Usage.CompletionTokens))
	if s.cfg.OnGenerationEnd != nil {
		s.cfg.OnGenerationEnd(GenerationEnd{Endpoint: j.endpoint, FinishReason: res.FinishReason, Err: genErr,
			PromptTokens: res.Usage.PromptTokens, CachedTokens: res.Usage.CachedTokens, CompletionTokens: res.Usage.CompletionTokens,
			Started: t0, Ended: time.Now()})
	}
	if genErr == nil && res.FinishReason != bonsai.FinishCancelled {
		begin()
	}
	if genErr == nil && res.FinishReason == bonsai.FinishCancelled && clientCtx.Err() == nil && s.hard.Err() != nil {
		return res, reasoning, fmt.Errorf("%w: the generation was stopped", ErrShuttingDown)
	}
	return res, reasoning, genErr
}

// run queues a job for a session, runs it and writes the response.
func (s *Server) run(w http.ResponseWriter, r *http.Request, j *job, out responder) {
	var ev *sse.Writer
	start := func() {
		if j.stream {
			ev = sse.New(w, s.cfg.WriteTimeout)
			if h := out.head(); h != nil {
				ev.Send("", h)
			}
		}
	}
	var pieces []piece
	res, reasoning, genErr := s.execute(r.Context(), j, start, func(tok bonsai.Token) bool {
		p := s.piece(tok, j.p.Options().LogProbs)
		if ev == nil {
			pieces = append(pieces, p)
			return true
		}
		c := out.chunk(p)
		return c == nil || ev.Send("", c) == nil
	})
	if ev != nil {
		defer ev.End()
	}
	fail := func(e *apiError) {
		if ev != nil {
			sendError(ev, e)
		} else {
			writeError(w, e)
		}
	}
	switch {
	case errors.Is(genErr, ErrQueueFull):
		fail(overloaded(fmt.Sprintf("The server is busy: %d generations are running and %d requests are queued. Retry later.",
			s.cfg.Parallel, s.cfg.Queue), "queue_full", 1))
		return
	case errors.Is(genErr, ErrShuttingDown):
		msg := "The server is shutting down."
		if ev != nil {
			msg = "The server is shutting down: the generation was stopped."
		}
		fail(overloaded(msg, "shutting_down", 0))
		return
	case genErr != nil:
		fail(serverError("Generation failed: %v.", genErr))
		return
	case res.FinishReason == bonsai.FinishCancelled:
		return // the client is gone
	}
	finish := "stop"
	switch res.FinishReason {
	case bonsai.FinishLength, bonsai.FinishContextFull:
		finish = "length"
	case bonsai.FinishToolCalls:
		finish = "tool_calls"
	}
	var u usage
	u.PromptTokens, u.CompletionTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = res.Usage.CachedTokens
	u.CompletionTokensDetails.ReasoningTokens = reasoning
	if ev == nil {
		writeJSON(w, http.StatusOK, out.whole(res, pieces, finish, u))
		return
	}
	ev.Send("", out.tail(finish))
	if j.includeUsage {
		ev.Send("", out.usage(u))
	}
	ev.Write([]byte("data: [DONE]\n\n"))
}

// piece turns a report into its output.
func (s *Server) piece(tok bonsai.Token, logprobs bool) piece {
	p := piece{text: tok.Text, thinking: tok.Thinking, reasoning: tok.Reasoning, frags: tok.ToolCallFragments}
	if logprobs && tok.ID != bonsai.NoToken {
		p.lp = &tokenLP{id: tok.ID, token: s.m.Tokenizer().Piece(tok.ID), logprob: tok.LogProb, top: tok.TopLogProbs}
	}
	return p
}
