package openai

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budgetAPI is the API on the thinking model with the server defaults d.
func budgetAPI(t *testing.T, d serve.Defaults) *api {
	t.Helper()
	srv, err := serve.New(thinkModel, serve.Config{ModelName: modelName, Defaults: d})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return newAPI(srv, Config{})
}

// TestReasoningEffortOptions: reasoning_effort (chat) and reasoning.effort (Responses)
// switch thinking and give the think block its share of the max tokens — low 1/4,
// medium 1/2, high 3/4, xhigh and max 7/8, computed here by hand — and a request with
// no effort gets the server's default budget.
func TestReasoningEffortOptions(t *testing.T) {
	const serverBudget = 33
	s := budgetAPI(t, serve.Defaults{MaxTokens: 400, ThinkingBudget: serverBudget})
	uncapped := budgetAPI(t, serve.Defaults{MaxTokens: 0, ThinkingBudget: 0})
	on, off := true, false
	for _, c := range []struct {
		s      *api
		extra  string // the chat request's fields beside messages
		think  *bool
		budget int
	}{
		{s, ``, nil, serverBudget},
		{s, `"max_tokens": 100, "reasoning_effort": "low"`, &on, 25},
		{s, `"max_tokens": 100, "reasoning_effort": "medium"`, &on, 50},
		{s, `"max_tokens": 100, "reasoning_effort": "high"`, &on, 75},
		{s, `"max_tokens": 100, "reasoning_effort": "xhigh"`, &on, 87},
		{s, `"max_tokens": 100, "reasoning_effort": "max"`, &on, 87},
		{s, `"max_completion_tokens": 40, "max_tokens": 100, "reasoning_effort": "high"`, &on, 30},
		{s, `"reasoning_effort": "low"`, &on, 100}, // a quarter of the server's 400
		{s, `"max_tokens": 1, "reasoning_effort": "low"`, &on, 1},
		{s, `"max_tokens": 100, "reasoning_effort": "none"`, &off, serverBudget},
		{s, `"max_tokens": 100, "reasoning_effort": "minimal"`, &off, serverBudget},
		{s, `"max_tokens": 100, "reasoning_effort": "low", "enable_thinking": false`, &off, 25},
		{s, `"max_tokens": 100, "reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": true}`, &on, serverBudget},
		{uncapped, `"reasoning_effort": "high"`, &on, 0}, // no max tokens to take a share of
	} {
		body := `{"messages": [{"role": "user", "content": "Hi"}]`
		if c.extra != "" {
			body += ", " + c.extra
		}
		body += "}"
		var req chatRequest
		require.Nil(t, decode([]byte(body), &req))
		j, e := c.s.chatJob(&req)
		require.Nil(t, e, body)
		opt := j.p.Options()
		assert.Equal(t, c.think, opt.Thinking, body)
		assert.Equal(t, c.budget, opt.ThinkingBudget, body)
	}
	// The same through the Responses API, whose max tokens is max_output_tokens.
	for _, effort := range []string{"low", "medium", "high", "xhigh", "max", "none"} {
		var rreq responsesRequest
		require.Nil(t, decode(fmt.Appendf(nil, `{"input": "Hi", "max_output_tokens": 200, "reasoning": {"effort": %q}}`, effort), &rreq))
		rj, e := s.responsesJob(&rreq)
		require.Nil(t, e, effort)
		want := map[string]int{"low": 50, "medium": 100, "high": 150, "xhigh": 175, "max": 175, "none": serverBudget}[effort]
		assert.Equal(t, want, rj.p.Options().ThinkingBudget, effort)
		assert.Equal(t, effort != "none", *rj.p.Options().Thinking, effort)
	}
	var rreq responsesRequest
	require.Nil(t, decode([]byte(`{"input": "Hi"}`), &rreq))
	rj, e := s.responsesJob(&rreq)
	require.Nil(t, e)
	assert.Equal(t, serverBudget, rj.p.Options().ThinkingBudget, "no effort: the server's default")

	// An unknown effort is a 400 naming the parameter.
	var req chatRequest
	require.Nil(t, decode([]byte(`{"messages": [{"role": "user", "content": "Hi"}], "reasoning_effort": "extreme"}`), &req))
	_, e = s.chatJob(&req)
	require.NotNil(t, e)
	assert.Equal(t, 400, e.status)
	require.NotNil(t, e.Param)
	assert.Equal(t, "reasoning_effort", *e.Param)
}

// TestForcedToolCallAfterThinking: on the thinking model, whose random weights almost
// never close a think block, a required tool choice ends with a valid call within
// max_tokens for every seed, by the default budget (half of max_tokens) and by
// reasoning_effort's; the thinking is there, and no longer than its budget.
func TestForcedToolCallAfterThinking(t *testing.T) {
	_, ts := newTestServer(t, thinkModel, serve.Config{})
	const tool = `{"type": "function", "function": {"name": "pick", "parameters": {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}, "n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["color", "n"], "additionalProperties": false}}}`
	for _, c := range []struct {
		effort string
		budget int // of max_tokens 400
	}{{"", 200}, {`"reasoning_effort": "low", `, 100}} {
		for seed := range 4 {
			body := fmt.Sprintf(`{"max_tokens": 400, "temperature": 1, "seed": %d, %s"tools": [%s], "tool_choice": "required", "parallel_tool_calls": false,
				"messages": [{"role": "user", "content": "Pick one."}]}`, seed, c.effort, tool)
			code, _, b := post(t, ts.URL+"/v1/chat/completions", body)
			require.Equal(t, 200, code, "%s", b)
			var res struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
					Message      struct {
						ReasoningContent string `json:"reasoning_content"`
						ToolCalls        []struct {
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					}
				}
				Usage struct {
					CompletionTokens        int `json:"completion_tokens"`
					CompletionTokensDetails struct {
						ReasoningTokens int `json:"reasoning_tokens"`
					} `json:"completion_tokens_details"`
				}
			}
			require.NoError(t, json.Unmarshal(b, &res))
			require.Len(t, res.Choices, 1)
			ch := res.Choices[0]
			require.Equal(t, "tool_calls", ch.FinishReason, "%s seed %d: %s", c.effort, seed, b)
			require.Len(t, ch.Message.ToolCalls, 1)
			assert.Equal(t, "pick", ch.Message.ToolCalls[0].Function.Name)
			var args struct {
				Color string
				N     *int
			}
			require.NoError(t, json.Unmarshal([]byte(ch.Message.ToolCalls[0].Function.Arguments), &args))
			assert.Contains(t, []string{"red", "green", "blue"}, args.Color)
			require.NotNil(t, args.N)
			assert.True(t, *args.N >= 0 && *args.N <= 9, "%d", *args.N)
			assert.NotEmpty(t, ch.Message.ReasoningContent)
			assert.LessOrEqual(t, res.Usage.CompletionTokens, 400)
			// The block's tokens and its </think>: the prompt opened it.
			assert.LessOrEqual(t, res.Usage.CompletionTokensDetails.ReasoningTokens, c.budget+1)
			assert.Positive(t, res.Usage.CompletionTokensDetails.ReasoningTokens)
			t.Logf("%s seed %d: %d reasoning tokens of %d", c.effort, seed, res.Usage.CompletionTokensDetails.ReasoningTokens, res.Usage.CompletionTokens)
		}
	}
}
