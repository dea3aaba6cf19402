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
		"-model-name", "-max-body", "-shutdown-timeout", "-temperature", "-top-p", "-top-k", "-min-p", "-max-tokens", "-quiet",
		"127.0.0.1:8080", "/v1/chat/completions", "/v1/messages", "chat page", "random weights"} {
		assert.Contains(t, out, f)
	}
	cfg, _, err := parse(t, "-parallel", "4", "-queue", "28", "-addr", ":9000", "-shutdown-timeout", "5s", "-temperature", "0")
	require.NoError(t, err)
	assert.Equal(t, 4, cfg.parallel)
	assert.Equal(t, 28, cfg.queue)
	assert.Equal(t, ":9000", cfg.addr)
	assert.Equal(t, 5*time.Second, cfg.grace)
	assert.Zero(t, cfg.defaults.Temperature)
	for _, bad := range [][]string{{"-parallel", "0"}, {"-queue", "-1"}, {"-max-body", "0"}, {"extra"}} {
		_, _, err := parse(t, bad...)
		assert.Error(t, err, "%v", bad)
	}
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
	cfg.onListen = func(a string) { addr <- a }
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

	resp, err = http.Post(base+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"Hello"}],"max_tokens":5}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"completion_tokens":5`)

	// Anthropic's API and the chat page are mounted on the same server.
	resp, err = http.Post(base+"/v1/messages", "application/json",
		strings.NewReader(`{"model": "any", "max_tokens": 4, "messages": [{"role": "user", "content": "Hello"}]}`))
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"output_tokens":4`)
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
	assert.Contains(t, out, "weights are RANDOM")
	assert.Contains(t, out, "serve: backend cpu, 2 threads")
	assert.Contains(t, out, "POST /v1/chat/completions 200")
	assert.Contains(t, out, "POST /v1/messages 200")
	assert.Contains(t, out, "stopped after 4 requests, 2 generations")
}

// TestServeBadModels: a missing file, a file that is not a model and a damaged one each
// stop the server before it listens, with one clear line.
func TestServeBadModels(t *testing.T) {
	for _, bad := range clitest.BadModels(t) {
		cfg, _, err := parse(t, "-model", bad.Path, "-addr", "127.0.0.1:0", "-threads", "1")
		require.NoError(t, err)
		cfg.onListen = func(string) { t.Errorf("%s: listening", bad.Name) }
		var stderr syncBuffer
		err = run(context.Background(), &stderr, cfg)
		require.Error(t, err, bad.Name)
		assert.Contains(t, err.Error(), bad.Want, bad.Name)
		assert.Contains(t, err.Error(), bad.Path, bad.Name)
		assert.NotContains(t, err.Error(), "\n")
	}
}
