package anthropic

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"
	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/sse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A whole response lists the blocks its stream sends, as anthropic-sdk-go's own
// accumulator assembles them from the events: two think blocks are two thinking blocks
// (the whole response once merged them into one, ahead of the text), and a call the
// generation did not complete is in neither.
func TestWholeMatchesStream(t *testing.T) {
	call := bonsai.ToolCall{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}
	reports := []bonsai.Token{
		{Thinking: "first "}, {Thinking: "thought"},
		{Text: "Hello"}, {Text: " there."},
		{Thinking: "again"},
		{Text: "Calling."},
		{ToolCallFragments: []bonsai.ToolCallFragment{{Index: 0, ID: call.ID, Name: call.Name}}},
		{ToolCallFragments: []bonsai.ToolCallFragment{{Index: 0, Arguments: `{"city":`}}},
		{ToolCallFragments: []bonsai.ToolCallFragment{{Index: 0, Arguments: `"Oslo"}`}}, ToolCalls: []bonsai.ToolCall{call}},
	}

	whole := &blocks{collect: true}
	for _, r := range reports {
		require.True(t, whole.token(r))
	}
	whole.stop()
	got := whole.wholeContent([]bonsai.ToolCall{call})

	rec := httptest.NewRecorder()
	ev := sse.New(rec, 0)
	ev.Send("message_start", messageStart{Type: "message_start", Message: messageOut{ID: "msg_1", Type: "message", Role: "assistant", Content: []contentBlock{}}})
	streamed := &blocks{sse: ev}
	for _, r := range reports {
		require.True(t, streamed.token(r))
	}
	streamed.stop()
	ev.Send("message_stop", typeOnly{Type: "message_stop"})
	ev.End()

	res := rec.Result()
	stream := ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(res), nil)
	var acc anthropic.Message
	for stream.Next() {
		require.NoError(t, acc.Accumulate(stream.Current()))
	}
	require.NoError(t, stream.Err())

	want := []struct{ typ, text string }{
		{"thinking", "first thought"}, {"text", "Hello there."}, {"thinking", "again"}, {"text", "Calling."}, {"tool_use", `{"city":"Oslo"}`},
	}
	require.Len(t, acc.Content, len(want))
	require.Len(t, got, len(want))
	for i, w := range want {
		s, c := acc.Content[i], got[i]
		require.Equal(t, w.typ, s.Type, "streamed block %d", i)
		require.Equal(t, w.typ, c.Type, "whole block %d", i)
		switch w.typ {
		case "thinking":
			assert.Equal(t, w.text, s.Thinking)
			assert.Equal(t, w.text, *c.Thinking)
			assert.Equal(t, signature(w.text), s.Signature)
			assert.Equal(t, s.Signature, *c.Signature)
		case "text":
			assert.Equal(t, w.text, s.Text)
			assert.Equal(t, w.text, *c.Text)
		case "tool_use":
			assert.JSONEq(t, w.text, string(s.Input))
			assert.JSONEq(t, w.text, string(*c.Input))
			assert.Equal(t, "toolu_1", s.ID)
			assert.Equal(t, s.ID, c.ID)
			assert.Equal(t, s.Name, c.Name)
		}
	}

	// Cut before the call completed: the whole response leaves the partial call out.
	cut := &blocks{collect: true}
	for _, r := range reports[:len(reports)-1] {
		cut.token(r)
	}
	cut.stop()
	partial := cut.wholeContent(nil)
	require.Len(t, partial, 4)
	assert.Equal(t, "text", partial[3].Type)
}
