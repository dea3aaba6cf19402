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
	reasoning bool     // part of the thinking
	lp        *tokenLP // its log-probabilities, when asked for
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
func (s *Server) tokenize(in bonsai.Input, thinking *bool) (ids []int32, boundary int, err error) {
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
	copt := bonsai.ChatOptions{AddGenerationPrompt: true, EnableThinking: thinking}
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
	vocab := int32(s.m.Config().Vocab)
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

// run queues a job for a session, runs it and writes the response.
func (s *Server) run(w http.ResponseWriter, r *http.Request, j *job, out responder) {
	if s.hard.Err() != nil {
		writeError(w, overloaded("The server is shutting down.", "shutting_down", 0))
		return
	}
	s.active.Add(1)
	defer s.active.Done()
	// The generation ends when the client leaves or when CancelAll is called.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.hard, cancel)()

	sl, err := s.pool.acquire(ctx, j.prompt)
	if err != nil {
		switch {
		case errors.Is(err, errQueueFull):
			s.rejected.Add(1)
			writeError(w, overloaded(fmt.Sprintf("The server is busy: %d generations are running and %d requests are queued. Retry later.",
				s.cfg.Parallel, s.cfg.Queue), "queue_full", 1))
		case s.hard.Err() != nil || errors.Is(err, bonsai.ErrClosed):
			writeError(w, overloaded("The server is shutting down.", "shutting_down", 0))
		case r.Context().Err() != nil:
			// The client left while queued: there is no one to answer.
		default:
			writeError(w, serverError("No session: %v.", err))
		}
		return
	}
	held := true
	release := func() {
		if held {
			held = false
			s.pool.release(sl)
		}
	}
	defer release()

	var sse *sseWriter
	if j.stream {
		sse = newSSE(w, s.cfg.WriteTimeout)
		defer sse.end()
		if h := out.head(); h != nil {
			sse.send(h)
		}
	}

	started := time.Now()
	g := sl.s.Generate(ctx, j.in, j.opt)
	var pieces []piece
	reasoning := 0
	for tok, err := range g.Tokens() {
		if err != nil {
			break // Result returns it
		}
		p := s.piece(tok, j.opt.LogProbs)
		if tok.Thinking && tok.ID >= 0 {
			reasoning++
		}
		if sse != nil {
			if c := out.chunk(p); c != nil && sse.send(c) != nil {
				break // the client is gone: leaving the loop cancels the generation
			}
		} else {
			pieces = append(pieces, p)
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
	if s.cfg.OnGenerationEnd != nil {
		s.cfg.OnGenerationEnd(GenerationEnd{Endpoint: j.endpoint, FinishReason: res.FinishReason, Err: genErr,
			PromptTokens: res.Usage.PromptTokens, CachedTokens: res.Usage.CachedTokens, CompletionTokens: res.Usage.CompletionTokens,
			Started: started, Ended: time.Now()})
	}

	fail := func(e *apiError) {
		if sse != nil {
			sse.sendError(e)
		} else {
			writeError(w, e)
		}
	}
	switch {
	case genErr != nil && errors.Is(genErr, bonsai.ErrContextFull):
		fail(invalid(j.promptParam, "%v", genErr).withCode("context_length_exceeded"))
		return
	case genErr != nil:
		fail(serverError("Generation failed: %v.", genErr))
		return
	case res.FinishReason == bonsai.FinishCancelled:
		if r.Context().Err() == nil && s.hard.Err() != nil {
			fail(overloaded("The server is shutting down: the generation was stopped.", "shutting_down", 0))
		}
		return // else the client is gone
	}
	finish := "stop"
	if res.FinishReason == bonsai.FinishLength || res.FinishReason == bonsai.FinishContextFull {
		finish = "length"
	}
	var u usage
	u.PromptTokens, u.CompletionTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = res.Usage.CachedTokens
	u.CompletionTokensDetails.ReasoningTokens = reasoning
	if sse == nil {
		writeJSON(w, http.StatusOK, out.whole(res, pieces, finish, u))
		return
	}
	sse.send(out.tail(finish))
	if j.includeUsage {
		sse.send(out.usage(u))
	}
	sse.done()
}

// piece turns a token into its output.
func (s *Server) piece(tok bonsai.Token, logprobs bool) piece {
	// <think>'s report carries the answer text held back before the block opened.
	p := piece{text: tok.Text, reasoning: tok.Thinking && tok.ID != s.thinkOpen}
	if logprobs && tok.ID >= 0 {
		p.lp = &tokenLP{id: tok.ID, token: s.m.Tokenizer().Piece(tok.ID), logprob: tok.LogProb, top: tok.TopLogProbs}
	}
	return p
}
