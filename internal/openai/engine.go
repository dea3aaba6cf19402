package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/bonsai-go/sdk/bonsai"
)

// This file lets other APIs (internal/anthropic) run on the same sessions, queue and
// limits as the OpenAI endpoints: they validate their own requests, then Prepare and
// Execute the generation here.

// Errors of Prepare.
var (
	// ErrPromptTooLong: the prompt does not fit the context.
	ErrPromptTooLong = errors.New("openai: the prompt is longer than the context")
	// ErrBadPrompt: the chat template could not render the messages, or the prompt is
	// empty or outside the vocabulary.
	ErrBadPrompt = errors.New("openai: invalid prompt")
)

// Prepared is a generation checked and tokenized, ready to Execute.
type Prepared struct{ j *job }

// PromptTokens is the length of the prompt.
func (p *Prepared) PromptTokens() int { return len(p.j.prompt) }

// Prepare checks and tokenizes a chat generation for Execute; endpoint names it in
// GenerationEnd.
func (s *Server) Prepare(endpoint string, msgs []bonsai.Message, opt bonsai.GenerateOptions) (*Prepared, error) {
	j := &job{endpoint: endpoint, promptParam: "messages", in: bonsai.Chat(msgs...), opt: opt}
	var err error
	if j.prompt, j.boundary, err = s.tokenize(j.in, opt); err != nil {
		return nil, fmt.Errorf("%w: the chat template could not render the messages: %v", ErrBadPrompt, err)
	}
	if e := s.checkPrompt(j); e != nil {
		if e.Code != nil && *e.Code == "context_length_exceeded" {
			return nil, fmt.Errorf("%w: %s", ErrPromptTooLong, e.Message)
		}
		return nil, fmt.Errorf("%w: %s", ErrBadPrompt, e.Message)
	}
	return &Prepared{j: j}, nil
}

// Execute waits for a session and runs p on it, as the OpenAI endpoints do: start is
// called before the first token (or at the end of a generation that yielded none; not
// at all when it fails first), tok with each token (false stops the generation). A
// generation whose ctx ends (the client left) has FinishCancelled and no error; the
// errors are ErrQueueFull, ErrShuttingDown, bonsai.ErrContextFull and the
// generation's own.
func (s *Server) Execute(ctx context.Context, p *Prepared, start func(), tok func(bonsai.Token) bool) (bonsai.Result, error) {
	res, _, err := s.execute(ctx, p.j, start, tok)
	return res, err
}

// ThinkOpen is the id of the model's <think> token, or −1: its report carries the
// answer text held back before the block opened, so it is not thinking text.
func (s *Server) ThinkOpen() int32 { return s.thinkOpen }

// Handle serves pattern (an exact path, e.g. "/v1/messages", or "/" for the root
// alone) with h, ahead of the OpenAI routes, with the same request log. Call it before
// serving.
func (s *Server) Handle(path string, h http.Handler) {
	if s.extra == nil {
		s.extra = map[string]http.Handler{}
	}
	s.extra[path] = h
}
