package openai

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bonsai-go/sdk/internal/openai/openaitest"
	"github.com/bonsai-go/sdk/internal/serve"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reasoningOf reads reasoning_content, which the OpenAI client keeps among the extra
// fields.
func reasoningOf(f interface{ Raw() string }) string {
	var s string
	json.Unmarshal([]byte(f.Raw()), &s)
	return s
}

// TestChat: a chat completion, whole and streamed, through the official client; the
// stream's deltas reassemble the whole answer, and it ends as OpenAI's do.
func TestChat(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{Parallel: 2, Queue: 4})
	c, rec := client(ts)
	ctx := context.Background()

	for _, sampled := range []bool{false, true} {
		p := openaitest.ChatParams("Hello there", 40)
		if sampled {
			p.Temperature, p.TopP = oai.Float(0.9), oai.Float(0.95)
		}
		whole, err := c.Chat.Completions.New(ctx, p)
		require.NoError(t, err)
		require.Len(t, whole.Choices, 1)
		msg := whole.Choices[0].Message
		assert.Equal(t, "chat.completion", string(whole.Object))
		assert.Equal(t, modelName, whole.Model)
		assert.True(t, strings.HasPrefix(whole.ID, "chatcmpl-"))
		assert.Equal(t, "assistant", string(msg.Role))
		assert.NotEmpty(t, msg.Content+reasoningOf(msg.JSON.ExtraFields["reasoning_content"]))
		assert.Contains(t, []string{"stop", "length"}, whole.Choices[0].FinishReason)
		u := whole.Usage
		assert.Greater(t, u.PromptTokens, int64(5))
		assert.LessOrEqual(t, u.CompletionTokens, int64(40))
		assert.Equal(t, u.PromptTokens+u.CompletionTokens, u.TotalTokens)

		p.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
		stream := c.Chat.Completions.NewStreaming(ctx, p)
		var content, reasoning strings.Builder
		var finish string
		var chunks []oai.ChatCompletionChunk
		for stream.Next() {
			ch := stream.Current()
			chunks = append(chunks, ch)
			for _, choice := range ch.Choices {
				content.WriteString(choice.Delta.Content)
				reasoning.WriteString(reasoningOf(choice.Delta.JSON.ExtraFields["reasoning_content"]))
				if choice.FinishReason != "" {
					finish = choice.FinishReason
				}
			}
		}
		require.NoError(t, stream.Err())
		require.NoError(t, stream.Close())
		require.GreaterOrEqual(t, len(chunks), 3)
		assert.Equal(t, "assistant", chunks[0].Choices[0].Delta.Role, "the role comes first")
		assert.Equal(t, "chat.completion.chunk", string(chunks[0].Object))
		for _, ch := range chunks[1:] {
			for _, choice := range ch.Choices {
				assert.Empty(t, choice.Delta.Role, "the role comes once")
			}
		}
		assert.Equal(t, msg.Content, content.String(), "the deltas reassemble the answer (sampled %v)", sampled)
		assert.Equal(t, reasoningOf(msg.JSON.ExtraFields["reasoning_content"]), reasoning.String())
		assert.Equal(t, whole.Choices[0].FinishReason, finish)
		last := chunks[len(chunks)-1]
		assert.Empty(t, last.Choices, "the usage chunk has no choices")
		assert.Equal(t, u.PromptTokens, last.Usage.PromptTokens)
		assert.Equal(t, u.CompletionTokens, last.Usage.CompletionTokens)
		assert.Equal(t, u.TotalTokens, last.Usage.TotalTokens)
		assert.True(t, strings.HasSuffix(rec.last(), "data: [DONE]\n\n"), "the stream ends with [DONE]")

		// The same stream read raw: the exact sequence of events.
		body, _ := json.Marshal(p)
		var req map[string]any
		require.NoError(t, json.Unmarshal(body, &req))
		req["stream"] = true
		body, _ = json.Marshal(req)
		resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
		require.NoError(t, err)
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		events, err := openaitest.ReadEvents(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		sum, err := openaitest.CheckStream(events, true, true)
		require.NoError(t, err)
		assert.Equal(t, msg.Content, sum.Content)
		assert.Equal(t, finish, sum.Finish)
		assert.Equal(t, int(u.CompletionTokens), sum.Usage.CompletionTokens)
	}
}

// TestStreamWithoutUsage: without stream_options.include_usage no chunk carries usage.
func TestStreamWithoutUsage(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model":"tiny","stream":true,"max_tokens":8,"temperature":0,"messages":[{"role":"user","content":"Hi"}]}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	events, err := openaitest.ReadEvents(resp.Body)
	require.NoError(t, err)
	_, err = openaitest.CheckStream(events, true, false)
	require.NoError(t, err)
	for _, e := range events {
		assert.NotContains(t, e, `"usage"`)
	}
}

// TestCompletions: /v1/completions, whole and streamed, through the official client.
func TestCompletions(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, rec := client(ts)
	ctx := context.Background()
	p := oai.CompletionNewParams{
		Model:       modelName,
		Prompt:      oai.CompletionNewParamsPromptUnion{OfString: oai.String("Once upon a time")},
		MaxTokens:   oai.Int(30),
		Temperature: oai.Float(0),
	}
	whole, err := c.Completions.New(ctx, p)
	require.NoError(t, err)
	require.Len(t, whole.Choices, 1)
	assert.Equal(t, "text_completion", string(whole.Object))
	assert.True(t, strings.HasPrefix(whole.ID, "cmpl-"))
	assert.NotEmpty(t, whole.Choices[0].Text)
	assert.Contains(t, []string{"stop", "length"}, string(whole.Choices[0].FinishReason))
	assert.Greater(t, whole.Usage.PromptTokens, int64(0))

	p.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
	stream := c.Completions.NewStreaming(ctx, p)
	var text strings.Builder
	var finish string
	var last oai.Completion
	for stream.Next() {
		last = stream.Current()
		for _, ch := range last.Choices {
			text.WriteString(ch.Text)
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
		}
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, whole.Choices[0].Text, text.String())
	assert.Equal(t, string(whole.Choices[0].FinishReason), finish)
	assert.Empty(t, last.Choices)
	assert.Equal(t, whole.Usage.CompletionTokens, last.Usage.CompletionTokens)
	assert.True(t, strings.HasSuffix(rec.last(), "data: [DONE]\n\n"))

	// A prompt of token ids, and the raw event sequence.
	code, _, body := post(t, ts.URL+"/v1/completions", `{"model":"tiny","prompt":[1,2,3,4],"max_tokens":5,"temperature":0}`)
	require.Equal(t, http.StatusOK, code, "%s", body)
	var cmpl struct{ Usage usage }
	require.NoError(t, json.Unmarshal(body, &cmpl))
	assert.Equal(t, 4, cmpl.Usage.PromptTokens, "the token ids are the prompt")
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(
		`{"prompt":"Once upon a time","max_tokens":30,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`))
	require.NoError(t, err)
	events, err := openaitest.ReadEvents(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	sum, err := openaitest.CheckStream(events, false, true)
	require.NoError(t, err)
	assert.Equal(t, whole.Choices[0].Text, sum.Content)
}

// TestModels lists the model, with the client and raw.
func TestModels(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, _ := client(ts)
	page, err := c.Models.List(context.Background())
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	assert.Equal(t, modelName, page.Data[0].ID)
	assert.Equal(t, "prismml", page.Data[0].OwnedBy)
	m, err := c.Models.Get(context.Background(), modelName)
	require.NoError(t, err)
	assert.Equal(t, modelName, m.ID)
	_, err = c.Models.Get(context.Background(), "gpt-4o")
	var apiErr *oai.Error
	require.True(t, errors.As(err, &apiErr), "%v", err)
	assert.Equal(t, http.StatusNotFound, apiErr.StatusCode)
	assert.Equal(t, "model_not_found", apiErr.Code)

	for _, path := range []string{"/health", "/v1/health"} {
		resp, err := http.Get(ts.URL + path)
		require.NoError(t, err)
		var h map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "ok", h["status"])
		assert.Equal(t, "cpu", h["backend"])
	}
}

// TestLogprobs: chat logprobs with alternatives, whole and streamed, and the legacy
// completions' logprobs.
func TestLogprobs(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, _ := client(ts)
	ctx := context.Background()
	p := openaitest.ChatParams("Tell me a story", 12)
	p.Logprobs, p.TopLogprobs = oai.Bool(true), oai.Int(3)
	whole, err := c.Chat.Completions.New(ctx, p)
	require.NoError(t, err)
	lps := whole.Choices[0].Logprobs.Content
	require.NotEmpty(t, lps)
	for _, lp := range lps {
		assert.LessOrEqual(t, lp.Logprob, 0.0)
		require.Len(t, lp.TopLogprobs, 3)
		// Greedy: the token drawn is the most likely one.
		assert.Equal(t, lp.Token, lp.TopLogprobs[0].Token)
		assert.InDelta(t, lp.Logprob, lp.TopLogprobs[0].Logprob, 1e-6)
		assert.GreaterOrEqual(t, lp.TopLogprobs[0].Logprob, lp.TopLogprobs[1].Logprob)
		if !strings.ContainsRune(lp.Token, utf8.RuneError) { // JSON carries invalid UTF-8 as U+FFFD; bytes carry it as it is
			b := make([]byte, len(lp.Bytes))
			for i, v := range lp.Bytes {
				b[i] = byte(v)
			}
			assert.Equal(t, lp.Token, string(b), "bytes are the token's")
		}
	}
	assert.Len(t, lps, int(whole.Usage.CompletionTokens), "one entry per token (no think block, no stop token here)")

	stream := c.Chat.Completions.NewStreaming(ctx, p)
	n := 0
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			for i, lp := range ch.Logprobs.Content {
				assert.Equal(t, lps[n].Token, lp.Token)
				assert.InDelta(t, lps[n].Logprob, lp.Logprob, 1e-6)
				assert.Len(t, lp.TopLogprobs, 3, "%d", i)
				n++
			}
		}
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, len(lps), n, "one logprob per token, streamed as whole")

	// Without logprobs there are none.
	p = openaitest.ChatParams("Tell me a story", 4)
	whole, err = c.Chat.Completions.New(ctx, p)
	require.NoError(t, err)
	assert.Equal(t, "null", whole.Choices[0].JSON.Logprobs.Raw())

	cp, err := c.Completions.New(ctx, oai.CompletionNewParams{Model: modelName, Prompt: oai.CompletionNewParamsPromptUnion{OfString: oai.String("abc")},
		MaxTokens: oai.Int(6), Temperature: oai.Float(0), Logprobs: oai.Int(2)})
	require.NoError(t, err)
	l := cp.Choices[0].Logprobs
	assert.Len(t, l.Tokens, int(cp.Usage.CompletionTokens))
	assert.Len(t, l.TokenLogprobs, len(l.Tokens))
	assert.Len(t, l.TopLogprobs, len(l.Tokens))
	assert.Len(t, l.TextOffset, len(l.Tokens))
}

// TestStop: a stop string ends the answer before it, with finish_reason stop, whether
// given as a string or in an array, streamed or not.
func TestStop(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, _ := client(ts)
	ctx := context.Background()
	p := openaitest.ChatParams("Hello there", 60)
	full, err := c.Chat.Completions.New(ctx, p)
	require.NoError(t, err)
	text := full.Choices[0].Message.Content
	runes := []rune(text)
	require.Greater(t, len(runes), 20, "%q", text)
	stop := string(runes[12:14])
	want := text[:strings.Index(text, stop)]

	for _, union := range []oai.ChatCompletionNewParamsStopUnion{
		{OfString: oai.String(stop)},
		{OfStringArray: []string{"never appears \x01\x02", stop}},
	} {
		p.Stop = union
		res, err := c.Chat.Completions.New(ctx, p)
		require.NoError(t, err)
		assert.Equal(t, want, res.Choices[0].Message.Content)
		assert.Equal(t, "stop", res.Choices[0].FinishReason)

		stream := c.Chat.Completions.NewStreaming(ctx, p)
		var content strings.Builder
		finish := ""
		for stream.Next() {
			for _, ch := range stream.Current().Choices {
				content.WriteString(ch.Delta.Content)
				if ch.FinishReason != "" {
					finish = ch.FinishReason
				}
			}
		}
		require.NoError(t, stream.Err())
		assert.Equal(t, want, content.String(), "no part of the stop string is streamed")
		assert.Equal(t, "stop", finish)
	}
}

// TestThinking: thinking switched on and off with chat_template_kwargs and with a
// top-level enable_thinking; the thinking comes back in reasoning_content.
func TestThinking(t *testing.T) {
	_, ts := newTestServer(t, thinkModel, serve.Config{})
	c, _ := client(ts)
	ctx := context.Background()
	p := openaitest.ChatParams("Why is the sky blue?", 24)

	on, err := c.Chat.Completions.New(ctx, p) // the template's default: on
	require.NoError(t, err)
	reasoning := reasoningOf(on.Choices[0].Message.JSON.ExtraFields["reasoning_content"])
	assert.NotEmpty(t, reasoning, "the reply starts inside a think block")

	offKwargs, err := c.Chat.Completions.New(ctx, p, option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": false}))
	require.NoError(t, err)
	offTop, err := c.Chat.Completions.New(ctx, p, option.WithJSONSet("enable_thinking", false))
	require.NoError(t, err)
	onKwargs, err := c.Chat.Completions.New(ctx, p, option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": true}))
	require.NoError(t, err)
	for _, off := range []*oai.ChatCompletion{offKwargs, offTop} {
		msg := off.Choices[0].Message
		assert.Empty(t, reasoningOf(msg.JSON.ExtraFields["reasoning_content"]))
		assert.NotEmpty(t, msg.Content)
		// The empty think block the template adds lengthens the prompt.
		assert.Greater(t, off.Usage.PromptTokens, on.Usage.PromptTokens)
	}
	assert.Equal(t, offKwargs.Choices[0].Message.Content, offTop.Choices[0].Message.Content)
	assert.Equal(t, on.Usage.PromptTokens, onKwargs.Usage.PromptTokens)
	assert.Equal(t, reasoning, reasoningOf(onKwargs.Choices[0].Message.JSON.ExtraFields["reasoning_content"]))
	assert.Positive(t, on.Usage.CompletionTokensDetails.ReasoningTokens)
	assert.Zero(t, offTop.Usage.CompletionTokensDetails.ReasoningTokens)

	// Streamed, the thinking comes in reasoning_content deltas.
	stream := c.Chat.Completions.NewStreaming(ctx, p)
	var streamed strings.Builder
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			streamed.WriteString(reasoningOf(ch.Delta.JSON.ExtraFields["reasoning_content"]))
		}
	}
	require.NoError(t, stream.Err())
	assert.Equal(t, reasoning, streamed.String())
}

// TestPrefixReuse: with two sessions, the second turn of a conversation goes to the
// session that holds the first and prefills only what is new.
func TestPrefixReuse(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{Parallel: 2, Queue: 2})
	c, _ := client(ts)
	ctx := context.Background()
	a := openaitest.ChatParams("The first conversation", 10)
	b := openaitest.ChatParams("A second, unrelated one", 10)
	b.Messages[0] = oai.SystemMessage("Another system prompt.")
	ra, err := c.Chat.Completions.New(ctx, a)
	require.NoError(t, err)
	_, err = c.Chat.Completions.New(ctx, b)
	require.NoError(t, err)
	// Both sessions hold a conversation now; the next turn of a finds its own.
	a.Messages = append(a.Messages, oai.AssistantMessage(ra.Choices[0].Message.Content), oai.UserMessage("And then?"))
	next, err := c.Chat.Completions.New(ctx, a)
	require.NoError(t, err)
	assert.Greater(t, next.Usage.PromptTokensDetails.CachedTokens, ra.Usage.PromptTokens/2,
		"prompt %d tokens, cached %d", next.Usage.PromptTokens, next.Usage.PromptTokensDetails.CachedTokens)
}
