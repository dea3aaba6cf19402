package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/openai/openaitest"
	"github.com/bonsai-go/sdk/internal/serve"
	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// weatherSchema is the parameters of the test's tool.
const weatherSchema = `{"type": "object", "properties": {
	"city": {"type": "string", "minLength": 1, "maxLength": 40},
	"days": {"type": "integer", "minimum": 1, "maximum": 7},
	"unit": {"enum": ["celsius", "fahrenheit"]}},
	"required": ["city", "days", "unit"], "additionalProperties": false}`

// validator compiles a JSON Schema with an independent implementation, to check what
// the grammar made.
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

// validate checks a JSON text against s.
func validate(t *testing.T, s *jsonschema.Schema, text string) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if !assert.NoError(t, err, "not JSON: %q", text) {
		return
	}
	assert.NoError(t, s.Validate(v), "%s", text)
}

func weatherTool() oai.ChatCompletionToolUnionParam {
	var params shared.FunctionParameters
	if err := json.Unmarshal([]byte(weatherSchema), &params); err != nil {
		panic(err)
	}
	return oai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather",
		Description: oai.String("The weather forecast of a city."), Parameters: params})
}

func toolParams(seed int64) oai.ChatCompletionNewParams {
	return oai.ChatCompletionNewParams{
		Model:       modelName,
		Messages:    []oai.ChatCompletionMessageParamUnion{oai.UserMessage("What is the weather in Paris this week?")},
		Tools:       []oai.ChatCompletionToolUnionParam{weatherTool()},
		ToolChoice:  oai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: oai.String("required")},
		Temperature: oai.Float(1),
		MaxTokens:   oai.Int(400),
		Seed:        oai.Int(seed),
	}
}

// TestToolRoundTrip: with tool_choice required, the random model calls the tool with
// arguments valid under its schema (the grammar sees to it), whole and streamed; the
// stream's deltas are OpenAI's (index, id, type and name first, then argument pieces)
// and reassemble the whole answer; the tool's result sent back gets an answer.
func TestToolRoundTrip(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{Parallel: 2})
	c, rec := client(ts)
	ctx := context.Background()
	schema := validator(t, weatherSchema)

	for seed := int64(1); seed <= 3; seed++ {
		p := toolParams(seed)
		whole, err := c.Chat.Completions.New(ctx, p)
		require.NoError(t, err)
		choice := whole.Choices[0]
		require.Equal(t, "tool_calls", choice.FinishReason, "%s", rec.last())
		require.NotEmpty(t, choice.Message.ToolCalls)
		for _, call := range choice.Message.ToolCalls {
			assert.Equal(t, "get_weather", call.Function.Name)
			assert.True(t, strings.HasPrefix(call.ID, "call_"), call.ID)
			validate(t, schema, call.Function.Arguments)
		}

		// Streamed, the same seed makes the same calls.
		stream := c.Chat.Completions.NewStreaming(ctx, p)
		acc := oai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		require.NoError(t, stream.Err())
		require.NoError(t, stream.Close())
		require.Len(t, acc.Choices, 1)
		got := acc.Choices[0]
		assert.Equal(t, "tool_calls", got.FinishReason)
		assert.Equal(t, choice.Message.Content, got.Message.Content, "the stream's text is the whole answer's, trimmed alike")
		require.Len(t, got.Message.ToolCalls, len(choice.Message.ToolCalls))
		for i, call := range got.Message.ToolCalls {
			assert.Equal(t, choice.Message.ToolCalls[i].Function.Name, call.Function.Name)
			assert.Equal(t, choice.Message.ToolCalls[i].Function.Arguments, call.Function.Arguments)
			assert.NotEmpty(t, call.ID)
		}
		checkToolDeltas(t, rec.last(), len(got.Message.ToolCalls))

		// The tool's result goes back; the model answers (tool_choice auto: the random
		// model writes text).
		p.Messages = append(p.Messages, choice.Message.ToParam())
		for _, call := range choice.Message.ToolCalls {
			p.Messages = append(p.Messages, oai.ToolMessage(`{"forecast": "sunny", "high": 24}`, call.ID))
		}
		p.ToolChoice = oai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: oai.String("none")}
		p.MaxTokens = oai.Int(16)
		answer, err := c.Chat.Completions.New(ctx, p)
		require.NoError(t, err)
		assert.Contains(t, []string{"stop", "length"}, answer.Choices[0].FinishReason)
		assert.Empty(t, answer.Choices[0].Message.ToolCalls)
		assert.NotEmpty(t, answer.Choices[0].Message.Content)
		// The history counted: the prompt holds the call and its result.
		assert.Greater(t, answer.Usage.PromptTokens, whole.Usage.PromptTokens+10)
	}
}

// checkToolDeltas checks a chat stream's raw tool-call deltas against OpenAI's shape.
func checkToolDeltas(t *testing.T, body string, calls int) {
	t.Helper()
	events, err := openaitest.ReadEvents(strings.NewReader(body))
	require.NoError(t, err)
	type fn struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	}
	var args []string
	for _, e := range events {
		if e == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    *int    `json:"index"`
						ID       *string `json:"id"`
						Type     *string `json:"type"`
						Function fn      `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(e), &c))
		for _, ch := range c.Choices {
			for _, d := range ch.Delta.ToolCalls {
				require.NotNil(t, d.Index, e)
				i := *d.Index
				if i == len(args) { // a call's first delta
					require.NotNil(t, d.ID, e)
					require.NotNil(t, d.Type, e)
					assert.Equal(t, "function", *d.Type)
					require.NotNil(t, d.Function.Name, e)
					assert.Equal(t, "get_weather", *d.Function.Name)
					args = append(args, "")
				} else {
					require.Equal(t, len(args)-1, i, "a delta of call %d after call %d began: %s", i, len(args)-1, e)
					assert.Nil(t, d.ID, e)
					assert.Nil(t, d.Function.Name, e)
				}
				if d.Function.Arguments != nil {
					args[i] += *d.Function.Arguments
				}
			}
		}
	}
	require.Len(t, args, calls)
	for _, a := range args {
		assert.True(t, json.Valid([]byte(a)), a)
	}
}

// TestToolChoice: a named function is the one called; parallel_tool_calls false makes
// one call.
func TestToolChoice(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, _ := client(ts)
	ctx := context.Background()
	other := oai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_time",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{}, "additionalProperties": false}})
	for seed := int64(1); seed <= 3; seed++ {
		p := toolParams(seed)
		p.Tools = append(p.Tools, other)
		p.ToolChoice = oai.ToolChoiceOptionFunctionToolChoice(oai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"})
		p.ParallelToolCalls = oai.Bool(false)
		r, err := c.Chat.Completions.New(ctx, p)
		require.NoError(t, err)
		require.Len(t, r.Choices[0].Message.ToolCalls, 1)
		call := r.Choices[0].Message.ToolCalls[0]
		assert.Equal(t, "get_time", call.Function.Name)
		validate(t, validator(t, `{"type": "object", "additionalProperties": false}`), call.Function.Arguments)
	}
}

// responseSchemas are the structured-output schemas the random model must satisfy.
var responseSchemas = []string{
	`{"type": "object", "properties": {"name": {"type": "string", "maxLength": 16}, "age": {"type": "integer"}},
	  "required": ["name", "age"], "additionalProperties": false}`,
	`{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 3},
	  "ok": {"type": "boolean"}, "score": {"type": "number"}, "none": {"type": "null"}},
	  "required": ["tags", "ok", "score", "none"], "additionalProperties": false}`,
	`{"type": "object", "properties": {"kind": {"enum": ["cat", "dog", 3]}, "v": {"const": "fixed"},
	  "either": {"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 2, "maxLength": 4}]}},
	  "required": ["kind", "v", "either"], "additionalProperties": false}`,
	`{"$defs": {"node": {"type": "object", "properties": {"id": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/leaf"}, {"type": "null"}]}},
	  "required": ["id", "next"], "additionalProperties": false},
	  "leaf": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": false}},
	  "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}, "required": ["root"], "additionalProperties": false}`,
}

// TestResponseFormat: json_schema answers of the random model are valid under their
// schemas for every seed, whole and streamed; json_object answers are JSON objects.
func TestResponseFormat(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	c, _ := client(ts)
	ctx := context.Background()
	for i, schema := range responseSchemas {
		v := validator(t, schema)
		var s map[string]any
		require.NoError(t, json.Unmarshal([]byte(schema), &s))
		for seed := int64(1); seed <= 3; seed++ {
			p := openaitest.ChatParams("Describe it in JSON.", 400)
			p.Temperature, p.Seed = oai.Float(1), oai.Int(seed)
			p.ResponseFormat = oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: fmt.Sprintf("s%d", i), Schema: s, Strict: oai.Bool(true)}}}
			r, err := c.Chat.Completions.New(ctx, p)
			require.NoError(t, err)
			assert.Equal(t, "stop", r.Choices[0].FinishReason, "schema %d seed %d: the JSON did not end", i, seed)
			validate(t, v, r.Choices[0].Message.Content)

			stream := c.Chat.Completions.NewStreaming(ctx, p)
			var text strings.Builder
			for stream.Next() {
				for _, ch := range stream.Current().Choices {
					text.WriteString(ch.Delta.Content)
				}
			}
			require.NoError(t, stream.Err())
			assert.Equal(t, r.Choices[0].Message.Content, text.String())
		}
	}
	obj := validator(t, `{"type": "object"}`)
	for seed := int64(1); seed <= 4; seed++ {
		p := openaitest.ChatParams("Any JSON object.", 200)
		p.Temperature, p.Seed = oai.Float(1), oai.Int(seed)
		p.ResponseFormat = oai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
		r, err := c.Chat.Completions.New(ctx, p)
		require.NoError(t, err)
		if r.Choices[0].FinishReason == "stop" {
			validate(t, obj, r.Choices[0].Message.Content)
		} else { // cut at max_tokens: what there is is the start of an object
			assert.True(t, strings.HasPrefix(strings.TrimSpace(r.Choices[0].Message.Content), "{"), r.Choices[0].Message.Content)
		}
	}
}

// TestSchemaErrors: a schema the engine refuses (unsupported keywords that change the
// meaning, too deep, too large) gets a 400 naming the parameter, the keyword and the
// JSON path, before any generation — streamed or not.
func TestSchemaErrors(t *testing.T) {
	_, ts := newTestServer(t, tinyModel, serve.Config{})
	// Deeper than the engine's 32 levels of subschemas, within its 64 of JSON.
	deep := strings.Repeat(`{"type": "array", "items": `, 40) + `{"type": "string"}` + strings.Repeat(`}`, 40)
	var enum bytes.Buffer
	enum.WriteString(`{"enum": [`)
	for i := range 200000 {
		if i > 0 {
			enum.WriteByte(',')
		}
		fmt.Fprintf(&enum, `"v%d"`, i)
	}
	enum.WriteString(`]}`)
	for _, c := range []struct {
		name, schema, keyword, path string
	}{
		{"not", `{"type": "object", "properties": {"a": {"not": {"type": "string"}}}}`, "not", "/properties/a"},
		{"patternProperties", `{"type": "object", "patternProperties": {"^x": {"type": "string"}}}`, "patternProperties", ""},
		{"if", `{"type": "object", "properties": {"b": {"if": {"type": "string"}, "then": {"minLength": 2}}}}`, "if", "/properties/b"},
		{"too deep", `{"type": "object", "properties": {"d": ` + deep + `}}`, "", "/properties/d"},
		{"huge enum", `{"type": "object", "properties": {"e": ` + enum.String() + `}}`, "enum", "/properties/e"},
		{"bad ref", `{"type": "object", "properties": {"r": {"$ref": "#/$defs/missing"}}}`, "$ref", "/properties/r"},
	} {
		for _, where := range []string{"response_format", "tools"} {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", c.name, where, stream), func(t *testing.T) {
					body := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}, "max_tokens": 5, "stream": stream}
					param := "response_format.json_schema.schema"
					if where == "tools" {
						body["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": json.RawMessage(c.schema)}}}
						body["tool_choice"] = "required"
						param = "tools[0].function.parameters"
					} else {
						body["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": json.RawMessage(c.schema)}}
					}
					b, _ := json.Marshal(body)
					resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json", bytes.NewReader(b))
					require.NoError(t, err)
					defer resp.Body.Close()
					var e openaitest.ErrorBody
					require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
					require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%+v", e)
					require.NotNil(t, e.Error.Param)
					assert.Equal(t, param, *e.Error.Param)
					assert.Contains(t, e.Error.Message, c.keyword)
					assert.Contains(t, e.Error.Message, c.path)
				})
			}
		}
	}
}
