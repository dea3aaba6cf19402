package openai

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/serve"
)

// maxCompletionLogprobs bounds the legacy endpoint's logprobs, as OpenAI does.
const maxCompletionLogprobs = 5

// completions serves POST /v1/completions.
func (s *api) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if e := s.readBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	j, e := s.completionJob(&req)
	if e != nil {
		writeError(w, e)
		return
	}
	s.run(w, r, j, &completionResponder{id: serve.NewID("cmpl-"), created: time.Now().Unix(), model: s.cfg.ModelName,
		logprobs: j.p.Options().LogProbs, includeUsage: j.includeUsage})
}

func (s *api) completionJob(req *completionRequest) (*job, *apiError) {
	opt, e := req.options(s.cfg.Defaults, rand.Uint64)
	if e != nil {
		return nil, e
	}
	switch {
	case req.Echo:
		return nil, invalid("echo", "'echo' is not supported by this server.")
	case req.Suffix != "":
		return nil, invalid("suffix", "'suffix' is not supported by this server.")
	case req.BestOf != nil && *req.BestOf != 1:
		return nil, invalid("best_of", "Invalid 'best_of': %d. This server generates one choice per request.", *req.BestOf)
	}
	if req.Logprobs != nil {
		n := *req.Logprobs
		if n < 0 || n > maxCompletionLogprobs {
			return nil, invalid("logprobs", "Invalid 'logprobs': %d is not in [0, %d].", n, maxCompletionLogprobs)
		}
		opt.LogProbs, opt.TopLogProbs = true, n
	}
	in, e := req.prompt()
	if e != nil {
		return nil, e
	}
	if e := s.checkModel(req.Model); e != nil {
		return nil, e
	}
	j := &job{endpoint: endpointCompletions, promptParam: "prompt", stream: req.Stream,
		includeUsage: req.Stream && req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	if e := s.prepare(j, in, opt); e != nil {
		return nil, e
	}
	return j, nil
}

// completionResponder shapes text_completion objects. The text is everything the model
// wrote, thinking included.
type completionResponder struct {
	id           string
	created      int64
	model        string
	logprobs     bool
	includeUsage bool
	offset       int // text_offset of the next token
}

type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

func (l *completionLogprobs) add(lp *tokenLP, offset int) {
	l.Tokens = append(l.Tokens, lp.token)
	l.TokenLogprobs = append(l.TokenLogprobs, lp.logprob)
	top := map[string]float32{}
	for _, t := range lp.top {
		top[t.Text] = t.LogProb
	}
	l.TopLogprobs = append(l.TopLogprobs, top)
	l.TextOffset = append(l.TextOffset, offset)
}

type completionChoice struct {
	Text         string              `json:"text"`
	Index        int                 `json:"index"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

type completion struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   any                `json:"usage,omitempty"`
}

func (c *completionResponder) of(choices []completionChoice) completion {
	o := completion{ID: c.id, Object: "text_completion", Created: c.created, Model: c.model, Choices: choices}
	if c.includeUsage {
		o.Usage = json.RawMessage("null")
	}
	return o
}

func (c *completionResponder) head() any { return nil }

func (c *completionResponder) chunk(p piece) any {
	text := p.thinking + p.text
	if text == "" && (p.lp == nil || !c.logprobs) {
		return nil
	}
	choice := completionChoice{Text: text}
	if c.logprobs && p.lp != nil {
		choice.Logprobs = &completionLogprobs{}
		choice.Logprobs.add(p.lp, c.offset)
	}
	c.offset += len(text)
	return c.of([]completionChoice{choice})
}

func (c *completionResponder) tail(finish string) any {
	return c.of([]completionChoice{{FinishReason: &finish}})
}

func (c *completionResponder) usage(u usage) any {
	o := c.of([]completionChoice{})
	o.Usage = u
	return o
}

func (c *completionResponder) whole(_ bonsai.Result, pieces []piece, finish string, u usage) any {
	var text strings.Builder
	choice := completionChoice{FinishReason: &finish}
	if c.logprobs {
		choice.Logprobs = &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	}
	for _, p := range pieces {
		if c.logprobs && p.lp != nil {
			choice.Logprobs.add(p.lp, text.Len())
		}
		text.WriteString(p.thinking + p.text)
	}
	choice.Text = text.String()
	o := c.of([]completionChoice{choice})
	o.Usage = u
	return o
}
