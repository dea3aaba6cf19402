package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/grammar"
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

// Options are the generation's options.
func (p *Prepared) Options() bonsai.GenerateOptions { return p.j.opt }

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

// CheckSchemas compiles the schemas a generation will enforce — a json_schema
// response format, and the parameters of the tools a required or named tool choice
// may call — so that a schema the engine refuses is answered before the request
// waits for a session. It returns the error wrapping bonsai.ErrInvalidSchema and the
// index of the tool at fault, or −1 for the response format.
func CheckSchemas(opt bonsai.GenerateOptions) (int, error) {
	if rf := opt.ResponseFormat; rf != nil && rf.Type == "json_schema" {
		if _, err := grammar.CompileJSONSchema(rf.Schema, grammar.SchemaOptions{Strict: rf.Strict}); err != nil {
			return -1, err
		}
	}
	mode := opt.ToolChoice.Mode
	if mode != bonsai.ToolChoiceRequired && mode != bonsai.ToolChoiceFunction {
		return 0, nil
	}
	for i, t := range opt.Tools {
		if len(t.Parameters) == 0 || mode == bonsai.ToolChoiceFunction && t.Name != opt.ToolChoice.Name {
			continue
		}
		if _, err := grammar.CompileJSONSchema(t.Parameters, grammar.SchemaOptions{}); err != nil {
			return i, err
		}
	}
	return 0, nil
}

// SchemaMessage says what the engine refused in a schema: the keyword, the JSON
// pointer of the node and why.
func SchemaMessage(err error) string {
	if se, ok := errors.AsType[*bonsai.SchemaError](err); ok {
		path := se.Path
		if path == "" {
			path = "/"
		}
		return fmt.Sprintf("keyword '%s' at '%s': %s", se.Keyword, path, se.Reason)
	}
	return err.Error()
}

// TrimsAnswer reports whether a generation with opt trims its answer's whitespace
// (Result.Text is trimmed when tool calls are read), which its stream must then do too.
func TrimsAnswer(opt bonsai.GenerateOptions) bool {
	return len(opt.Tools) > 0 && opt.ToolChoice.Mode != bonsai.ToolChoiceNone
}

// SpaceTrimmer trims a streamed answer as strings.TrimSpace trims the whole: it drops
// the leading whitespace, and holds whitespace back until more text follows.
type SpaceTrimmer struct {
	started bool
	pending string
}

// Next returns what to send of the answer's next piece s.
func (t *SpaceTrimmer) Next(s string) string {
	if !t.started {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return ""
		}
		t.started = true
	}
	body := strings.TrimRightFunc(s, unicode.IsSpace)
	if body == "" {
		t.pending += s
		return ""
	}
	out := t.pending + body
	t.pending = s[len(body):]
	return out
}
