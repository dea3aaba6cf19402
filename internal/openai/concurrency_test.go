package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	ends := make(chan GenerationEnd, 4)
	s, ts := newTestServer(t, tinyModel, Config{tokenHook: slowly(2 * time.Millisecond),
		OnGenerationEnd: func(e GenerationEnd) { ends <- e }})
	c, _ := client(ts)

	// Streaming: read a few chunks, then leave.
	ctx, cancel := context.WithCancel(context.Background())
	stream := c.Chat.Completions.NewStreaming(ctx, chatParams("Hello there", 3000))
	for i := 0; i < 5; i++ {
		require.True(t, stream.Next(), "%v", stream.Err())
	}
	left := time.Now()
	cancel()
	stream.Close()
	var e GenerationEnd
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
	_, err := c.Chat.Completions.New(ctx, chatParams("Hello there", 3000))
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
	res, err := c.Chat.Completions.New(context.Background(), chatParams("Hello there", 5))
	require.NoError(t, err)
	assert.Equal(t, int64(5), res.Usage.CompletionTokens)
}

// TestQueue: with every session busy, requests wait in order; one whose client leaves
// while queued is dropped without generating; past the queue's capacity, 503 with
// Retry-After.
func TestQueue(t *testing.T) {
	gate := make(chan struct{})
	s, ts := newTestServer(t, tinyModel, Config{Parallel: 1, Queue: 2, tokenHook: gated(gate)})
	c, _ := client(ts)
	body := `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"temperature":0}`

	results := make(chan int, 4)
	send := func() { results <- postStatus(ts.URL+"/v1/chat/completions", body) }
	go send() // A: generating, held at the gate
	eventually(t, "A to run", func() bool { return s.Stats().Running == 1 })

	// B queues, then its client leaves.
	ctx, cancel := context.WithCancel(context.Background())
	errB := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(ctx, chatParams("Hi", 4))
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
	_, err := c.Chat.Completions.New(context.Background(), chatParams("Hi", 4))
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

// serveOn runs Serve on a free port; it returns the base URL and Serve's result.
func serveOn(t *testing.T, s *Server, grace time.Duration) (context.CancelFunc, string, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, s, grace) }()
	return stop, "http://" + ln.Addr().String(), done
}

func streamBody(maxTokens int) string {
	return fmt.Sprintf(`{"messages":[{"role":"user","content":"Hello there"}],"max_tokens":%d,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`, maxTokens)
}

// TestGracefulShutdown: on shutdown the server stops accepting connections and lets the
// streams in flight finish.
func TestGracefulShutdown(t *testing.T) {
	s, err := NewServer(tinyModel, Config{ModelName: modelName, tokenHook: slowly(time.Millisecond)})
	require.NoError(t, err)
	defer s.Close()
	stop, url, done := serveOn(t, s, time.Minute)
	defer stop()

	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(streamBody(60)))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	first := make([]byte, 10)
	_, err = io.ReadFull(resp.Body, first) // the stream has started
	require.NoError(t, err)

	stop()
	// No new connections.
	eventually(t, "the listener to close", func() bool {
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 100*time.Millisecond)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
	// The stream in flight runs to its end.
	rest, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	events, err := readEvents(io.MultiReader(bytes.NewReader(first), bytes.NewReader(rest)))
	require.NoError(t, err)
	sum, err := checkStream(events, true, true)
	require.NoError(t, err)
	assert.Equal(t, 60, sum.usage.CompletionTokens)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its last request")
	}
	assert.Zero(t, s.Stats().Cancelled)
}

// TestShutdownGraceExpires: past the grace period, the generations still running are
// stopped with an error event, queued requests get 503, and Serve returns promptly.
func TestShutdownGraceExpires(t *testing.T) {
	ends := make(chan GenerationEnd, 4)
	s, err := NewServer(tinyModel, Config{ModelName: modelName, Parallel: 1, Queue: 1, tokenHook: slowly(2 * time.Millisecond),
		OnGenerationEnd: func(e GenerationEnd) { ends <- e }})
	require.NoError(t, err)
	defer s.Close()
	stop, url, done := serveOn(t, s, 200*time.Millisecond)
	defer stop()

	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(streamBody(3000)))
	require.NoError(t, err)
	defer resp.Body.Close()
	queued := make(chan int, 1)
	go func() {
		queued <- postStatus(url+"/v1/chat/completions", `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":3}`)
	}()
	eventually(t, "a request to queue", func() bool { return s.Stats().Queued == 1 })

	start := time.Now()
	stop()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	events, err := readEvents(bytes.NewReader(body))
	require.NoError(t, err)
	require.NotEmpty(t, events)
	assert.Contains(t, events[len(events)-1], `"code":"shutting_down"`, "the stream ends with an error event")
	assert.NotContains(t, string(body), "[DONE]")
	assert.Equal(t, http.StatusServiceUnavailable, <-queued)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	took := time.Since(start)
	t.Logf("shutdown with a 200 ms grace period took %v", took)
	assert.Less(t, took, 2*time.Second)
	e := <-ends
	assert.Equal(t, bonsai.FinishCancelled, e.FinishReason)
}

// TestHealthDraining: a draining server says so.
func TestHealthDraining(t *testing.T) {
	s, ts := newTestServer(t, tinyModel, Config{})
	s.Drain()
	resp, err := http.Get(ts.URL + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

// TestLoad: 32 concurrent streaming clients on 4 sessions with a queue of 28: every
// stream is complete and well formed, none is refused, and no goroutine is left behind.
func TestLoad(t *testing.T) {
	const clients, parallel, maxTokens = 32, 4, 24
	before := runtime.NumGoroutine()
	s, err := NewServer(tinyModel, Config{ModelName: modelName, Parallel: parallel, Queue: clients - parallel})
	require.NoError(t, err)
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
			events, err := readEvents(resp.Body)
			if err != nil {
				errs[i] = err
				return
			}
			sum, err := checkStream(events, true, true)
			if err == nil && sum.finish == "length" && sum.usage.CompletionTokens != maxTokens {
				err = fmt.Errorf("finish length after %d tokens", sum.usage.CompletionTokens)
			}
			if err == nil {
				tokens[i] = sum.usage.CompletionTokens
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
