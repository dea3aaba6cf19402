package anthropic

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestThinkingBudgetOptions: thinking {"type": "enabled", "budget_tokens": N} budgets
// the think block N tokens; "adaptive" and "disabled", and no thinking, leave the
// server's default (-thinking-budget), thinking off but for the first two. A budget out
// of range is a 400 invalid_request_error naming the field.
func TestThinkingBudgetOptions(t *testing.T) {
	const serverBudget = 21
	srv, err := serve.New(tinyModel, serve.Config{ModelName: modelName, Defaults: serve.Defaults{ThinkingBudget: serverBudget}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	h := newHandler(srv)
	for _, c := range []struct {
		thinking string
		on       bool
		budget   int
	}{
		{``, false, serverBudget},
		{`{"type": "enabled", "budget_tokens": 1}`, true, 1},
		{`{"type": "enabled", "budget_tokens": 1024}`, true, 1024},
		{`{"type": "enabled", "budget_tokens": 1999}`, true, 1999},
		{`{"type": "adaptive"}`, true, serverBudget},
		{`{"type": "disabled"}`, false, serverBudget},
	} {
		body := `{"model": "m", "max_tokens": 2000, "messages": [{"role": "user", "content": "Hi"}]`
		if c.thinking != "" {
			body += `, "thinking": ` + c.thinking
		}
		body += "}"
		var req messagesRequest
		require.Nil(t, decode([]byte(body), &req))
		p, e := h.prepare(&req)
		require.Nil(t, e, body)
		opt := p.Options()
		require.NotNil(t, opt.Thinking)
		assert.Equal(t, c.on, *opt.Thinking, body)
		assert.Equal(t, c.budget, opt.ThinkingBudget, body)
	}
	for _, n := range []string{"0", "-5", "2000", "2001", "null"} {
		body := `{"model": "m", "max_tokens": 2000, "messages": [{"role": "user", "content": "Hi"}], "thinking": {"type": "enabled", "budget_tokens": ` + n + `}}`
		var req messagesRequest
		require.Nil(t, decode([]byte(body), &req))
		_, e := h.prepare(&req)
		require.NotNil(t, e, n)
		assert.Equal(t, 400, e.status)
		assert.Equal(t, "invalid_request_error", e.Type)
		assert.Contains(t, e.Message, "thinking.enabled.budget_tokens", n)
	}
}

// TestForcedToolUseAfterThinking: with thinking on, budget_tokens closes the block, and
// a forced tool (tool_choice any) is always called within max_tokens, whatever the
// random model would rather think; without a budget the default (half of max_tokens)
// does the same.
func TestForcedToolUseAfterThinking(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{})
	const tool = `{"name": "pick", "input_schema": {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}, "n": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["color", "n"], "additionalProperties": false}}`
	for _, c := range []struct {
		thinking string
		budget   int
	}{{`{"type": "enabled", "budget_tokens": 60}`, 60}, {`{"type": "adaptive"}`, 200}} {
		// The Messages API takes no seed: each run draws its own, and the property
		// holds for every one.
		for run := range 4 {
			body := fmt.Sprintf(`{"model": "m", "max_tokens": 400, "temperature": 1, "thinking": %s, "tools": [%s],
				"tool_choice": {"type": "any", "disable_parallel_tool_use": true}, "messages": [{"role": "user", "content": "Pick one."}]}`, c.thinking, tool)
			code, _, b := post(t, ts.URL+"/v1/messages", body)
			require.Equal(t, 200, code, "%s", b)
			var res messageOut
			require.NoError(t, json.Unmarshal(b, &res))
			require.NotNil(t, res.StopReason)
			require.Equal(t, "tool_use", *res.StopReason, "%s run %d: %s", c.thinking, run, b)
			var uses int
			for _, blk := range res.Content {
				if blk.Type != "tool_use" {
					continue
				}
				uses++
				assert.Equal(t, "pick", blk.Name)
				var in struct {
					Color string
					N     *int
				}
				require.NotNil(t, blk.Input)
				require.NoError(t, json.Unmarshal(*blk.Input, &in))
				assert.Contains(t, []string{"red", "green", "blue"}, in.Color)
				require.NotNil(t, in.N)
				assert.True(t, *in.N >= 0 && *in.N <= 9, "%d", *in.N)
			}
			assert.Equal(t, 1, uses)
			assert.Equal(t, "thinking", res.Content[0].Type)
			assert.LessOrEqual(t, res.Usage.OutputTokens, 400)
			// The block's tokens and its </think>: the prompt opened it.
			assert.LessOrEqual(t, res.Usage.OutputTokensDetails.ThinkingTokens, c.budget+1)
			t.Logf("%s run %d: %d thinking tokens of %d", c.thinking, run, res.Usage.OutputTokensDetails.ThinkingTokens, res.Usage.OutputTokens)
		}
	}
}
