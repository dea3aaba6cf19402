package bonsai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validator compiles a schema with an independent JSON Schema implementation.
func validator(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("schema.json", doc))
	s, err := c.Compile("schema.json")
	require.NoError(t, err)
	return s
}

func validate(t testing.TB, s *jsonschema.Schema, text string) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(inst)
}

// structuredSchemas are schemas of the kinds OpenAI's strict mode accepts, bounded so
// that a random model finishes them within the token budget.
var structuredSchemas = []string{
	`{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"maximum":120},"tags":{"type":"array","items":{"type":"string","maxLength":4},"maxItems":3}},"required":["name","age","tags"],"additionalProperties":false}`,
	`{"type":"object","properties":{"unit":{"enum":["celsius","fahrenheit"]},"value":{"type":"number"},"ok":{"type":"boolean"},"note":{"type":["string","null"],"maxLength":6}},"required":["unit","value","ok","note"],"additionalProperties":false}`,
	`{"$defs":{"point":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"],"additionalProperties":false}},"type":"object","properties":{"points":{"type":"array","items":{"$ref":"#/$defs/point"},"minItems":1,"maxItems":3},"label":{"const":"path"}},"required":["points","label"],"additionalProperties":false}`,
	`{"anyOf":[{"type":"integer"},{"type":"object","properties":{"error":{"type":"string","minLength":2,"maxLength":5}},"required":["error"],"additionalProperties":false}]}`,
	`{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"done":{"type":"boolean"}},"required":["id"],"additionalProperties":false},"minItems":2,"maxItems":2}`,
}

// The random synthetic model writes output valid under the schema every time: the
// grammar makes it so, whatever the model would rather write. An independent validator
// checks it.
func TestStructuredOutputValid(t *testing.T) {
	m := tiny(t)
	for i, schema := range structuredSchemas {
		v := validator(t, schema)
		for seed := range uint64(4) {
			s := session(t, m)
			res := generate(t, s, bonsai.Text("Answer in JSON:"), bonsai.GenerateOptions{
				MaxTokens: 500, ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONSchema, Schema: json.RawMessage(schema)}, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, TopK: 40, Seed: seed},
			})
			require.Equal(t, bonsai.FinishStop, res.FinishReason, "schema %d seed %d: %q", i, seed, res.Text)
			assert.NoError(t, validate(t, v, res.Text), "schema %d seed %d: %q", i, seed, res.Text)
		}
	}
}

func TestStructuredOutputJSONObject(t *testing.T) {
	m := tiny(t)
	v := validator(t, `{"type":"object"}`)
	for seed := range uint64(3) {
		s := session(t, m)
		res := generate(t, s, bonsai.Text("{"), bonsai.GenerateOptions{
			MaxTokens: 400, ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONObject}, SamplerOptions: bonsai.SamplerOptions{Temperature: 0.8, Seed: seed},
		})
		if res.FinishReason == bonsai.FinishStop {
			assert.NoError(t, validate(t, v, res.Text), "seed %d: %q", seed, res.Text)
		} else {
			// An unbounded object may run out of tokens; what was written is still a
			// prefix the grammar allowed, so it starts as an object.
			assert.True(t, strings.HasPrefix(strings.TrimSpace(res.Text), "{"), res.Text)
		}
	}
}

var weatherTools = []bonsai.Tool{
	{Name: "get_weather", Description: "Weather of a city", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1,"maximum":14},"unit":{"type":"string","enum":["c","f"]}},"required":["city","days"]}`)},
	{Name: "add", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"},"opts":{"type":"object","properties":{"round":{"type":"boolean"}},"required":["round"],"additionalProperties":false}},"required":["a","b"]}`)},
}

// With tool_choice required the random model calls the tools in well-formed markup,
// arguments valid under each function's schema; the stream's fragments add up to them.
func TestToolChoiceRequired(t *testing.T) {
	m := tiny(t)
	schemas := map[string]*jsonschema.Schema{}
	for _, tool := range weatherTools {
		schemas[tool.Name] = validator(t, string(tool.Parameters))
	}
	for seed := range uint64(4) {
		for _, choice := range []bonsai.ToolChoice{{Mode: bonsai.ToolChoiceRequired}, {Mode: bonsai.ToolChoiceFunction, Name: "add"}} {
			s := session(t, m)
			no := false
			g := s.Generate(context.Background(), prepare(t, m, bonsai.Text("Call a tool:"), bonsai.GenerateOptions{
				MaxTokens: 400, Tools: weatherTools, ToolChoice: choice, ParallelToolCalls: &no, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, TopK: 40, Seed: seed},
			}))
			toks, res := collect(t, g)
			require.Equal(t, bonsai.FinishToolCalls, res.FinishReason, "seed %d %v: %q", seed, choice, res.Text)
			require.Len(t, res.ToolCalls, 1)
			assert.Empty(t, res.MalformedToolCalls)
			call := res.ToolCalls[0]
			if choice.Mode == bonsai.ToolChoiceFunction {
				assert.Equal(t, "add", call.Name)
			}
			assert.NoError(t, validate(t, schemas[call.Name], string(call.Arguments)), "%s(%s)", call.Name, call.Arguments)
			var args, name, id string
			var completed *bonsai.ToolCall
			for _, tk := range toks {
				for _, f := range tk.ToolCallFragments {
					assert.Equal(t, 0, f.Index)
					if f.ID != "" {
						id, name = f.ID, f.Name
					}
					args += f.Arguments
				}
				for _, c := range tk.ToolCalls {
					assert.Nil(t, completed, "one call")
					completed = &c
				}
				assert.Empty(t, tk.Text, "enforced calls: no content text")
			}
			require.NotNil(t, completed)
			assert.Equal(t, call, *completed)
			assert.Equal(t, string(call.Arguments), args)
			assert.Equal(t, call.Name, name)
			assert.Equal(t, call.ID, id)
		}
	}
}

// Options are checked before any work: Prepare's error.
func TestToolOptionsInvalid(t *testing.T) {
	m := tiny(t)
	cases := []struct {
		opt  bonsai.GenerateOptions
		want string
	}{
		{bonsai.GenerateOptions{ResponseFormat: &bonsai.ResponseFormat{Type: bonsai.ResponseFormatJSONSchema, Schema: json.RawMessage(`{"type":"number","minimum":1e-20}`)}}, "minimum at /minimum"},
		{bonsai.GenerateOptions{Tools: []bonsai.Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"not":{}}}}`)}}, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceRequired}}, "not at /properties/x/not"},
		{bonsai.GenerateOptions{Tools: weatherTools, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceFunction, Name: "nope"}}, `function "nope" is not among the tools`},
	}
	for _, c := range cases {
		c.opt.MaxTokens = 3
		p, err := m.Prepare(bonsai.Text("x"), c.opt)
		assert.Nil(t, p)
		require.ErrorContains(t, err, c.want)
		assert.ErrorIs(t, err, bonsai.ErrInvalidOptions)
		assert.Equal(t, strings.Contains(c.want, " at "), errors.Is(err, bonsai.ErrInvalidSchema), err)
	}
	// Valid tools with a required choice compile.
	_, err := m.Prepare(bonsai.Text("x"), bonsai.GenerateOptions{Tools: weatherTools, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceRequired}})
	require.NoError(t, err)
}

// A GBNF grammar constrains the answer: the random model's output matches it (checked
// by a regular expression equivalent to the grammar).
func TestGrammarGBNF(t *testing.T) {
	m := tiny(t)
	re := regexp.MustCompile(`^(yes|no|maybe: [a-z]{1,6})( [0-9]{1,2}){0,3}\.$`)
	for seed := range uint64(6) {
		s := session(t, m)
		res := generate(t, s, bonsai.Text("Say:"), bonsai.GenerateOptions{
			MaxTokens: 100, Grammar: `root ::= ("yes" | "no" | "maybe: " [a-z]{1,6}) (" " [0-9] [0-9]?){0,3} "."`, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: seed},
		})
		require.Equal(t, bonsai.FinishStop, res.FinishReason, res.Text)
		assert.Regexp(t, re, res.Text)
	}
}

// In free (auto) generation the calls the model writes are parsed: the text before
// them is content, each call is reported whole once complete, and a malformed block is
// reported and kept as text. A grammar makes the random model write them.
func TestToolCallsAuto(t *testing.T) {
	m := tiny(t)
	s := session(t, m)
	g := s.Generate(context.Background(), prepare(t, m, bonsai.Text("x"), bonsai.GenerateOptions{
		MaxTokens: 300, Tools: weatherTools, Grammar: `root ::= "Checking." "\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n<parameter=days>\n" [1-9] "\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2.5}}\n</tool_call>\n<tool_call>\n<function=nope>\n</function>\n</tool_call>"`, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: 3},
	}))
	toks, res := collect(t, g)
	assert.Equal(t, bonsai.FinishToolCalls, res.FinishReason)
	require.Len(t, res.ToolCalls, 2)
	assert.Equal(t, "get_weather", res.ToolCalls[0].Name)
	assert.Regexp(t, `^\{"city":"New York","days":[1-9]\}$`, string(res.ToolCalls[0].Arguments))
	assert.Equal(t, bonsai.ToolCall{ID: res.ToolCalls[1].ID, Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2.5}`)}, res.ToolCalls[1])
	assert.NotEqual(t, res.ToolCalls[0].ID, res.ToolCalls[1].ID)
	require.Len(t, res.MalformedToolCalls, 1)
	bad := "<tool_call>\n<function=nope>\n</function>\n</tool_call>"
	assert.Equal(t, bad, res.MalformedToolCalls[0].Text)
	assert.ErrorContains(t, res.MalformedToolCalls[0].Err, `unknown function "nope"`)
	assert.Equal(t, "Checking.\n\n\n"+bad, res.Text)

	// The stream: content text outside the blocks, each call's fragments together with
	// it (auto mode streams a call only once it is known to be well formed).
	var text strings.Builder
	var calls []bonsai.ToolCall
	frags := map[int]string{}
	for _, tk := range toks {
		text.WriteString(tk.Text)
		for _, f := range tk.ToolCallFragments {
			frags[f.Index] += f.Arguments
		}
		assert.Len(t, tk.ToolCallFragments, len(tk.ToolCalls), "auto mode: a fragment comes with its call")
		calls = append(calls, tk.ToolCalls...)
	}
	assert.Equal(t, res.ToolCalls, calls)
	assert.Equal(t, "Checking.\n\n\n"+bad, text.String(), "the stream is trimmed as the result is")
	for i, c := range calls {
		assert.Equal(t, string(c.Arguments), frags[i])
	}

	// With tool_choice none the markup is text.
	s = session(t, m)
	res = generate(t, s, bonsai.Text("x"), bonsai.GenerateOptions{MaxTokens: 100, Tools: weatherTools, ToolChoice: bonsai.ToolChoice{Mode: bonsai.ToolChoiceNone},
		Grammar: `root ::= "<tool_call>\n{\"name\": \"add\", \"arguments\": {}}\n</tool_call>"`})
	assert.Equal(t, bonsai.FinishStop, res.FinishReason)
	assert.Empty(t, res.ToolCalls)
	assert.Equal(t, "<tool_call>\n{\"name\": \"add\", \"arguments\": {}}\n</tool_call>", res.Text)
}
