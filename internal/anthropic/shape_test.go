package anthropic

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/pagination"
	"github.com/bonsai-go/sdk/internal/apishape"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// noProblems fails t with the mismatches of body with the client type T.
func noProblems[T any](t *testing.T, what string, body []byte) {
	t.Helper()
	if p := apishape.Check[T](body); len(p) > 0 {
		t.Errorf("%s: %d mismatches with %T:\n  %s\nbody: %s", what, len(p), *new(T), strings.Join(p, "\n  "), body)
	}
}

// anthropicDo sends a request as Anthropic's clients do (x-api-key, anthropic-version)
// and returns the status and body.
func anthropicDo(t *testing.T, method, url, key, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b.Bytes()
}

const toolsBody = `"tools": [{"name": "get_weather", "input_schema": ` + weatherSchema + `}],
	"tool_choice": {"type": "any", "disable_parallel_tool_use": true}, "temperature": 1, "max_tokens": 400`

// TestShapes checks every kind of response body against the type anthropic-sdk-go
// decodes it into: each field the type declares required is there (null when empty),
// each field decodes as its type, each constant has its value.
func TestShapes(t *testing.T) {
	keys, err := serve.NewKeys("k")
	require.NoError(t, err)
	_, ts := newTestServer(t, serve.Config{Keys: keys, MaxBodyBytes: 64 << 10})
	ok := func(method, path, body string) []byte {
		t.Helper()
		code, b := anthropicDo(t, method, ts.URL+path, "k", body)
		require.Equal(t, http.StatusOK, code, "%s", b)
		return b
	}
	bodies := map[string]string{
		"text":     `"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6`,
		"thinking": `"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 30, "thinking": {"type": "enabled", "budget_tokens": 20}`,
		"stop":     `"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 30, "stop_sequences": ["e", "a", "o", "i"]`,
		"tools":    `"messages": [{"role": "user", "content": "Weather in Oslo?"}], ` + toolsBody,
	}
	for name, fields := range bodies {
		body := ok("POST", "/v1/messages", `{"model": "claude-x", `+fields+`}`)
		noProblems[anthropic.Message](t, "message "+name, body)
		events, err := readEvents(bytes.NewReader(ok("POST", "/v1/messages", `{"model": "claude-x", "stream": true, `+fields+`}`)))
		require.NoError(t, err)
		for _, ev := range events {
			if ev.name == "ping" { // no type of the SDK's: its stream skips pings
				assert.JSONEq(t, `{"type": "ping"}`, ev.raw)
				continue
			}
			noProblems[anthropic.MessageStreamEventUnion](t, name+" event "+ev.name, []byte(ev.raw))
		}
		noProblems[anthropic.MessageTokensCount](t, "count_tokens", ok("POST", "/v1/messages/count_tokens", `{"model": "claude-x", `+fields+`}`))
	}
	noProblems[pagination.Page[anthropic.ModelInfo]](t, "models", ok("GET", "/v1/models", ""))
	noProblems[anthropic.ModelInfo](t, "model", ok("GET", "/v1/models/"+modelName, ""))

	errs := []struct{ method, path, key, body string }{
		{"POST", "/v1/messages", "k", `{"model": "m", "messages": []}`},
		{"POST", "/v1/messages", "k", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], "temperature": 9}`},
		{"POST", "/v1/messages", "k", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "` + strings.Repeat("word ", 6000) + `"}]}`},
		{"POST", "/v1/messages", "k", `not json`},
		{"POST", "/v1/messages", "k", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "` + strings.Repeat("x", 70<<10) + `"}]}`},
		{"GET", "/v1/messages/nowhere", "k", ""},
		{"GET", "/v1/messages", "k", ""},
		{"GET", "/v1/models/nothing-here", "k", ""},
		{"POST", "/v1/messages", "", `{}`},
		{"GET", "/v1/models", "bad", ""},
	}
	for _, e := range errs {
		code, body := anthropicDo(t, e.method, ts.URL+e.path, e.key, e.body)
		assert.GreaterOrEqual(t, code, 400, "%s %s: %s", e.method, e.path, body)
		if code == http.StatusRequestEntityTooLarge {
			// Anthropic's error list has request_too_large for a 413, which the SDK's
			// union of error objects lacks: the one mismatch allowed.
			assert.Contains(t, string(body), `"type":"request_too_large"`)
			assert.Equal(t, []string{"$.error: no variant of shared.ErrorObjectUnion matches"}, apishape.Check[anthropic.ErrorResponse](body))
			continue
		}
		noProblems[anthropic.ErrorResponse](t, e.method+" "+e.path, body)
	}
}

// TestShapeCheckFails: the check finds the nullable fields the server once left out
// (container, stop_details, usage.cache_creation, server_tool_use), a field of the
// wrong type and a wrong constant — so TestShapes can fail.
func TestShapeCheckFails(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{})
	code, _, body := post(t, ts.URL+"/v1/messages", `{"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]}`)
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.Empty(t, apishape.Check[anthropic.Message](body), "%s", body)

	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(body, &m))
		f(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	usage := func(m map[string]any) map[string]any { return m["usage"].(map[string]any) }
	for _, c := range []struct {
		name, want string
		f          func(map[string]any)
	}{
		{"container dropped", "$.container: missing", func(m map[string]any) { delete(m, "container") }},
		{"stop_details dropped", "$.stop_details: missing", func(m map[string]any) { delete(m, "stop_details") }},
		{"cache_creation dropped", "$.usage.cache_creation: missing", func(m map[string]any) { delete(usage(m), "cache_creation") }},
		{"server_tool_use dropped", "$.usage.server_tool_use: missing", func(m map[string]any) { delete(usage(m), "server_tool_use") }},
		{"text block's citations dropped", "$.content[0].citations: missing", func(m map[string]any) {
			delete(m["content"].([]any)[0].(map[string]any), "citations")
		}},
		{"input_tokens an object", "$.usage.input_tokens: {} does not decode", func(m map[string]any) { usage(m)["input_tokens"] = map[string]any{} }},
		{"type wrong", `$.type: "messages", want "message"`, func(m map[string]any) { m["type"] = "messages" }},
		{"block of no known type", "$.content[0]: no variant", func(m map[string]any) { m["content"].([]any)[0].(map[string]any)["type"] = "texte" }},
	} {
		p := apishape.Check[anthropic.Message](edit(c.f))
		assert.True(t, len(p) == 1 && strings.HasPrefix(p[0], c.want), "%s: %q, want one starting %q", c.name, p, c.want)
	}
}
