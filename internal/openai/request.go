package openai

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

// commonRequest holds the parameters /v1/chat/completions and /v1/completions share.
// Optional values are pointers: nil when absent or null.
type commonRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`

	Temperature         *float64           `json:"temperature"`
	TopP                *float64           `json:"top_p"`
	TopK                *int               `json:"top_k"`
	MinP                *float64           `json:"min_p"`
	MaxTokens           *int               `json:"max_tokens"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Stop                json.RawMessage    `json:"stop"`
	Seed                *int64             `json:"seed"`
	PresencePenalty     *float64           `json:"presence_penalty"`
	FrequencyPenalty    *float64           `json:"frequency_penalty"`
	RepetitionPenalty   *float64           `json:"repetition_penalty"`
	N                   *int               `json:"n"`
	LogitBias           map[string]float64 `json:"logit_bias"`
	// Speculative is an extension: the speculative decoding mode of this request
	// (serve.SpeculativeModes: "auto", "off", "lookup", "mtp"), instead of the server's.
	Speculative *string `json:"speculative"`
}

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	commonRequest
	Messages           []chatMessage              `json:"messages"`
	Logprobs           *bool                      `json:"logprobs"`
	TopLogprobs        *int                       `json:"top_logprobs"`
	EnableThinking     *bool                      `json:"enable_thinking"`
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
	ReasoningEffort    *string                    `json:"reasoning_effort"`
	Tools              json.RawMessage            `json:"tools"`
	ToolChoice         json.RawMessage            `json:"tool_choice"`
	ParallelToolCalls  *bool                      `json:"parallel_tool_calls"`
	Functions          json.RawMessage            `json:"functions"`
	ResponseFormat     *responseFormat            `json:"response_format"`
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []toolCallParam `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
	Name             string          `json:"name"`
}

// completionRequest is the body of POST /v1/completions.
type completionRequest struct {
	commonRequest
	Prompt   json.RawMessage `json:"prompt"`
	Logprobs *int            `json:"logprobs"`
	Echo     bool            `json:"echo"`
	Suffix   string          `json:"suffix"`
	BestOf   *int            `json:"best_of"`
}

// decode parses a request body into v, naming the field at fault.
func decode(body []byte, v any) *apiError {
	if len(bytes.TrimSpace(body)) == 0 {
		return invalid("", "The request body is empty: send a JSON object.")
	}
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := strings.TrimPrefix(typeErr.Field, "commonRequest.") // the embedded struct's name
		if field == "" {
			return invalid("", "The request body must be a JSON object, not %s.", typeErr.Value)
		}
		return invalid(field, "Invalid type for '%s': expected %s, got %s.", field, typeName(typeErr.Type.Kind().String()), typeErr.Value)
	}
	return invalid("", "We could not parse the JSON body of your request (%v). The body must be valid JSON.", err)
}

func typeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "bool":
		return "a boolean"
	case kind == "string":
		return "a string"
	case kind == "slice":
		return "an array"
	case kind == "map", kind == "struct":
		return "an object"
	}
	return kind
}

// options turns the shared parameters into GenerateOptions, checking their ranges as
// OpenAI does.
func (r *commonRequest) options(d serve.Defaults, seed func() uint64) (bonsai.GenerateOptions, *apiError) {
	opt := bonsai.GenerateOptions{MaxTokens: d.MaxTokens, ThinkingBudget: d.ThinkingBudget, SamplerOptions: bonsai.SamplerOptions{Temperature: d.Temperature, TopP: d.TopP, TopK: d.TopK, MinP: d.MinP}}
	// The server's mode was checked by serve.New; a request's names the field.
	opt.Speculative, _ = serve.SpeculativeOptions(d.Speculative)
	if r.Speculative != nil {
		spec, err := serve.SpeculativeOptions(*r.Speculative)
		if err != nil || *r.Speculative == "" {
			return opt, invalid("speculative", "Invalid 'speculative': %q (want one of %s).", *r.Speculative, strings.Join(serve.SpeculativeModes, ", "))
		}
		opt.Speculative = spec
	}
	inRange := func(name string, v *float64, lo, hi float64) (float32, bool, *apiError) {
		if v == nil {
			return 0, false, nil
		}
		if math.IsNaN(*v) || *v < lo || *v > hi {
			return 0, false, invalid(name, "Invalid '%s': %v is not in [%v, %v].", name, *v, lo, hi)
		}
		return float32(*v), true, nil
	}
	var err *apiError
	var set bool
	var f float32
	if f, set, err = inRange("temperature", r.Temperature, 0, 2); err != nil {
		return opt, err
	} else if set {
		opt.Temperature = f
	}
	if r.TopK != nil {
		switch k := *r.TopK; {
		case k < -1:
			return opt, invalid("top_k", "Invalid 'top_k': %d (want -1 or 0 for off, or a positive count).", k)
		case k <= 0:
			opt.TopK = 0
		default:
			opt.TopK = k
		}
	}
	if f, set, err = inRange("top_p", r.TopP, 0, 1); err != nil {
		return opt, err
	} else if set {
		opt.TopP = f
		if f == 0 { // only the most likely token; bonsai's 0 would mean off
			opt.TopK = 1
		}
	}
	if f, set, err = inRange("min_p", r.MinP, 0, 1); err != nil {
		return opt, err
	} else if set {
		opt.MinP = f
	}
	if f, set, err = inRange("presence_penalty", r.PresencePenalty, -2, 2); err != nil {
		return opt, err
	} else if set {
		opt.PresencePenalty = f
	}
	if f, set, err = inRange("frequency_penalty", r.FrequencyPenalty, -2, 2); err != nil {
		return opt, err
	} else if set {
		opt.FrequencyPenalty = f
	}
	if f, set, err = inRange("repetition_penalty", r.RepetitionPenalty, 0, 10); err != nil {
		return opt, err
	} else if set {
		if f == 0 {
			return opt, invalid("repetition_penalty", "Invalid 'repetition_penalty': it must be positive (1: off).")
		}
		opt.RepeatPenalty = f
	}
	if r.N != nil && *r.N != 1 {
		return opt, invalid("n", "Invalid 'n': %d. This server generates one choice per request (n = 1).", *r.N)
	}
	maxTokens, name := r.MaxCompletionTokens, "max_completion_tokens"
	if maxTokens == nil {
		maxTokens, name = r.MaxTokens, "max_tokens"
	}
	if maxTokens != nil {
		if *maxTokens < 1 {
			return opt, invalid(name, "Invalid '%s': %d (want at least 1).", name, *maxTokens)
		}
		opt.MaxTokens = *maxTokens
	}
	if r.Seed != nil {
		opt.Seed = uint64(*r.Seed)
	} else {
		opt.Seed = seed()
	}
	stops, apiErr := parseStop(r.Stop)
	if apiErr != nil {
		return opt, apiErr
	}
	opt.Stop = stops
	if len(r.LogitBias) > 0 {
		return opt, invalid("logit_bias", "'logit_bias' is not supported by this server.")
	}
	return opt, nil
}

// maxStops bounds the stop strings of one request (OpenAI allows 4).
const maxStops = 16

// parseStop reads stop: null, a string or an array of strings.
func parseStop(raw json.RawMessage) ([]string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, invalid("stop", "Invalid 'stop': expected a string or an array of strings.")
	}
	if len(list) > maxStops {
		return nil, invalid("stop", "Invalid 'stop': %d sequences, at most %d.", len(list), maxStops)
	}
	out := list[:0]
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// messages converts the chat messages, checking roles and contents.
func (r *chatRequest) messages() ([]bonsai.Message, *apiError) {
	if len(r.Messages) == 0 {
		return nil, invalid("messages", "Invalid 'messages': the conversation is empty; send at least one message.")
	}
	out := make([]bonsai.Message, len(r.Messages))
	for i, m := range r.Messages {
		role := bonsai.Role(m.Role)
		switch role {
		case bonsai.RoleSystem, bonsai.RoleUser, bonsai.RoleAssistant, bonsai.RoleTool:
		case "developer":
			role = bonsai.RoleSystem
		case "":
			return nil, invalid(fmt.Sprintf("messages[%d].role", i), "Missing 'messages[%d].role'.", i)
		default:
			return nil, invalid(fmt.Sprintf("messages[%d].role", i), "Invalid 'messages[%d].role': %q (want system, developer, user, assistant or tool).", i, m.Role)
		}
		text, err := contentText(m.Content)
		if err != "" {
			return nil, invalid(fmt.Sprintf("messages[%d].content", i), "Invalid 'messages[%d].content': %s", i, err)
		}
		msg := bonsai.Message{Role: role, Content: text, ReasoningContent: m.ReasoningContent}
		switch {
		case len(m.ToolCalls) > 0 && role != bonsai.RoleAssistant:
			return nil, invalid(fmt.Sprintf("messages[%d].tool_calls", i), "Invalid 'messages[%d].tool_calls': only an assistant message makes tool calls.", i)
		case len(m.ToolCalls) > 0:
			calls, e := toolCallsOf(i, m.ToolCalls)
			if e != nil {
				return nil, e
			}
			msg.ToolCalls = calls
		case role == bonsai.RoleTool && m.ToolCallID == "":
			return nil, invalid(fmt.Sprintf("messages[%d].tool_call_id", i), "Missing 'messages[%d].tool_call_id': a tool message answers a call.", i)
		}
		if role == bonsai.RoleTool {
			msg.ToolCallID, msg.Name = m.ToolCallID, m.Name
		}
		out[i] = msg
	}
	return out, nil
}

// contentText reads a message's content: a string, null, or an array of text parts. It
// returns what is wrong, or "".
func contentText(raw json.RawMessage) (string, string) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, ""
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", "expected a string or an array of content parts."
	}
	var texts []string
	for _, p := range parts {
		if p.Type != "text" || p.Text == nil {
			return "", fmt.Sprintf("content parts of type %q are not supported (only \"text\").", p.Type)
		}
		texts = append(texts, *p.Text)
	}
	return strings.Join(texts, "\n"), ""
}

// thinking reads the thinking switch: a top-level enable_thinking, else
// chat_template_kwargs.enable_thinking; nil leaves the template's default.
func (r *chatRequest) thinking() (*bool, *apiError) {
	if r.EnableThinking != nil {
		return r.EnableThinking, nil
	}
	raw, ok := r.ChatTemplateKwargs["enable_thinking"]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var on bool
	if err := json.Unmarshal(raw, &on); err != nil {
		return nil, invalid("chat_template_kwargs.enable_thinking", "Invalid 'chat_template_kwargs.enable_thinking': expected a boolean.")
	}
	return &on, nil
}

// effortShares are the parts of a reply's max tokens (max_tokens, max_completion_tokens,
// max_output_tokens, or the server's default) that a reasoning effort gives its think
// block, as numerator and denominator: its bonsai.GenerateOptions.ThinkingBudget. The
// rest is the answer's, so that a forced tool call or JSON answer always has room.
var effortShares = map[string][2]int{"low": {1, 4}, "medium": {1, 2}, "high": {3, 4}, "xhigh": {7, 8}, "max": {7, 8}}

// setThinking sets opt's Thinking and ThinkingBudget from the thinking switch (think,
// which wins where it is set: enable_thinking) and a reasoning effort (nil when none was
// sent), named param: "none" and "minimal" switch thinking off; the others switch it on
// and budget it a share of opt.MaxTokens (effortShares), at least one token. With no
// effort, or no max tokens to take a share of, the budget stays the server's default.
func setThinking(opt *bonsai.GenerateOptions, think *bool, param string, effort *string) *apiError {
	opt.Thinking = think
	if effort == nil {
		return nil
	}
	on := false
	switch *effort {
	case "none", "minimal":
	default:
		share, ok := effortShares[*effort]
		if !ok {
			return invalid(param, "Invalid '%s': %q (want none, minimal, low, medium, high, xhigh or max).", param, *effort)
		}
		on = true
		if opt.MaxTokens > 0 {
			opt.ThinkingBudget = max(1, opt.MaxTokens*share[0]/share[1])
		}
	}
	if think == nil {
		opt.Thinking = &on
	}
	return nil
}

// present reports whether a raw value is neither absent, null nor empty.
func present(raw json.RawMessage) bool {
	s := string(bytes.TrimSpace(raw))
	return s != "" && s != "null" && s != "[]" && s != "{}"
}

// prompt reads a completion's prompt: a string, an array of one string, or an array of
// token ids.
func (r *completionRequest) prompt() (bonsai.Input, *apiError) {
	raw := bytes.TrimSpace(r.Prompt)
	if len(raw) == 0 || string(raw) == "null" {
		return bonsai.Input{}, invalid("prompt", "Missing 'prompt'.")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return bonsai.Input{}, invalid("prompt", "Invalid 'prompt': it is empty.")
		}
		return bonsai.Text(s), nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		if len(list) != 1 || list[0] == "" {
			return bonsai.Input{}, invalid("prompt", "Invalid 'prompt': send one non-empty prompt per request (got %d).", len(list))
		}
		return bonsai.Text(list[0]), nil
	}
	var ids []int32
	if err := json.Unmarshal(raw, &ids); err == nil && len(ids) > 0 {
		return bonsai.TokenIDs(ids...), nil
	}
	return bonsai.Input{}, invalid("prompt", "Invalid 'prompt': expected a string, an array of one string, or an array of token ids.")
}
