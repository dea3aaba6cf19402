package bonsai

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Enforced calls stream their fragments as parameters complete; text that completes
// the end of one call and the start of the next gives a report for each, in order.
func TestToolStreamReports(t *testing.T) {
	schemas := map[string]json.RawMessage{"f": json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}`)}
	ts := newToolStream(schemas, true)
	var tk Token
	text := ts.feed("<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n", &tk)
	assert.Empty(t, text)
	assert.Empty(t, tk.ToolCalls)
	require.Len(t, tk.ToolCallFragments, 1)
	f := tk.ToolCallFragments[0]
	assert.Equal(t, ToolCallFragment{Index: 0, ID: f.ID, Name: "f", Arguments: `{"a":1`}, f)
	assert.Regexp(t, `^call_[0-9a-f]{24}$`, f.ID)

	// One report: the end of the first call and the start of the second.
	tk = Token{}
	ts.feed("<parameter=b>\nx y\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=f>\n", &tk)
	require.Len(t, tk.ToolCallFragments, 2)
	assert.Equal(t, `,"b":"x y"}`, tk.ToolCallFragments[0].Arguments)
	require.Len(t, tk.ToolCalls, 1)
	assert.Equal(t, ToolCall{ID: f.ID, Name: "f", Arguments: json.RawMessage(`{"a":1,"b":"x y"}`)}, tk.ToolCalls[0])
	assert.Equal(t, 1, tk.ToolCallFragments[1].Index)
	assert.Equal(t, "f", tk.ToolCallFragments[1].Name)
	assert.NotEqual(t, f.ID, tk.ToolCallFragments[1].ID)

	tk = Token{}
	ts.feed("</function>\n</tool_call>", &tk)
	require.Len(t, tk.ToolCallFragments, 1)
	assert.Equal(t, "{}", tk.ToolCallFragments[0].Arguments)
	require.Len(t, tk.ToolCalls, 1)
	assert.Equal(t, json.RawMessage("{}"), tk.ToolCalls[0].Arguments)
	assert.Len(t, ts.calls, 2)

	// Free generation holds a call back until it is complete, then reports it whole.
	ts = newToolStream(schemas, false)
	tk = Token{}
	text = ts.feed("Hi <tool_call>\n<function=f>\n<parameter=a>\n2\n</parameter>\n", &tk)
	assert.Equal(t, "Hi ", text)
	assert.Empty(t, tk.ToolCallFragments)
	assert.Empty(t, tk.ToolCalls)
	text = ts.feed("</function>\n</tool_call> bye", &tk)
	assert.Equal(t, " bye", text)
	require.Len(t, tk.ToolCallFragments, 1)
	assert.Equal(t, `{"a":2}`, tk.ToolCallFragments[0].Arguments)
	assert.Equal(t, "f", tk.ToolCallFragments[0].Name)
	require.Len(t, tk.ToolCalls, 1)
	assert.Equal(t, tk.ToolCallFragments[0].ID, tk.ToolCalls[0].ID)
}
