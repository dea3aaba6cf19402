package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/openai/openaitest"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	oai "github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// postStatus posts a JSON body and returns the response's status, or −1; it is safe
// to call from any goroutine.
func postStatus(url, body string) int {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return -1
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// slowly makes each token take d, so that a generation lasts while a test acts on it.
func slowly(d time.Duration) func(context.Context) {
	return func(context.Context) { time.Sleep(d) }
}

// gated holds each generation at its first token until the gate is closed or its
// context ends.
func gated(gate chan struct{}) func(context.Context) {
	return func(ctx context.Context) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
}

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestDisconnectCancels: a client that leaves, streaming or not, ends its generation
// within a decode step, and frees its session.
func TestDisconnectCancels(t *testing.T) {
	ends := make(chan serve.GenerationEnd, 4)
	s, ts := newTestServer(t, tinyModel, withTokenHook(serve.Config{OnGenerationEnd: func(e serve.GenerationEnd) { ends <- e }},
		slowly(2*time.Millisecond)))
	c := client(ts)

	// Streaming: read a few chunks, then leave.
	ctx, cancel := context.WithCancel(context.Background())
	stream := c.Chat.Completions.NewStreaming(ctx, openaitest.ChatParams("Hello there", 3000))
	for i := 0; i < 5; i++ {
		require.True(t, stream.Next(), "%v", stream.Err())
	}
	left := time.Now()
	cancel()
	stream.Close()
	var e serve.GenerationEnd
	select {
	case e = <-ends:
	case <-time.After(5 * time.Second):
		t.Fatal("the generation did not end after its client left")
	}
	assert.Equal(t, bonsai.FinishCancelled, e.FinishReason)
	assert.NoError(t, e.Err)
	assert.Less(t, e.CompletionTokens, 1000)
	after := e.Ended.Sub(left)
	t.Logf("streaming: the generation ended %v after the client left, after %d tokens", after, e.CompletionTokens)
	assert.Less(t, after, 500*time.Millisecond)

	// Not streaming: the client gives up while the answer is being generated.
	ctx, cancel = context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err := c.Chat.Completions.New(ctx, openaitest.ChatParams("Hello there", 3000))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	left = time.Now()
	select {
	case e = <-ends:
	case <-time.After(5 * time.Second):
		t.Fatal("the generation did not end after its client left")
	}
	assert.Equal(t, bonsai.FinishCancelled, e.FinishReason)
	t.Logf("whole: the generation ended %v after the client left, after %d tokens", e.Ended.Sub(left), e.CompletionTokens)
	assert.Less(t, e.Ended.Sub(left), 500*time.Millisecond)

	eventually(t, "the session to be free", func() bool { return s.Stats().Running == 0 })
	st := s.Stats()
	assert.Equal(t, int64(2), st.Cancelled)
	assert.Equal(t, int64(2), st.Generations)

	// The session serves the next request as usual.
	res, err := c.Chat.Completions.New(context.Background(), openaitest.ChatParams("Hello there", 5))
	require.NoError(t, err)
	assert.Equal(t, int64(5), res.Usage.CompletionTokens)
}

// TestQueue: with every session busy, requests wait in order; one whose client leaves
// while queued is dropped without generating; past the queue's capacity, 503 with
// Retry-After.
func TestQueue(t *testing.T) {
	gate := make(chan struct{})
	s, ts := newTestServer(t, tinyModel, withTokenHook(serve.Config{Parallel: 1, Queue: 2}, gated(gate)))
	c := client(ts)
	body := `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"temperature":0}`

	results := make(chan int, 4)
	send := func() { results <- postStatus(ts.URL+"/v1/chat/completions", body) }
	go send() // A: generating, held at the gate
	eventually(t, "A to run", func() bool { return s.Stats().Running == 1 })

	// B queues, then its client leaves.
	ctx, cancel := context.WithCancel(context.Background())
	errB := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(ctx, openaitest.ChatParams("Hi", 4))
		errB <- err
	}()
	eventually(t, "B to queue", func() bool { return s.Stats().Queued == 1 })
	cancel()
	require.ErrorIs(t, <-errB, context.Canceled)
	eventually(t, "B to leave the queue", func() bool { return s.Stats().Queued == 0 })

	// C and D fill the queue; E is refused.
	go send()
	go send()
	eventually(t, "C and D to queue", func() bool { return s.Stats().Queued == 2 })
	code, h, b := post(t, ts.URL+"/v1/chat/completions", body)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.Contains(t, string(b), `"code":"queue_full"`)
	_, err := c.Chat.Completions.New(context.Background(), openaitest.ChatParams("Hi", 4))
	var apiErr *oai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)

	close(gate)
	for range 3 {
		assert.Equal(t, http.StatusOK, <-results)
	}
	st := s.Stats()
	assert.Equal(t, int64(3), st.Generations, "B never generated")
	assert.Equal(t, int64(2), st.Rejected)
	assert.Zero(t, st.Running+st.Queued)
}

// serveOn runs Serve on a free port with s opened; it returns the base URL and Serve's
// result.
func serveOn(t *testing.T, s *serve.Server, drain time.Duration) (context.CancelFunc, string, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	g := serve.NewGate(nil)
	g.Open(s)
	go func() { done <- serve.Serve(ctx, ln, g, drain) }()
	return stop, "http://" + ln.Addr().String(), done
}

func streamBody(maxTokens int) string {
	return fmt.Sprintf(`{"messages":[{"role":"user","content":"Hello there"}],"max_tokens":%d,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`, maxTokens)
}

// checkDraining checks what a draining server answers: /ready 503 "draining", /health
// 200 (liveness), and a new generation 503 with Retry-After in OpenAI's shape, on a
// listener still open.
func checkDraining(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Get(url + "/ready")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.JSONEq(t, `{"status":"draining","model":"tiny"}`, string(b))
	assert.True(t, resp.Close, "a draining server asks clients to reconnect elsewhere (Connection: close)")
	resp, err = http.Get(url + "/health")
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(b), `"status":"draining"`)
	code, h, b := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":3}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.Contains(t, string(b), `"code":"shutting_down"`)
}

// TestGracefulShutdown: on shutdown the server stops taking work, keeps its listener
// open for late requests to get their 503, and lets the streams in flight finish.
func TestGracefulShutdown(t *testing.T) {
	s := newServer(t, tinyModel, withTokenHook(serve.Config{}, slowly(time.Millisecond)))
	defer s.Close()
	stop, url, done := serveOn(t, s, time.Minute)
	defer stop()
	resp, err := http.Get(url + "/ready")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	resp, err = http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(streamBody(60)))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	first := make([]byte, 10)
	_, err = io.ReadFull(resp.Body, first) // the stream has started
	require.NoError(t, err)

	stop()
	eventually(t, "the server to drain", s.Draining)
	checkDraining(t, url)
	// The stream in flight runs to its end.
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	events, err := openaitest.ReadEvents(io.MultiReader(bytes.NewReader(first), bytes.NewReader(rest)))
	require.NoError(t, err)
	sum, err := openaitest.CheckStream(events, true, true)
	require.NoError(t, err)
	assert.Equal(t, 60, sum.Usage.CompletionTokens)
	assert.Equal(t, "length", sum.Finish)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its last request")
	}
	assert.Zero(t, s.Stats().Cancelled)
	_, err = http.Get(url + "/health")
	assert.Error(t, err, "the listener is closed once Serve returns")
}

// TestShutdownDrainExpires: past the drain timeout, the generations still running end
// with a clean finish — finish_reason "length", the usage, [DONE] — and a whole response
// for a request that did not stream; queued requests get 503; Serve returns promptly.
func TestShutdownDrainExpires(t *testing.T) {
	ends := make(chan serve.GenerationEnd, 4)
	s := newServer(t, tinyModel, withTokenHook(serve.Config{Parallel: 2, Queue: 1,
		OnGenerationEnd: func(e serve.GenerationEnd) { ends <- e }}, slowly(2*time.Millisecond)))
	defer s.Close()
	stop, url, done := serveOn(t, s, 300*time.Millisecond)
	defer stop()

	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(streamBody(3000)))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	whole := make(chan []byte, 1)
	go func() {
		_, _, b := post(t, url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hello there"}],"max_tokens":3000,"temperature":0}`)
		whole <- b
	}()
	eventually(t, "both to run", func() bool { return s.Stats().Running == 2 })
	queued := make(chan int, 1)
	go func() {
		queued <- postStatus(url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":3}`)
	}()
	eventually(t, "a request to queue", func() bool { return s.Stats().Queued == 1 })

	start := time.Now()
	stop()
	eventually(t, "the server to drain", s.Draining)
	checkDraining(t, url)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	events, err := openaitest.ReadEvents(bytes.NewReader(body))
	require.NoError(t, err)
	sum, err := openaitest.CheckStream(events, true, true)
	require.NoError(t, err, "%s", body)
	assert.Equal(t, "length", sum.Finish)
	assert.Positive(t, sum.Usage.CompletionTokens)
	assert.Less(t, sum.Usage.CompletionTokens, 3000)
	assert.True(t, strings.HasSuffix(string(body), "data: [DONE]\n\n"))
	assert.NotContains(t, string(body), "shutting_down")

	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct{ Content string }
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	b := <-whole
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	require.Len(t, r.Choices, 1)
	assert.Equal(t, "length", r.Choices[0].FinishReason)
	assert.Positive(t, r.Usage.CompletionTokens)
	assert.Less(t, r.Usage.CompletionTokens, 3000)
	assert.Equal(t, http.StatusServiceUnavailable, <-queued, "the queued request never started: 503")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	took := time.Since(start)
	t.Logf("shutdown with a 300 ms drain timeout took %v", took)
	assert.GreaterOrEqual(t, took, 300*time.Millisecond)
	assert.Less(t, took, 2*time.Second)
	for range 2 {
		e := <-ends
		assert.Equal(t, serve.FinishDrained, e.FinishReason)
		assert.NoError(t, e.Err)
	}
}

// TestHealthDraining: a draining server is alive (/health 200) and not ready (/ready
// 503); StopAll and CancelAll drain it too.
func TestHealthDraining(t *testing.T) {
	for _, how := range []string{"Drain", "StopAll", "CancelAll"} {
		s, ts := newTestServer(t, tinyModel, serve.Config{})
		for _, p := range []string{"/ready", "/v1/ready"} {
			code, b := get(t, ts.URL+p)
			assert.Equal(t, http.StatusOK, code, how)
			assert.JSONEq(t, `{"status":"ready","model":"tiny"}`, string(b), how)
		}
		map[string]func(){"Drain": s.Drain, "StopAll": s.StopAll, "CancelAll": s.CancelAll}[how]()
		for _, p := range []string{"/ready", "/v1/ready"} {
			code, _ := get(t, ts.URL+p)
			assert.Equal(t, http.StatusServiceUnavailable, code, how)
		}
		code, b := get(t, ts.URL+"/health")
		assert.Equal(t, http.StatusOK, code, how)
		assert.Contains(t, string(b), `"status":"draining"`, how)
		select {
		case <-s.Idle():
		case <-time.After(time.Second):
			t.Errorf("%s: an idle server that drains is not Idle", how)
		}
	}
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestLoad: 32 concurrent streaming clients on 4 sessions with a queue of 28: every
// stream is complete and well formed, none is refused, and no goroutine is left behind.
func TestLoad(t *testing.T) {
	const clients, parallel, maxTokens = 32, 4, 24
	before := runtime.NumGoroutine()
	s := newServer(t, tinyModel, serve.Config{Parallel: parallel, Queue: clients - parallel})
	ts := httptest.NewServer(s)
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Minute}

	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, clients)
	tokens := make([]int, clients)
	for i := range clients {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"tiny","messages":[{"role":"user","content":"Client %d says hello"}],"max_tokens":%d,"temperature":0.8,"seed":%d,"stream":true,"stream_options":{"include_usage":true}}`, i, maxTokens, i)
			resp, err := hc.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				errs[i] = fmt.Errorf("status %d: %s", resp.StatusCode, b)
				return
			}
			events, err := openaitest.ReadEvents(resp.Body)
			if err != nil {
				errs[i] = err
				return
			}
			sum, err := openaitest.CheckStream(events, true, true)
			if err == nil && sum.Finish == "length" && sum.Usage.CompletionTokens != maxTokens {
				err = fmt.Errorf("finish length after %d tokens", sum.Usage.CompletionTokens)
			}
			if err == nil {
				tokens[i] = sum.Usage.CompletionTokens
			}
			errs[i] = err
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	total := 0
	for i, err := range errs {
		assert.NoError(t, err, "client %d", i)
		total += tokens[i]
	}
	st := s.Stats()
	assert.Equal(t, int64(clients), st.Generations)
	assert.Zero(t, st.Rejected+st.Cancelled)

	tr.CloseIdleConnections()
	ts.Close()
	require.NoError(t, s.Close())
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(3 * time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d streaming clients, %d sessions: %d tokens in %v (%.0f tokens/s); goroutines before %d, after %d",
		clients, parallel, total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), before, after)
	if after > before {
		var dump bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Errorf("%d goroutines left behind:\n%s", after-before, dump.String())
	}
}

// chaosClient is one client of TestLoadChaos: it sends requests until the deadline, a
// random mix of chat and completions, streamed and whole, some with a shared system
// prompt, some cut short by a disconnect or a cancelled context, and checks that each
// ends with a complete response, a clean refusal (503, Retry-After) or the client's
// own cut.
type chaosClient struct {
	id   int
	base string
	hc   *http.Client
	rng  *rand.Rand

	sent, completed, rejected, cut int
	errs                           []error
}

// chaosSystems are the system prompts clients share, long enough to be worth caching.
var chaosSystems = []string{"You are a careful assistant.", "You write haiku."}

func (c *chaosClient) run(deadline time.Time) {
	for n := 0; time.Now().Before(deadline); n++ {
		if err := c.one(n); err != nil {
			c.errs = append(c.errs, fmt.Errorf("client %d request %d: %w", c.id, n, err))
		}
	}
}

func (c *chaosClient) one(n int) error {
	chat := c.rng.IntN(4) > 0
	stream := c.rng.IntN(2) == 0
	maxTokens := 1 + c.rng.IntN(16)
	system := fmt.Sprintf("Client %d, request %d.", c.id, n)
	if c.rng.IntN(3) > 0 {
		system = chaosSystems[c.rng.IntN(len(chaosSystems))]
	}
	temp := 0.0
	if c.rng.IntN(2) == 0 {
		temp = 0.8
	}
	var body, path string
	if chat {
		path = "/v1/chat/completions"
		body = fmt.Sprintf(`{"messages":[{"role":"system","content":%q},{"role":"user","content":"Hi %d"}],`+
			`"max_tokens":%d,"temperature":%g,"seed":%d,"stream":%t,"stream_options":%s}`,
			system, n, maxTokens, temp, c.rng.Uint32(), stream, usageOption(stream))
	} else {
		path = "/v1/completions"
		body = fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"temperature":%g,"seed":%d,"stream":%t,"stream_options":%s}`,
			system, maxTokens, temp, c.rng.Uint32(), stream, usageOption(stream))
	}
	// Some streams are cut after a few events, by closing the connection or cancelling
	// the context; some whole requests are given a deadline that may come first.
	cutAfter := 0
	if stream && c.rng.IntN(3) == 0 {
		cutAfter = 1 + c.rng.IntN(4)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	timed := !stream && c.rng.IntN(3) == 0
	if timed {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(1+c.rng.IntN(40))*time.Millisecond)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	c.sent++
	resp, err := c.hc.Do(req)
	if err != nil {
		if timed && errors.Is(err, context.DeadlineExceeded) {
			c.cut++
			return nil
		}
		return err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusServiceUnavailable:
		b, err := io.ReadAll(resp.Body)
		var e openaitest.ErrorBody
		switch {
		case err != nil:
			return fmt.Errorf("reading a 503: %v", err)
		case json.Unmarshal(b, &e) != nil || e.Error.Code == nil || *e.Error.Code != "queue_full" || resp.Header.Get("Retry-After") != "1":
			return fmt.Errorf("a malformed 503: %s", b)
		}
		c.rejected++
		// Not the second Retry-After asks for, which would leave the server idle.
		time.Sleep(time.Duration(20+c.rng.IntN(40)) * time.Millisecond)
		return nil
	default:
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if !stream {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			if timed && errors.Is(err, context.DeadlineExceeded) {
				c.cut++
				return nil
			}
			return err
		}
		if err := checkWhole(b, chat, maxTokens); err != nil {
			return err
		}
		c.completed++
		return nil
	}
	if cutAfter > 0 {
		// Read whole lines only, then leave: each event read is complete.
		br := bufio.NewReader(resp.Body)
		for events := 0; events < cutAfter; {
			line, err := br.ReadString('\n')
			if err != nil {
				if err == io.EOF && line == "" {
					break // the stream was shorter than the cut: it must have ended well
				}
				return fmt.Errorf("reading event %d: %v", events, err)
			}
			if data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: "); ok {
				events++
				if data != "[DONE]" && !json.Valid([]byte(data)) {
					return fmt.Errorf("event %d: truncated JSON %q", events, data)
				}
			}
		}
		if c.rng.IntN(2) == 0 {
			cancel()
		} else {
			resp.Body.Close()
		}
		c.cut++
		return nil
	}
	events, err := openaitest.ReadEvents(resp.Body)
	if err != nil {
		return err
	}
	sum, err := openaitest.CheckStream(events, chat, true)
	if err != nil {
		return err
	}
	if sum.Usage.CompletionTokens > maxTokens {
		return fmt.Errorf("%d tokens, max_tokens %d", sum.Usage.CompletionTokens, maxTokens)
	}
	c.completed++
	return nil
}

func usageOption(stream bool) string {
	if stream {
		return `{"include_usage":true}`
	}
	return "null"
}

// checkWhole checks a whole chat completion or completion.
func checkWhole(b []byte, chat bool, maxTokens int) error {
	var r struct {
		Object  string `json:"object"`
		Choices []struct {
			Message *struct {
				Role    string  `json:"role"`
				Content *string `json:"content"`
			} `json:"message"`
			Text         *string `json:"text"`
			FinishReason string  `json:"finish_reason"`
		} `json:"choices"`
		Usage *openaitest.Usage `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%v: %s", err, b)
	}
	want := "text_completion"
	if chat {
		want = "chat.completion"
	}
	switch {
	case r.Object != want || len(r.Choices) != 1 || r.Usage == nil:
		return fmt.Errorf("malformed: %s", b)
	case chat && (r.Choices[0].Message == nil || r.Choices[0].Message.Role != "assistant" || r.Choices[0].Message.Content == nil):
		return fmt.Errorf("no message: %s", b)
	case !chat && r.Choices[0].Text == nil:
		return fmt.Errorf("no text: %s", b)
	case r.Choices[0].FinishReason != "stop" && r.Choices[0].FinishReason != "length":
		return fmt.Errorf("finish reason %q", r.Choices[0].FinishReason)
	case r.Usage.CompletionTokens > maxTokens || r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens:
		return fmt.Errorf("usage %+v, max_tokens %d", *r.Usage, maxTokens)
	}
	return nil
}

// microConfig is the tiny model at a tenth of its cost per token (the narrowest widths
// the ternary blocks allow, one layer of each kind), so that many requests fit a few
// seconds under -race.
func microConfig() qwen35.Config {
	c, err := synth.Preset("tiny")
	if err != nil {
		panic(err)
	}
	c.Embedding, c.FeedForward, c.Heads, c.KVHeads, c.HeadDim = 128, 128, 2, 1, 64
	c.VHeads, c.KHeads, c.StateSize, c.InnerSize = 4, 2, 32, 128
	c.Layers, c.FullAttentionInterval = 2, 2 // a GDN layer and an attention layer
	return c
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestLoadChaos: 64 clients for two seconds against 4 batched sessions with a queue of
// 8 and a prefix cache, with random mixes of streaming and whole requests, disconnects
// and cancellations. Every request ends whole, refused cleanly or cut by its own
// client, none in an error; afterwards no session is busy, none waits, and the
// goroutines and the heap are back to their baseline.
func TestLoadChaos(t *testing.T) {
	const clients, parallel, queue = 64, 4, 8
	const duration = 2 * time.Second
	path := synthtest.PathOf(t, synth.Options{Config: microConfig(), Seed: 1})

	round := func(clients int, d time.Duration, check bool) {
		m, err := bonsai.Open(path, bonsai.WithThreads(2), bonsai.WithPrefixCache(32<<20))
		require.NoError(t, err)
		s := newServer(t, m, serve.Config{Parallel: parallel, Queue: queue})
		ts := httptest.NewServer(s)
		tr := &http.Transport{MaxIdleConnsPerHost: clients}
		hc := &http.Client{Transport: tr, Timeout: time.Minute}

		// The shared system prompts are cached before the clients come, so that the
		// cache serves some of them even in a short run under -race.
		for _, sys := range chaosSystems {
			code := postStatus(ts.URL+"/v1/chat/completions",
				fmt.Sprintf(`{"messages":[{"role":"system","content":%q},{"role":"user","content":"Hi"}],"max_tokens":1}`, sys))
			require.Equal(t, http.StatusOK, code)
		}
		cs := make([]*chaosClient, clients)
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for i := range cs {
			cs[i] = &chaosClient{id: i, base: ts.URL, hc: hc, rng: rand.New(rand.NewPCG(uint64(i), 15))}
			wg.Go(func() { cs[i].run(deadline) })
		}
		wg.Wait()
		t.Logf("the clients ended %v after the deadline", time.Since(deadline).Round(time.Millisecond))
		// The warm-up requests above count on the server's side too.
		sent, completed := len(chaosSystems), len(chaosSystems)
		var rejected, cut int
		for _, c := range cs {
			for _, err := range c.errs {
				t.Error(err)
			}
			sent, completed, rejected, cut = sent+c.sent, completed+c.completed, rejected+c.rejected, cut+c.cut
		}
		eventually(t, "the sessions to be free and the queue empty", func() bool {
			st := s.Stats()
			return st.Running == 0 && st.Queued == 0
		})
		if check {
			t.Logf("%d clients, %v: %d requests: %d complete, %d refused, %d cut by their client; %d generations, %d cancelled",
				clients, d, sent, completed, rejected, cut, s.Stats().Generations, s.Stats().Cancelled)
			fams := scrape(t, ts.URL)
			outcomes := map[string]float64{}
			for _, smp := range fams["bonsai_requests_total"].samples {
				if ep := smp.labels["endpoint"]; ep == "chat.completions" || ep == "completions" {
					outcomes[smp.labels["outcome"]] += smp.value
				}
			}
			assert.Zero(t, outcomes[serve.OutcomeError], "no request ended in an error")
			assert.GreaterOrEqual(t, outcomes[serve.OutcomeCompleted], float64(completed))
			assert.GreaterOrEqual(t, outcomes[serve.OutcomeRejected], float64(rejected))
			assert.LessOrEqual(t, outcomes[serve.OutcomeCompleted]+outcomes[serve.OutcomeRejected]+outcomes[serve.OutcomeCancelled], float64(sent))
			assert.Positive(t, completed)
			assert.Positive(t, cut)
			st := m.Stats()
			assert.Positive(t, st.PrefixCache.Hits, "a shared system prompt started from the cache")
			b := st.Batch
			assert.Greater(t, b.MaxBatch, 1, "sessions shared forward passes")
			t.Logf("batcher: %d steps, %.2f sequences a step, at most %d; prefix cache: %+v",
				b.Steps, float64(b.Sequences)/float64(b.Steps), b.MaxBatch, st.PrefixCache)
		}
		tr.CloseIdleConnections()
		ts.Close()
		require.NoError(t, s.Close())
		require.NoError(t, m.Close())
	}

	// A short round first, so that what is allocated once (the HTTP machinery, the
	// tokenizer's caches) is in the baseline.
	start := runtime.NumGoroutine()
	round(8, 50*time.Millisecond, false)
	goroutines := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); goroutines > start && time.Now().Before(deadline); goroutines = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	heap := heapInUse()
	round(clients, duration, true)

	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); after > goroutines && time.Now().Before(deadline); after = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	if after > goroutines {
		var dump bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Errorf("%d goroutines left behind:\n%s", after-goroutines, dump.String())
	}
	heapAfter := heapInUse()
	t.Logf("goroutines %d → %d; heap in use %.1f → %.1f MiB", goroutines, after, float64(heap)/(1<<20), float64(heapAfter)/(1<<20))
	// Generous: the round's allocations are tens of MiB; what it left behind must not be.
	assert.Less(t, heapAfter, heap+4<<20, "the heap returns near its baseline")
}
