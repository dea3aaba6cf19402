package toolcall

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var schemas = map[string]json.RawMessage{
	"get_weather": json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"detail":{"type":"boolean"},"where":{"type":"object"},"tags":{"type":"array"},"zip":{"type":"string"},"note":{"type":["string","null"]},"unit":{"enum":["c","f"]}}}`),
	"run":         nil,
}

func TestParseXML(t *testing.T) {
	text := "Let me check.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=detail>\ntrue\n</parameter>\n<parameter=where>\n{\"lat\": 40.7, \"tags\": [1, {\"a\": null}]}\n</parameter>\n<parameter=zip>\n10001\n</parameter>\n<parameter=note>\nnull\n</parameter>\n<parameter=unit>\nc\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=run>\n<parameter=script>\nline one\n  line two\n\n</parameter>\n<parameter=n>\n1.5\n</parameter>\n</function>\n</tool_call>"
	content, calls, bad := Parse(text, schemas)
	assert.Empty(t, bad)
	assert.Equal(t, "Let me check.\n\n\n", content)
	require.Len(t, calls, 2)
	assert.Equal(t, "get_weather", calls[0].Name)
	// String-typed parameters stay text even when they look like JSON (zip); others are
	// parsed; a string-or-null "null" is null.
	assert.Equal(t, `{"city":"New York","days":3,"detail":true,"where":{"lat":40.7,"tags":[1,{"a":null}]},"zip":"10001","note":null,"unit":"c"}`, string(calls[0].Arguments))
	// Without a schema, values parse as JSON when they can; a multi-line value keeps
	// its inner newlines, losing only the markup's one on each side.
	assert.Equal(t, `{"script":"line one\n  line two\n","n":1.5}`, string(calls[1].Arguments))
}

func TestParseJSON(t *testing.T) {
	text := "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"run\", \"arguments\": \"{\\\"x\\\": [1, 2]}\"}\n</tool_call>"
	content, calls, bad := Parse(text, schemas)
	assert.Empty(t, bad)
	assert.Equal(t, "\n", content)
	require.Len(t, calls, 2)
	assert.Equal(t, Call{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris","days":2}`)}, calls[0])
	assert.Equal(t, Call{Name: "run", Arguments: json.RawMessage(`{"x":[1,2]}`)}, calls[1])
}

func TestParseMalformed(t *testing.T) {
	cases := []struct{ text, why string }{
		{"<tool_call>\n<function=nope>\n</function>\n</tool_call>", `unknown function "nope"`},
		{"<tool_call>\n<function=run>\n<parameter=a>\n1\n</function>\n</tool_call>", "without </parameter>"},
		{"<tool_call>\n<function=run>\n<parameter=a>\n1\n</parameter>\n</tool_call>", "no </function>"},
		{"<tool_call>\n{\"name\": \"run\", \"arguments\": [1]}\n</tool_call>", "not a JSON object"},
		{"<tool_call>\n{\"name\": \"run\", \"arguments\": {\n</tool_call>", "JSON"},
		{"<tool_call>\nhello\n</tool_call>", "neither"},
		{"<tool_call>\n<function=run>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n</function>\n</tool_call>", "given twice"},
		{"text <tool_call>\n<function=run>\n<parameter=a>\n1", "without </tool_call>"},
	}
	for _, c := range cases {
		content, calls, bad := Parse(c.text, schemas)
		assert.Empty(t, calls, c.text)
		require.Len(t, bad, 1, c.text)
		assert.ErrorIs(t, bad[0].Err, ErrMalformed)
		assert.Contains(t, bad[0].Err.Error(), c.why, c.text)
		// Nothing is lost: the block is content.
		assert.Equal(t, c.text, content)
	}
}

// Fed a byte at a time, the parser reports the same as fed whole, and the argument
// pieces of each call add up to its arguments.
func TestParserStreaming(t *testing.T) {
	text := "Sure <tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>\n<tool_call>{\"name\":\"run\",\"arguments\":{}}</tool_call> after <tool_call"
	p := NewParser(schemas)
	var evs []Event
	for i := range len(text) {
		evs = append(evs, p.Feed(text[i:i+1])...)
	}
	evs = append(evs, p.Flush()...)
	var content strings.Builder
	args := map[int]string{}
	var calls []Call
	starts := 0
	for _, e := range evs {
		switch e.Kind {
		case Text:
			content.WriteString(e.Text)
		case Start:
			starts++
		case Arguments:
			args[e.Index] += e.Text
		case End:
			calls = append(calls, *e.Call)
		}
	}
	require.Len(t, calls, 2)
	assert.Equal(t, 2, starts)
	assert.Equal(t, "Sure \n after <tool_call", content.String())
	for i, c := range calls {
		assert.Equal(t, string(c.Arguments), args[i])
	}
	assert.Equal(t, `{"city":"Rome","days":2}`, string(calls[0].Arguments))
	// The XML call streamed its parameters as they completed, before the end.
	var kinds []EventKind
	for _, e := range evs {
		if e.Index == 0 && e.Kind != Text {
			kinds = append(kinds, e.Kind)
		}
	}
	assert.Equal(t, []EventKind{Start, Arguments, Arguments, Arguments, End}, kinds)
}

func FuzzParser(f *testing.F) {
	f.Add("<tool_call>\n<function=run>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call>", 3)
	f.Add("x<tool_call>{\"name\":\"get_weather\",\"arguments\":{\"city\":\"a\"}}</tool_call>y", 1)
	f.Add("<tool_call>\n<function=get_weather>\n<parameter=where>\n{\"a\":\n</parameter>\n</function>\n</tool_call>", 7)
	f.Add("<tool_call><tool_call></tool_call></tool_call>", 2)
	f.Fuzz(func(t *testing.T, text string, chunk int) {
		if chunk <= 0 || chunk > 64 {
			chunk = 1
		}
		_, calls, bad := Parse(text, schemas)
		p := NewParser(schemas)
		var evs []Event
		for i := 0; i < len(text); i += chunk {
			evs = append(evs, p.Feed(text[i:min(i+chunk, len(text))])...)
		}
		evs = append(evs, p.Flush()...)
		var n, nbad int
		args := map[int]string{}
		var content strings.Builder
		for _, e := range evs {
			switch e.Kind {
			case Text:
				content.WriteString(e.Text)
			case Arguments:
				args[e.Index] += e.Text
			case End:
				if !json.Valid(e.Call.Arguments) || e.Call.Arguments[0] != '{' {
					t.Fatalf("arguments %q are not a JSON object", e.Call.Arguments)
				}
				if args[e.Index] != string(e.Call.Arguments) {
					t.Fatalf("pieces %q != arguments %q", args[e.Index], e.Call.Arguments)
				}
				n++
			case Malformed:
				nbad++
			}
		}
		if n != len(calls) || nbad != len(bad) {
			t.Fatalf("streamed %d calls %d malformed, whole %d and %d", n, nbad, len(calls), len(bad))
		}
		// Nothing is lost: the content and the calls' blocks make up the text.
		if len(calls) == 0 && content.String() != text {
			t.Fatalf("content %q != text %q", content.String(), text)
		}
	})
}
