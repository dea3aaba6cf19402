package bonsai

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/bonsai-go/sdk/bonsai/toolcall"
)

// toolStream reads the tool calls out of a generation's answer text.
type toolStream struct {
	p *toolcall.Parser
	// eager reports argument fragments as each parameter completes; otherwise a
	// call's fragments go out together when it completes, so that a block that turns
	// out malformed has streamed nothing.
	eager bool
	// trim trims the content text, as Result.Text is trimmed when calls are read.
	trim spaceTrimmer

	calls     []ToolCall
	malformed []MalformedToolCall
	pending   *ToolCallFragment
}

func newToolStream(schemas map[string]json.RawMessage, eager bool) *toolStream {
	return &toolStream{p: toolcall.NewParser(schemas), eager: eager}
}

// feed reads answer text: it adds the calls and fragments the text completes to tk, and
// returns the text that is content, untrimmed.
func (ts *toolStream) feed(s string, tk *Token) string {
	return ts.events(ts.p.Feed(s), tk)
}

// flush is feed at the end of the text.
func (ts *toolStream) flush(tk *Token) string { return ts.events(ts.p.Flush(), tk) }

func (ts *toolStream) events(evs []toolcall.Event, tk *Token) string {
	var text strings.Builder
	// A call's consecutive pieces in one report are one fragment.
	frag := func(f ToolCallFragment) {
		if n := len(tk.ToolCallFragments); n > 0 && tk.ToolCallFragments[n-1].Index == f.Index {
			tk.ToolCallFragments[n-1].Arguments += f.Arguments
			return
		}
		tk.ToolCallFragments = append(tk.ToolCallFragments, f)
	}
	for _, e := range evs {
		switch e.Kind {
		case toolcall.Text:
			if ts.eager {
				// Enforced calls: the grammar allows only whitespace around them.
				continue
			}
			text.WriteString(e.Text)
		case toolcall.Start:
			f := ToolCallFragment{Index: e.Index, ID: newCallID(), Name: e.Text}
			ts.pending = &f
			if ts.eager {
				frag(f)
			}
		case toolcall.Arguments:
			if ts.pending == nil {
				continue
			}
			ts.pending.Arguments += e.Text
			if ts.eager {
				frag(ToolCallFragment{Index: e.Index, Arguments: e.Text})
			}
		case toolcall.End:
			f := ts.pending
			ts.pending = nil
			call := ToolCall{ID: f.ID, Name: e.Call.Name, Arguments: e.Call.Arguments}
			ts.calls = append(ts.calls, call)
			if !ts.eager {
				frag(*f)
			}
			tk.ToolCalls = append(tk.ToolCalls, call)
		case toolcall.Malformed:
			ts.pending = nil
			ts.malformed = append(ts.malformed, MalformedToolCall{Text: e.Raw, Err: e.Err})
		}
	}
	return text.String()
}

// newCallID returns a fresh call id: "call_" and 24 random hex digits.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
