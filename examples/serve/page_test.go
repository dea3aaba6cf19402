package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/internal/openai"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pageServer serves the page and the APIs as run does, on the synthetic model with a
// thinking template.
func pageServer(t *testing.T) (*serve.Server, *httptest.Server) {
	t.Helper()
	return pageServerConfig(t, serve.Config{ModelName: "tiny", Parallel: 1, Queue: 4})
}

// pageServerConfig is pageServer with cfg.
func pageServerConfig(t *testing.T, cfg serve.Config) (*serve.Server, *httptest.Server) {
	t.Helper()
	return pageServerWrap(t, cfg, nil)
}

// pageServerWrap is pageServerConfig serving wrap(srv), when wrap is not nil.
func pageServerWrap(t *testing.T, cfg serve.Config, wrap func(http.Handler) http.Handler) (*serve.Server, *httptest.Server) {
	t.Helper()
	// The file's layout: the stop test below clicks while a reply streams, and the tiny
	// model's random weights end a reply by themselves after a few hundred tokens; the
	// interleaved layout decodes it about 3.7× faster, fast enough to end it first.
	m, err := bonsai.Open(synthtest.Path(t, "tiny", 1, ternary.PQ2_0), bonsai.WithThreads(2), bonsai.WithChatTemplate(synthtest.ThinkTemplate),
		bonsai.WithBackend(cpu.New(cpu.WithLayout(cpu.LayoutFile))))
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	srv, err := serve.New(m, cfg)
	require.NoError(t, err)
	mount(srv, openai.Config{})
	var h http.Handler = srv
	if wrap != nil {
		h = wrap(srv)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return srv, ts
}

// browser starts headless Chromium with a fresh profile, or skips the test when
// Chromium is not installed.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			exe = p
			break
		}
	}
	if exe == "" {
		if _, err := os.Stat("/usr/bin/chromium"); err != nil {
			t.Skip("chromium is not installed (apt-get install chromium)")
		}
		exe = "/usr/bin/chromium"
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	// The first call starts the browser, which lives as long as its context: no
	// timeout on it; the steps get theirs.
	require.NoError(t, chromedp.Do(ctx), "starting chromium")
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// pageMessage is a message of the page's conversation (window.bonsaiChat.messages).
type pageMessage struct {
	Role             string `json:"role"`
	Content          string `json:"content"`
	ReasoningContent string `json:"reasoning_content"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Function struct{ Name, Arguments string }
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
	Stopped    bool   `json:"stopped"`
}

func conversation(t *testing.T, ctx context.Context) []pageMessage {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.bonsaiChat.messages)`))
	require.NoError(t, err)
	var msgs []pageMessage
	require.NoError(t, json.Unmarshal([]byte(raw), &msgs), raw)
	return msgs
}

// apiReply is what the API answers, whole, to the conversation the page sent.
func apiReply(t *testing.T, url, body string) (content, reasoning string) {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content          string
				ReasoningContent string `json:"reasoning_content"`
			}
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Len(t, out.Choices, 1)
	return out.Choices[0].Message.Content, out.Choices[0].Message.ReasoningContent
}

// js evaluates expr in the page.
func js[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// until waits for expr to be true in the page.
func until(expr string, d time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(d))(ctx, t)
		return err
	})
}

// lastReply is the view of the last assistant message.
const lastReply = `[...document.querySelectorAll('.msg.assistant')].at(-1)`

// TestPage drives the chat page in headless Chromium: a message typed and sent gets a
// reply streamed in many chunks, the same the API gives whole; with thinking on, the
// thinking shows apart, collapsed once the answer is done; the stop button stops a
// long reply and its generation; a second turn carries the conversation.
func TestPage(t *testing.T) {
	srv, ts := pageServer(t)
	ctx := browser(t)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		until(`document.getElementById("model").textContent !== ""`, 20*time.Second),
		chromedp.SetValue(chromedp.CSS("#temperature"), "0"),
		chromedp.SetValue(chromedp.CSS("#max-tokens"), "24"),
		chromedp.SendKeys(chromedp.CSS("#input"), "Hello there"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS(`.msg.assistant[data-state="done"]`)),
	))
	assert.Equal(t, "tiny", js[string](t, ctx, `document.getElementById("model").textContent`))
	msgs := conversation(t, ctx)
	require.Len(t, msgs, 2)
	assert.Equal(t, pageMessage{Role: "user", Content: "Hello there"}, msgs[0])
	assert.Equal(t, "assistant", msgs[1].Role)
	want, _ := apiReply(t, ts.URL, `{"messages": [{"role": "user", "content": "Hello there"}], "temperature": 0, "max_tokens": 24,
		"chat_template_kwargs": {"enable_thinking": false}}`)
	require.NotEmpty(t, want)
	assert.Equal(t, want, msgs[1].Content)
	// The reply is shown as written, and came in chunks, one a token or so. (The
	// view shown now was rendered again from the conversation once the reply ended;
	// the streaming view's count is kept in the last chunk count the page saw.)
	assert.Equal(t, want, js[string](t, ctx, lastReply+`.querySelector('.text').textContent`))
	chunks := js[int](t, ctx, `window.bonsaiChat.lastChunks`)
	assert.Greater(t, chunks, 5, "the reply was not streamed")

	// Thinking on: the next turn's thinking is shown apart, and collapsed once done.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#think")),
		chromedp.SendKeys(chromedp.CSS("#input"), "Think first"),
		chromedp.Click(chromedp.CSS("#send")),
		until(`document.querySelectorAll('.msg.assistant[data-state="done"]').length === 2 && !window.bonsaiChat.busy`, 60*time.Second),
	))
	thinking := js[string](t, ctx, lastReply+`.querySelector('details.thinking .think-text').textContent`)
	open := js[bool](t, ctx, lastReply+`.querySelector('details.thinking').open`)
	msgs = conversation(t, ctx)
	require.Len(t, msgs, 4)
	assert.Equal(t, "Think first", msgs[2].Content)
	require.NotEmpty(t, msgs[3].ReasoningContent)
	assert.Equal(t, msgs[3].ReasoningContent, thinking)
	assert.False(t, open, "the thinking stays open after the reply")
	// The page sent the whole conversation: the API, given it, thinks the same.
	history, _ := json.Marshal(msgs[:3])
	_, wantThinking := apiReply(t, ts.URL, `{"messages": `+string(history)+`, "temperature": 0, "max_tokens": 24,
		"chat_template_kwargs": {"enable_thinking": true}}`)
	assert.Equal(t, wantThinking, msgs[3].ReasoningContent)

	// Stop: a long reply stops when the button is pressed, and so does its generation.
	before := srv.Stats().Cancelled
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#clear")),
		chromedp.SetValue(chromedp.CSS("#max-tokens"), "4000"),
		chromedp.SendKeys(chromedp.CSS("#input"), "Go on and on"),
		chromedp.Click(chromedp.CSS("#send")),
		until(`(() => { const m = document.querySelector('.msg.assistant[data-state="streaming"]'); return !!m && Number(m.dataset.chunks) >= 5; })()`, 60*time.Second),
		chromedp.Click(chromedp.CSS("#stop")),
		chromedp.WaitVisible(chromedp.CSS(`.msg.assistant[data-state="stopped"]`)),
	))
	msgs = conversation(t, ctx)
	require.Len(t, msgs, 2)
	assert.True(t, msgs[1].Stopped)
	assert.Equal(t, "Stopped: you pressed Stop. (The server sends no usage for a reply cut off.)",
		js[string](t, ctx, lastReply+`.querySelector('.finish').textContent`))
	deadline := time.Now().Add(10 * time.Second)
	for srv.Stats().Cancelled == before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, before+1, srv.Stats().Cancelled, "the generation went on after stop")
}

// TestPageTools: with "must call one", the reply is a call of a demo tool, which the
// page runs and shows with its result before the model answers.
func TestPageTools(t *testing.T) {
	_, ts := pageServer(t)
	ctx := browser(t)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		chromedp.SetValue(chromedp.CSS("#temperature"), "0"),
		chromedp.SetValue(chromedp.CSS("#max-tokens"), "200"),
		chromedp.SetValue(chromedp.CSS("#tools"), "required"),
		chromedp.SendKeys(chromedp.CSS("#input"), "What time is it?"),
		chromedp.Click(chromedp.CSS("#send")),
		until(`!window.bonsaiChat.busy && window.bonsaiChat.messages.length >= 4`, 90*time.Second),
	))
	msgs := conversation(t, ctx)
	require.GreaterOrEqual(t, len(msgs), 4)
	call := msgs[1]
	require.NotEmpty(t, call.ToolCalls, "%+v", msgs)
	assert.Contains(t, []string{"get_time", "calculate"}, call.ToolCalls[0].Function.Name)
	assert.True(t, json.Valid([]byte(call.ToolCalls[0].Function.Arguments)), call.ToolCalls[0].Function.Arguments)
	assert.Equal(t, "tool", msgs[2].Role)
	assert.Equal(t, call.ToolCalls[0].ID, msgs[2].ToolCallID)
	if call.ToolCalls[0].Function.Name == "get_time" {
		var r struct{ UTC string }
		require.NoError(t, json.Unmarshal([]byte(msgs[2].Content), &r))
		_, err := time.Parse(time.RFC3339, r.UTC)
		assert.NoError(t, err, msgs[2].Content)
	}
	assert.Equal(t, "Paused to call tools: the page runs them and sends the results back.",
		js[string](t, ctx, `document.querySelector('.msg.assistant .finish').textContent`))
	calls := js[int](t, ctx, `document.querySelectorAll('.call').length`)
	results := js[int](t, ctx, `document.querySelectorAll('.msg.tool').length`)
	assert.Equal(t, len(call.ToolCalls), calls)
	assert.Equal(t, len(call.ToolCalls), results)
}

// TestPageKey: on a server that needs an API key, the page asks for it as it loads
// (its first call, the model's name, is refused); a wrong key is refused and asked
// again; the right one is kept for the tab (sessionStorage) and sent as a bearer token:
// the model's name shows and a reply streams. A new tab asks again.
func TestPageKey(t *testing.T) {
	keys, err := serve.NewKeys("sk-page-key")
	require.NoError(t, err)
	_, ts := pageServerConfig(t, serve.Config{ModelName: "tiny", Parallel: 1, Queue: 4, Keys: keys})
	ctx := browser(t)

	const dialogOpen = `document.getElementById("key-dialog").open`
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/"),
		until(dialogOpen, 20*time.Second),
	))
	assert.Equal(t, "This server needs an API key.", js[string](t, ctx, `document.getElementById("key-why").textContent`))
	assert.Equal(t, "", js[string](t, ctx, `document.getElementById("model").textContent`))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#key-input"), "sk-wrong"),
		chromedp.Click(chromedp.CSS("#key-ok")),
		until(dialogOpen+` && document.getElementById("key-why").textContent.includes("refused")`, 20*time.Second),
	))
	assert.Equal(t, "", js[string](t, ctx, `document.getElementById("key-input").value`), "the wrong key is left in the input")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#key-input"), "sk-page-key"),
		chromedp.Click(chromedp.CSS("#key-ok")),
		until(`document.getElementById("model").textContent !== ""`, 20*time.Second),
	))
	assert.Equal(t, "tiny", js[string](t, ctx, `document.getElementById("model").textContent`))
	assert.False(t, js[bool](t, ctx, dialogOpen))
	assert.Equal(t, "sk-page-key", js[string](t, ctx, `sessionStorage.getItem("bonsai-api-key")`))
	assert.Equal(t, "", js[string](t, ctx, `localStorage.getItem("bonsai-api-key") || ""`))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#temperature"), "0"),
		chromedp.SetValue(chromedp.CSS("#max-tokens"), "24"),
		chromedp.SendKeys(chromedp.CSS("#input"), "Hello there"),
		chromedp.Click(chromedp.CSS("#send")),
		chromedp.WaitVisible(chromedp.CSS(`.msg.assistant[data-state="done"]`)),
	))
	assert.False(t, js[bool](t, ctx, dialogOpen), "the key was asked again")
	msgs := conversation(t, ctx)
	require.Len(t, msgs, 2)
	req, err := http.NewRequest("POST", ts.URL+"/v1/chat/completions", strings.NewReader(
		`{"messages": [{"role": "user", "content": "Hello there"}], "temperature": 0, "max_tokens": 24, "chat_template_kwargs": {"enable_thinking": false}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer sk-page-key")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	var want struct {
		Choices []struct{ Message struct{ Content string } }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&want))
	resp.Body.Close()
	require.Len(t, want.Choices, 1)
	require.NotEmpty(t, want.Choices[0].Message.Content)
	assert.Equal(t, want.Choices[0].Message.Content, msgs[1].Content)
	assert.Greater(t, js[int](t, ctx, `window.bonsaiChat.lastChunks`), 5, "the reply was not streamed")

	// Reloading the tab keeps the key; a new tab (a new session) asks again.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Reload(),
		until(`document.getElementById("model").textContent === "tiny"`, 20*time.Second),
	))
	assert.False(t, js[bool](t, ctx, dialogOpen))
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	require.NoError(t, chromedp.Do(tab,
		chromedp.Navigate(ts.URL+"/"),
		until(dialogOpen, 20*time.Second),
	))
}

// streamLog keeps the bodies of the chat completions the server sent, as sent.
type streamLog struct {
	mu     sync.Mutex
	bodies []*bytes.Buffer
}

// wrap records the chat completions h answers.
func (l *streamLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" {
			buf := new(bytes.Buffer)
			l.mu.Lock()
			l.bodies = append(l.bodies, buf)
			l.mu.Unlock()
			w = teeWriter{w, buf, &l.mu}
		}
		h.ServeHTTP(w, r)
	})
}

// last returns the body of the last chat completion.
func (l *streamLog) last(t *testing.T) string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.NotEmpty(t, l.bodies, "no chat completion was served")
	return l.bodies[len(l.bodies)-1].String()
}

// teeWriter copies what is written to a response into buf.
type teeWriter struct {
	http.ResponseWriter
	buf *bytes.Buffer
	mu  *sync.Mutex
}

func (w teeWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(b)
	w.mu.Unlock()
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush the stream.
func (w teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// chatUsage is a chat completion's usage.
type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// streamEnd reads a streamed chat completion's finish reason and its usage (the chunk
// stream_options.include_usage adds).
func streamEnd(t *testing.T, body string) (finish string, u chatUsage) {
	t.Helper()
	evs, err := readSSE(strings.NewReader(body))
	require.NoError(t, err)
	usages := 0
	for _, ev := range evs {
		if ev.data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
			}
			Usage *chatUsage
		}
		require.NoError(t, json.Unmarshal([]byte(ev.data), &c), ev.data)
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
		if c.Usage != nil {
			u = *c.Usage
			usages++
		}
	}
	require.Equal(t, 1, usages, "the stream's usage chunks: %s", body)
	return finish, u
}

// TestPageFinishAndUsage: a reply cut at max_tokens says so, naming the limit, and shows
// the usage the server sent in the stream — the prompt's tokens, the cached ones, the
// reply's — whose counts a request of its own, whole, confirms; and the decode rate and
// the time to the first token the page measured, written as its measures give them.
func TestPageFinishAndUsage(t *testing.T) {
	const maxTokens = 8
	cfg := serve.Config{ModelName: "tiny", Parallel: 1, Queue: 4}
	// Each token waits a little, so that the reply's pieces reach the page apart and
	// there is a decode time to measure. Nothing asserts on the times: the test checks
	// what the page writes of its measures, whatever they are.
	serve.SetTokenHook(&cfg, func(ctx context.Context) {
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
		}
	})
	streams := &streamLog{}
	_, ts := pageServerWrap(t, cfg, streams.wrap)
	ctx := browser(t)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#input")),
		chromedp.SetValue(chromedp.CSS("#temperature"), "0"),
		chromedp.SetValue(chromedp.CSS("#max-tokens"), strconv.Itoa(maxTokens)),
		chromedp.SendKeys(chromedp.CSS("#input"), "Tell me a long story"),
		chromedp.Click(chromedp.CSS("#send")),
		until(`!window.bonsaiChat.busy && document.querySelectorAll('.msg.assistant[data-state="done"]').length === 1`, 60*time.Second),
	))
	finish, sent := streamEnd(t, streams.last(t))
	require.Equal(t, "length", finish, "the reply ended before max_tokens: this test needs one cut there")

	// The same conversation, whole, by a request of the test's own: the same prompt, and
	// max_tokens' worth of reply.
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"messages": [{"role": "user", "content": "Tell me a long story"}], "temperature": 0, "max_tokens": 8,
		"chat_template_kwargs": {"enable_thinking": false}}`))
	require.NoError(t, err)
	var whole struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		}
		Usage chatUsage
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&whole))
	resp.Body.Close()
	require.Len(t, whole.Choices, 1)
	assert.Equal(t, "length", whole.Choices[0].FinishReason)
	assert.Equal(t, maxTokens, whole.Usage.CompletionTokens)
	assert.Equal(t, maxTokens, sent.CompletionTokens)
	assert.Equal(t, whole.Usage.PromptTokens, sent.PromptTokens)

	assert.Equal(t, "Cut at the token limit (max_tokens 8): the reply is unfinished.",
		js[string](t, ctx, lastReply+`.querySelector('.finish').textContent`))
	line := js[string](t, ctx, lastReply+`.querySelector('.usage').textContent`)
	m := regexp.MustCompile(`^Prompt (\d+) tokens \((\d+) cached\) · reply (\d+) tokens · ` +
		`(?:([0-9.]+) tok/s decode|decode speed not measured \(the reply came in one piece\)) · first token after (\d+) ms$`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	assert.Equal(t, strconv.Itoa(sent.PromptTokens), m[1], line)
	assert.Equal(t, strconv.Itoa(sent.PromptTokensDetails.CachedTokens), m[2], line)
	assert.Equal(t, strconv.Itoa(sent.CompletionTokens), m[3], line)

	// The speeds, as the page measured them: the decode rate is the tokens after the
	// first over the time from the first piece to the finish.
	var meta struct {
		TTFTMs   *float64 `json:"ttftMs"`
		DecodeMs *float64 `json:"decodeMs"`
	}
	require.NoError(t, json.Unmarshal([]byte(js[string](t, ctx, `JSON.stringify(window.bonsaiChat.messages.at(-1).meta)`)), &meta))
	require.NotNil(t, meta.TTFTMs)
	require.NotNil(t, meta.DecodeMs)
	ttft, err := strconv.Atoi(m[5])
	require.NoError(t, err)
	assert.InDelta(t, *meta.TTFTMs, float64(ttft), 0.5, line)
	if *meta.DecodeMs > 0 {
		rate, err := strconv.ParseFloat(m[4], 64)
		require.NoError(t, err, line)
		assert.InDelta(t, float64(maxTokens-1)/(*meta.DecodeMs/1000), rate, 0.05+1e-9, line)
	} else {
		assert.Empty(t, m[4], line)
	}

	// Every finish reason in words, the page's function given each (the server sends
	// "length" for a reply cut at the context's end or by a drain too: fewer tokens
	// than max_tokens tell them apart).
	for _, c := range []struct{ meta, want string }{
		{`{finish: "stop", usage: {completion_tokens: 5}, maxTokens: 8}`, "Finished: the model ended its reply."},
		{`{finish: "length", usage: {completion_tokens: 8}, maxTokens: 8}`, "Cut at the token limit (max_tokens 8): the reply is unfinished."},
		{`{finish: "length", usage: {completion_tokens: 3}, maxTokens: 4096}`,
			"Cut short by the server after 3 tokens, below max_tokens 4096: the context is full, or the server is shutting down. The reply is unfinished."},
		{`{finish: "tool_calls", maxTokens: 8}`, "Paused to call tools: the page runs them and sends the results back."},
		{`{finish: "content_filter", maxTokens: 8}`, "Withheld by a content filter."},
		{`{finish: "", maxTokens: 8}`, "Ended without a finish reason: the stream closed early."},
		{`{finish: "something_new", maxTokens: 8}`, "Ended: something_new."},
		{`{stopped: true, maxTokens: 8}`, "Stopped: you pressed Stop. (The server sends no usage for a reply cut off.)"},
	} {
		assert.Equal(t, c.want, js[string](t, ctx, `finishText(`+c.meta+`)`), c.meta)
	}
	// A reply with thinking counts its thinking tokens apart; one of a single token
	// (in the singular) has no decode interval.
	assert.Equal(t, "Prompt 9 tokens (4 cached) · reply 1 token (1 thinking) · decode speed not measured (the reply came in one piece) · first token after 12 ms",
		js[string](t, ctx, `usageText({usage: {prompt_tokens: 9, completion_tokens: 1, prompt_tokens_details: {cached_tokens: 4}, `+
			`completion_tokens_details: {reasoning_tokens: 1}}, ttftMs: 12.4, decodeMs: 0})`))
	assert.Equal(t, "Prompt 9 tokens · reply 11 tokens · 20.0 tok/s decode · first token after 13 ms",
		js[string](t, ctx, `usageText({usage: {prompt_tokens: 9, completion_tokens: 11}, ttftMs: 12.6, decodeMs: 500})`))
}
