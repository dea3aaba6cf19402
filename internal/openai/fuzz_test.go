package openai

import (
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
	`{"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema", "json_schema": {"schema": {"$defs": {"n": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]}}, "$ref": "#/$defs/n"}}}}`,
}

// FuzzChatRequest: any body gets an answer — a job, or an error with a status and a
// message — never a panic; an accepted job's options are consistent with the request.
func FuzzChatRequest(f *testing.F) {
	for _, s := range chatSeeds {
		f.Add([]byte(s))
	}
	srv, err := serve.New(tinyModel, serve.Config{ModelName: modelName})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close() })
	s := newAPI(srv, Config{})
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
