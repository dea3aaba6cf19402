package serve

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/grammar"
)

// What both dialects need to turn a request into a Job and its tokens into their
// stream, until bonsai does it for them: the prompt's tokens, the schemas checked
// before a session is taken, and the answer's whitespace trimmed as Result.Text is.

// ThinkOpen is the id of the model's <think> token, or −1: its report carries the
// answer text held back before the block opened, so it is not thinking text.
func (s *Server) ThinkOpen() int32 { return s.thinkOpen }

// Tokenize returns the tokens of a generation's input as Generate will feed them, to
// check the prompt's length before queueing and to choose the session that holds most
// of it, and for a chat the length of its part before the generation prompt, where
// Generate keeps a checkpoint (Job.Checkpoint).
func (s *Server) Tokenize(in bonsai.Input, opt bonsai.GenerateOptions) (ids []int32, checkpoint int, err error) {
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
			checkpoint = len(h)
		}
	}
	return ids, checkpoint, nil
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
