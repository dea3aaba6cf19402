package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/apishape"
	"github.com/bonsai-go/sdk/internal/serve"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/pagination"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sseData returns the data of each event of a stream of OpenAI's, [DONE] left out.
func sseData(t *testing.T, body []byte) [][]byte {
	t.Helper()
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "[DONE]" {
			out = append(out, []byte(d))
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, "no events in %s", body)
	return out
}

// errorOf returns the error object of an error body.
func errorOf(t *testing.T, body []byte) []byte {
	t.Helper()
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	require.NotEmpty(t, e.Error, "%s", body)
	return e.Error
}

// noProblems fails t with the mismatches of body with the client type T.
func noProblems[T any](t *testing.T, what string, body []byte) {
	t.Helper()
	if p := apishape.Check[T](body); len(p) > 0 {
		t.Errorf("%s: %d mismatches with %T:\n  %s\nbody: %s", what, len(p), *new(T), strings.Join(p, "\n  "), body)
	}
}

const toolsBody = `"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": ` + weatherSchema + `}}],
	"tool_choice": "required", "temperature": 1, "seed": 1, "max_tokens": 400`

// TestShapes checks every kind of response body against the type openai-go decodes it
// into: each field the type declares required is there (null when empty), each field
// decodes as its type, each constant has its value.
func TestShapes(t *testing.T) {
	keys, err := serve.NewKeys("k")
	require.NoError(t, err)
	_, ts := newTestServer(t, tinyModel, serve.Config{Keys: keys, MaxBodyBytes: 64 << 10})
	do := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var b bytes.Buffer
		_, err = b.ReadFrom(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b.Bytes()
	}
	ok := func(method, path, body string) []byte {
		t.Helper()
		code, b := do(method, path, body)
		require.Equal(t, http.StatusOK, code, "%s", b)
		return b
	}

	chats := map[string]string{
		"text":     `"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6`,
		"logprobs": `"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "logprobs": true, "top_logprobs": 2`,
		"tools":    `"messages": [{"role": "user", "content": "Weather in Oslo?"}], ` + toolsBody,
	}
	for name, fields := range chats {
		body := ok("POST", "/v1/chat/completions", `{"model": "tiny", `+fields+`}`)
		noProblems[oai.ChatCompletion](t, "chat "+name, body)
		stream := ok("POST", "/v1/chat/completions", `{"model": "tiny", "stream": true, "stream_options": {"include_usage": true}, `+fields+`}`)
		for _, ev := range sseData(t, stream) {
			noProblems[oai.ChatCompletionChunk](t, "chat chunk "+name, ev)
		}
	}
	for name, fields := range map[string]string{"text": `"max_tokens": 6`, "logprobs": `"max_tokens": 6, "logprobs": 2`} {
		body := ok("POST", "/v1/completions", `{"model": "tiny", "prompt": "Once", `+fields+`}`)
		noProblems[oai.Completion](t, "completion "+name, body)
		stream := ok("POST", "/v1/completions", `{"model": "tiny", "prompt": "Once", "stream": true, "stream_options": {"include_usage": true}, `+fields+`}`)
		for _, ev := range sseData(t, stream) {
			noProblems[oai.Completion](t, "completion chunk "+name, ev)
		}
	}
	noProblems[pagination.Page[oai.Model]](t, "models", ok("GET", "/v1/models", ""))
	noProblems[oai.Model](t, "model", ok("GET", "/v1/models/tiny", ""))

	errs := []struct{ method, path, body string }{
		{"POST", "/v1/chat/completions", `{"messages": []}`},
		{"POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "Hi"}], "temperature": 9}`},
		{"POST", "/v1/chat/completions", `{"messages": [{"role": "user", "content": "` + strings.Repeat("word ", 6000) + `"}]}`},
		{"POST", "/v1/completions", `{"prompt": "x", "echo": true}`},
		{"POST", "/v1/completions", `{"prompt": "` + strings.Repeat("x", 70<<10) + `"}`},
		{"POST", "/v1/chat/completions", `not json`},
		{"GET", "/v1/nowhere", ""},
		{"DELETE", "/v1/models", ""},
	}
	for _, e := range errs {
		code, body := do(e.method, e.path, e.body)
		assert.GreaterOrEqual(t, code, 400, "%s %s: %s", e.method, e.path, body)
		noProblems[oai.Error](t, e.method+" "+e.path, errorOf(t, body))
	}
	// A 401, without a key.
	resp, err := http.Get(ts.URL + "/v1/models")
	require.NoError(t, err)
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	noProblems[oai.Error](t, "401", errorOf(t, b.Bytes()))
}

// TestShapeCheckFails: the check finds a required field dropped (refusal, as the
// server once left it out), one of the wrong type, a wrong constant and a missing
// nested one — so TestShapes can fail.
func TestShapeCheckFails(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	code, _, body := post(t, ts.URL+"/v1/chat/completions", `{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "logprobs": true}`)
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.Empty(t, apishape.Check[oai.ChatCompletion](body), "%s", body)

	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m))
		f(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	choice := func(m map[string]any) map[string]any { return m["choices"].([]any)[0].(map[string]any) }
	for _, c := range []struct {
		name, want string
		f          func(map[string]any)
	}{
		{"refusal dropped", "$.choices[0].message.refusal: missing", func(m map[string]any) { delete(choice(m)["message"].(map[string]any), "refusal") }},
		{"logprobs.refusal dropped", "$.choices[0].logprobs.refusal: missing", func(m map[string]any) { delete(choice(m)["logprobs"].(map[string]any), "refusal") }},
		{"finish_reason dropped", "$.choices[0].finish_reason: missing", func(m map[string]any) { delete(choice(m), "finish_reason") }},
		{"index an object", "$.choices[0].index: {} does not decode", func(m map[string]any) { choice(m)["index"] = map[string]any{} }},
		{"object wrong", `$.object: "chat.completions", want "chat.completion"`, func(m map[string]any) { m["object"] = "chat.completions" }},
		{"usage field dropped", "$.usage.total_tokens: missing", func(m map[string]any) { delete(m["usage"].(map[string]any), "total_tokens") }},
	} {
		p := apishape.Check[oai.ChatCompletion](edit(c.f))
		assert.True(t, len(p) == 1 && strings.HasPrefix(p[0], c.want), "%s: %q, want one starting %q", c.name, p, c.want)
	}
}
