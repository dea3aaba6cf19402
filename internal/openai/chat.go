package openai

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
)

// maxTopLogprobs bounds top_logprobs, as OpenAI does.
const maxTopLogprobs = 20

// chatCompletions serves POST /v1/chat/completions.
func (s *api) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if e := s.readBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	j, e := s.chatJob(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	out := &chatResponder{id: serve.NewID("chatcmpl-"), created: time.Now().Unix(), model: s.cfg.ModelName,
		logprobs: j.p.Options().LogProbs, includeUsage: j.includeUsage}
	s.run(w, r, j, out)
}

// chatJob validates a chat request.
func (s *api) chatJob(req *chatRequest) (*job, *apiError) {
	opt, e := req.options(s.cfg.Defaults, rand.Uint64)
	if e != nil {
		return nil, e
	}
	if e := req.toolOptions(&opt); e != nil {
		return nil, e
	}
	if req.Logprobs != nil && *req.Logprobs {
		opt.LogProbs = true
	}
	if req.TopLogprobs != nil {
		n := *req.TopLogprobs
		switch {
		case n < 0 || n > maxTopLogprobs:
			return nil, invalid("top_logprobs", "Invalid 'top_logprobs': %d is not in [0, %d].", n, maxTopLogprobs)
		case n > 0 && !opt.LogProbs:
			return nil, invalid("top_logprobs", "'top_logprobs' needs 'logprobs' set to true.")
		}
		opt.TopLogProbs = n
	}
	think, e := req.thinking()
	if e != nil {
		return nil, e
	}
	if e := setThinking(&opt, think, "reasoning_effort", req.ReasoningEffort); e != nil {
		return nil, e
	}
	msgs, e := req.messages()
	if e != nil {
		return nil, e
	}
	if e := s.checkModel(req.Model); e != nil {
		return nil, e
	}
	j := &job{endpoint: endpointChat, promptParam: "messages", stream: req.Stream,
		includeUsage: req.Stream && req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	if e := s.prepare(j, bonsai.Chat(msgs...), opt); e != nil {
		return nil, e
	}
	return j, nil
}

// chatResponder shapes chat.completion and chat.completion.chunk objects.
type chatResponder struct {
	id           string
	created      int64
	model        string
	logprobs     bool
	includeUsage bool
}

type chatDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallDelta `json:"tool_calls,omitempty"`
}

// toolCallDelta is a piece of a streamed tool call: the first of a call has its id,
// type and name, the next ones pieces of its arguments, as OpenAI streams them.
type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatLogprob struct {
	Token       string       `json:"token"`
	Logprob     float32      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// chatLogprobs is a choice's logprobs; refusal is always null (the model refuses
// nothing apart from its text), and sent, as the clients' types require it.
type chatLogprobs struct {
	Content []chatLogprob `json:"content"`
	Refusal []chatLogprob `json:"refusal"`
}

type chunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   any           `json:"usage,omitempty"`
}

func byteList(s string) []int {
	b := make([]int, len(s))
	for i := range len(s) {
		b[i] = int(s[i])
	}
	return b
}

func chatLP(lp *tokenLP) chatLogprob {
	c := chatLogprob{Token: lp.token, Logprob: lp.logprob, Bytes: byteList(lp.token), TopLogprobs: []topLogprob{}}
	for _, t := range lp.top {
		c.TopLogprobs = append(c.TopLogprobs, topLogprob{Token: t.Text, Logprob: t.LogProb, Bytes: byteList(t.Text)})
	}
	return c
}

func (c *chatResponder) chunkOf(choices []chunkChoice) chatChunk {
	ch := chatChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: choices}
	if c.includeUsage {
		ch.Usage = json.RawMessage("null")
	}
	return ch
}

func (c *chatResponder) head() any {
	empty := ""
	return c.chunkOf([]chunkChoice{{Delta: chatDelta{Role: "assistant", Content: &empty}}})
}

func (c *chatResponder) chunk(p piece) any {
	var d chatDelta
	for _, f := range p.frags {
		td := toolCallDelta{Index: f.Index, ID: f.ID}
		if f.ID != "" || f.Name != "" {
			td.Type = "function"
		}
		td.Function.Name, td.Function.Arguments = f.Name, f.Arguments
		d.ToolCalls = append(d.ToolCalls, td)
	}
	if p.thinking != "" {
		d.ReasoningContent = &p.thinking
	}
	var lps *chatLogprobs
	if c.logprobs && p.lp != nil && !p.reasoning {
		lps = &chatLogprobs{Content: []chatLogprob{chatLP(p.lp)}}
	}
	if p.text != "" || lps != nil {
		d.Content = &p.text
	}
	if d.Content == nil && d.ReasoningContent == nil && d.ToolCalls == nil {
		return nil
	}
	return c.chunkOf([]chunkChoice{{Delta: d, Logprobs: lps}})
}

func (c *chatResponder) tail(finish string) any {
	return c.chunkOf([]chunkChoice{{FinishReason: &finish}})
}

func (c *chatResponder) usage(u usage) any {
	ch := c.chunkOf([]chunkChoice{})
	ch.Usage = u
	return ch
}

type chatMessageOut struct {
	Role             string          `json:"role"`
	Content          *string         `json:"content"` // null for calls alone, as OpenAI has it
	Refusal          *string         `json:"refusal"` // always null, and sent: the clients' types require it
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallParam `json:"tool_calls,omitempty"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     *chatLogprobs  `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   usage        `json:"usage"`
}

func (c *chatResponder) whole(res bonsai.Result, pieces []piece, finish string, u usage) any {
	choice := chatChoice{Message: chatMessageOut{Role: "assistant", ReasoningContent: res.Thinking}, FinishReason: finish}
	if res.Text != "" || len(res.ToolCalls) == 0 {
		choice.Message.Content = &res.Text
	}
	if len(res.ToolCalls) > 0 {
		choice.Message.ToolCalls = toolCallsOut(res.ToolCalls)
	}
	if c.logprobs {
		choice.Logprobs = &chatLogprobs{Content: []chatLogprob{}}
		for _, p := range pieces {
			if p.lp != nil && !p.reasoning {
				choice.Logprobs.Content = append(choice.Logprobs.Content, chatLP(p.lp))
			}
		}
	}
	return chatCompletion{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model, Choices: []chatChoice{choice}, Usage: u}
}
