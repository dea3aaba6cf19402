package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func textParams(maxTokens int64) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{
		Model:     "claude-sonnet-4-5", // agents name their own models: any name is served
		MaxTokens: maxTokens,
		System:    []anthropic.TextBlockParam{{Text: "Be brief."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there"))},
	}
}

// streamed runs p streamed through the official client, returning the message its
// events accumulate to.
func streamed(t *testing.T, c anthropic.Client, p anthropic.MessageNewParams) anthropic.Message {
	t.Helper()
	s := c.Messages.NewStreaming(context.Background(), p)
	var msg anthropic.Message
	for s.Next() {
		require.NoError(t, msg.Accumulate(s.Current()))
	}
	require.NoError(t, s.Err())
	require.NoError(t, s.Close())
	return msg
}

// TestMessages: a turn whole and streamed through Anthropic's client, greedy, gives the
// same answer; its usage counts the prompt as the OpenAI endpoint and count_tokens do.
func TestMessages(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{Parallel: 2})
	c := client(ts)
	ctx := context.Background()

	whole, err := c.Messages.New(ctx, textParams(24))
	require.NoError(t, err)
	assert.Equal(t, modelName, string(whole.Model))
	assert.True(t, strings.HasPrefix(whole.ID, "msg_"), whole.ID)
	assert.Equal(t, "assistant", string(whole.Role))
	require.Len(t, whole.Content, 1, whole.RawJSON())
	assert.Equal(t, "text", whole.Content[0].Type)
	assert.NotEmpty(t, whole.Content[0].Text)
	assert.Contains(t, []anthropic.StopReason{"end_turn", "max_tokens"}, whole.StopReason)
	assert.LessOrEqual(t, whole.Usage.OutputTokens, int64(24))

	st := streamed(t, c, textParams(24))
	require.Len(t, st.Content, 1)
	assert.Equal(t, whole.Content[0].Text, st.Content[0].Text)
	assert.Equal(t, whole.StopReason, st.StopReason)
	assert.Equal(t, whole.Usage.OutputTokens, st.Usage.OutputTokens)
	// The second turn on the same prompt reuses the session's tokens.
	assert.Equal(t, whole.Usage.InputTokens+whole.Usage.CacheReadInputTokens, st.Usage.InputTokens+st.Usage.CacheReadInputTokens)
	assert.Positive(t, st.Usage.CacheReadInputTokens)

	count, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "any",
		System:   anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: []anthropic.TextBlockParam{{Text: "Be brief."}}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there"))}})
	require.NoError(t, err)
	assert.Equal(t, whole.Usage.InputTokens+whole.Usage.CacheReadInputTokens, count.InputTokens)

	// The OpenAI endpoint, thinking off as Anthropic's default has it, counts the same
	// prompt and writes the same greedy answer.
	code, _, body := post(t, ts.URL+"/v1/chat/completions", `{"messages": [{"role": "system", "content": "Be brief."},
		{"role": "user", "content": "Hello there"}], "max_tokens": 24, "enable_thinking": false}`)
	require.Equal(t, 200, code, "%s", body)
	var oc struct {
		Choices []struct{ Message struct{ Content string } }
		Usage   struct {
			PromptTokens int64 `json:"prompt_tokens"`
		}
	}
	require.NoError(t, json.Unmarshal(body, &oc))
	assert.Equal(t, count.InputTokens, oc.Usage.PromptTokens)
	assert.Equal(t, oc.Choices[0].Message.Content, whole.Content[0].Text)
}

// TestStreamEvents checks the raw event sequence of a stream, thinking on, against
// Anthropic's order, and that it says what the whole response says.
func TestStreamEvents(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{})
	body := `{"model": "m", "max_tokens": 40, "thinking": {"type": "enabled", "budget_tokens": 20},
		"messages": [{"role": "user", "content": "Think about it"}]}`
	code, _, whole := post(t, ts.URL+"/v1/messages", body)
	require.Equal(t, 200, code, "%s", whole)
	var w messageOut
	require.NoError(t, json.Unmarshal(whole, &w))
	require.NotEmpty(t, w.Content)
	require.Equal(t, "thinking", w.Content[0].Type, "%s", whole)
	assert.NotEmpty(t, *w.Content[0].Thinking)
	assert.Equal(t, signature(*w.Content[0].Thinking), *w.Content[0].Signature)

	resp, err := httpPost(ts.URL+"/v1/messages", strings.Replace(body, `"model"`, `"stream": true, "model"`, 1))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events, err := readEvents(resp.Body)
	require.NoError(t, err)
	s, err := checkStream(events)
	require.NoError(t, err)
	require.Len(t, s.blocks, len(w.Content))
	for i, b := range w.Content {
		assert.Equal(t, b.Type, s.blocks[i]["type"])
		switch b.Type {
		case "thinking":
			assert.Equal(t, *b.Thinking, s.blocks[i]["thinking"])
			assert.Equal(t, *b.Signature, s.blocks[i]["signature"])
		case "text":
			assert.Equal(t, *b.Text, s.blocks[i]["text"])
		}
	}
	assert.Equal(t, *w.StopReason, s.stopReason)
	assert.Equal(t, float64(w.Usage.OutputTokens), s.usage["output_tokens"])
	// The OpenAI endpoint's reasoning_content is the same thinking, under the same
	// budget: medium effort is half of max_tokens.
	code, _, oc := post(t, ts.URL+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "Think about it"}], "max_tokens": 40, "reasoning_effort": "medium"}`)
	require.Equal(t, 200, code)
	var o struct {
		Choices []struct {
			Message struct {
				ReasoningContent string `json:"reasoning_content"`
			}
		}
	}
	require.NoError(t, json.Unmarshal(oc, &o))
	assert.Equal(t, o.Choices[0].Message.ReasoningContent, *w.Content[0].Thinking)
}

// TestErrors: each bad request gets Anthropic's error shape, the right status, and a
// message naming the field at fault.
func TestErrors(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{MaxBodyBytes: 64 << 10})
	const user = `"messages": [{"role": "user", "content": "Hi"}]`
	long := strings.Repeat("hello world ", 3000)
	for _, c := range []struct {
		name, path, body string
		status           int
		errType, want    string
	}{
		{"malformed JSON", "/v1/messages", `{"messages": [`, 400, "invalid_request_error", "JSON"},
		{"empty body", "/v1/messages", ``, 400, "invalid_request_error", "empty"},
		{"not an object", "/v1/messages", `[1]`, 400, "invalid_request_error", "object"},
		{"no model", "/v1/messages", `{"max_tokens": 5, ` + user + `}`, 400, "invalid_request_error", "model"},
		{"no max_tokens", "/v1/messages", `{"model": "m", ` + user + `}`, 400, "invalid_request_error", "max_tokens"},
		{"max_tokens 0", "/v1/messages", `{"model": "m", "max_tokens": 0, ` + user + `}`, 400, "invalid_request_error", "max_tokens"},
		{"wrong type", "/v1/messages", `{"model": "m", "max_tokens": "many", ` + user + `}`, 400, "invalid_request_error", "max_tokens"},
		{"temperature", "/v1/messages", `{"model": "m", "max_tokens": 5, "temperature": 1.5, ` + user + `}`, 400, "invalid_request_error", "temperature"},
		{"top_k", "/v1/messages", `{"model": "m", "max_tokens": 5, "top_k": -1, ` + user + `}`, 400, "invalid_request_error", "top_k"},
		{"empty stop", "/v1/messages", `{"model": "m", "max_tokens": 5, "stop_sequences": [" "], ` + user + `}`, 400, "invalid_request_error", "stop_sequences.0"},
		{"no messages", "/v1/messages", `{"model": "m", "max_tokens": 5, "messages": []}`, 400, "invalid_request_error", "messages"},
		{"bad role", "/v1/messages", `{"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}`, 400, "invalid_request_error", "messages.0.role"},
		{"image", "/v1/messages", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}`, 400, "invalid_request_error", "messages.0.content.0.type"},
		{"tool_use of a user", "/v1/messages", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}]}]}`, 400, "invalid_request_error", "messages.0.content.0.type"},
		{"tool_use input", "/v1/messages", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": [1]}]}]}`, 400, "invalid_request_error", "messages.1.content.0.input"},
		{"tool_result id", "/v1/messages", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result", "content": "1"}]}]}`, 400, "invalid_request_error", "tool_use_id"},
		{"system image", "/v1/messages", `{"model": "m", "max_tokens": 5, "system": [{"type": "image"}], ` + user + `}`, 400, "invalid_request_error", "system"},
		{"thinking type", "/v1/messages", `{"model": "m", "max_tokens": 5, "thinking": {"type": "deep"}, ` + user + `}`, 400, "invalid_request_error", "thinking.type"},
		{"thinking budget", "/v1/messages", `{"model": "m", "max_tokens": 5, "thinking": {"type": "enabled", "budget_tokens": 9}, ` + user + `}`, 400, "invalid_request_error", "budget_tokens"},
		{"server tool", "/v1/messages", `{"model": "m", "max_tokens": 5, "tools": [{"type": "web_search_20250305", "name": "web_search"}], ` + user + `}`, 400, "invalid_request_error", "tools.0.type"},
		{"tool schema", "/v1/messages", `{"model": "m", "max_tokens": 5, "tools": [{"name": "f"}], ` + user + `}`, 400, "invalid_request_error", "tools.0.input_schema"},
		{"tool twice", "/v1/messages", `{"model": "m", "max_tokens": 5, "tools": [{"name": "f", "input_schema": {"type": "object"}}, {"name": "f", "input_schema": {"type": "object"}}], ` + user + `}`, 400, "invalid_request_error", "tools.1.name"},
		{"tool_choice name", "/v1/messages", `{"model": "m", "max_tokens": 5, "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": {"type": "tool", "name": "g"}, ` + user + `}`, 400, "invalid_request_error", "tool_choice.name"},
		{"tool_choice any without tools", "/v1/messages", `{"model": "m", "max_tokens": 5, "tool_choice": {"type": "any"}, ` + user + `}`, 400, "invalid_request_error", "tool_choice"},
		{"too long", "/v1/messages", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "` + long + `"}]}`, 400, "invalid_request_error", "prompt is too long: "},
		{"too large", "/v1/messages", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "` + strings.Repeat("x", 70<<10) + `"}]}`, 413, "request_too_large", "limit"},
		{"count without messages", "/v1/messages/count_tokens", `{"model": "m"}`, 400, "invalid_request_error", "messages"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, h, body := post(t, ts.URL+c.path, c.body)
			require.Equal(t, c.status, code, "%s", body)
			assert.Equal(t, "application/json", h.Get("Content-Type"))
			var e struct {
				Type  string
				Error struct{ Type, Message string }
			}
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			assert.Equal(t, "error", e.Type)
			assert.Equal(t, c.errType, e.Error.Type)
			assert.Contains(t, e.Error.Message, c.want)
		})
	}
	resp, err := httpGet(ts.URL + "/v1/messages")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 405, resp.StatusCode)
	assert.Equal(t, "POST", resp.Header.Get("Allow"))
}

// TestStreamDisconnect: a client that leaves mid-stream stops its generation.
func TestStreamDisconnect(t *testing.T) {
	srv, ts := newTestServer(t, serve.Config{})
	resp, err := httpPost(ts.URL+"/v1/messages", `{"model": "m", "max_tokens": 3000, "stream": true,
		"messages": [{"role": "user", "content": "Go on"}]}`)
	require.NoError(t, err)
	buf := make([]byte, 4096)
	n := 0
	for n < 2000 { // message_start, ping and some deltas
		k, err := resp.Body.Read(buf)
		require.NoError(t, err)
		n += k
	}
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for srv.Stats().Cancelled == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := srv.Stats()
	assert.Equal(t, int64(1), st.Cancelled, "the generation went on after the client left")
	assert.Zero(t, st.Running)
}

// TestMetrics: the Messages API's requests count in the server's /metrics, under their
// own endpoint, with their tokens.
func TestMetrics(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{})
	c := client(ts)
	whole, err := c.Messages.New(context.Background(), textParams(6))
	require.NoError(t, err)
	code, _, _ := post(t, ts.URL+"/v1/messages", `{"model": "any", "messages": []}`)
	assert.Equal(t, http.StatusBadRequest, code)
	_, err = c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: "any",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there"))}})
	require.NoError(t, err)

	want := []string{
		`bonsai_requests_total{endpoint="messages",outcome="completed",code="200"} 1`,
		`bonsai_requests_total{endpoint="messages",outcome="error",code="400"} 1`,
		`bonsai_requests_total{endpoint="messages.count_tokens",outcome="completed",code="200"} 1`,
		fmt.Sprintf("bonsai_prompt_tokens_total %d", whole.Usage.InputTokens+whole.Usage.CacheReadInputTokens),
		fmt.Sprintf("bonsai_completion_tokens_total %d", whole.Usage.OutputTokens),
	}
	// A request is counted as its handler returns, which can be just after its client
	// has read the response.
	var lines []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, err := http.Get(ts.URL + "/metrics")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		lines = strings.Split(string(b), "\n")
		missing := 0
		for _, w := range want {
			if !slices.Contains(lines, w) {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics lack some of %q:\n%s", want, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
