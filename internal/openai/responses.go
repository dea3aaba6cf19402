package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
)

// The Responses API, POST /v1/responses: its request read into a conversation and
// GenerateOptions. Unknown fields are ignored, as the chat endpoint ignores them; the
// parameters OpenAI defines that this server cannot honour (background, conversation,
// prompt, top_logprobs, tools other than functions) are refused with a 400 naming
// them.

const endpointResponses = "responses"

// responsesRequest is the body of POST /v1/responses. Optional values are pointers: nil
// when absent or null.
type responsesRequest struct {
	Model             string          `json:"model"`
	Input             json.RawMessage `json:"input"`
	Instructions      *string         `json:"instructions"`
	Stream            bool            `json:"stream"`
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Text              *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
	MaxOutputTokens *int     `json:"max_output_tokens"`
	Temperature     *float64 `json:"temperature"`
	TopP            *float64 `json:"top_p"`
	Reasoning       *struct {
		Effort *string `json:"effort"`
	} `json:"reasoning"`
	Store              *bool             `json:"store"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Metadata           map[string]string `json:"metadata"`
	User               *string           `json:"user"`

	// Refused: what this server cannot do.
	Background   *bool           `json:"background"`
	Conversation json.RawMessage `json:"conversation"`
	Prompt       json.RawMessage `json:"prompt"`
	TopLogprobs  *int            `json:"top_logprobs"`

	// The extensions the chat endpoint accepts.
	TopK               *int                       `json:"top_k"`
	MinP               *float64                   `json:"min_p"`
	RepetitionPenalty  *float64                   `json:"repetition_penalty"`
	Speculative        *string                    `json:"speculative"`
	Seed               *int64                     `json:"seed"`
	EnableThinking     *bool                      `json:"enable_thinking"`
	ChatTemplateKwargs map[string]json.RawMessage `json:"chat_template_kwargs"`
}

// inputItem is one item of input: a message, a function call, a function call's output
// or a reasoning item.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Summary   []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// respTool is a function tool as the Responses API has it: flat, not under "function".
type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// textFormat is text.format.
type textFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

// respJob is a validated Responses request: the generation and what the response
// echoes of the request.
type respJob struct {
	*job
	conv         []bonsai.Message // the conversation without the instructions: what a follow-up continues
	instructions *string
	tools        []any
	toolChoice   any
	format       any
	parallel     bool
	temperature  float64
	topP         float64
	effort       *string
	maxOutput    *int
	store        bool
	previous     *string
	metadata     map[string]string
	user         *string
}

// Metadata limits, as OpenAI sets them.
const (
	maxMetadataKeys     = 16
	maxMetadataKeyLen   = 64
	maxMetadataValueLen = 512
)

// responses serves POST /v1/responses.
func (s *api) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if e := s.readBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	j, e := s.responsesJob(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	s.runResponse(w, r, j)
}

// responsesJob validates a Responses request.
func (s *api) responsesJob(req *responsesRequest) (*respJob, *apiError) {
	switch {
	case req.Background != nil && *req.Background:
		return nil, invalid("background", "'background' is not supported by this server: send the request and wait for it, or stream it.")
	case present(req.Conversation):
		return nil, invalid("conversation", "'conversation' is not supported by this server: use 'previous_response_id'.")
	case present(req.Prompt):
		return nil, invalid("prompt", "'prompt' (a stored prompt template) is not supported by this server.")
	case req.TopLogprobs != nil && *req.TopLogprobs != 0:
		return nil, invalid("top_logprobs", "'top_logprobs' is not supported by /v1/responses on this server: use /v1/chat/completions.")
	}
	common := commonRequest{Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK, MinP: req.MinP,
		RepetitionPenalty: req.RepetitionPenalty, Seed: req.Seed, Speculative: req.Speculative}
	opt, e := common.options(s.cfg.Defaults, rand.Uint64)
	if e != nil {
		return nil, e
	}
	if n := req.MaxOutputTokens; n != nil {
		if *n < 1 {
			return nil, invalid("max_output_tokens", "Invalid 'max_output_tokens': %d (want at least 1).", *n)
		}
		opt.MaxTokens = *n
	}
	// With the store off, a response asked to be stored is not, and says so.
	j := &respJob{instructions: req.Instructions, maxOutput: req.MaxOutputTokens, store: (req.Store == nil || *req.Store) && !s.store.off(),
		previous: req.PreviousResponseID, metadata: req.Metadata, user: req.User, parallel: true,
		temperature: float64(opt.Temperature), topP: float64(opt.TopP)}
	if j.topP == 0 {
		j.topP = 1 // bonsai's 0 is off: all of the distribution
	}
	if e := checkMetadata(req.Metadata); e != nil {
		return nil, e
	}
	if e := j.readTools(req, &opt); e != nil {
		return nil, e
	}
	if e := j.readFormat(req, &opt); e != nil {
		return nil, e
	}
	if e := j.thinking(req, &opt); e != nil {
		return nil, e
	}
	if e := s.checkModel(req.Model); e != nil {
		return nil, e
	}

	// The conversation: the previous response's, then the new input.
	var conv []bonsai.Message
	if id := req.PreviousResponseID; id != nil && *id != "" {
		prev, ok := s.store.conversation(*id)
		if !ok {
			return nil, invalid("previous_response_id", "Previous response with id '%s' not found%s", *id, s.storeHint()).withCode("previous_response_not_found")
		}
		conv = prev
	}
	in, e := inputMessages(req.Input, conv)
	if e != nil {
		return nil, e
	}
	j.conv = in
	msgs := in
	if req.Instructions != nil && *req.Instructions != "" {
		msgs = append([]bonsai.Message{{Role: bonsai.RoleSystem, Content: *req.Instructions}}, in...)
	}
	j.job = &job{endpoint: endpointResponses, promptParam: "input", stream: req.Stream, param: responsesParam}
	if e := s.prepare(j.job, bonsai.Chat(msgs...), opt); e != nil {
		return nil, e
	}
	return j, nil
}

// responsesParam renames the chat parameters prepare names to the Responses API's.
func responsesParam(p string) string {
	switch {
	case p == "max_tokens":
		return "max_output_tokens"
	case p == "response_format":
		return "text.format"
	case strings.HasPrefix(p, "response_format.json_schema."):
		return "text.format." + strings.TrimPrefix(p, "response_format.json_schema.")
	case p == "tool_choice.function.name":
		return "tool_choice.name"
	case strings.HasPrefix(p, "tools[") && strings.Contains(p, "].function."):
		return strings.Replace(p, "].function.", "].", 1)
	}
	return p
}

func checkMetadata(m map[string]string) *apiError {
	if len(m) > maxMetadataKeys {
		return invalid("metadata", "Invalid 'metadata': %d keys, at most %d.", len(m), maxMetadataKeys)
	}
	for k, v := range m {
		if utf8.RuneCountInString(k) > maxMetadataKeyLen {
			return invalid("metadata", "Invalid 'metadata': the key %.20q… is longer than %d characters.", k, maxMetadataKeyLen)
		}
		if utf8.RuneCountInString(v) > maxMetadataValueLen {
			return invalid("metadata", "Invalid 'metadata': the value of %q is longer than %d characters.", k, maxMetadataValueLen)
		}
	}
	return nil
}

// thinking reads the thinking switch, enable_thinking or chat_template_kwargs as the
// chat endpoint reads them, and reasoning.effort, as the chat endpoint reads its
// reasoning_effort (setThinking): "none" and "minimal" switch thinking off, the others
// on with a share of max_output_tokens for the think block.
func (j *respJob) thinking(req *responsesRequest, opt *bonsai.GenerateOptions) *apiError {
	chat := chatRequest{EnableThinking: req.EnableThinking, ChatTemplateKwargs: req.ChatTemplateKwargs}
	think, e := chat.thinking()
	if e != nil {
		return e
	}
	var effort *string
	if req.Reasoning != nil {
		effort = req.Reasoning.Effort
	}
	if e := setThinking(opt, think, "reasoning.effort", effort); e != nil {
		return e
	}
	j.effort = effort
	return nil
}

// readTools reads tools, tool_choice and parallel_tool_calls.
func (j *respJob) readTools(req *responsesRequest, opt *bonsai.GenerateOptions) *apiError {
	var tools []json.RawMessage
	if present(req.Tools) {
		if err := json.Unmarshal(req.Tools, &tools); err != nil {
			return invalid("tools", "Invalid 'tools': expected an array of tools.")
		}
	}
	if len(tools) > maxTools {
		return invalid("tools", "Invalid 'tools': %d tools, at most %d.", len(tools), maxTools)
	}
	j.tools = []any{}
	for i, raw := range tools {
		at := fmt.Sprintf("tools[%d]", i)
		var t respTool
		if err := json.Unmarshal(raw, &t); err != nil {
			return invalid(at, "Invalid '%s': expected a function tool object.", at)
		}
		if t.Type != "function" {
			return invalid(at+".type", "Invalid '%s.type': %q (this server supports only \"function\" tools).", at, t.Type)
		}
		if !toolName.MatchString(t.Name) {
			return invalid(at+".name", "Invalid '%s.name': %q (want 1 to 64 letters, digits, _ or -).", at, t.Name)
		}
		params := bytes.TrimSpace(t.Parameters)
		if string(params) == "null" {
			params = nil
		}
		if len(params) > 0 && params[0] != '{' {
			return invalid(at+".parameters", "Invalid '%s.parameters': expected a JSON Schema object.", at)
		}
		desc := ""
		if t.Description != nil {
			desc = *t.Description
		}
		opt.Tools = append(opt.Tools, bonsai.Tool{Name: t.Name, Description: desc, Parameters: params})
		echo := map[string]any{"type": "function", "name": t.Name, "description": t.Description,
			"parameters": json.RawMessage("null"), "strict": t.Strict == nil || *t.Strict}
		if len(params) > 0 {
			echo["parameters"] = json.RawMessage(params)
		}
		j.tools = append(j.tools, echo)
	}
	j.toolChoice = "auto"
	if raw := bytes.TrimSpace(req.ToolChoice); len(raw) > 0 && string(raw) != "null" {
		var mode string
		if json.Unmarshal(raw, &mode) == nil {
			if err := toolChoiceMode(mode, opt); err != nil {
				return err
			}
			j.toolChoice = mode
		} else {
			var named struct {
				Type string `json:"type"`
				Name string `json:"name"`
			}
			if err := json.Unmarshal(raw, &named); err != nil || named.Type != "function" {
				return invalid("tool_choice", "Invalid 'tool_choice': expected \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...}.")
			}
			opt.ToolChoice = bonsai.ToolChoice{Mode: bonsai.ToolChoiceFunction, Name: named.Name}
			j.toolChoice = map[string]string{"type": "function", "name": named.Name}
		}
	}
	if req.ParallelToolCalls != nil {
		opt.ParallelToolCalls = req.ParallelToolCalls
		j.parallel = *req.ParallelToolCalls
	}
	return nil
}

// readFormat reads text.format.
func (j *respJob) readFormat(req *responsesRequest, opt *bonsai.GenerateOptions) *apiError {
	j.format = map[string]string{"type": "text"}
	if req.Text == nil || !present(req.Text.Format) {
		return nil
	}
	var f textFormat
	if err := json.Unmarshal(req.Text.Format, &f); err != nil {
		return invalid("text.format", "Invalid 'text.format': expected an object with a type.")
	}
	switch f.Type {
	case "text":
		return nil
	case "json_object":
		opt.ResponseFormat = &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONObject}
		j.format = map[string]string{"type": "json_object"}
	case "json_schema":
		if !toolName.MatchString(f.Name) {
			return invalid("text.format.name", "Invalid 'text.format.name': %q (want 1 to 64 letters, digits, _ or -).", f.Name)
		}
		schema := bytes.TrimSpace(f.Schema)
		if len(schema) == 0 || schema[0] != '{' {
			return invalid("text.format.schema", "Invalid 'text.format.schema': expected a JSON Schema object.")
		}
		strict := f.Strict != nil && *f.Strict
		opt.ResponseFormat = &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONSchema, Schema: schema, Strict: strict, Name: f.Name}
		j.format = map[string]any{"type": "json_schema", "name": f.Name, "schema": json.RawMessage(schema),
			"description": f.Description, "strict": strict}
	default:
		return invalid("text.format.type", "Invalid 'text.format.type': %q (want \"text\", \"json_object\" or \"json_schema\").", f.Type)
	}
	if opt.ToolChoice.Mode == bonsai.ToolChoiceRequired || opt.ToolChoice.Mode == bonsai.ToolChoiceFunction {
		return invalid("text.format", "'text.format' %q cannot be combined with a required 'tool_choice': the answer is either calls or JSON.", f.Type)
	}
	return nil
}

// inputMessages reads input (a string, or an array of items) into the messages that
// follow prev. Function calls join the assistant message before them; a reasoning
// item's text becomes the next assistant message's thinking.
func inputMessages(raw json.RawMessage, prev []bonsai.Message) ([]bonsai.Message, *apiError) {
	out := append([]bonsai.Message(nil), prev...)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("input", "Missing 'input'.")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text == "" {
			return nil, invalid("input", "Invalid 'input': it is empty.")
		}
		return append(out, bonsai.Message{Role: bonsai.RoleUser, Content: text}), nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, invalid("input", "Invalid 'input': expected a string or an array of input items.")
	}
	if len(items) == 0 {
		return nil, invalid("input", "Invalid 'input': the array is empty.")
	}
	names := map[string]string{} // call_id → function name, for the outputs
	for _, m := range out {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
		}
	}
	var thinking string // a reasoning item's, for the next assistant message
	// assistant returns the assistant message function calls join: the last message
	// when it is one the input made, else a new one.
	joinable := -1
	assistant := func() *bonsai.Message {
		if joinable < 0 || joinable != len(out)-1 {
			out = append(out, bonsai.Message{Role: bonsai.RoleAssistant, ReasoningContent: thinking})
			thinking = ""
			joinable = len(out) - 1
		}
		return &out[joinable]
	}
	for i, rawItem := range items {
		at := fmt.Sprintf("input[%d]", i)
		var it inputItem
		if err := json.Unmarshal(rawItem, &it); err != nil {
			return nil, invalid(at, "Invalid '%s': expected an input item object.", at)
		}
		switch it.Type {
		case "", "message":
			content, e := partsText(it.Content, at+".content")
			if e != nil {
				return nil, e
			}
			switch it.Role {
			case "user", "system":
				out = append(out, bonsai.Message{Role: bonsai.Role(it.Role), Content: content})
			case "developer":
				out = append(out, bonsai.Message{Role: bonsai.RoleSystem, Content: content})
			case "assistant":
				joinable = -1
				assistant().Content = content
			case "":
				return nil, invalid(at+".role", "Missing '%s.role'.", at)
			default:
				return nil, invalid(at+".role", "Invalid '%s.role': %q (want user, assistant, system or developer).", at, it.Role)
			}
		case "function_call":
			if it.CallID == "" {
				return nil, invalid(at+".call_id", "Missing '%s.call_id'.", at)
			}
			if it.Name == "" {
				return nil, invalid(at+".name", "Missing '%s.name'.", at)
			}
			args := bytes.TrimSpace([]byte(it.Arguments))
			if len(args) == 0 {
				args = []byte("{}")
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
				return nil, invalid(at+".arguments", "Invalid '%s.arguments': expected a JSON object in a string.", at)
			}
			m := assistant()
			m.ToolCalls = append(m.ToolCalls, bonsai.ToolCall{ID: it.CallID, Name: it.Name, Arguments: json.RawMessage(args)})
			names[it.CallID] = it.Name
		case "function_call_output":
			if it.CallID == "" {
				return nil, invalid(at+".call_id", "Missing '%s.call_id'.", at)
			}
			content, e := partsText(it.Output, at+".output")
			if e != nil {
				return nil, e
			}
			out = append(out, bonsai.Message{Role: bonsai.RoleTool, Content: content, ToolCallID: it.CallID, Name: names[it.CallID]})
		case "reasoning":
			texts, e := reasoningText(it, at)
			if e != nil {
				return nil, e
			}
			thinking = texts
			joinable = -1
		default:
			return nil, invalid(at+".type", "Invalid '%s.type': %q (this server takes message, function_call, function_call_output and reasoning items).", at, it.Type)
		}
	}
	return out, nil
}

// partsText reads a message's content or a call's output: a string or an array of text
// parts (input_text, output_text), joined by newlines.
func partsText(raw json.RawMessage, param string) (string, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", invalid(param, "Missing '%s'.", param)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", invalid(param, "Invalid '%s': expected a string or an array of content parts.", param)
	}
	texts := make([]string, 0, len(parts))
	for k, rawPart := range parts {
		var p struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		}
		at := fmt.Sprintf("%s[%d]", param, k)
		if err := json.Unmarshal(rawPart, &p); err != nil {
			return "", invalid(at, "Invalid '%s': expected a content part object.", at)
		}
		if p.Type != "input_text" && p.Type != "output_text" {
			return "", invalid(at+".type", "Invalid '%s.type': %q (this server takes input_text and output_text parts).", at, p.Type)
		}
		if p.Text == nil {
			return "", invalid(at+".text", "Missing '%s.text'.", at)
		}
		texts = append(texts, *p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// reasoningText reads a reasoning item: its reasoning_text content, else its summary.
func reasoningText(it inputItem, at string) (string, *apiError) {
	if present(it.Content) {
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(it.Content, &parts); err != nil {
			return "", invalid(at+".content", "Invalid '%s.content': expected an array of reasoning_text parts.", at)
		}
		var texts []string
		for k, p := range parts {
			if p.Type != "reasoning_text" {
				return "", invalid(fmt.Sprintf("%s.content[%d].type", at, k), "Invalid '%s.content[%d].type': %q (want reasoning_text).", at, k, p.Type)
			}
			texts = append(texts, p.Text)
		}
		return strings.Join(texts, "\n"), nil
	}
	texts := make([]string, len(it.Summary))
	for k, p := range it.Summary {
		texts[k] = p.Text
	}
	return strings.Join(texts, "\n"), nil
}

// getResponse serves GET /v1/responses/{id}: a stored response.
func (s *api) getResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, ok := s.store.response(id)
	if !ok {
		writeError(w, s.responseNotFound(id))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// deleteResponse serves DELETE /v1/responses/{id}.
func (s *api) deleteResponse(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.store.remove(id) {
		writeError(w, s.responseNotFound(id))
		return
	}
	serve.WriteJSON(w, http.StatusOK, map[string]any{"id": id, "object": "response.deleted", "deleted": true})
}

func (s *api) responseNotFound(id string) *apiError {
	return &apiError{status: http.StatusNotFound, Type: typeInvalidRequest,
		Message: fmt.Sprintf("Response with id '%s' not found%s", id, s.storeHint())}
}

// storeHint ends the message of a response not found, saying why it may be missing:
// the store is off, or bounded.
func (s *api) storeHint() string {
	if s.store.off() {
		return ": this server keeps no responses (its store is off); send the whole conversation as input items instead."
	}
	return fmt.Sprintf(": it was never stored, was deleted, or was dropped (this server keeps the %d most recently used responses, up to %d bytes).",
		s.store.maxCount, s.store.maxBytes)
}
