package anthropic

import (
	"encoding/json"
	"net/http"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/bonsai-go/sdk/internal/sse"
)

// Stream events, in Anthropic's shapes.

type messageStart struct {
	Type    string     `json:"type"`
	Message messageOut `json:"message"`
}

type blockStart struct {
	Type         string       `json:"type"`
	Index        int          `json:"index"`
	ContentBlock contentBlock `json:"content_block"`
}

type delta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

type blockDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta delta  `json:"delta"`
}

type blockStop struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type messageDelta struct {
	Type  string `json:"type"`
	Delta struct {
		StopReason   *string          `json:"stop_reason"`
		StopSequence *string          `json:"stop_sequence"`
		StopDetails  *json.RawMessage `json:"stop_details"` // null, as in messageOut
		Container    *json.RawMessage `json:"container"`    // null
	} `json:"delta"`
	Usage deltaUsage `json:"usage"`
}

type typeOnly struct {
	Type string `json:"type"`
}

// blocks turns a generation's tokens into content blocks: a block opens when the kind
// of output changes (thinking, text, a tool call) and closes before the next one. A
// stream sends them as events (sse set); a whole response collects them (content), so
// that both list the same blocks — two think blocks are two thinking blocks in either.
type blocks struct {
	sse      *sse.Writer // nil: collect only
	collect  bool
	content  []contentBlock
	calls    []int  // for each collected block, the index of its call, or -1
	open     string // the type of the open block, or ""
	index    int    // the open block's index; the next one's when none is open
	thinking []byte // the open thinking block's text, for its signature
	call     int    // the index of the call of the open tool_use block
	done     int    // the calls completed
}

func (b *blocks) send(event string, v any) bool {
	return b.sse == nil || b.sse.Send(event, v) == nil
}

func (b *blocks) start(cb contentBlock) bool {
	b.stop()
	b.open = cb.Type
	if b.collect {
		b.content = append(b.content, cb)
		b.calls = append(b.calls, -1)
	}
	return b.send("content_block_start", blockStart{Type: "content_block_start", Index: b.index, ContentBlock: cb})
}

func (b *blocks) delta(d delta) bool {
	if b.collect {
		last := &b.content[len(b.content)-1]
		switch {
		case d.Text != nil:
			s := *last.Text + *d.Text
			last.Text = &s
		case d.Thinking != nil:
			s := *last.Thinking + *d.Thinking
			last.Thinking = &s
		case d.Signature != nil:
			s := *d.Signature
			last.Signature = &s
		}
		// input_json_delta: the whole call's arguments replace the pieces (wholeContent).
	}
	return b.send("content_block_delta", blockDelta{Type: "content_block_delta", Index: b.index, Delta: d})
}

// wholeContent returns the collected blocks, each tool_use block with its completed
// call's arguments; a call the generation did not complete is left out.
func (b *blocks) wholeContent(calls []bonsai.ToolCall) []contentBlock {
	out := make([]contentBlock, 0, len(b.content))
	for i, cb := range b.content {
		if cb.Type == "tool_use" {
			c := b.calls[i]
			if c < 0 || c >= len(calls) {
				continue
			}
			cb = toolUseBlock(toolUseID(calls[c].ID), calls[c].Name, calls[c].Arguments)
		}
		out = append(out, cb)
	}
	return out
}

// stop closes the open block; a thinking block gets its signature first.
func (b *blocks) stop() {
	if b.open == "" {
		return
	}
	if b.open == "thinking" {
		sig := signature(string(b.thinking))
		b.delta(delta{Type: "signature_delta", Signature: &sig})
		b.thinking = b.thinking[:0]
	}
	b.send("content_block_stop", blockStop{Type: "content_block_stop", Index: b.index})
	b.open = ""
	b.index++
}

// token sends a report's events, in the order a report's parts come: thinking, text,
// then the calls; false when the client is gone.
func (b *blocks) token(t bonsai.Token) bool {
	if t.Thinking != "" {
		if b.open != "thinking" {
			empty := ""
			if !b.start(contentBlock{Type: "thinking", Thinking: &empty, Signature: &empty}) {
				return false
			}
		}
		b.thinking = append(b.thinking, t.Thinking...)
		text := t.Thinking
		if !b.delta(delta{Type: "thinking_delta", Thinking: &text}) {
			return false
		}
	}
	if t.Text != "" {
		if b.open != "text" {
			empty := ""
			if !b.start(textBlock(empty)) {
				return false
			}
		}
		text := t.Text
		if !b.delta(delta{Type: "text_delta", Text: &text}) {
			return false
		}
	}
	// A call's block opens with its first fragment and closes once the call is
	// complete; the fragments of a report come before the calls it completes.
	for _, f := range t.ToolCallFragments {
		if f.Name != "" || f.ID != "" || b.open != "tool_use" || b.call != f.Index {
			if !b.start(toolUseBlock(toolUseID(f.ID), f.Name, json.RawMessage("{}"))) {
				return false
			}
			b.call = f.Index
			if b.collect {
				b.calls[len(b.calls)-1] = f.Index
			}
		}
		if f.Arguments != "" {
			args := f.Arguments
			if !b.delta(delta{Type: "input_json_delta", PartialJSON: &args}) {
				return false
			}
		}
	}
	for range t.ToolCalls {
		if b.open == "tool_use" && b.call == b.done {
			b.stop()
		}
		b.done++
	}
	return b.sse == nil || b.sse.Err() == nil
}

// stream serves a request with "stream": true.
func (h *handler) stream(w http.ResponseWriter, r *http.Request, id string, p *bonsai.Prompt) {
	var ev *sse.Writer
	var b *blocks
	// message_start states the prompt's usage as it was prefilled — the tokens read
	// from the cache and those computed — which message_delta's final usage repeats;
	// its output_tokens is 1, as Anthropic's, the reply's first token under way.
	var prefilled bonsai.Usage
	start := func() {
		ev = sse.New(w, h.cfg.WriteTimeout)
		b = &blocks{sse: ev}
		msg := messageOut{ID: id, Type: "message", Role: "assistant", Model: h.cfg.ModelName, Content: []contentBlock{},
			Usage: newUsage(prefilled.PromptTokens, prefilled.CachedTokens, 1, 0)}
		ev.Send("message_start", messageStart{Type: "message_start", Message: msg})
		ev.Send("ping", typeOnly{Type: "ping"})
	}
	job := serve.Job{Endpoint: endpoint, Prompt: p, Prefilled: func(u bonsai.Usage) { prefilled = u }}
	res, err := h.srv.Run(r.Context(), job, start, func(t bonsai.Token) bool { return b.token(t) })
	if ev == nil { // refused before a session was free
		if err != nil {
			writeError(w, generationError(err))
		}
		return
	}
	defer ev.End()
	if err != nil {
		ev.Send("error", newErrorBody(generationError(err)))
		return
	}
	if res.FinishReason == bonsai.FinishCancelled {
		return // the client is gone
	}
	b.stop()
	md := messageDelta{Type: "message_delta", Usage: usageOf(res).delta()}
	reason, seq := stopReason(res.Result)
	md.Delta.StopReason, md.Delta.StopSequence = &reason, seq
	ev.Send("message_delta", md)
	ev.Send("message_stop", typeOnly{Type: "message_stop"})
}
