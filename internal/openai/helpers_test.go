package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
)

// The tests share two models, opened once: the tiny synthetic model with its ChatML
// template, and the same model with a Qwen3-style template that opens a think block
// unless thinking is switched off.
var (
	tinyModel  *bonsai.Model
	thinkModel *bonsai.Model
	tinyPath   string // the tiny model's file, for tests that open it with options of their own
)

const thinkTemplate = `{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}
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
		dir, err := os.MkdirTemp("", "openai-test-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		c, _ := synth.Preset("tiny")
		path := filepath.Join(dir, "tiny.gguf")
		tinyPath = path
		if err := synth.WriteFile(context.Background(), path, synth.Options{Config: c, Seed: 1}, nil); err != nil {
			panic(err)
		}
		if tinyModel, err = bonsai.Open(path, bonsai.WithThreads(2)); err != nil {
			panic(err)
		}
		defer tinyModel.Close()
		if thinkModel, err = bonsai.Open(path, bonsai.WithThreads(2), bonsai.WithChatTemplate(thinkTemplate)); err != nil {
			panic(err)
		}
		defer thinkModel.Close()
		return m.Run()
	}())
}

const modelName = "tiny"

// newTestServer serves m with cfg (ModelName defaults to "tiny") on an httptest server.
func newTestServer(t *testing.T, m *bonsai.Model, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	if cfg.ModelName == "" {
		cfg.ModelName = modelName
	}
	s, err := NewServer(m, cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

// recorder keeps the raw bytes of every response body the client reads.
type recorder struct {
	mu     sync.Mutex
	bodies []*bytes.Buffer
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	buf := &bytes.Buffer{}
	r.mu.Lock()
	r.bodies = append(r.bodies, buf)
	r.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, &syncWriter{mu: &r.mu, w: buf}), resp.Body}
	return resp, nil
}

func (r *recorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[len(r.bodies)-1].String()
}

type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// client returns the official OpenAI client pointed at ts, without retries, recording
// the response bodies.
func client(ts *httptest.Server) (oai.Client, *recorder) {
	rec := &recorder{}
	return oai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: rec})), rec
}

// post sends a JSON body and returns the response's status, headers and body.
func post(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

// readEvents returns the data of each server-sent event of a stream.
func readEvents(r io.Reader) ([]string, error) {
	var events []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "data: "):
			events = append(events, strings.TrimPrefix(line, "data: "))
		default:
			return events, fmt.Errorf("unexpected line %q", line)
		}
	}
	return events, sc.Err()
}

// rawChunk is a chat.completion.chunk or text_completion as JSON has it, with the
// nulls kept apart from the empty values.
type rawChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Role             *string `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"delta"`
		Text         *string         `json:"text"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// streamSummary is what a well-formed stream said.
type streamSummary struct {
	content, reasoning, finish string
	usage                      *usage
	chunks                     int
}

// checkStream checks the event sequence of a streamed chat completion (chat) or
// completion: for a chat, the role in the first chunk's delta and in no other; content
// deltas; one chunk with the finish reason, after every delta; with usage, one chunk
// of usage and no choices after it; then [DONE], last. It returns what the stream said.
func checkStream(events []string, chat, withUsage bool) (streamSummary, error) {
	var s streamSummary
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		return s, fmt.Errorf("the stream does not end with [DONE]: %d events", len(events))
	}
	events = events[:len(events)-1]
	var id string
	var content, reasoning strings.Builder
	for i, e := range events {
		var c rawChunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			return s, fmt.Errorf("event %d: %v: %s", i, err, e)
		}
		if c.Error != nil {
			return s, fmt.Errorf("event %d: error %s", i, c.Error.Message)
		}
		wantObject := "text_completion"
		if chat {
			wantObject = "chat.completion.chunk"
		}
		if c.Object != wantObject || c.Model != modelName {
			return s, fmt.Errorf("event %d: object %q model %q", i, c.Object, c.Model)
		}
		if i == 0 {
			id = c.ID
		} else if c.ID != id {
			return s, fmt.Errorf("event %d: id %q, the stream's is %q", i, c.ID, id)
		}
		if s.usage != nil {
			return s, fmt.Errorf("event %d after the usage chunk", i)
		}
		if len(c.Choices) == 0 {
			if !withUsage || c.Usage == nil || s.finish == "" {
				return s, fmt.Errorf("event %d: no choices, usage %v, finish %q", i, c.Usage, s.finish)
			}
			s.usage = c.Usage
			continue
		}
		if len(c.Choices) != 1 || c.Choices[0].Index != 0 {
			return s, fmt.Errorf("event %d: %d choices", i, len(c.Choices))
		}
		if c.Usage != nil {
			return s, fmt.Errorf("event %d: usage in a chunk with choices", i)
		}
		ch := c.Choices[0]
		if s.finish != "" {
			return s, fmt.Errorf("event %d after the finish reason", i)
		}
		if ch.FinishReason != nil {
			s.finish = *ch.FinishReason
		}
		if chat {
			if ch.Delta == nil {
				return s, fmt.Errorf("event %d: no delta", i)
			}
			if (ch.Delta.Role != nil) != (i == 0) || i == 0 && *ch.Delta.Role != "assistant" {
				return s, fmt.Errorf("event %d: role %v", i, ch.Delta.Role)
			}
			if ch.FinishReason != nil && (ch.Delta.Content != nil || ch.Delta.ReasoningContent != nil) {
				return s, fmt.Errorf("event %d: text with the finish reason", i)
			}
			if ch.Delta.Content != nil {
				content.WriteString(*ch.Delta.Content)
			}
			if ch.Delta.ReasoningContent != nil {
				reasoning.WriteString(*ch.Delta.ReasoningContent)
			}
		} else if ch.Text != nil {
			content.WriteString(*ch.Text)
		}
		s.chunks++
	}
	if s.finish != "stop" && s.finish != "length" {
		return s, fmt.Errorf("finish reason %q", s.finish)
	}
	if withUsage && s.usage == nil {
		return s, fmt.Errorf("no usage chunk")
	}
	s.content, s.reasoning = content.String(), reasoning.String()
	return s, nil
}

// apiErrorBody is an error response.
type apiErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}
