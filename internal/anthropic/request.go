package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
)

// messagesRequest is the body of POST /v1/messages (and of count_tokens, which reads
// the fields that shape the prompt). Optional values are pointers: nil when absent.
type messagesRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	Messages      []message       `json:"messages"`
	System        json.RawMessage `json:"system"`
	Stream        bool            `json:"stream"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	StopSequences []string        `json:"stop_sequences"`
	Tools         []tool          `json:"tools"`
	ToolChoice    *toolChoice     `json:"tool_choice"`
	Thinking      *struct {
		Type         string `json:"type"`
		BudgetTokens *int   `json:"budget_tokens"`
	} `json:"thinking"`
	Metadata json.RawMessage `json:"metadata"`
}

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// block is a content block of a request's message, of any type; the fields that do
// not belong to its type are absent.
type block struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`        // text
	Thinking  *string         `json:"thinking"`    // thinking
	ID        string          `json:"id"`          // tool_use
	Name      string          `json:"name"`        // tool_use
	Input     json.RawMessage `json:"input"`       // tool_use
	ToolUseID string          `json:"tool_use_id"` // tool_result
	Content   json.RawMessage `json:"content"`     // tool_result
	IsError   bool            `json:"is_error"`    // tool_result
}

type tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type toolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

// decode parses a request body into v, naming the field at fault.
func decode(body []byte, v any) *apiError {
	if len(bytes.TrimSpace(body)) == 0 {
		return invalid("The request body is empty: send a JSON object.")
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	if typeErr, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if typeErr.Field == "" {
			return invalid("The request body must be a JSON object, not %s.", typeErr.Value)
		}
		return invalid("%s: expected %s, got %s.", typeErr.Field, typeErr.Type.Kind(), typeErr.Value)
	}
	return invalid("The request body is not valid JSON: %v.", err)
}

// Limits of a request's lists, against hostile bodies.
const (
	maxStops = 16
	maxTools = 128
)

// options checks the sampling parameters and turns them into GenerateOptions: the
// server's defaults for what the request leaves out.
func (r *messagesRequest) options(h *handler, seed func() uint64) (bonsai.GenerateOptions, *apiError) {
	d := h.cfg.Defaults
	opt := bonsai.GenerateOptions{ThinkingBudget: d.ThinkingBudget, SamplerOptions: bonsai.SamplerOptions{Temperature: d.Temperature, TopP: d.TopP, TopK: d.TopK, MinP: d.MinP, Seed: seed()}}
	// The server's speculative decoding (serve.New checked its mode).
	opt.Speculative, _ = serve.SpeculativeOptions(d.Speculative)
	if r.MaxTokens == nil {
		return opt, invalid("max_tokens: Field required")
	}
	if *r.MaxTokens < 1 {
		return opt, invalid("max_tokens: %d is not at least 1", *r.MaxTokens)
	}
	opt.MaxTokens = *r.MaxTokens
	check := func(name string, v *float64, lo, hi float64) (float32, bool, *apiError) {
		if v == nil {
			return 0, false, nil
		}
		if math.IsNaN(*v) || *v < lo || *v > hi {
			return 0, false, invalid("%s: %v is not in [%v, %v]", name, *v, lo, hi)
		}
		return float32(*v), true, nil
	}
	if f, set, e := check("temperature", r.Temperature, 0, 1); e != nil {
		return opt, e
	} else if set {
		opt.Temperature = f
	}
	if f, set, e := check("top_p", r.TopP, 0, 1); e != nil {
		return opt, e
	} else if set {
		opt.TopP = f
		if f == 0 {
			opt.TopK = 1
		}
	}
	if r.TopK != nil {
		if *r.TopK < 0 {
			return opt, invalid("top_k: %d is negative", *r.TopK)
		}
		opt.TopK = *r.TopK
	}
	if len(r.StopSequences) > maxStops {
		return opt, invalid("stop_sequences: %d sequences, at most %d", len(r.StopSequences), maxStops)
	}
	for i, s := range r.StopSequences {
		if strings.TrimSpace(s) == "" {
			return opt, invalid("stop_sequences.%d: each stop sequence must contain non-whitespace", i)
		}
	}
	opt.Stop = r.StopSequences
	off := false
	opt.Thinking = &off
	if t := r.Thinking; t != nil {
		switch t.Type {
		case "enabled", "adaptive":
			on := true
			opt.Thinking = &on
			// Anthropic asks for at least 1024 tokens as well, a floor for its own
			// models; a small local model, or a short reply, may think less.
			if t.Type == "enabled" {
				if t.BudgetTokens == nil || *t.BudgetTokens < 1 || *t.BudgetTokens >= opt.MaxTokens {
					return opt, invalid("thinking.enabled.budget_tokens: want a positive count below max_tokens (%d)", opt.MaxTokens)
				}
				opt.ThinkingBudget = *t.BudgetTokens
			}
		case "disabled":
		default:
			return opt, invalid("thinking.type: %q (want enabled, adaptive or disabled)", t.Type)
		}
	}
	if e := r.tools(&opt); e != nil {
		return opt, e
	}
	return opt, nil
}

// tools reads tools and tool_choice; Prepare checks the names and the choice.
func (r *messagesRequest) tools(opt *bonsai.GenerateOptions) *apiError {
	if len(r.Tools) > maxTools {
		return invalid("tools: %d tools, at most %d", len(r.Tools), maxTools)
	}
	for i, t := range r.Tools {
		if t.Type != "" && t.Type != "custom" {
			return invalid("tools.%d.type: %q is one of Anthropic's server tools, which this server does not run; define a custom tool with an input_schema", i, t.Type)
		}
		if t.Name == "" {
			return invalid("tools.%d.name: Field required", i)
		}
		schema := bytes.TrimSpace(t.InputSchema)
		if len(schema) == 0 || schema[0] != '{' {
			return invalid("tools.%d.input_schema: Field required (a JSON Schema object)", i)
		}
		opt.Tools = append(opt.Tools, bonsai.Tool{Name: t.Name, Description: t.Description, Parameters: schema})
	}
	c := r.ToolChoice
	if c == nil {
		return nil
	}
	switch c.Type {
	case "auto", "":
		opt.ToolChoice.Mode = bonsai.ToolChoiceAuto
	case "any":
		opt.ToolChoice.Mode = bonsai.ToolChoiceRequired
	case "tool":
		opt.ToolChoice = bonsai.ToolChoice{Mode: bonsai.ToolChoiceFunction, Name: c.Name}
	case "none":
		opt.ToolChoice.Mode = bonsai.ToolChoiceNone
	default:
		return invalid("tool_choice.type: %q (want auto, any, tool or none)", c.Type)
	}
	if c.DisableParallelToolUse {
		no := false
		opt.ParallelToolCalls = &no
	}
	return nil
}

// messages converts the system prompt and the conversation. A user turn's tool_result
// blocks become tool messages, ahead of its text.
func (r *messagesRequest) messages() ([]bonsai.Message, *apiError) {
	var out []bonsai.Message
	sys, err := textOf(r.System)
	if err != "" {
		return nil, invalid("system: %s", err)
	}
	if sys != "" {
		out = append(out, bonsai.Message{Role: bonsai.RoleSystem, Content: sys})
	}
	if len(r.Messages) == 0 {
		return nil, invalid("messages: the conversation is empty; send at least one message")
	}
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, invalid("messages.%d.role: %q (want user or assistant)", i, m.Role)
		}
		blocks, e := contentBlocks(m.Content)
		if e != "" {
			return nil, invalid("messages.%d.content: %s", i, e)
		}
		msg := bonsai.Message{Role: bonsai.Role(m.Role)}
		var texts []string
		for j, b := range blocks {
			at := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch {
			case b.Type == "text" && b.Text != nil:
				texts = append(texts, *b.Text)
			case b.Type == "thinking" && m.Role == "assistant":
				if b.Thinking != nil {
					msg.ReasoningContent += *b.Thinking
				}
			case b.Type == "redacted_thinking" && m.Role == "assistant":
			case b.Type == "tool_use" && m.Role == "assistant":
				if b.ID == "" || b.Name == "" {
					return nil, invalid("%s: a tool_use block needs an id and a name", at)
				}
				args := bytes.TrimSpace(b.Input)
				if len(args) == 0 || args[0] != '{' || !json.Valid(args) {
					return nil, invalid("%s.input: expected a JSON object", at)
				}
				msg.ToolCalls = append(msg.ToolCalls, bonsai.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
			case b.Type == "tool_result" && m.Role == "user":
				if b.ToolUseID == "" {
					return nil, invalid("%s.tool_use_id: Field required", at)
				}
				text, e := textOf(b.Content)
				if e != "" {
					return nil, invalid("%s.content: %s", at, e)
				}
				if b.IsError {
					text = "Error: " + text
				}
				out = append(out, bonsai.Message{Role: bonsai.RoleTool, ToolCallID: b.ToolUseID, Content: text})
			default:
				return nil, invalid("%s.type: %q blocks are not supported in a %s message (text, thinking, tool_use and tool_result are)", at, b.Type, m.Role)
			}
		}
		msg.Content = strings.Join(texts, "\n")
		if msg.Content != "" || len(msg.ToolCalls) > 0 || msg.ReasoningContent != "" || len(blocks) == 0 {
			out = append(out, msg)
		}
	}
	return out, nil
}

// textOf reads a system prompt or a tool_result's content: absent, a string, or an
// array of text blocks. It returns what is wrong, or "".
func textOf(raw json.RawMessage) (string, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", ""
	}
	blocks, e := contentBlocks(raw)
	if e != "" {
		return "", e
	}
	var texts []string
	for j, b := range blocks {
		if b.Type != "text" || b.Text == nil {
			return "", fmt.Sprintf("block %d: only text blocks, not %q", j, b.Type)
		}
		texts = append(texts, *b.Text)
	}
	return strings.Join(texts, "\n"), ""
}

// contentBlocks reads a content: a string (one text block) or an array of blocks.
func contentBlocks(raw json.RawMessage) ([]block, string) {
	raw = bytes.TrimSpace(raw)
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []block{{Type: "text", Text: &s}}, ""
	}
	var blocks []block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, "expected a string or an array of content blocks"
	}
	return blocks, ""
}
