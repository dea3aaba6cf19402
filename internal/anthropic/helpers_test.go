package anthropic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/openai"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/require"
)

// The tests share the tiny synthetic model, opened with a Qwen3-style template that
// opens a think block unless thinking is switched off, and renders tool calls and
// tool results.
var tinyModel *bonsai.Model

const testTemplate = `{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\n' + message.content -}}
{%- if message.tool_calls -%}
{%- for call in message.tool_calls -%}
{{- '<tool_call>\n' + call.function.name + '\n</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}
{{- '<think>\n\n</think>\n\n' -}}
{%- else -%}
{{- '<think>\n' -}}
{%- endif -%}
{%- endif -%}
`

func TestMain(m *testing.M) {
	os.Exit(func() int {
		path, cleanup, err := synthtest.MainPath("tiny", 1, ternary.PQ2_0)
		if err != nil {
			panic(err)
		}
		defer cleanup()
		if tinyModel, err = bonsai.Open(path, bonsai.WithThreads(2), bonsai.WithChatTemplate(testTemplate)); err != nil {
			panic(err)
		}
		defer tinyModel.Close()
		return m.Run()
	}())
}

const modelName = "tiny"

// newTestServer serves the Messages API and, to compare with, the OpenAI API on one
// server.
func newTestServer(t *testing.T, cfg serve.Config) (*serve.Server, *httptest.Server) {
	t.Helper()
	cfg.ModelName = modelName
	s, err := serve.New(tinyModel, cfg)
	require.NoError(t, err)
	openai.Register(s, openai.Config{})
	Register(s)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

// client is Anthropic's official client pointed at ts, without retries.
func client(ts *httptest.Server) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey("unused"), option.WithMaxRetries(0))
}

func post(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

// event is one server-sent event.
type event struct {
	name string
	data map[string]any
	raw  string
}

// readEvents reads a stream of named events, checking the framing: an "event:" line,
// a "data:" line whose JSON "type" is the event's name, a blank line.
func readEvents(r io.Reader) ([]event, error) {
	var events []event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var cur *event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: ") && cur == nil:
			cur = &event{name: strings.TrimPrefix(line, "event: ")}
		case strings.HasPrefix(line, "data: ") && cur != nil && cur.raw == "":
			cur.raw = strings.TrimPrefix(line, "data: ")
			if err := json.Unmarshal([]byte(cur.raw), &cur.data); err != nil {
				return events, fmt.Errorf("event %d: %v", len(events), err)
			}
			if cur.data["type"] != cur.name {
				return events, fmt.Errorf("event %d: %q carries type %v", len(events), cur.name, cur.data["type"])
			}
		case line == "" && cur != nil && cur.raw != "":
			events = append(events, *cur)
			cur = nil
		default:
			return events, fmt.Errorf("event %d: unexpected line %q", len(events), line)
		}
	}
	if cur != nil {
		return events, fmt.Errorf("the stream ends inside an event")
	}
	return events, sc.Err()
}

// streamSummary is what a well-formed stream said, block by block.
type streamSummary struct {
	blocks     []map[string]any // each block as content_block_start gave it, with its text, thinking or partial_json accumulated
	stopReason string
	usage      map[string]any
}

// deltaKinds gives each delta type its field and the type of block it belongs to.
var deltaKinds = map[string][2]string{
	"text_delta": {"text", "text"}, "thinking_delta": {"thinking", "thinking"},
	"signature_delta": {"signature", "thinking"}, "input_json_delta": {"partial_json", "tool_use"},
}

// checkStream checks the order of a stream's events against Anthropic's: message_start
// first, then content blocks with consecutive indices, each opened by
// content_block_start, added to by content_block_delta of its own kind and closed by
// content_block_stop before the next opens; then message_delta with the stop reason
// and message_stop, last. Pings may come anywhere after message_start.
func checkStream(events []event) (streamSummary, error) {
	var s streamSummary
	if len(events) < 3 || events[0].name != "message_start" || events[len(events)-1].name != "message_stop" {
		return s, fmt.Errorf("the stream must open with message_start and close with message_stop: %d events", len(events))
	}
	msg, _ := events[0].data["message"].(map[string]any)
	if msg["role"] != "assistant" || msg["model"] != modelName || msg["type"] != "message" || !strings.HasPrefix(fmt.Sprint(msg["id"]), "msg_") {
		return s, fmt.Errorf("message_start: %s", events[0].raw)
	}
	open := -1
	deltaSeen := false
	for i, e := range events[1 : len(events)-1] {
		i++
		if deltaSeen {
			return s, fmt.Errorf("event %d (%s) after message_delta", i, e.name)
		}
		idx := -1
		if v, ok := e.data["index"].(float64); ok {
			idx = int(v)
		}
		switch e.name {
		case "ping":
		case "content_block_start":
			if open >= 0 || idx != len(s.blocks) {
				return s, fmt.Errorf("event %d: block %d starts while %d is open, after %d blocks", i, idx, open, len(s.blocks))
			}
			cb, _ := e.data["content_block"].(map[string]any)
			s.blocks = append(s.blocks, cb)
			open = idx
		case "content_block_delta":
			if idx != open || open < 0 {
				return s, fmt.Errorf("event %d: a delta for block %d while %d is open", i, idx, open)
			}
			d, _ := e.data["delta"].(map[string]any)
			cb := s.blocks[open]
			kind, ok := deltaKinds[fmt.Sprint(d["type"])]
			if !ok || kind[1] != cb["type"] {
				return s, fmt.Errorf("event %d: a %v in a %v block", i, d["type"], cb["type"])
			}
			prev, _ := cb[kind[0]].(string)
			cb[kind[0]] = prev + fmt.Sprint(d[kind[0]])
		case "content_block_stop":
			if idx != open {
				return s, fmt.Errorf("event %d: block %d stops while %d is open", i, idx, open)
			}
			open = -1
		case "message_delta":
			if open >= 0 {
				return s, fmt.Errorf("event %d: message_delta while block %d is open", i, open)
			}
			d, _ := e.data["delta"].(map[string]any)
			s.stopReason, _ = d["stop_reason"].(string)
			s.usage, _ = e.data["usage"].(map[string]any)
			deltaSeen = true
		default:
			return s, fmt.Errorf("event %d: unexpected %s", i, e.name)
		}
	}
	if !deltaSeen {
		return s, fmt.Errorf("no message_delta")
	}
	return s, nil
}

func httpPost(url, body string) (*http.Response, error) {
	return http.Post(url, "application/json", strings.NewReader(body))
}

func httpGet(url string) (*http.Response, error) { return http.Get(url) }
