package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
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
	var tokens sync.Map // of each generation (its context), *atomic.Int32
	serve.SetTokenHook(&cfg, func(ctx context.Context) {
		n, _ := tokens.LoadOrStore(ctx, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		time.Sleep(2 * time.Millisecond)
	})
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
	// Both have generated a few tokens when the drain ends them.
	deadline := time.Now().Add(10 * time.Second)
	for started := 0; started < 2; {
		require.True(t, time.Now().Before(deadline), "the generations did not start")
		time.Sleep(time.Millisecond)
		started = 0
		tokens.Range(func(_, n any) bool {
			if n.(*atomic.Int32).Load() >= 5 {
				started++
			}
			return true
		})
	}
	s.StopAll()
	for range 2 {
		m := <-msgs
		assert.Equal(t, anthropic.StopReasonMaxTokens, m.StopReason, m.RawJSON())
		assert.GreaterOrEqual(t, m.Usage.OutputTokens, int64(5))
		assert.Less(t, m.Usage.OutputTokens, int64(3000))
		require.NotEmpty(t, m.Content, m.RawJSON())
	}
	code, h, b := post(t, ts.URL+"/v1/messages", `{"model":"any","max_tokens":3,"messages":[{"role":"user","content":"Hi"}]}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "1", h.Get("Retry-After"))
	var e map[string]any
	require.NoError(t, json.Unmarshal(b, &e))
	assert.Regexp(t, `^req_[0-9a-f]{24}$`, e["request_id"])
	assert.Equal(t, h.Get("Request-Id"), e["request_id"])
	delete(e, "request_id")
	assert.Equal(t, map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "The server is shutting down."}}, e)
}
