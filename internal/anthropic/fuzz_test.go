package anthropic

import (
	"testing"

	"github.com/bonsai-go/sdk/internal/serve"
)

var messageSeeds = []string{
	`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}]}`,
	`{"model": "m", "max_tokens": 50, "system": [{"type": "text", "text": "Be brief."}], "thinking": {"type": "enabled", "budget_tokens": 10}, "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]}`,
	`{"model": "m", "max_tokens": 5, "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object", "properties": {"a": {"type": "string"}}}}], "tool_choice": {"type": "any", "disable_parallel_tool_use": true}, "messages": [{"role": "user", "content": "Hi"}]}`,
	`{"model": "m", "max_tokens": 5, "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": {"type": "tool", "name": "f"}, "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": "ok"}, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "2"}], "is_error": true}, {"type": "text", "text": "and?"}]}]}`,
	`{"model": "m", "max_tokens": 5, "stop_sequences": ["x"], "temperature": 0.5, "top_p": 0.9, "top_k": 3, "tool_choice": {"type": "none"}, "messages": [{"role": "user", "content": "Hi"}]}`,
}

// FuzzMessagesRequest: any body is prepared or refused with a 4xx and a message, never
// a panic; what is accepted keeps the request's roles and tool results.
func FuzzMessagesRequest(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	srv, err := serve.New(tinyModel, serve.Config{ModelName: modelName})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { srv.Close() })
	h := newHandler(srv)
	f.Fuzz(func(t *testing.T, body []byte) {
		var req messagesRequest
		if e := decode(body, &req); e != nil {
			checkError(t, e)
			return
		}
		p, e := h.prepare(&req)
		if e != nil {
			checkError(t, e)
			return
		}
		if p.Len() == 0 || p.Len() > tinyModel.ContextSize() {
			t.Fatalf("a prompt of %d tokens accepted", p.Len())
		}
		msgs, e := req.messages()
		if e != nil {
			t.Fatalf("prepared, but the messages are refused: %v", e)
		}
		for _, m := range msgs {
			switch m.Role {
			case "system", "user", "assistant":
			case "tool":
				if m.ToolCallID == "" {
					t.Fatal("a tool result without its call's id accepted")
				}
			default:
				t.Fatalf("role %q accepted", m.Role)
			}
		}
	})
}

func checkError(t *testing.T, e *apiError) {
	t.Helper()
	if e.Message == "" || e.status < 400 || e.status >= 500 || e.Type == "" {
		t.Fatalf("error %d %s %q", e.status, e.Type, e.Message)
	}
}
