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
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage usage `json:"usage"`
}

type typeOnly struct {
	Type string `json:"type"`
}

// blocks turns a generation's tokens into content-block events: a block opens when the
// kind of output changes (thinking, text, a tool call) and closes before the next one.
type blocks struct {
	sse      *sse.Writer
	open     string              // the type of the open block, or ""
	index    int                 // the open block's index; the next one's when none is open
	thinking []byte              // the open thinking block's text, for its signature
	trim     *serve.SpaceTrimmer // the answer's whitespace, trimmed as Result.Text is; nil: kept
}

func (b *blocks) start(cb contentBlock) bool {
	b.stop()
	b.open = cb.Type
	return b.sse.Send("content_block_start", blockStart{Type: "content_block_start", Index: b.index, ContentBlock: cb}) == nil
}

func (b *blocks) delta(d delta) bool {
	return b.sse.Send("content_block_delta", blockDelta{Type: "content_block_delta", Index: b.index, Delta: d}) == nil
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
	b.sse.Send("content_block_stop", blockStop{Type: "content_block_stop", Index: b.index})
	b.open = ""
	b.index++
}

// token sends a token's events; false when the client is gone.
func (b *blocks) token(t bonsai.Token, thinkOpen int32) bool {
	switch {
	case t.ToolCallFragment != nil:
		f := t.ToolCallFragment
		if f.Name != "" || f.ID != "" || b.open != "tool_use" {
			if !b.start(toolUseBlock(toolUseID(f.ID), f.Name, json.RawMessage("{}"))) {
				return false
			}
		}
		if f.Arguments != "" {
			args := f.Arguments
			return b.delta(delta{Type: "input_json_delta", PartialJSON: &args})
		}
	case t.ToolCall != nil:
		if b.open == "tool_use" {
			b.stop()
		}
	case t.Text == "":
	case t.Thinking && t.ID != thinkOpen:
		if b.open != "thinking" {
			empty := ""
			if !b.start(contentBlock{Type: "thinking", Thinking: &empty, Signature: &empty}) {
				return false
			}
		}
		b.thinking = append(b.thinking, t.Text...)
		text := t.Text
		return b.delta(delta{Type: "thinking_delta", Thinking: &text})
	default:
		text := t.Text
		if b.trim != nil {
			if text = b.trim.Next(text); text == "" {
				return true
			}
		}
		if b.open != "text" {
			empty := ""
			if !b.start(textBlock(empty)) {
				return false
			}
		}
		return b.delta(delta{Type: "text_delta", Text: &text})
	}
	return b.sse.Err() == nil
}

// stream serves a request with "stream": true.
func (h *handler) stream(w http.ResponseWriter, r *http.Request, id string, p *prepared) {
	var ev *sse.Writer
	var b *blocks
	thinkOpen := h.srv.ThinkOpen()
	start := func() {
		ev = sse.New(w, h.cfg.WriteTimeout)
		b = &blocks{sse: ev}
		if serve.TrimsAnswer(p.opt) {
			b.trim = &serve.SpaceTrimmer{}
		}
		msg := messageOut{ID: id, Type: "message", Role: "assistant", Model: h.cfg.ModelName, Content: []contentBlock{},
			Usage: usage{InputTokens: len(p.job.Tokens), OutputTokens: 1}}
		ev.Send("message_start", messageStart{Type: "message_start", Message: msg})
		ev.Send("ping", typeOnly{Type: "ping"})
	}
	res, err := h.srv.Run(r.Context(), p.job, start, func(t bonsai.Token) bool { return b.token(t, thinkOpen) })
	if ev == nil { // refused before a session was free
		if err != nil {
			writeError(w, generationError(err))
		}
		return
	}
	defer ev.End()
	if err != nil {
		ev.Send("error", errorBody{Type: "error", Error: generationError(err)})
		return
	}
	if res.FinishReason == bonsai.FinishCancelled {
		return // the client is gone
	}
	b.stop()
	md := messageDelta{Type: "message_delta", Usage: usageOf(res.Result)}
	reason, seq := stopReason(res.Result)
	md.Delta.StopReason, md.Delta.StopSequence = &reason, seq
	ev.Send("message_delta", md)
	ev.Send("message_stop", typeOnly{Type: "message_stop"})
}
