package apishape

import (
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	oai "github.com/openai/openai-go/v3"
	"github.com/stretchr/testify/assert"
)

// TestCheck runs the check on hand-written bodies against both SDKs' types: what the
// types require, of the right types, with their constants, and a union's variant.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []string
		want []string
	}{
		{"a whole tool call", Check[oai.ChatCompletionMessageToolCallUnion]([]byte(
			`{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}`)), nil},
		{"a call without arguments", Check[oai.ChatCompletionMessageToolCallUnion]([]byte(
			`{"id": "c", "type": "function", "function": {"name": "f"}}`)), []string{"$.function.arguments: missing"}},
		{"a call of no known type", Check[oai.ChatCompletionMessageToolCallUnion]([]byte(
			`{"id": "c", "type": "fn", "function": {"name": "f", "arguments": "{}"}}`)), []string{"$: no variant"}},
		{"nulls for required fields", Check[oai.Error]([]byte(`{"message": "m", "type": "t", "param": null, "code": null}`)), nil},
		{"optional fields left out", Check[oai.Model]([]byte(`{"id": "m", "object": "model", "created": 1, "owned_by": "o"}`)), nil},
		{"a constant of another value", Check[oai.Model]([]byte(`{"id": "m", "object": "models", "created": 1, "owned_by": "o"}`)),
			[]string{`$.object: "models", want "model"`}},
		{"a number as a string", Check[oai.Model]([]byte(`{"id": "m", "object": "model", "created": "soon", "owned_by": "o"}`)),
			[]string{`$.created: "soon" does not decode`}},
		{"json:\",required\"", Check[anthropic.ToolUseBlock]([]byte(`{"type": "tool_use", "id": "t", "name": "f", "caller": {"type": "direct"}}`)),
			[]string{"$.input: missing"}},
		{"a nested variant", Check[anthropic.ContentBlockUnion]([]byte(`{"type": "tool_use", "id": "t", "name": "f", "input": {}, "caller": {"type": "directly"}}`)),
			[]string{"$.caller: no variant"}},
		{"not JSON", Check[oai.Model]([]byte(`{`)), []string{"$: does not decode"}},
	} {
		if !assert.Len(t, c.got, len(c.want), "%s: %q", c.name, c.got) {
			continue
		}
		for i, w := range c.want {
			assert.True(t, strings.HasPrefix(c.got[i], w), "%s: %q, want %q", c.name, c.got[i], w)
		}
	}
}
