package anthropic

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDrainStopAll: generations the server ends as it drains (StopAll) are replies cut
// short — stop_reason "max_tokens" with their usage, streamed (message_delta then
// message_stop, read by Anthropic's SDK) or not — and a request after that gets 503 with
// Retry-After, an overloaded_error.
func TestDrainStopAll(t *testing.T) {
	cfg := serve.Config{Parallel: 2}
	serve.SetTokenHook(&cfg, func(context.Context) { time.Sleep(2 * time.Millisecond) })
	s, ts := newTestServer(t, cfg)
	c := client(ts)
	p := anthropic.MessageNewParams{Model: "any", MaxTokens: 3000, Temperature: anthropic.Float(0),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello there"))}}

	msgs := make(chan anthropic.Message, 2)
	go func() { msgs <- streamed(t, c, p) }()
	go func() {
		m, err := c.Messages.New(context.Background(), p)
		if !assert.NoError(t, err) {
			m = &anthropic.Message{}
		}
		msgs <- *m
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Running < 2 {
		require.True(t, time.Now().Before(deadline), "the generations did not start")
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	s.StopAll()
	for range 2 {
		m := <-msgs
		assert.Equal(t, anthropic.StopReasonMaxTokens, m.StopReason, m.RawJSON())
		assert.Positive(t, m.Usage.OutputTokens)
		assert.Less(t, m.Usage.OutputTokens, int64(3000))
		require.NotEmpty(t, m.Content, m.RawJSON())
	}
	code, h, b := post(t, ts.URL+"/v1/messages", `{"model":"any","max_tokens":3,"messages":[{"role":"user","content":"Hi"}]}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.JSONEq(t, `{"type":"error","error":{"type":"overloaded_error","message":"The server is shutting down."}}`, string(b))
}
