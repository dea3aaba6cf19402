package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/bonsai-go/sdk/bonsai"
)

// Tools, tool_choice, parallel_tool_calls and response_format: OpenAI's shapes read
// into GenerateOptions, and the tool calls written back.

type toolParam struct {
	Type     string `json:"type"`
	Function *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"function"`
}

type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      *bool           `json:"strict"`
	} `json:"json_schema"`
}

// toolCallParam is an assistant message's tool call, in a request or a response.
type toolCallParam struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// maxTools bounds the tools of one request (OpenAI allows 128).
const maxTools = 128

// toolName is OpenAI's rule for function names.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// toolOptions reads tools, tool_choice, parallel_tool_calls and response_format.
func (r *chatRequest) toolOptions(opt *bonsai.GenerateOptions) *apiError {
	if present(r.Functions) {
		return invalid("functions", "'functions' is deprecated and not supported by this server: send 'tools'.")
	}
	var tools []toolParam
	if present(r.Tools) {
		if err := json.Unmarshal(r.Tools, &tools); err != nil {
			return invalid("tools", "Invalid 'tools': expected an array of tools.")
		}
	}
	if len(tools) > maxTools {
		return invalid("tools", "Invalid 'tools': %d tools, at most %d.", len(tools), maxTools)
	}
	for i, t := range tools {
		at := fmt.Sprintf("tools[%d]", i)
		if t.Type != "function" {
			return invalid(at+".type", "Invalid '%s.type': %q (only \"function\").", at, t.Type)
		}
		f := t.Function
		if f == nil {
			return invalid(at+".function", "Missing '%s.function'.", at)
		}
		if !toolName.MatchString(f.Name) {
			return invalid(at+".function.name", "Invalid '%s.function.name': %q (want 1 to 64 letters, digits, _ or -).", at, f.Name)
		}
		params := bytes.TrimSpace(f.Parameters)
		if string(params) == "null" {
			params = nil
		}
		if len(params) > 0 && params[0] != '{' {
			return invalid(at+".function.parameters", "Invalid '%s.function.parameters': expected a JSON Schema object.", at)
		}
		opt.Tools = append(opt.Tools, bonsai.Tool{Name: f.Name, Description: f.Description, Parameters: params})
	}
	if e := r.toolChoice(opt); e != nil {
		return e
	}
	if r.ParallelToolCalls != nil {
		opt.ParallelToolCalls = r.ParallelToolCalls
	}
	return r.responseFormat(opt)
}

// toolChoice reads tool_choice; Prepare checks it against the tools.
func (r *chatRequest) toolChoice(opt *bonsai.GenerateOptions) *apiError {
	raw := bytes.TrimSpace(r.ToolChoice)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		return toolChoiceMode(mode, opt)
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" {
		return invalid("tool_choice", "Invalid 'tool_choice': expected \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}.")
	}
	opt.ToolChoice = bonsai.ToolChoice{Mode: bonsai.ToolChoiceFunction, Name: named.Function.Name}
	return nil
}

// toolChoiceMode sets the tool-choice mode a string tool_choice names, as both the chat
// and the Responses API spell it.
func toolChoiceMode(mode string, opt *bonsai.GenerateOptions) *apiError {
	switch mode {
	case "auto":
		opt.ToolChoice.Mode = bonsai.ToolChoiceAuto
	case "none":
		opt.ToolChoice.Mode = bonsai.ToolChoiceNone
	case "required":
		opt.ToolChoice.Mode = bonsai.ToolChoiceRequired
	default:
		return invalid("tool_choice", "Invalid 'tool_choice': %q (want \"none\", \"auto\", \"required\" or a function).", mode)
	}
	return nil
}

func (r *chatRequest) responseFormat(opt *bonsai.GenerateOptions) *apiError {
	f := r.ResponseFormat
	if f == nil {
		return nil
	}
	switch f.Type {
	case "", "text":
		return nil
	case "json_object":
		opt.ResponseFormat = &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONObject}
	case "json_schema":
		s := f.JSONSchema
		if s == nil {
			return invalid("response_format.json_schema", "Missing 'response_format.json_schema'.")
		}
		if s.Name != "" && !toolName.MatchString(s.Name) {
			return invalid("response_format.json_schema.name", "Invalid 'response_format.json_schema.name': %q (want 1 to 64 letters, digits, _ or -).", s.Name)
		}
		schema := bytes.TrimSpace(s.Schema)
		if len(schema) == 0 || schema[0] != '{' {
			return invalid("response_format.json_schema.schema", "Invalid 'response_format.json_schema.schema': expected a JSON Schema object.")
		}
		opt.ResponseFormat = &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONSchema, Schema: schema, Strict: s.Strict != nil && *s.Strict, Name: s.Name}
	default:
		return invalid("response_format.type", "Invalid 'response_format.type': %q (want \"text\", \"json_object\" or \"json_schema\").", f.Type)
	}
	if opt.ToolChoice.Mode == bonsai.ToolChoiceRequired || opt.ToolChoice.Mode == bonsai.ToolChoiceFunction {
		return invalid("response_format", "'response_format' %q cannot be combined with a required 'tool_choice': the answer is either calls or JSON.", f.Type)
	}
	return nil
}

// toolCallsOf converts an assistant message's tool calls.
func toolCallsOf(i int, calls []toolCallParam) ([]bonsai.ToolCall, *apiError) {
	var out []bonsai.ToolCall
	for k, c := range calls {
		at := fmt.Sprintf("messages[%d].tool_calls[%d]", i, k)
		if c.Type != "" && c.Type != "function" {
			return nil, invalid(at+".type", "Invalid '%s.type': %q (only \"function\").", at, c.Type)
		}
		if c.ID == "" {
			return nil, invalid(at+".id", "Missing '%s.id'.", at)
		}
		if c.Function.Name == "" {
			return nil, invalid(at+".function.name", "Missing '%s.function.name'.", at)
		}
		args := bytes.TrimSpace([]byte(c.Function.Arguments))
		if len(args) == 0 {
			args = []byte("{}")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
			return nil, invalid(at+".function.arguments", "Invalid '%s.function.arguments': expected a JSON object in a string.", at)
		}
		out = append(out, bonsai.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(args)})
	}
	return out, nil
}

// toolCallsOut writes a result's tool calls.
func toolCallsOut(calls []bonsai.ToolCall) []toolCallParam {
	out := make([]toolCallParam, len(calls))
	for i, c := range calls {
		out[i].ID, out[i].Type = c.ID, "function"
		out[i].Function.Name, out[i].Function.Arguments = c.Name, string(c.Arguments)
	}
	return out
}
