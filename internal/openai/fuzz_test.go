package openai

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
)

// chatSeeds are request bodies that reach every branch of the chat request's parsing:
// tools, tool choices, response formats, tool calls and tool messages in the history.
var chatSeeds = []string{
	`{"messages": [{"role": "user", "content": "Hi"}]}`,
	`{"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}], "tool_choice": "required", "parallel_tool_calls": false}`,
	`{"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "g", "strict": true}}], "tool_choice": {"type": "function", "function": {"name": "g"}}}`,
	`{"messages": [{"role": "user", "content": "Hi"}], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true, "schema": {"type": "object", "properties": {"v": {"enum": [1, "a", null]}}, "required": ["v"], "additionalProperties": false}}}}`,
	`{"messages": [{"role": "user", "content": "Hi"}], "response_format": {"type": "json_object"}}`,
	`{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}, {"role": "tool", "tool_call_id": "call_1", "content": "2"}], "tools": [{"type": "function", "function": {"name": "f"}}]}`,
	`{"messages": [{"role": "developer", "content": [{"type": "text", "text": "x"}]}, {"role": "user", "content": "y"}], "tool_choice": "none", "stop": ["a"], "chat_template_kwargs": {"enable_thinking": false}}`,
	`{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 64, "reasoning_effort": "high", "response_format": {"type": "json_object"}}`,
	`{"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"schema": {"$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}}, "$ref": "#/$defs/n"}}}}`,
}

// FuzzChatRequest: any body gets an answer — a job, or an error with a status and a
// message — never a panic; an accepted job's options are consistent with the request.
func FuzzChatRequest(f *testing.F) {
	s := fuzzAPI(f, chatSeeds)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req chatRequest
		if e := decode(body, &req); e != nil {
			checkAPIError(t, e)
			return
		}
		j, e := s.chatJob(&req)
		if e != nil {
			checkAPIError(t, e)
			return
		}
		if j.p.Len() == 0 || j.p.Len() > tinyModel.ContextSize() {
			t.Fatalf("prompt of %d tokens accepted", j.p.Len())
		}
		opt := j.p.Options()
		names := map[string]bool{}
		for _, tool := range opt.Tools {
			if !toolName.MatchString(tool.Name) || names[tool.Name] {
				t.Fatalf("tool %q accepted", tool.Name)
			}
			names[tool.Name] = true
		}
		switch tc := opt.ToolChoice; tc.Mode {
		case bonsai.ToolChoiceFunction:
			if !names[tc.Name] {
				t.Fatalf("tool_choice names %q, not a tool", tc.Name)
			}
		case bonsai.ToolChoiceRequired:
			if len(names) == 0 {
				t.Fatal("tool_choice required without tools accepted")
			}
		}
		if rf := opt.ResponseFormat; rf != nil && rf.Type == "json_schema" && len(rf.Schema) == 0 {
			t.Fatal("json_schema without a schema accepted")
		}
		msgs, e := req.messages()
		if e != nil {
			t.Fatalf("prepared, but the messages are refused: %v", e)
		}
		for _, m := range msgs {
			if m.Role == "tool" && m.ToolCallID == "" {
				t.Fatal("a tool message without tool_call_id accepted")
			}
		}
	})
}

func checkAPIError(t *testing.T, e *apiError) {
	t.Helper()
	if e.Message == "" || e.status < http.StatusBadRequest || e.status >= http.StatusInternalServerError {
		t.Fatalf("error %d %q", e.status, e.Message)
	}
}

// responsesSeeds are request bodies that reach every branch of the Responses request's
// parsing: input as text and as items of each type, tools, tool choices, text formats,
// reasoning and the refused parameters.
var responsesSeeds = []string{
	`{"model": "tiny", "input": "Hi", "instructions": "Be brief.", "max_output_tokens": 8, "temperature": 0.5, "top_p": 0.9, "store": false, "metadata": {"k": "v"}, "user": "u"}`,
	`{"input": [{"role": "developer", "content": "x"}, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "y"}]}, {"role": "assistant", "content": [{"type": "output_text", "text": "z"}]}]}`,
	`{"input": [{"role": "user", "content": "w"}, {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "t"}]}, {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{\"a\": 1}"}, {"type": "function_call_output", "call_id": "call_1", "output": "2"}], "tools": [{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}]}`,
	`{"input": "x", "tools": [{"type": "function", "name": "f", "strict": true, "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": false}}], "tool_choice": "required", "parallel_tool_calls": false}`,
	`{"input": "x", "tools": [{"type": "function", "name": "f"}, {"type": "function", "name": "g"}], "tool_choice": {"type": "function", "name": "g"}}`,
	`{"input": "x", "text": {"format": {"type": "json_schema", "name": "s", "strict": true, "schema": {"type": "object", "properties": {"v": {"enum": [1, "a", null]}}, "required": ["v"], "additionalProperties": false}}}}`,
	`{"input": "x", "text": {"format": {"type": "json_object"}}, "reasoning": {"effort": "none"}}`,
	`{"input": "x", "reasoning": {"effort": "high"}, "chat_template_kwargs": {"enable_thinking": false}, "top_k": 5, "min_p": 0.1, "seed": 3}`,
	`{"input": "x", "previous_response_id": "resp_0", "background": false, "top_logprobs": 0}`,
}

// FuzzResponsesRequest: any body gets an answer — a job, or an error with a 4xx status,
// a message, and the parameter at fault when the body is a JSON object — never a panic;
// an accepted job is consistent with the request.
func FuzzResponsesRequest(f *testing.F) {
	s := fuzzAPI(f, responsesSeeds)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req responsesRequest
		e := decode(body, &req)
		var j *respJob
		if e == nil {
			j, e = s.responsesJob(&req)
		}
		if e != nil {
			checkAPIError(t, e)
			var obj map[string]json.RawMessage
			if json.Unmarshal(body, &obj) == nil && obj != nil && e.Param == nil {
				t.Fatalf("an error that names no parameter: %q", e.Message)
			}
			return
		}
		if j.p.Len() == 0 || j.p.Len() > tinyModel.ContextSize() {
			t.Fatalf("prompt of %d tokens accepted", j.p.Len())
		}
		if len(j.conv) == 0 {
			t.Fatal("an empty conversation accepted")
		}
		opt := j.p.Options()
		names := map[string]bool{}
		for _, tool := range opt.Tools {
			if !toolName.MatchString(tool.Name) || names[tool.Name] {
				t.Fatalf("tool %q accepted", tool.Name)
			}
			names[tool.Name] = true
		}
		if len(j.tools) != len(opt.Tools) {
			t.Fatalf("%d tools echoed, %d used", len(j.tools), len(opt.Tools))
		}
		switch tc := opt.ToolChoice; tc.Mode {
		case bonsai.ToolChoiceFunction:
			if !names[tc.Name] {
				t.Fatalf("tool_choice names %q, not a tool", tc.Name)
			}
		case bonsai.ToolChoiceRequired:
			if len(names) == 0 {
				t.Fatal("tool_choice required without tools accepted")
			}
		}
		if rf := opt.ResponseFormat; rf != nil && rf.Type == "json_schema" && len(rf.Schema) == 0 {
			t.Fatal("json_schema without a schema accepted")
		}
		if opt.MaxTokens < 0 || req.MaxOutputTokens != nil && opt.MaxTokens != *req.MaxOutputTokens {
			t.Fatalf("max_output_tokens %v, MaxTokens %d", req.MaxOutputTokens, opt.MaxTokens)
		}
		for _, m := range j.conv {
			switch {
			case m.Role != "user" && m.Role != "system" && m.Role != "assistant" && m.Role != "tool":
				t.Fatalf("role %q accepted", m.Role)
			case m.Role == "tool" && m.ToolCallID == "":
				t.Fatal("a function call output without call_id accepted")
			}
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Name == "" || !json.Valid(c.Arguments) {
					t.Fatalf("call %+v accepted", c)
				}
			}
		}
	})
}

// fuzzAPI seeds f with seeds and returns the API the fuzz targets read requests with.
func fuzzAPI(f *testing.F, seeds []string) *api {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	srv, err := serve.New(tinyModel, serve.Config{ModelName: modelName})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close() })
	return newAPI(srv, Config{})
}
