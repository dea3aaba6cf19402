package anthropic

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const weatherSchema = `{"type": "object", "properties": {
	"city": {"type": "string", "minLength": 1, "maxLength": 40},
	"days": {"type": "integer"}},
	"required": ["city", "days"], "additionalProperties": false}`

// validator compiles a JSON Schema with an independent implementation.
func validator(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", doc))
	s, err := c.Compile("schema.json")
	require.NoError(t, err)
	return s
}

func toolParams() anthropic.MessageNewParams {
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal([]byte(weatherSchema), &schema); err != nil {
		panic(err)
	}
	tool := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{Properties: schema.Properties, Required: schema.Required,
		ExtraFields: map[string]any{"additionalProperties": false}}, "get_weather")
	tool.OfTool.Description = anthropic.String("The weather forecast of a city.")
	return anthropic.MessageNewParams{
		Model:       "claude-opus-4-1",
		MaxTokens:   400,
		Temperature: anthropic.Float(1),
		Messages:    []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo for three days?"))},
		Tools:       []anthropic.ToolUnionParam{tool},
		// One call: parallel calls at temperature 1 can run into max_tokens, a stop the
		// round trip below has nothing to answer (TestStopReasonLimitWins covers it).
		ToolChoice: anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: anthropic.Bool(true)}},
	}
}

// TestStopReasonLimitWins: a generation cut at max_tokens after complete calls, with a
// stream's last tool_use block left open, stops with "max_tokens", not "tool_use" — the
// answer Anthropic's API gives, so that no client runs a call cut short.
func TestStopReasonLimitWins(t *testing.T) {
	calls := []bonsai.ToolCall{{Name: "get_weather"}}
	for _, c := range []struct {
		res  bonsai.Result
		want string
	}{
		{bonsai.Result{FinishReason: bonsai.FinishLength, ToolCalls: calls}, "max_tokens"},
		{bonsai.Result{FinishReason: bonsai.FinishContextFull, ToolCalls: calls}, "max_tokens"},
		{bonsai.Result{FinishReason: serve.FinishDrained, ToolCalls: calls}, "max_tokens"},
		{bonsai.Result{FinishReason: bonsai.FinishToolCalls, ToolCalls: calls}, "tool_use"},
		{bonsai.Result{FinishReason: bonsai.FinishStop}, "end_turn"},
		{bonsai.Result{FinishReason: bonsai.FinishStop, StopSequence: "END"}, "stop_sequence"},
	} {
		if got, _ := stopReason(c.res); got != c.want {
			t.Errorf("%s with %d calls: %s, want %s", c.res.FinishReason, len(c.res.ToolCalls), got, c.want)
		}
	}
}

// TestToolRoundTrip: with tool_choice any, the random model calls the tool with input
// valid under its schema, whole and streamed (input_json_delta pieces that reassemble
// it); the tool_result sent back gets a text answer.
func TestToolRoundTrip(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{})
	c := client(ts)
	ctx := context.Background()
	v := validator(t, weatherSchema)
	for _, stream := range []bool{false, true} {
		p := toolParams()
		var msg anthropic.Message
		if stream {
			msg = streamed(t, c, p)
		} else {
			m, err := c.Messages.New(ctx, p)
			require.NoError(t, err)
			msg = *m
		}
		require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason, msg.RawJSON())
		var uses []anthropic.ContentBlockUnion
		for _, b := range msg.Content {
			if b.Type == "tool_use" {
				uses = append(uses, b)
			}
			if b.Type == "text" {
				assert.Equal(t, strings.TrimSpace(b.Text), b.Text, "the answer's text is trimmed, streamed or not")
				assert.NotEmpty(t, b.Text, "an empty text block")
			}
		}
		require.NotEmpty(t, uses, msg.RawJSON())
		var results []anthropic.ContentBlockParamUnion
		for _, u := range uses {
			assert.Equal(t, "get_weather", u.Name)
			assert.True(t, strings.HasPrefix(u.ID, "toolu_"), u.ID)
			in, err := jsonschema.UnmarshalJSON(strings.NewReader(string(u.Input)))
			require.NoError(t, err, "%s", u.Input)
			assert.NoError(t, v.Validate(in), "%s", u.Input)
			results = append(results, anthropic.NewToolResultBlock(u.ID, `{"forecast": "snow"}`, false))
		}

		p.Messages = append(p.Messages, msg.ToParam(), anthropic.NewUserMessage(results...))
		p.ToolChoice = anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
		p.MaxTokens = 16
		answer, err := c.Messages.New(ctx, p)
		require.NoError(t, err)
		assert.Contains(t, []anthropic.StopReason{"end_turn", "max_tokens"}, answer.StopReason)
		require.NotEmpty(t, answer.Content)
		// tool_choice none: no call. At temperature 1 the random model may open <think>
		// on its own (it does at some seeds), which the server shows as a thinking block.
		for _, b := range answer.Content {
			assert.Contains(t, []string{"text", "thinking"}, b.Type, answer.RawJSON())
		}
		assert.Greater(t, answer.Usage.InputTokens+answer.Usage.CacheReadInputTokens, msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens+10)
	}
}

// TestToolStreamEvents: a streamed tool call's raw events are Anthropic's: a tool_use
// block opened with its id, name and an empty input, input_json_delta pieces, a stop.
func TestToolStreamEvents(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{})
	body := `{"model": "m", "max_tokens": 300, "stream": true, "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true},
		"tools": [{"name": "get_weather", "input_schema": ` + weatherSchema + `}],
		"messages": [{"role": "user", "content": "Weather?"}]}`
	resp, err := httpPost(ts.URL+"/v1/messages", body)
	require.NoError(t, err)
	defer resp.Body.Close()
	events, err := readEvents(resp.Body)
	require.NoError(t, err)
	s, err := checkStream(events)
	require.NoError(t, err)
	assert.Equal(t, "tool_use", s.stopReason)
	var uses []map[string]any
	for _, b := range s.blocks {
		if b["type"] == "tool_use" {
			uses = append(uses, b)
		}
	}
	require.Len(t, uses, 1, "disable_parallel_tool_use: one call")
	u := uses[0]
	assert.Equal(t, "get_weather", u["name"])
	assert.NotEmpty(t, u["id"])
	assert.Equal(t, map[string]any{}, u["input"])
	in, err := jsonschema.UnmarshalJSON(strings.NewReader(u["partial_json"].(string)))
	require.NoError(t, err, "%v", u["partial_json"])
	assert.NoError(t, validator(t, weatherSchema).Validate(in))
}

// TestSchemaError: a schema the engine refuses gets a 400 naming the tool, the keyword
// and the path, before any generation.
func TestSchemaError(t *testing.T) {
	_, ts := newTestServer(t, serve.Config{})
	for _, stream := range []string{"false", "true"} {
		code, _, body := post(t, ts.URL+"/v1/messages", `{"model": "m", "max_tokens": 5, "stream": `+stream+`, "tool_choice": {"type": "any"},
			"tools": [{"name": "ok", "input_schema": {"type": "object"}}, {"name": "f", "input_schema": {"type": "object", "properties": {"a": {"not": {}}}}}],
			"messages": [{"role": "user", "content": "x"}]}`)
		require.Equal(t, 400, code, "%s", body)
		assert.Contains(t, string(body), "tools.1.input_schema")
		assert.Contains(t, string(body), "not")
		assert.Contains(t, string(body), "/properties/a")
	}
}
