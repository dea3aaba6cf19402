package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/bonsai-go/sdk/internal/openai/openaitest"
	"github.com/bonsai-go/sdk/internal/serve"
	oai "github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModels: GET /v1/models and /v1/models/{id} answer each client in its API's shape
// — Anthropic's ModelInfo page to anthropic-sdk-go, OpenAI's list to openai-go — with
// the served model and its aliases, and 404 in the right shape for an id not listed.
func TestModels(t *testing.T) {
	const alias = "claude-sonnet-4-5"
	_, ts := newTestServer(t, serve.Config{ModelAliases: []string{alias}})
	ctx := context.Background()

	ac := client(ts)
	page, err := ac.Models.List(ctx, anthropic.ModelListParams{})
	require.NoError(t, err)
	require.Len(t, page.Data, 2, page.RawJSON())
	assert.Equal(t, []string{modelName, alias}, []string{page.Data[0].ID, page.Data[1].ID})
	assert.False(t, page.HasMore)
	assert.Equal(t, modelName, page.FirstID)
	assert.Equal(t, alias, page.LastID)
	m := page.Data[0]
	assert.Equal(t, "model", string(m.Type))
	assert.Equal(t, int64(tinyModel.ContextSize()), m.MaxInputTokens)
	assert.Equal(t, int64(tinyModel.ContextSize()), m.MaxTokens)
	assert.True(t, m.Capabilities.Thinking.Supported)
	assert.True(t, m.Capabilities.Thinking.Types.Enabled.Supported)
	assert.False(t, m.Capabilities.ImageInput.Supported)
	assert.Equal(t, anthropic.ModelInfoLifecycle("active"), m.Lifecycle)
	assert.False(t, m.CreatedAt.IsZero(), m.RawJSON())
	assert.True(t, m.JSON.RetiresAt.Raw() == "null", m.RawJSON())

	got, err := ac.Models.Get(ctx, alias, anthropic.ModelGetParams{})
	require.NoError(t, err)
	assert.Equal(t, alias, got.ID)
	_, err = ac.Models.Get(ctx, "claude-nothing", anthropic.ModelGetParams{})
	var aerr *anthropic.Error
	require.True(t, errors.As(err, &aerr), "%v", err)
	assert.Equal(t, http.StatusNotFound, aerr.StatusCode)
	assert.Contains(t, aerr.RawJSON(), `"type":"not_found_error"`)

	oc := openaitest.Client(ts.URL)
	opage, err := oc.Models.List(ctx)
	require.NoError(t, err)
	require.Len(t, opage.Data, 2, opage.RawJSON())
	assert.Equal(t, []string{modelName, alias}, []string{opage.Data[0].ID, opage.Data[1].ID})
	assert.Equal(t, "prismml", opage.Data[1].OwnedBy)
	om, err := oc.Models.Get(ctx, alias)
	require.NoError(t, err)
	assert.Equal(t, alias, om.ID)
	_, err = oc.Models.Get(ctx, "gpt-4o")
	var oerr *oai.Error
	require.True(t, errors.As(err, &oerr), "%v", err)
	assert.Equal(t, http.StatusNotFound, oerr.StatusCode)
	assert.Equal(t, "model_not_found", oerr.Code)
}

// TestModelNamePolicy: both APIs accept any model name in a generation request and
// answer under the served name; an alias too.
func TestModelNamePolicy(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{ModelAliases: []string{"my-alias"}})
	for _, c := range []struct{ path, body string }{
		{"/v1/messages", `{"model": "claude-opus-4-1", "max_tokens": 3, "messages": [{"role": "user", "content": "Hi"}]}`},
		{"/v1/messages", `{"model": "my-alias", "max_tokens": 3, "messages": [{"role": "user", "content": "Hi"}]}`},
		{"/v1/messages/count_tokens", `{"model": "anything", "messages": [{"role": "user", "content": "Hi"}]}`},
		{"/v1/chat/completions", `{"model": "gpt-4o", "max_tokens": 3, "messages": [{"role": "user", "content": "Hi"}]}`},
		{"/v1/chat/completions", `{"max_tokens": 3, "messages": [{"role": "user", "content": "Hi"}]}`},
		{"/v1/completions", `{"model": "davinci-002", "max_tokens": 3, "prompt": "Hi"}`},
	} {
		code, _, body := post(t, ts.URL+c.path, c.body)
		require.Equal(t, http.StatusOK, code, "%s: %s", c.path, body)
		if !strings.HasSuffix(c.path, "count_tokens") {
			assert.Contains(t, string(body), `"model":"`+modelName+`"`, c.path)
		}
	}
	// Anthropic's API requires the field, whatever it names.
	code, _, body := post(t, ts.URL+"/v1/messages", `{"max_tokens": 3, "messages": [{"role": "user", "content": "Hi"}]}`)
	assert.Equal(t, http.StatusBadRequest, code, "%s", body)
}

// TestStreamUsage: a stream's message_start states the prompt's usage as prefilled —
// input_tokens and cache_read_input_tokens — and message_delta the same, with the
// output; their sum is count_tokens' count, and a repeated prompt reads from the cache.
func TestStreamUsage(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{})
	const fields = `"model": "m", "max_tokens": 5, "system": "Be brief.", "messages": [{"role": "user", "content": "Hello there"}]`
	code, _, counted := post(t, ts.URL+"/v1/messages/count_tokens", `{`+fields+`}`)
	require.Equal(t, http.StatusOK, code, "%s", counted)
	var count struct {
		InputTokens int64 `json:"input_tokens"`
	}
	require.NoError(t, json.Unmarshal(counted, &count))
	for round := range 2 {
		code, _, body := post(t, ts.URL+"/v1/messages", `{"stream": true, `+fields+`}`)
		require.Equal(t, http.StatusOK, code, "%s", body)
		events, err := readEvents(bytes.NewReader(body))
		require.NoError(t, err)
		var start, delta anthropic.MessageStreamEventUnion
		for _, e := range events {
			switch e.name {
			case "message_start":
				require.NoError(t, start.UnmarshalJSON([]byte(e.raw)))
			case "message_delta":
				require.NoError(t, delta.UnmarshalJSON([]byte(e.raw)))
			}
		}
		su, du := start.Message.Usage, delta.Usage
		assert.Equal(t, count.InputTokens, su.InputTokens+su.CacheReadInputTokens, "round %d", round)
		assert.Equal(t, su.InputTokens, du.InputTokens, "round %d: input_tokens", round)
		assert.Equal(t, su.CacheReadInputTokens, du.CacheReadInputTokens, "round %d: cache_read_input_tokens", round)
		assert.Equal(t, int64(1), su.OutputTokens)
		assert.Equal(t, int64(5), du.OutputTokens)
		if round == 1 {
			assert.Positive(t, su.CacheReadInputTokens, "the repeated prompt reads from the cache")
		}
	}
}

// otherAPI matches what would name the other API in an error message.
var (
	namesOpenAI    = regexp.MustCompile(`(?i)openai|chat/completions|max_completion_tokens|Bearer`)
	namesAnthropic = regexp.MustCompile(`(?i)anthropic|/v1/messages|x-api-key|tool_use|input_schema`)
)

// TestErrorsNameTheirAPI: each dialect's errors speak its own API's words — a prompt
// too long is "prompt is too long" for Anthropic's clients and "maximum context length"
// for OpenAI's — and never name the other API.
func TestErrorsNameTheirAPI(t *testing.T) {
	keys, err := serve.NewKeys("k")
	require.NoError(t, err)
	_, ts := newTestServer(t, serve.Config{Keys: keys, MaxBodyBytes: 64 << 10})
	long := strings.Repeat("word ", 6000)
	anthropicErrs := []struct{ method, path, key, body, want string }{
		{"POST", "/v1/messages", "k", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "` + long + `"}]}`, `^prompt is too long: \d+ tokens > 4096 maximum$`},
		{"POST", "/v1/messages/count_tokens", "k", `{"model": "m", "messages": [{"role": "user", "content": "` + long + `"}]}`, `^prompt is too long: \d+ tokens > 4096 maximum$`},
		{"POST", "/v1/messages", "k", `{"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}`, "max_tokens"},
		{"POST", "/v1/messages", "k", `{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "` + strings.Repeat("x", 70<<10) + `"}]}`, "limit"},
		{"GET", "/v1/models/nope", "k", "", "nope"},
		{"GET", "/v1/models", "", "", "key"},
		{"POST", "/v1/messages", "wrong", `{}`, "key"},
	}
	for _, c := range anthropicErrs {
		code, body := anthropicDo(t, c.method, ts.URL+c.path, c.key, c.body)
		assert.GreaterOrEqual(t, code, 400)
		var e anthropic.ErrorResponse
		require.NoError(t, e.UnmarshalJSON(body), "%s", body)
		assert.Regexp(t, c.want, e.Error.Message, "%s %s", c.method, c.path)
		assert.NotRegexp(t, namesOpenAI, e.Error.Message, "%s %s", c.method, c.path)
	}
	openaiErrs := []struct{ method, path, key, body, want string }{
		{"POST", "/v1/chat/completions", "k", `{"messages": [{"role": "user", "content": "` + long + `"}]}`, `^This model's maximum context length is 4096 tokens\. However, your (messages|prompt) resulted in \d+ tokens\.`},
		{"POST", "/v1/completions", "k", `{"prompt": "` + long + `"}`, `^This model's maximum context length is 4096 tokens\. However, your (messages|prompt) resulted in \d+ tokens\.`},
		{"POST", "/v1/chat/completions", "k", `{"max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}`, "max_tokens"},
		{"GET", "/v1/models/nope", "k", "", "nope"},
		{"GET", "/v1/models", "", "", "API key"},
		{"POST", "/v1/chat/completions", "wrong", `{}`, "API key"},
	}
	for _, c := range openaiErrs {
		req, err := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader(c.body))
		require.NoError(t, err)
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		assert.GreaterOrEqual(t, resp.StatusCode, 400)
		var e struct{ Error oai.Error }
		require.NoError(t, json.Unmarshal(b.Bytes(), &e), "%s", b.Bytes())
		assert.Regexp(t, c.want, e.Error.Message, "%s %s", c.method, c.path)
		assert.NotRegexp(t, namesAnthropic, e.Error.Message, "%s %s", c.method, c.path)
	}
}
