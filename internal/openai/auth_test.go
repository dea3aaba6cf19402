package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/bonsai-go/sdk/internal/openai/openaitest"
	"github.com/bonsai-go/sdk/internal/serve"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuth: with API keys, the official client with a right key gets its answers,
// whole and streamed, the key in Authorization (as it sends it) or in x-api-key; with
// a wrong or no key it gets *openai.Error with status 401, type invalid_request_error
// and code invalid_api_key, as OpenAI answers, on every route.
func TestAuth(t *testing.T) {
	keys, err := serve.NewKeys("sk-right", "sk-other")
	require.NoError(t, err)
	_, ts := newTestServer(t, tinyModel, serve.Config{Keys: keys})
	ctx := context.Background()

	for name, opts := range map[string][]option.RequestOption{
		"bearer":    {option.WithAPIKey("sk-right")},
		"x-api-key": {option.WithAPIKey(""), option.WithHeaderDel("Authorization"), option.WithHeader("x-api-key", "sk-other")},
	} {
		c := openaitest.Client(ts.URL, opts...)
		res, err := c.Chat.Completions.New(ctx, openaitest.ChatParams("Hi", 3))
		require.NoError(t, err, name)
		require.Len(t, res.Choices, 1, name)
		assert.Equal(t, int64(3), res.Usage.CompletionTokens, name)
		stream := c.Chat.Completions.NewStreaming(ctx, openaitest.ChatParams("Hi", 3))
		chunks := 0
		for stream.Next() {
			chunks++
		}
		require.NoError(t, stream.Err(), name)
		assert.Greater(t, chunks, 1, name)
		models, err := c.Models.List(ctx)
		require.NoError(t, err, name)
		require.Len(t, models.Data, 1, name)
		assert.Equal(t, modelName, models.Data[0].ID, name)
	}

	check := func(what string, err error) {
		t.Helper()
		var apiErr *oai.Error
		require.True(t, errors.As(err, &apiErr), "%s: %v", what, err)
		assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode, what)
		assert.Equal(t, "invalid_request_error", apiErr.Type, what)
		assert.Equal(t, "invalid_api_key", apiErr.Code, what)
		assert.NotContains(t, apiErr.Message, "sk-", what)
		assert.Equal(t, `Bearer realm="bonsai", error="invalid_token"`, apiErr.Response.Header.Get("WWW-Authenticate"), what)
	}
	for _, key := range []string{"sk-wrong", "sk-righ", "SK-RIGHT"} {
		c := openaitest.Client(ts.URL, option.WithAPIKey(key))
		_, err := c.Chat.Completions.New(ctx, openaitest.ChatParams("Hi", 3))
		check(key+": chat", err)
		stream := c.Chat.Completions.NewStreaming(ctx, openaitest.ChatParams("Hi", 3))
		assert.False(t, stream.Next())
		check(key+": stream", stream.Err())
		_, err = c.Completions.New(ctx, oai.CompletionNewParams{Model: modelName, Prompt: oai.CompletionNewParamsPromptUnion{OfString: oai.String("Hi")}})
		check(key+": completions", err)
		_, err = c.Models.List(ctx)
		check(key+": models", err)
		_, err = c.Models.Get(ctx, modelName)
		check(key+": model", err)
	}

	// No key: the body in OpenAI's shape, param null, and a challenge without an error.
	for _, path := range []string{"/v1/chat/completions", "/v1/models", "/v1/nothing"} {
		resp, err := http.Get(ts.URL + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"), path)
		assert.Equal(t, `Bearer realm="bonsai"`, resp.Header.Get("WWW-Authenticate"), path)
		var body map[string]map[string]any
		require.NoError(t, json.Unmarshal(b, &body), "%s", b)
		require.Contains(t, body, "error")
		e := body["error"]
		assert.Equal(t, map[string]any{"message": e["message"], "type": "invalid_request_error", "param": nil, "code": "invalid_api_key"}, e, path)
		assert.Contains(t, e["message"], "Authorization: Bearer", path)
	}
	// The probes and /metrics stay open.
	for _, path := range []string{"/health", "/v1/health", "/metrics"} {
		resp, err := http.Get(ts.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
}
