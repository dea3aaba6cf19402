package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/internal/openai/openaitest"
	"github.com/bonsai-go/sdk/internal/selfexec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// childArgsEnv, when set, makes the test binary run the serve command's main with these
// arguments (split at spaces) instead of the tests: the real command, signals and exit
// status included, in a process of its own.
const childArgsEnv = "BONSAI_SERVE_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(childArgsEnv); ok {
		os.Args = append([]string{"serve"}, strings.Fields(args)...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// readSSE reads a stream's events to its end.
func readSSE(r io.Reader) ([]sseEvent, error) {
	var evs []sseEvent
	var ev sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.data != "" {
				evs = append(evs, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
	return evs, sc.Err()
}

// TestServeProcessDrain runs the serve command in a process of its own, on the tiny
// synthetic model with its tokens slowed (10 ms each) and -drain-timeout 3s, opens four
// generations — a short OpenAI stream, a long one, a long Anthropic stream and a long
// request that does not stream — and sends SIGTERM. While it drains, /ready is 503,
// /health 200, and new requests get 503 with Retry-After in each API's shape; the short
// stream finishes untouched, the long ones end at the deadline with a clean finish
// (finish_reason "length" and [DONE]; stop_reason "max_tokens" and message_stop; a
// whole response), and the process exits 0.
func TestServeProcessDrain(t *testing.T) {
	const drainTimeout, shortTokens = 3 * time.Second, 20
	var stderr io.Reader
	cmd, err := selfexec.Start([]string{childArgsEnv + "=-addr 127.0.0.1:0 -threads 2 -quiet -model-name tiny -drain-timeout " + drainTimeout.String(),
		tokenDelayEnv + "=10ms"}, func(c *exec.Cmd) (err error) {
		stderr, err = c.StderrPipe()
		return err
	}, "-test.run=^$")
	require.NoError(t, err)
	var log syncBuffer
	addrc := make(chan string, 1)
	exited := make(chan struct{}) // closed once the process has exited, with exitErr
	var exitErr error
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.Write([]byte(line + "\n"))
			if a, ok := strings.CutPrefix(line, "serve: listening on http://"); ok {
				a, _, _ = strings.Cut(a, ";")
				addrc <- a
			}
		}
		exitErr = cmd.Wait() // once stderr is read to its end
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
		t.Logf("the server's log:\n%s", log.String())
	}()

	var base string
	select {
	case a := <-addrc:
		base = "http://" + a
	case <-exited:
		t.Fatalf("the server exited: %v", exitErr)
	case <-time.After(20 * time.Second):
		t.Fatal("no address on stderr")
	}
	status := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, _ := status("/ready")
		if code == http.StatusOK {
			break
		}
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.True(t, time.Now().Before(deadline), "not ready")
		time.Sleep(10 * time.Millisecond)
	}

	open := func(path, body string) *http.Response {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		return resp
	}
	const chat = `{"messages":[{"role":"user","content":"Hello there"}],"temperature":0,`
	short := open("/v1/chat/completions", chat+`"max_tokens":`+strconv.Itoa(shortTokens)+`,"stream":true,"stream_options":{"include_usage":true}}`)
	defer short.Body.Close()
	long := open("/v1/chat/completions", chat+`"max_tokens":3000,"stream":true,"stream_options":{"include_usage":true}}`)
	defer long.Body.Close()
	messages := open("/v1/messages", `{"model":"any","max_tokens":3000,"temperature":0,"stream":true,"messages":[{"role":"user","content":"Hello there"}]}`)
	defer messages.Body.Close()
	whole := make(chan []byte, 1)
	go func() {
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(chat+`"max_tokens":3000}`))
		if err != nil {
			whole <- []byte(err.Error())
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		whole <- b
	}()
	for {
		_, b := status("/health")
		var h struct{ Running int }
		require.NoError(t, json.Unmarshal([]byte(b), &h), b)
		if h.Running == 4 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the four generations did not start: %s", b)
		time.Sleep(5 * time.Millisecond)
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	signalled := time.Now()
	for {
		code, b := status("/ready")
		if code == http.StatusServiceUnavailable {
			assert.JSONEq(t, `{"status":"draining","model":"tiny"}`, b)
			break
		}
		require.True(t, time.Since(signalled) < time.Second, "/ready still answers %d", code)
		time.Sleep(5 * time.Millisecond)
	}
	code, b := status("/health")
	assert.Equal(t, http.StatusOK, code, "liveness holds while draining")
	assert.Contains(t, b, `"status":"draining"`)
	code, h, b := request(t, "POST", base+"/v1/chat/completions", chat+`"max_tokens":3}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.Contains(t, b, `"code":"shutting_down"`)
	code, h, b = request(t, "POST", base+"/v1/messages", `{"model":"any","max_tokens":3,"messages":[{"role":"user","content":"Hi"}]}`)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "1", h.Get("Retry-After"))
	assert.Contains(t, b, `"error":{"type":"overloaded_error","message":"The server is shutting down."}`)
	assert.Contains(t, b, `"request_id":"req_`)

	// The short stream runs to its own end, within the drain timeout.
	body, err := io.ReadAll(short.Body)
	require.NoError(t, err)
	assert.Less(t, time.Since(signalled), drainTimeout, "the short stream ended before the deadline")
	events, err := openaitest.ReadEvents(bytes.NewReader(body))
	require.NoError(t, err)
	sum, err := openaitest.CheckStream(events, true, true)
	require.NoError(t, err, "%s", body)
	assert.Equal(t, "length", sum.Finish)
	assert.Equal(t, shortTokens, sum.Usage.CompletionTokens, "untouched by the drain")

	// The long one is ended at the deadline, cleanly.
	body, err = io.ReadAll(long.Body)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(signalled), drainTimeout)
	events, err = openaitest.ReadEvents(bytes.NewReader(body))
	require.NoError(t, err)
	sum, err = openaitest.CheckStream(events, true, true)
	require.NoError(t, err, "%s", body)
	assert.Equal(t, "length", sum.Finish)
	assert.Greater(t, sum.Usage.CompletionTokens, shortTokens)
	assert.Less(t, sum.Usage.CompletionTokens, 3000)
	assert.True(t, strings.HasSuffix(string(body), "data: [DONE]\n\n"), "%s", body[max(0, len(body)-200):])
	assert.NotContains(t, string(body), `"error"`)

	// So is the Anthropic stream: message_delta with stop_reason max_tokens and the usage,
	// then message_stop.
	evs, err := readSSE(messages.Body)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(evs), 4)
	assert.Equal(t, "message_start", evs[0].name)
	last, delta := evs[len(evs)-1], evs[len(evs)-2]
	assert.Equal(t, "message_stop", last.name)
	require.Equal(t, "message_delta", delta.name, "%v", evs[len(evs)-3:])
	var md struct {
		Delta struct {
			StopReason string `json:"stop_reason"`
		}
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(delta.data), &md))
	assert.Equal(t, "max_tokens", md.Delta.StopReason)
	assert.Greater(t, md.Usage.OutputTokens, shortTokens)
	assert.Less(t, md.Usage.OutputTokens, 3000)
	for _, ev := range evs {
		assert.NotEqual(t, "error", ev.name)
	}

	// The request that did not stream gets its whole response so far.
	var r struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct{ Content string }
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	b2 := <-whole
	require.NoError(t, json.Unmarshal(b2, &r), "%s", b2)
	require.Len(t, r.Choices, 1)
	assert.Equal(t, "length", r.Choices[0].FinishReason)
	assert.Greater(t, r.Usage.CompletionTokens, shortTokens)
	assert.Less(t, r.Usage.CompletionTokens, 3000)

	select {
	case <-exited:
		require.NoError(t, exitErr, "the process exits 0")
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not exit")
	}
	t.Logf("exited %v after SIGTERM, with a %v drain timeout", time.Since(signalled).Round(time.Millisecond), drainTimeout)
	assert.Contains(t, log.String(), "serve: stopped after")
}
