package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/sse"
)

// job is one validated generation request.
type job struct {
	endpoint     string
	promptParam  string // the parameter the prompt came in, for errors
	in           bonsai.Input
	opt          bonsai.GenerateOptions
	prompt       []int32 // the prompt's tokens, for the length check and the session choice
	boundary     int     // where Generate keeps a chat checkpoint in prompt, or 0
	stream       bool
	includeUsage bool
}

// piece is one token's output.
type piece struct {
	text      string
	frag      *bonsai.ToolCallFragment // a piece of a tool call, or nil
	reasoning bool                     // part of the thinking
	lp        *tokenLP                 // its log-probabilities, when asked for
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

// tokenize returns the tokens of a job's input as Generate will feed them, to check the
// prompt's length before queueing and to choose the session that holds most of it, and
// for a chat the length of its part before the generation prompt, where Generate keeps
// a checkpoint.
func (s *Server) tokenize(in bonsai.Input, opt bonsai.GenerateOptions) (ids []int32, boundary int, err error) {
	thinking := opt.Thinking
	if len(in.Tokens) > 0 {
		return in.Tokens, 0, nil
	}
	tok := s.m.Tokenizer()
	encode := func(text string, parseSpecial bool) []int32 {
		ids := tok.Encode(text, parseSpecial)
		if id, ok := tok.BOS(); ok && tok.AddBOS() && !strings.HasPrefix(text, tok.Piece(id)) {
			ids = append([]int32{id}, ids...)
		}
		return ids
	}
	if len(in.Messages) == 0 {
		return encode(in.Text, false), 0, nil
	}
	copt := bonsai.ChatOptions{AddGenerationPrompt: true, EnableThinking: thinking, Tools: opt.Tools}
	text, err := s.m.RenderChat(in.Messages, copt)
	if err != nil {
		return nil, 0, err
	}
	ids = encode(text, true)
	copt.AddGenerationPrompt = false
	if head, err := s.m.RenderChat(in.Messages, copt); err == nil && len(head) < len(text) && strings.HasPrefix(text, head) {
		if h := encode(head, true); len(h) < len(ids) && slices.Equal(h, ids[:len(h)]) {
			boundary = len(h)
		}
	}
	return ids, boundary, nil
}

// checkPrompt checks the prompt's tokens against the vocabulary and the context.
func (s *Server) checkPrompt(j *job) *apiError {
	if len(j.prompt) == 0 {
		return invalid(j.promptParam, "The prompt is empty.")
	}
	vocab := int32(s.m.Vocab())
	for i, id := range j.prompt {
		if id < 0 || id >= vocab {
			return invalid(j.promptParam, "Invalid '%s': token id %d at index %d is outside the vocabulary [0, %d).", j.promptParam, id, i, vocab)
		}
	}
	if n, limit := len(j.prompt), s.m.ContextSize(); n > limit {
		return invalid(j.promptParam, "This model's maximum context length is %d tokens. However, your %s resulted in %d tokens.",
			limit, j.promptParam, n).withCode("context_length_exceeded")
	}
	return nil
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
	sl, err := s.pool.acquire(ctx, j.prompt)
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
	g := sl.s.Generate(ctx, j.in, j.opt)
	reasoning, first := 0, true
	for t, err := range g.Tokens() {
		if err != nil {
			break // Result returns it
		}
		if first && t.ID >= 0 {
			first = false
			s.metrics.firstToken.observe(since(arrived))
		}
		if t.Thinking && t.ID >= 0 {
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
	sl.finished(j.prompt, j.boundary, res.Usage.CachedTokens, genErr != nil)
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
		p := s.piece(tok, j.opt.LogProbs)
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
	case isSchemaError(genErr):
		fail(generationSchemaError(j.opt, genErr))
		return
	case genErr != nil && errors.Is(genErr, bonsai.ErrContextFull):
		fail(invalid(j.promptParam, "%v", genErr).withCode("context_length_exceeded"))
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

// piece turns a token into its output.
func (s *Server) piece(tok bonsai.Token, logprobs bool) piece {
	// <think>'s report carries the answer text held back before the block opened.
	p := piece{text: tok.Text, reasoning: tok.Thinking && tok.ID != s.thinkOpen, frag: tok.ToolCallFragment}
	if logprobs && tok.ID >= 0 {
		p.lp = &tokenLP{id: tok.ID, token: s.m.Tokenizer().Piece(tok.ID), logprob: tok.LogProb, top: tok.TopLogProbs}
	}
	return p
}
