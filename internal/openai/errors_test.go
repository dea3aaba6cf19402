package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/openai/openaitest"
	"github.com/bonsai-go/sdk/internal/serve"
	oai "github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestErrors: each bad request gets OpenAI's error shape, the right status, and the
// parameter at fault.
func TestErrors(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{MaxBodyBytes: 64 << 10})
	const user = `"messages":[{"role":"user","content":"Hi"}]`
	const fnF = `{"type": "function", "function": {"name": "f"}}`
	long := strings.Repeat("hello world ", 3000) // more tokens than the 4096 of the context
	for _, c := range []struct {
		name, path, body string
		status           int
		param, code      string
	}{
		{"malformed JSON", "/v1/chat/completions", `{"messages": [`, 400, "", ""},
		{"not an object", "/v1/chat/completions", `[1, 2]`, 400, "", ""},
		{"empty body", "/v1/chat/completions", ``, 400, "", ""},
		{"wrong type", "/v1/chat/completions", `{"temperature": "hot", ` + user + `}`, 400, "temperature", ""},
		{"temperature", "/v1/chat/completions", `{"temperature": 3, ` + user + `}`, 400, "temperature", ""},
		{"top_p", "/v1/chat/completions", `{"top_p": 1.5, ` + user + `}`, 400, "top_p", ""},
		{"top_k", "/v1/chat/completions", `{"top_k": -5, ` + user + `}`, 400, "top_k", ""},
		{"speculative", "/v1/chat/completions", `{"speculative": "fast", ` + user + `}`, 400, "speculative", ""},
		{"speculative empty", "/v1/chat/completions", `{"speculative": "", ` + user + `}`, 400, "speculative", ""},
		{"speculative type", "/v1/chat/completions", `{"speculative": true, ` + user + `}`, 400, "speculative", ""},
		{"completion speculative", "/v1/completions", `{"prompt": "a", "speculative": "on"}`, 400, "speculative", ""},
		{"responses speculative", "/v1/responses", `{"input": "a", "speculative": "on"}`, 400, "speculative", ""},
		// The tiny model has no MTP head: Prepare's refusal names the field, not a 500.
		{"speculative mtp without a head", "/v1/chat/completions", `{"speculative": "mtp", ` + user + `}`, 400, "speculative", ""},
		{"completion speculative mtp without a head", "/v1/completions", `{"prompt": "a", "speculative": "mtp"}`, 400, "speculative", ""},
		{"responses speculative mtp without a head", "/v1/responses", `{"input": "a", "speculative": "mtp"}`, 400, "speculative", ""},
		{"presence_penalty", "/v1/chat/completions", `{"presence_penalty": 2.5, ` + user + `}`, 400, "presence_penalty", ""},
		{"frequency_penalty", "/v1/chat/completions", `{"frequency_penalty": -3, ` + user + `}`, 400, "frequency_penalty", ""},
		{"max_tokens", "/v1/chat/completions", `{"max_tokens": 0, ` + user + `}`, 400, "max_tokens", ""},
		{"max_completion_tokens", "/v1/chat/completions", `{"max_completion_tokens": -1, ` + user + `}`, 400, "max_completion_tokens", ""},
		{"n", "/v1/chat/completions", `{"n": 2, ` + user + `}`, 400, "n", ""},
		{"stop type", "/v1/chat/completions", `{"stop": 5, ` + user + `}`, 400, "stop", ""},
		{"top_logprobs", "/v1/chat/completions", `{"logprobs": true, "top_logprobs": 50, ` + user + `}`, 400, "top_logprobs", ""},
		{"top_logprobs alone", "/v1/chat/completions", `{"top_logprobs": 2, ` + user + `}`, 400, "top_logprobs", ""},
		{"no messages", "/v1/chat/completions", `{"messages": []}`, 400, "messages", ""},
		{"bad role", "/v1/chat/completions", `{"messages": [{"role": "robot", "content": "x"}]}`, 400, "messages[0].role", ""},
		{"image part", "/v1/chat/completions", `{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}`, 400, "messages[0].content", ""},
		{"thinking type", "/v1/chat/completions", `{"chat_template_kwargs": {"enable_thinking": "yes"}, ` + user + `}`, 400, "chat_template_kwargs.enable_thinking", ""},
		{"tool type", "/v1/chat/completions", `{"tools": [{"type": "web_search"}], ` + user + `}`, 400, "tools[0].type", ""},
		{"tool name", "/v1/chat/completions", `{"tools": [{"type": "function", "function": {"name": "a b"}}], ` + user + `}`, 400, "tools[0].function.name", ""},
		{"tool twice", "/v1/chat/completions", `{"tools": [` + fnF + `, ` + fnF + `], ` + user + `}`, 400, "tools[1].function.name", ""},
		{"tool parameters", "/v1/chat/completions", `{"tools": [{"type": "function", "function": {"name": "f", "parameters": [1]}}], ` + user + `}`, 400, "tools[0].function.parameters", ""},
		{"tools not a list", "/v1/chat/completions", `{"tools": {"a": 1}, ` + user + `}`, 400, "tools", ""},
		{"functions", "/v1/chat/completions", `{"functions": [{"name": "f"}], ` + user + `}`, 400, "functions", ""},
		{"tool_choice word", "/v1/chat/completions", `{"tool_choice": "always", "tools": [` + fnF + `], ` + user + `}`, 400, "tool_choice", ""},
		{"tool_choice required without tools", "/v1/chat/completions", `{"tool_choice": "required", ` + user + `}`, 400, "tool_choice", ""},
		{"tool_choice unknown function", "/v1/chat/completions", `{"tool_choice": {"type": "function", "function": {"name": "g"}}, "tools": [` + fnF + `], ` + user + `}`, 400, "tool_choice.function.name", ""},
		{"tool_calls of a user", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "x", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}`, 400, "messages[0].tool_calls", ""},
		{"tool call arguments", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "[1]"}}]}]}`, 400, "messages[1].tool_calls[0].function.arguments", ""},
		{"tool call id", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}`, 400, "messages[1].tool_calls[0].id", ""},
		{"tool message without id", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "1"}]}`, 400, "messages[1].tool_call_id", ""},
		{"response_format type", "/v1/chat/completions", `{"response_format": {"type": "yaml"}, ` + user + `}`, 400, "response_format.type", ""},
		{"json_schema missing", "/v1/chat/completions", `{"response_format": {"type": "json_schema"}, ` + user + `}`, 400, "response_format.json_schema", ""},
		{"json_schema schema", "/v1/chat/completions", `{"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": "obj"}}, ` + user + `}`, 400, "response_format.json_schema.schema", ""},
		{"json_schema with required call", "/v1/chat/completions", `{"response_format": {"type": "json_object"}, "tool_choice": "required", "tools": [` + fnF + `], ` + user + `}`, 400, "response_format", ""},
		{"too long", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "` + long + `"}]}`, 400, "messages", "context_length_exceeded"},
		{"body too large", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "` + strings.Repeat("x", 70<<10) + `"}]}`, 413, "", "request_too_large"},
		{"no prompt", "/v1/completions", `{"max_tokens": 3}`, 400, "prompt", ""},
		{"empty prompt", "/v1/completions", `{"prompt": ""}`, 400, "prompt", ""},
		{"two prompts", "/v1/completions", `{"prompt": ["a", "b"]}`, 400, "prompt", ""},
		{"token out of range", "/v1/completions", `{"prompt": [1, 99999]}`, 400, "prompt", ""},
		{"completion logprobs", "/v1/completions", `{"prompt": "a", "logprobs": 9}`, 400, "logprobs", ""},
		{"echo", "/v1/completions", `{"prompt": "a", "echo": true}`, 400, "echo", ""},
		{"completion too long", "/v1/completions", `{"prompt": "` + long + `"}`, 400, "prompt", "context_length_exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, h, body := post(t, ts.URL+c.path, c.body)
			require.Equal(t, c.status, code, "%s", body)
			assert.Equal(t, "application/json", h.Get("Content-Type"))
			var e openaitest.ErrorBody
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			assert.NotEmpty(t, e.Error.Message)
			assert.Equal(t, "invalid_request_error", e.Error.Type)
			if c.param == "" {
				assert.Nil(t, e.Error.Param, "%s", body)
			} else if assert.NotNil(t, e.Error.Param, "%s", body) {
				assert.Equal(t, c.param, *e.Error.Param)
			}
			if c.code != "" && assert.NotNil(t, e.Error.Code, "%s", body) {
				assert.Equal(t, c.code, *e.Error.Code)
			}
		})
	}

	// Methods and paths.
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodGet, "/v1/chat/completions", 405, "POST"},
		{http.MethodPut, "/v1/completions", 405, "POST"},
		{http.MethodPost, "/v1/models", 405, "GET, HEAD"},
		{http.MethodDelete, "/health", 405, "GET, HEAD"},
		{http.MethodGet, "/v1/embeddings", 404, ""},
		{http.MethodGet, "/", 404, ""},
	} {
		req, err := http.NewRequest(c.method, ts.URL+c.path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var e openaitest.ErrorBody
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		resp.Body.Close()
		assert.Equal(t, c.status, resp.StatusCode, "%s %s", c.method, c.path)
		assert.Equal(t, c.allow, resp.Header.Get("Allow"), "%s %s", c.method, c.path)
		assert.Equal(t, "invalid_request_error", e.Error.Type)
		assert.NotEmpty(t, e.Error.Message)
	}

	// The official client sees them as *openai.Error.
	c, _ := client(ts)
	var apiErr *oai.Error
	_, err := c.Chat.Completions.New(context.Background(), oai.ChatCompletionNewParams{Model: modelName,
		Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("Hi")}, N: oai.Int(3)})
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	assert.Equal(t, "n", apiErr.Param)
}
