package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuth: with API keys, Anthropic's official client with a right key gets its
// answers, whole and streamed, the key in x-api-key (WithAPIKey) or as a bearer token
// (WithAuthToken); with a wrong or no key it gets *anthropic.Error with status 401 and
// type authentication_error, on the Messages routes and on /v1/models, which it
// shares with the OpenAI API: there a request without Anthropic's headers gets
// OpenAI's shape.
func TestAuth(t *testing.T) {
	keys, err := serve.NewKeys("sk-ant-right")
	require.NoError(t, err)
	_, ts := newTestServer(t, serve.Config{Keys: keys})
	ctx := context.Background()
	params := anthropic.MessageNewParams{Model: modelName, MaxTokens: 3,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi"))}}
	newClient := func(opts ...option.RequestOption) anthropic.Client {
		return anthropic.NewClient(append([]option.RequestOption{option.WithBaseURL(ts.URL), option.WithMaxRetries(0)}, opts...)...)
	}

	for name, c := range map[string]anthropic.Client{
		"x-api-key": newClient(option.WithAPIKey("sk-ant-right")),
		"bearer":    newClient(option.WithAuthToken("sk-ant-right")),
	} {
		msg, err := c.Messages.New(ctx, params)
		require.NoError(t, err, name)
		assert.Equal(t, int64(3), msg.Usage.OutputTokens, name)
		stream := c.Messages.NewStreaming(ctx, params)
		events := 0
		for stream.Next() {
			events++
		}
		require.NoError(t, stream.Err(), name)
		assert.Greater(t, events, 3, name)
		count, err := c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: modelName, Messages: params.Messages})
		require.NoError(t, err, name)
		assert.Positive(t, count.InputTokens, name)
	}

	check := func(what string, err error) {
		t.Helper()
		var apiErr *anthropic.Error
		require.True(t, errors.As(err, &apiErr), "%s: %v", what, err)
		assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode, what)
		assert.Equal(t, anthropic.ErrorTypeAuthenticationError, apiErr.Type(), what)
		var body struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message string
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(apiErr.RawJSON()), &body), what)
		assert.Equal(t, "error", body.Type, what)
		assert.Equal(t, "invalid x-api-key", body.Error.Message, what)
	}
	for name, c := range map[string]anthropic.Client{
		"wrong x-api-key": newClient(option.WithAPIKey("sk-ant-wrong")),
		"wrong bearer":    newClient(option.WithAuthToken("sk-ant-righ")),
	} {
		_, err := c.Messages.New(ctx, params)
		check(name+": messages", err)
		stream := c.Messages.NewStreaming(ctx, params)
		assert.False(t, stream.Next())
		check(name+": stream", stream.Err())
		_, err = c.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: modelName, Messages: params.Messages})
		check(name+": count_tokens", err)
		_, err = c.Models.List(ctx, anthropic.ModelListParams{})
		check(name+": models", err)
	}

	// Without a key, as raw requests: Anthropic's shape under /v1/messages and on
	// /v1/models with anthropic-version; OpenAI's on /v1/models without.
	for _, c := range []struct {
		path, version string
		want          string
	}{
		{"/v1/messages", "", `"error":{"type":"authentication_error","message":"x-api-key header is required"}`},
		{"/v1/messages/count_tokens", "2023-06-01", `"error":{"type":"authentication_error","message":"x-api-key header is required"}`},
		{"/v1/models", "2023-06-01", `"error":{"type":"authentication_error","message":"x-api-key header is required"}`},
		{"/v1/models", "", `"code":"invalid_api_key"`},
	} {
		req, err := http.NewRequest("POST", ts.URL+c.path, nil)
		require.NoError(t, err)
		if c.version != "" {
			req.Header.Set("anthropic-version", c.version)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, c.path)
		assert.Contains(t, string(b), c.want, "%s %q", c.path, c.version)
	}
}
