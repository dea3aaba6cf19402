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
	tools := []Tool{{Name: "f", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}}}`)}}
	ts := newToolStream(tools, true)
	text, reps := ts.feed("<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n")
	assert.Empty(t, text)
	require.Len(t, reps, 1)
	f := reps[0].ToolCallFragment
	require.NotNil(t, f)
	assert.Equal(t, ToolCallFragment{Index: 0, ID: f.ID, Name: "f", Arguments: `{"a":1`}, *f)
	assert.Regexp(t, `^call_[0-9a-f]{24}$`, f.ID)

	_, reps = ts.feed("<parameter=b>\nx y\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=f>\n")
	require.Len(t, reps, 2)
	assert.Equal(t, `,"b":"x y"}`, reps[0].ToolCallFragment.Arguments)
	require.NotNil(t, reps[0].ToolCall)
	assert.Equal(t, ToolCall{ID: f.ID, Name: "f", Arguments: json.RawMessage(`{"a":1,"b":"x y"}`)}, *reps[0].ToolCall)
	assert.Equal(t, 1, reps[1].ToolCallFragment.Index)
	assert.Equal(t, "f", reps[1].ToolCallFragment.Name)
	assert.NotEqual(t, f.ID, reps[1].ToolCallFragment.ID)

	_, reps = ts.feed("</function>\n</tool_call>")
	require.Len(t, reps, 1)
	assert.Equal(t, "{}", reps[0].ToolCallFragment.Arguments)
	assert.Equal(t, json.RawMessage("{}"), reps[0].ToolCall.Arguments)
	assert.Len(t, ts.calls, 2)

	// Free generation holds a call back until it is complete, then reports it whole.
	ts = newToolStream(tools, false)
	text, reps = ts.feed("Hi <tool_call>\n<function=f>\n<parameter=a>\n2\n</parameter>\n")
	assert.Equal(t, "Hi ", text)
	assert.Empty(t, reps)
	text, reps = ts.feed("</function>\n</tool_call> bye")
	assert.Equal(t, " bye", text)
	require.Len(t, reps, 1)
	assert.Equal(t, `{"a":2}`, reps[0].ToolCallFragment.Arguments)
	assert.Equal(t, "f", reps[0].ToolCallFragment.Name)
	assert.Equal(t, reps[0].ToolCallFragment.ID, reps[0].ToolCall.ID)
}
