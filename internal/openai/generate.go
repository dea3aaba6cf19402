package openai

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/bonsai-go/sdk/internal/sse"
)

// job is one validated generation request.
type job struct {
	endpoint     string
	promptParam  string              // the parameter the prompt came in, for errors
	param        func(string) string // renames the chat's parameters to the endpoint's, or nil
	p            *bonsai.Prompt      // the prepared generation
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
		// The speculative decoding's drafted tokens that the model accepted and
		// rejected, in the fields OpenAI reports a predicted output's in.
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
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

// run queues a job for a session, runs it and writes the response.
func (s *api) run(w http.ResponseWriter, r *http.Request, j *job, out responder) {
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
	res, genErr := s.srv.Run(r.Context(), serve.Job{Endpoint: j.endpoint, Prompt: j.p}, start, func(tok bonsai.Token) bool {
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
	if e := s.generationError(genErr, ev != nil); e != nil {
		fail(e)
		return
	}
	if res.FinishReason == bonsai.FinishCancelled {
		return // the client is gone
	}
	finish := "stop"
	switch res.FinishReason {
	// A generation the server ended as it drained is a reply cut short: "length" is the
	// finish reason clients already read that way (the text is whole so far, and a
	// follow-up may continue it); an error would drop what was sent.
	case bonsai.FinishLength, bonsai.FinishContextFull, serve.FinishDrained:
		finish = "length"
	case bonsai.FinishToolCalls:
		finish = "tool_calls"
	}
	var u usage
	u.PromptTokens, u.CompletionTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = res.Usage.CachedTokens
	u.CompletionTokensDetails.ReasoningTokens = res.ReasoningTokens
	u.CompletionTokensDetails.AcceptedPredictionTokens = res.Usage.AcceptedTokens
	u.CompletionTokensDetails.RejectedPredictionTokens = res.Usage.DraftedTokens - res.Usage.AcceptedTokens
	if ev == nil {
		serve.WriteJSON(w, http.StatusOK, out.whole(res.Result, pieces, finish, u))
		return
	}
	ev.Send("", out.tail(finish))
	if j.includeUsage {
		ev.Send("", out.usage(u))
	}
	ev.Write([]byte("data: [DONE]\n\n"))
}

// generationError is the answer to a generation that failed (Server.Run's error), or
// nil; streamed says whether a stream had begun.
func (s *api) generationError(genErr error, streamed bool) *apiError {
	switch {
	case genErr == nil:
		return nil
	case errors.Is(genErr, serve.ErrQueueFull):
		return overloaded(fmt.Sprintf("The server is busy: %d generations are running and %d requests are queued. Retry later.",
			s.cfg.Parallel, s.cfg.Queue), "queue_full", 1)
	case errors.Is(genErr, serve.ErrShuttingDown):
		msg := "The server is shutting down."
		if streamed {
			msg = "The server is shutting down: the generation was stopped."
		}
		// Refused before it started: another replica can take it.
		return overloaded(msg, "shutting_down", serve.RetryAfterSeconds)
	}
	return serverError("Generation failed: %v.", genErr)
}

// piece turns a report into its output.
func (s *api) piece(tok bonsai.Token, logprobs bool) piece {
	p := piece{text: tok.Text, thinking: tok.Thinking, reasoning: tok.Reasoning, frags: tok.ToolCallFragments}
	if logprobs && tok.ID != bonsai.NoToken {
		p.lp = &tokenLP{id: tok.ID, token: s.m.Tokenizer().Piece(tok.ID), logprob: tok.LogProb, top: tok.TopLogProbs}
	}
	return p
}
