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

	content   strings.Builder
	calls     []ToolCall
	malformed []MalformedToolCall
	pending   *ToolCallFragment
}

func newToolStream(tools []Tool, eager bool) *toolStream {
	schemas := make(map[string]json.RawMessage, len(tools))
	for _, t := range tools {
		schemas[t.Name] = t.Parameters
	}
	return &toolStream{p: toolcall.NewParser(schemas), eager: eager}
}

// feed reads answer text and returns the text that is content and the tool-call reports
// it completes (Tokens with only ToolCallFragment and ToolCall set).
func (ts *toolStream) feed(s string) (string, []Token) {
	return ts.events(ts.p.Feed(s))
}

func (ts *toolStream) flush() (string, []Token) { return ts.events(ts.p.Flush()) }

func (ts *toolStream) events(evs []toolcall.Event) (string, []Token) {
	var text strings.Builder
	var out []Token
	frag := func(f ToolCallFragment) {
		if n := len(out); n > 0 && out[n-1].ToolCall == nil && out[n-1].ToolCallFragment != nil && out[n-1].ToolCallFragment.Index == f.Index {
			out[n-1].ToolCallFragment.Arguments += f.Arguments
			return
		}
		out = append(out, Token{ToolCallFragment: &f})
	}
	for _, e := range evs {
		switch e.Kind {
		case toolcall.Text:
			if ts.eager {
				// Enforced calls: the grammar allows only whitespace around them.
				continue
			}
			text.WriteString(e.Text)
			ts.content.WriteString(e.Text)
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
			if n := len(out); n > 0 && out[n-1].ToolCall == nil && out[n-1].ToolCallFragment != nil && out[n-1].ToolCallFragment.Index == e.Index {
				out[n-1].ToolCall = &call
			} else {
				out = append(out, Token{ToolCall: &call})
			}
		case toolcall.Malformed:
			ts.pending = nil
			ts.malformed = append(ts.malformed, MalformedToolCall{Text: e.Raw, Err: e.Err})
		}
	}
	return text.String(), out
}

// newCallID returns a fresh call id: "call_" and 24 random hex digits.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
