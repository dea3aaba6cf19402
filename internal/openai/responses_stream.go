package openai

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
	"github.com/bonsai-go/sdk/internal/sse"
)

// The Responses API's output: the response object, and the typed events of a stream.
// One builder reads the generation's reports into output items for both, so that a
// stream's events add up to the response a request without stream gets.

// event is one event of a stream: its type, and its fields but sequence_number.
type event map[string]any

// outItem is an output item being built: a message, a reasoning item or a function
// call.
type outItem struct {
	kind   string // "message", "reasoning" or "function_call"
	id     string
	text   strings.Builder // the message's text, the reasoning's or the call's arguments
	callID string
	name   string
	status string
}

// json is the item as the response and the output_item events show it.
func (it *outItem) json() map[string]any {
	text := it.text.String()
	m := map[string]any{"id": it.id, "type": it.kind, "status": it.status}
	switch it.kind {
	case "message":
		m["role"] = "assistant"
		m["content"] = []any{}
		if it.status != "in_progress" {
			m["content"] = []any{textPart(text)}
		}
	case "reasoning":
		m["summary"] = []any{}
		m["content"] = []any{}
		if it.status != "in_progress" {
			m["content"] = []any{reasoningPart(text)}
		}
	case "function_call":
		m["call_id"], m["name"], m["arguments"] = it.callID, it.name, text
	}
	return m
}

func textPart(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

func reasoningPart(text string) map[string]any {
	return map[string]any{"type": "reasoning_text", "text": text}
}

// outputBuilder reads reports into output items, sending their events when send is set.
type outputBuilder struct {
	send    func(event)
	started bool // the stream began
	items   []*outItem
	open    *outItem         // the item reports add to
	calls   map[int]*outItem // the function calls by their index among the tool calls
}

func (b *outputBuilder) emit(e event) {
	if b.send != nil {
		b.send(e)
	}
}

// begin closes the open item and opens one of kind.
func (b *outputBuilder) begin(it *outItem) {
	b.close("completed")
	it.status = "in_progress"
	b.items = append(b.items, it)
	b.open = it
	idx := len(b.items) - 1
	b.emit(event{"type": "response.output_item.added", "output_index": idx, "item": it.json()})
	switch it.kind {
	case "message":
		b.emit(event{"type": "response.content_part.added", "item_id": it.id, "output_index": idx, "content_index": 0, "part": textPart("")})
	case "reasoning":
		b.emit(event{"type": "response.content_part.added", "item_id": it.id, "output_index": idx, "content_index": 0, "part": reasoningPart("")})
	}
}

// close ends the open item with status.
func (b *outputBuilder) close(status string) {
	it := b.open
	if it == nil {
		return
	}
	b.open = nil
	it.status = status
	idx := len(b.items) - 1
	text := it.text.String()
	switch it.kind {
	case "message":
		b.emit(event{"type": "response.output_text.done", "item_id": it.id, "output_index": idx, "content_index": 0, "text": text, "logprobs": []any{}})
		b.emit(event{"type": "response.content_part.done", "item_id": it.id, "output_index": idx, "content_index": 0, "part": textPart(text)})
	case "reasoning":
		b.emit(event{"type": "response.reasoning_text.done", "item_id": it.id, "output_index": idx, "content_index": 0, "text": text})
		b.emit(event{"type": "response.content_part.done", "item_id": it.id, "output_index": idx, "content_index": 0, "part": reasoningPart(text)})
	case "function_call":
		b.emit(event{"type": "response.function_call_arguments.done", "item_id": it.id, "output_index": idx, "name": it.name, "arguments": text})
	}
	b.emit(event{"type": "response.output_item.done", "output_index": idx, "item": it.json()})
}

// add reads one report.
func (b *outputBuilder) add(tok bonsai.Token) {
	if tok.Thinking != "" {
		if b.open == nil || b.open.kind != "reasoning" {
			b.begin(&outItem{kind: "reasoning", id: serve.NewID("rs_")})
		}
		b.open.text.WriteString(tok.Thinking)
		b.emit(event{"type": "response.reasoning_text.delta", "item_id": b.open.id, "output_index": len(b.items) - 1,
			"content_index": 0, "delta": tok.Thinking})
	}
	if tok.Text != "" {
		if b.open == nil || b.open.kind != "message" {
			b.begin(&outItem{kind: "message", id: serve.NewID("msg_")})
		}
		b.open.text.WriteString(tok.Text)
		b.emit(event{"type": "response.output_text.delta", "item_id": b.open.id, "output_index": len(b.items) - 1,
			"content_index": 0, "delta": tok.Text, "logprobs": []any{}})
	}
	for _, f := range tok.ToolCallFragments {
		it := b.calls[f.Index]
		if it == nil {
			if b.calls == nil {
				b.calls = map[int]*outItem{}
			}
			it = &outItem{kind: "function_call", id: serve.NewID("fc_"), callID: f.ID, name: f.Name}
			b.calls[f.Index] = it
			b.begin(it)
		}
		if f.Arguments == "" || it != b.open {
			continue // a call's arguments come before the next call's
		}
		it.text.WriteString(f.Arguments)
		b.emit(event{"type": "response.function_call_arguments.delta", "item_id": it.id, "output_index": len(b.items) - 1,
			"delta": f.Arguments})
	}
}

// finish closes the last item: status "incomplete" when the response is. A response
// without items gets an empty message, as a client reading its text expects one.
func (b *outputBuilder) finish(incomplete bool) []any {
	if len(b.items) == 0 {
		b.begin(&outItem{kind: "message", id: serve.NewID("msg_")})
	}
	status := "completed"
	if incomplete {
		status = "incomplete"
	}
	b.close(status)
	out := make([]any, len(b.items))
	for i, it := range b.items {
		out[i] = it.json()
	}
	return out
}

// responseUsage is the usage object of a response.
type responseUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// responseObject is a response as OpenAI's Response type declares it: every required
// field, and the nullable ones as null.
type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	CompletedAt        *int64            `json:"completed_at"`
	Background         bool              `json:"background"`
	Error              *apiError         `json:"error"`
	IncompleteDetails  *incompleteReason `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	MaxToolCalls       *int              `json:"max_tool_calls"`
	Model              string            `json:"model"`
	Output             []any             `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	ServiceTier string  `json:"service_tier"`
	Store       bool    `json:"store"`
	Temperature float64 `json:"temperature"`
	Text        struct {
		Format    any    `json:"format"`
		Verbosity string `json:"verbosity"`
	} `json:"text"`
	ToolChoice  any               `json:"tool_choice"`
	Tools       []any             `json:"tools"`
	TopLogprobs int               `json:"top_logprobs"`
	TopP        float64           `json:"top_p"`
	Truncation  string            `json:"truncation"`
	Usage       *responseUsage    `json:"usage"`
	User        *string           `json:"user"`
	Metadata    map[string]string `json:"metadata"`
	// Null: what this server does not do.
	Conversation         *struct{} `json:"conversation"`
	Moderation           *struct{} `json:"moderation"`
	Prompt               *struct{} `json:"prompt"`
	PromptCacheKey       *string   `json:"prompt_cache_key"`
	PromptCacheRetention *string   `json:"prompt_cache_retention"`
	SafetyIdentifier     *string   `json:"safety_identifier"`
	AccessPrograms       struct {
		Cyber string `json:"cyber"`
	} `json:"access_programs"`
}

type incompleteReason struct {
	Reason string `json:"reason"`
}

// newResponse is j's response object before its output: status in_progress.
func (j *respJob) newResponse(id, model string) *responseObject {
	r := &responseObject{ID: id, Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Instructions: j.instructions, MaxOutputTokens: j.maxOutput, Model: model, Output: []any{},
		ParallelToolCalls: j.parallel, ServiceTier: "default", Store: j.store,
		Temperature: j.temperature, ToolChoice: j.toolChoice, Tools: j.tools, TopP: j.topP, Truncation: "disabled",
		User: j.user, Metadata: j.metadata}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	if j.previous != nil && *j.previous != "" {
		r.PreviousResponseID = j.previous
	}
	r.Reasoning.Effort = j.effort
	r.Text.Format, r.Text.Verbosity = j.format, "medium"
	r.AccessPrograms.Cyber = "standard"
	return r
}

// runResponse queues a Responses job for a session, runs it and writes the response,
// whole or as a stream of events; a stored response is kept for previous_response_id.
func (s *api) runResponse(w http.ResponseWriter, r *http.Request, j *respJob) {
	resp := j.newResponse(serve.NewID("resp_"), s.cfg.ModelName)
	var ev *sse.Writer
	seq := 0
	b := &outputBuilder{}
	if j.stream {
		b.send = func(e event) {
			e["sequence_number"] = seq
			seq++
			ev.Send(e["type"].(string), e)
		}
	}
	start := func() {
		if j.stream {
			ev = sse.New(w, s.cfg.WriteTimeout)
			b.started = true
			b.send(event{"type": "response.created", "response": resp})
			b.send(event{"type": "response.in_progress", "response": resp})
		}
	}
	res, genErr := s.srv.Run(r.Context(), serve.Job{Endpoint: j.endpoint, Prompt: j.p}, start, func(tok bonsai.Token) bool {
		b.add(tok)
		return ev == nil || ev.Err() == nil
	})
	if ev != nil {
		defer ev.End()
	}
	if e := s.generationError(genErr, ev != nil); e != nil {
		s.fail(w, b, e)
		return
	}
	if res.FinishReason == bonsai.FinishCancelled {
		return // the client is gone
	}
	// A reply cut at a limit, or ended as the server drained, is incomplete: what was
	// generated is whole so far, and a follow-up may continue it.
	incomplete := false
	switch res.FinishReason {
	case bonsai.FinishLength, bonsai.FinishContextFull, serve.FinishDrained:
		incomplete = true
	}
	resp.Output = b.finish(incomplete)
	done := time.Now().Unix()
	resp.CompletedAt = &done
	resp.Status = "completed"
	if incomplete {
		resp.Status, resp.CompletedAt = "incomplete", nil
		resp.IncompleteDetails = &incompleteReason{Reason: "max_output_tokens"}
	}
	u := &responseUsage{InputTokens: res.Usage.PromptTokens, OutputTokens: res.Usage.CompletionTokens}
	u.InputTokensDetails.CachedTokens = res.Usage.CachedTokens
	u.OutputTokensDetails.ReasoningTokens = res.ReasoningTokens
	u.TotalTokens = u.InputTokens + u.OutputTokens
	resp.Usage = u

	body, err := json.Marshal(resp)
	if err != nil { // cannot happen: the response is made of JSON values
		s.fail(w, b, serverError("Could not encode the response: %v.", err))
		return
	}
	if j.store {
		conv := append(j.conv[:len(j.conv):len(j.conv)], bonsai.Message{Role: bonsai.RoleAssistant, Content: res.Text, ReasoningContent: res.Thinking,
			ToolCalls: res.ToolCalls})
		s.store.put(resp.ID, append(body, '\n'), conv)
	}
	if ev == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(append(body, '\n'))
		return
	}
	typ := "response.completed"
	if incomplete {
		typ = "response.incomplete"
	}
	b.send(event{"type": typ, "response": json.RawMessage(body)})
}

// fail answers e: as the response, or as the stream's error event once it began.
func (s *api) fail(w http.ResponseWriter, b *outputBuilder, e *apiError) {
	if b.send == nil || !b.started {
		writeError(w, e)
		return
	}
	b.send(event{"type": "error", "message": e.Message, "code": e.Code, "param": e.Param})
}
