package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/internal/cli/clitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, args ...string) (config, string, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	cfg, err := parseFlags(fs, args)
	return cfg, out.String(), err
}

func TestFlags(t *testing.T) {
	_, out, err := parse(t, "-h")
	require.True(t, errors.Is(err, flag.ErrHelp))
	for _, f := range []string{"-model", "-addr", "-parallel", "-queue", "-threads", "-context", "-verify", "-warmup",
		"-model-name", "-max-body", "-drain-timeout", "-shutdown-timeout", "deprecated", "/ready", "drains", "-temperature", "-top-p", "-top-k", "-min-p", "-max-tokens", "-thinking-budget", "reasoning_effort", "-quiet", "-speculative",
		"-batch-tokens", "-prefix-cache", "(default 2GiB)", "batched together",
		"-responses-store", "(default 1024)", "-responses-store-memory", "(default 64MiB)", "/v1/responses",
		"127.0.0.1:8080", "/v1/chat/completions", "/v1/messages", "/metrics", "chat page", "random weights"} {
		assert.Contains(t, out, f)
	}
	cfg, _, err := parse(t)
	require.NoError(t, err)
	assert.Equal(t, 4, cfg.parallel)
	assert.Equal(t, 64, cfg.batch)
	assert.Equal(t, int64(2<<30), cfg.prefix)
	assert.Equal(t, 30*time.Second, cfg.drain)
	assert.Equal(t, 4096, cfg.defaults.MaxTokens, "a request without max_tokens is capped by default")
	assert.Zero(t, cfg.defaults.ThinkingBudget, "the library's default budget")
	assert.Equal(t, "auto", cfg.defaults.Speculative, "the server drafts where the cost model says it pays")
	assert.Empty(t, cfg.aliases)
	cfg, _, err = parse(t, "-max-tokens", "0", "-model-alias", "gpt-4o", "-model-alias", "claude-sonnet-4-5")
	require.NoError(t, err)
	assert.Zero(t, cfg.defaults.MaxTokens, "0 lifts the cap")
	assert.Equal(t, []string{"gpt-4o", "claude-sonnet-4-5"}, cfg.aliases)
	for _, mode := range []string{"off", "lookup", "auto"} {
		cfg, _, err = parse(t, "-speculative", mode)
		require.NoError(t, err)
		assert.Equal(t, mode, cfg.defaults.Speculative)
	}
	cfg, _, err = parse(t, "-thinking-budget", "300")
	require.NoError(t, err)
	assert.Equal(t, 300, cfg.defaults.ThinkingBudget, "the servers' default budget")
	for _, bad := range []string{"", "a/b"} {
		_, out, err := parse(t, "-model-alias", bad)
		require.Error(t, err, "%q", bad)
		assert.Contains(t, out, "-model-alias: want a non-empty name without /, ? or #")
	}
	cfg, _, err = parse(t, "-drain-timeout", "2s")
	require.NoError(t, err)
	assert.Equal(t, 2*time.Second, cfg.drain)
	cfg, _, err = parse(t, "-parallel", "3", "-queue", "28", "-addr", ":9000", "-shutdown-timeout", "5s", "-temperature", "0",
		"-batch-tokens", "16", "-prefix-cache", "512MiB")
	require.NoError(t, err)
	assert.Equal(t, 3, cfg.parallel)
	assert.Equal(t, 16, cfg.batch)
	assert.Equal(t, int64(512<<20), cfg.prefix)
	assert.Equal(t, 28, cfg.queue)
	assert.Equal(t, ":9000", cfg.addr)
	assert.Equal(t, 5*time.Second, cfg.drain, "-shutdown-timeout is -drain-timeout's old name")
	assert.Zero(t, cfg.defaults.Temperature)
	cfg, _, err = parse(t, "-prefix-cache", "0")
	require.NoError(t, err)
	assert.Zero(t, cfg.prefix)
	_, out, err = parse(t, "-parallel", "8", "-batch-tokens", "4")
	require.Error(t, err)
	assert.Contains(t, out, "-batch-tokens 4 is less than -parallel 8")
	for _, bad := range [][]string{{"-parallel", "0"}, {"-queue", "-1"}, {"-max-body", "0"}, {"-batch-tokens", "0"},
		{"-prefix-cache", "-1"}, {"extra"}} {
		_, _, err := parse(t, bad...)
		assert.Error(t, err, "%v", bad)
	}
	_, out, err = parse(t, "-prefix-cache", "2G")
	require.Error(t, err)
	assert.Contains(t, out, `invalid value "2G" for flag -prefix-cache: "2G": unknown unit "G"`)
}

// syncBuffer is a bytes.Buffer safe for the server's log and the test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeSynthetic starts the server on the synthetic model, sends it a request and
// stops it as a signal would.
func TestServeSynthetic(t *testing.T) {
	cfg, _, err := parse(t, "-addr", "127.0.0.1:0", "-threads", "2", "-parallel", "2")
	require.NoError(t, err)
	addr := make(chan string, 1)
	cfg.onReady = func(a string) { addr <- a }
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, &stderr, cfg) }()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("run: %v", err)
	}

	resp, err := http.Get(base + "/v1/models")
	require.NoError(t, err)
	var models struct {
		Data []struct{ ID string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&models))
	resp.Body.Close()
	require.Len(t, models.Data, 1)
	assert.Equal(t, "bonsai-synthetic-tiny", models.Data[0].ID)

	// Two conversations with one system prompt: the second, on the other session,
	// starts from the first's cached system prompt.
	var cached []int
	for _, user := range []string{"Hello", "Good morning"} {
		resp, err = http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(
			`{"messages":[{"role":"system","content":"You answer in one line."},{"role":"user","content":"`+user+`"}],"max_tokens":5,"temperature":0}`))
		require.NoError(t, err)
		var r struct {
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
				Details          struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			}
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
		require.NoError(t, json.Unmarshal(body, &r), "%s", body)
		assert.LessOrEqual(t, r.Usage.CompletionTokens, 5)
		cached = append(cached, r.Usage.Details.CachedTokens)
	}
	assert.Zero(t, cached[0])
	assert.Positive(t, cached[1], "the prefix cache served the system prompt")

	// Anthropic's API and the chat page are mounted on the same server.
	resp, err = http.Post(base+"/v1/messages", "application/json",
		strings.NewReader(`{"model": "any", "max_tokens": 4, "messages": [{"role": "user", "content": "Hello"}]}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"output_tokens":4`)
	resp, err = http.Get(base + "/metrics")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Contains(t, string(body), `bonsai_requests_total{endpoint="messages",outcome="completed",code="200"} 1`)
	assert.Contains(t, string(body), "\nbonsai_prefix_cache_hits_total 1\n")
	assert.Contains(t, string(body), "\nbonsai_prefix_cache_limit_bytes 2147483648\n")
	resp, err = http.Get(base + "/")
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, page, body)
	assert.NotContains(t, string(body), "http://", "the page fetches nothing from elsewhere")
	assert.NotContains(t, string(body), "https://")

	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after the signal")
	}
	out := stderr.String()
	t.Log(out)
	assert.Contains(t, out, "serve: listening on http://127.0.0.1:")
	assert.Less(t, strings.Index(out, "listening on"), strings.Index(out, "weights are RANDOM"), "it listens before it loads")
	assert.Contains(t, out, "weights are RANDOM")
	assert.Contains(t, out, "serve: backend cpu, 2 threads")
	assert.Contains(t, out, "2 parallel, batches of 64 tokens, prefix cache 2GiB, queue 64")
	assert.Contains(t, out, "POST /v1/chat/completions 200")
	assert.Contains(t, out, "POST /v1/messages 200")
	assert.Contains(t, out, "stopped after 6 requests, 3 generations")
}

// TestServeBadModels: a missing file, a file that is not a model and a damaged one each
// stop the server, which listened while it loaded, with one clear line, and close its
// listener.
func TestServeBadModels(t *testing.T) {
	for _, bad := range clitest.BadModels(t) {
		cfg, _, err := parse(t, "-model", bad.Path, "-addr", "127.0.0.1:0", "-threads", "1")
		require.NoError(t, err)
		var addr string
		cfg.onListen = func(a string) { addr = a }
		cfg.onReady = func(string) { t.Errorf("%s: ready", bad.Name) }
		var stderr syncBuffer
		err = run(context.Background(), &stderr, cfg)
		require.Error(t, err, bad.Name)
		assert.Contains(t, err.Error(), bad.Want, bad.Name)
		assert.Contains(t, err.Error(), bad.Path, bad.Name)
		assert.NotContains(t, err.Error(), "\n")
		require.NotEmpty(t, addr, bad.Name)
		_, err = http.Get("http://" + addr + "/health")
		assert.Error(t, err, "%s: the listener is closed", bad.Name)
	}
}

// TestServeLoading: while the model loads, the server answers its probes — /health 200,
// /ready 503 "loading" — and the APIs 503 with Retry-After in their own error shapes;
// once loaded, /ready is 200.
func TestServeLoading(t *testing.T) {
	cfg, _, err := parse(t, "-addr", "127.0.0.1:0", "-threads", "2", "-quiet")
	require.NoError(t, err)
	ready := make(chan string, 1)
	cfg.onReady = func(a string) { ready <- a }
	checked := false
	cfg.onListen = func(a string) { // the model loads once this returns
		base := "http://" + a
		code, _, b := request(t, "GET", base+"/health", "")
		assert.Equal(t, http.StatusOK, code)
		assert.JSONEq(t, `{"status":"loading"}`, b)
		for _, p := range []string{"/ready", "/v1/ready"} {
			code, h, b := request(t, "GET", base+p, "")
			assert.Equal(t, http.StatusServiceUnavailable, code, p)
			assert.Equal(t, "1", h.Get("Retry-After"), p)
			assert.JSONEq(t, `{"status":"loading"}`, b, p)
		}
		code, h, b := request(t, "POST", base+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}]}`)
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "1", h.Get("Retry-After"))
		assert.JSONEq(t, `{"error":{"message":"The model is loading. Retry later.","type":"server_error","param":null,"code":"model_loading"}}`, b)
		code, h, b = request(t, "POST", base+"/v1/messages", `{"max_tokens":4,"messages":[{"role":"user","content":"Hi"}]}`)
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "1", h.Get("Retry-After"))
		var e map[string]any
		require.NoError(t, json.Unmarshal([]byte(b), &e))
		assert.Regexp(t, `^req_`, e["request_id"])
		delete(e, "request_id")
		assert.Equal(t, map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "The model is loading. Retry later."}}, e)
		req, err := http.NewRequest("GET", base+"/v1/models", nil)
		require.NoError(t, err)
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		mb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		assert.Contains(t, string(mb), `"error":{"type":"overloaded_error","message":"The model is loading. Retry later."}`, "Anthropic's client gets Anthropic's shape")
		checked = true
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- run(ctx, io.Discard, cfg) }()
	var base string
	select {
	case a := <-ready:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	require.True(t, checked)
	code, _, b := request(t, "GET", base+"/ready", "")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"status":"ready","model":"bonsai-synthetic-tiny"}`, b)
	stop()
	require.NoError(t, <-done)
}

// request sends a request and returns the response's status, headers and body.
func request(t *testing.T, method, url, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(b)
}

// TestServeDefaultCap: a request without max_tokens stops at -max-tokens with
// finish_reason "length" (stop_reason needs no cap: Anthropic's API requires
// max_tokens); a request's own max_tokens wins, above the cap too. The models endpoints
// list -model-alias names, in each API's shape, and a request naming any model is
// answered under the served name.
func TestServeDefaultCap(t *testing.T) {
	const capTokens = 7
	cfg, _, err := parse(t, "-addr", "127.0.0.1:0", "-threads", "2", "-quiet", "-max-tokens", "7", "-model-alias", "gpt-4o", "-temperature", "0")
	require.NoError(t, err)
	addr := make(chan string, 1)
	cfg.onReady = func(a string) { addr <- a }
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- run(ctx, io.Discard, cfg) }()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	type reply struct {
		Model   string
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	for _, c := range []struct {
		body   string
		tokens int
	}{
		{`{"model": "gpt-4o", "messages": [{"role": "user", "content": "Tell me a long story"}]}`, capTokens},
		{`{"model": "some-other-name", "prompt": "Once upon a time"}`, capTokens},
		{`{"messages": [{"role": "user", "content": "Tell me a long story"}], "max_tokens": 3}`, 3},
		{`{"messages": [{"role": "user", "content": "Tell me a long story"}], "max_completion_tokens": 12}`, 12},
	} {
		path := "/v1/chat/completions"
		if strings.Contains(c.body, `"prompt"`) {
			path = "/v1/completions"
		}
		code, _, b := request(t, "POST", base+path, c.body)
		require.Equal(t, http.StatusOK, code, "%s", b)
		var r reply
		require.NoError(t, json.Unmarshal([]byte(b), &r), "%s", b)
		assert.Equal(t, "bonsai-synthetic-tiny", r.Model)
		assert.Equal(t, c.tokens, r.Usage.CompletionTokens, "%s: %s", c.body, b)
		require.Len(t, r.Choices, 1)
		assert.Equal(t, "length", r.Choices[0].FinishReason, "%s", b)
	}

	code, _, b := request(t, "GET", base+"/v1/models", "")
	require.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `["bonsai-synthetic-tiny", "gpt-4o"]`, ids(t, b, "id"))
	req, err := http.NewRequest("GET", base+"/v1/models", nil)
	require.NoError(t, err)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	ab, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(ab), `"has_more":false`, "Anthropic's page")
	assert.JSONEq(t, `["bonsai-synthetic-tiny", "gpt-4o"]`, ids(t, string(ab), "id"))
	code, _, _ = request(t, "GET", base+"/v1/models/gpt-4o", "")
	assert.Equal(t, http.StatusOK, code)
	code, _, _ = request(t, "GET", base+"/v1/models/gpt-5", "")
	assert.Equal(t, http.StatusNotFound, code)
	stop()
	require.NoError(t, <-done)
}

// ids returns the JSON list of the field of each object of a list body's data.
func ids(t *testing.T, body, field string) string {
	t.Helper()
	var l struct{ Data []map[string]any }
	require.NoError(t, json.Unmarshal([]byte(body), &l), "%s", body)
	var out []any
	for _, d := range l.Data {
		out = append(out, d[field])
	}
	b, err := json.Marshal(out)
	require.NoError(t, err)
	return string(b)
}
