package bonsai

import (
	"context"
	"errors"
	"iter"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/grammar"
	"github.com/bonsai-go/sdk/bonsai/tokenizer"
)

// Input is what a generation continues: a plain text, a conversation for the chat
// template, or token ids. Exactly one must be set; Text, Chat and TokenIDs build them.
type Input struct {
	Text     string    // a plain text, tokenized as Text says
	Messages []Message // a conversation, rendered by the model's chat template
	Tokens   []int32   // token ids, fed as they are
}

// Text is the input of a plain completion of s. It is tokenized as llama.cpp tokenizes
// a prompt: BOS first when the vocabulary sets tokenizer.ggml.add_bos_token (and s does
// not already begin with it), EOS last when it sets tokenizer.ggml.add_eos_token (and
// the tokens do not already end with it). The Qwen vocabularies set neither.
func Text(s string) Input { return Input{Text: s} }

// Chat is the input of a chat turn: the conversation so far, rendered with the model's
// chat template and the opening of the assistant's reply. The rendering gets a BOS as
// a Text input does, but never an EOS: the template writes the end-of-turn markers,
// and the reply's opening must stay open.
func Chat(msgs ...Message) Input { return Input{Messages: msgs} }

// TokenIDs is the input of a completion of token ids, which are fed as they are, with
// no BOS or EOS added.
func TokenIDs(ids ...int32) Input { return Input{Tokens: ids} }

// GenerateOptions control a generation. The zero value is greedy decoding until an
// end-of-generation token or the end of the context.
type GenerateOptions struct {
	// MaxTokens caps the tokens generated, thinking included (0: until the context is
	// full).
	MaxTokens int

	// SamplerOptions choose how each token is drawn.
	SamplerOptions

	// Stop ends the generation when the answer text contains one of these strings,
	// which is left out of the text. They are not searched for in the thinking.
	Stop []string
	// StopTokens end the generation, besides the tokenizer's end-of-generation tokens
	// (EOS, <|im_end|>).
	StopTokens []int32

	// LogProbs reports each token's log-probability; TopLogProbs (which implies it)
	// the most likely alternatives as well. They are the model's: log-softmax of the
	// raw logits, before penalties, truncation and temperature, as OpenAI reports them,
	// so they score the text under the model whatever sampler drew it.
	LogProbs    bool
	TopLogProbs int

	// Thinking switches a chat template's thinking on or off (its enable_thinking);
	// nil leaves the template's default, which for Qwen is on.
	Thinking *bool
	// ThinkingBudget is the most tokens the model may write inside a think block:
	// tokens it generates after <think> (or from the start, when the prompt leaves a
	// block open) and before </think>, neither marker counted nor the prompt's own
	// tokens. When a block holds that many, the next token is </think>, whatever the
	// model would draw: it is reported as any other (Reasoning true, the model's
	// log-probability for it), and the answer follows. Each block has the budget.
	//
	// 0 is the default: no cap, but when the answer is enforced (a required or named
	// ToolChoice, a JSON ResponseFormat, a Grammar) the budget is half (rounded down)
	// of what the generation may write — MaxTokens, or the context's room after the
	// prompt where that is less or MaxTokens is 0 — which leaves the other half for
	// the calls or the JSON: thinking is not constrained, so without a cap a long
	// think block would end at MaxTokens with no answer. Negative is an error.
	//
	// While an enforced answer waits behind a think block, the end-of-generation
	// tokens and StopTokens are masked out of the block's steps too, so that the
	// reply cannot end before the answer the grammar writes; a free answer's thinking
	// is left as the model draws it.
	ThinkingBudget int
	// ParseSpecial makes control-token text in a Text input ("<|im_start|>",
	// "<|endoftext|>") the control token rather than its characters. User-defined
	// tokens ("<think>", "<tool_call>") are matched whatever it says, as llama.cpp
	// matches them. A chat rendering is always parsed with special tokens.
	ParseSpecial bool

	// Tools are the functions the model may call (the package doc says how calls are read).
	Tools []Tool
	// ToolChoice says whether it must call them; the zero value is ToolChoiceAuto.
	ToolChoice ToolChoice
	// ParallelToolCalls allows several calls in one turn; nil means true.
	ParallelToolCalls *bool
	// ResponseFormat constrains the answer to JSON (nil or "text": free text).
	ResponseFormat *ResponseFormat
	// Grammar constrains the answer to a GBNF grammar (root rule "root"). At most one
	// of Grammar, a JSON ResponseFormat and a required tool choice may be set.
	Grammar string

	// Speculative switches speculative decoding on (nil: off); SpeculativeOptions
	// documents it.
	Speculative *SpeculativeOptions
}

// SpeculativeOptions switch on speculative decoding in a generation: at each step a
// drafter proposes the tokens it expects next, the model verifies them all in one
// pass (Session.Verify), and the generation keeps the ones the sampler's acceptance
// rule takes (Sampler.VerifyDraft) plus one token of the model's. The output is
// exactly the model's: with greedy decoding the same tokens, text and reports as
// without it; with sampling the same distribution, though a seeded run draws a
// different sequence than without it. Only the speed changes, and
// Usage.DraftedTokens, Usage.AcceptedTokens and Usage.DraftPasses say how the drafts
// fared.
//
// The zero value, &SpeculativeOptions{}, is the automatic policy: the lookup drafter,
// and a cost model that decides at each pass how many tokens to draft, down to none.
// It weighs the model's measured pass times by width (Model.PassTimes: a pass of 5
// tokens costs about 2.5 steps on a 2-core CPU, about 1 on a GPU) against the tokens a
// draft gives in expectation at the drafter's running acceptance α,
// (1 − α^(k+1))/(1 − α) for k drafted tokens, and drafts the k that promises the most
// tokens per second, when that beats plain steps by 2%. While it drafts nothing it
// still asks the drafter for drafts, one at a time, and checks them against the tokens
// generated, at no cost to the model (only the drafter's), so that drafting resumes
// when the text starts to repeat. Drafts that keep failing stop within a few passes (one on a CPU whose wide
// passes cost as above), so the policy does not slow a generation down where
// speculation does not pay.
//
// Speculation stays off when GenerateOptions.Speculative is nil: with sampling it
// changes which sequence a seed draws (though not the distribution), which a
// library must not do to callers that did not ask, and a model whose passes have not
// been timed yet has nothing to decide from. Servers opt in (serve -speculative auto).
//
// Speculation works under a constrained answer (a Grammar, a JSON ResponseFormat, a
// required or named ToolChoice) as well: a draft is cut at the first token the grammar
// does not allow, walked on a clone of the generation's matcher, and each drafted
// position is verified against the masked logits a plain step would draw from there,
// so the output is still exactly the model's under the grammar. A position's mask is
// computed only once the tokens before it are accepted, so a pass computes the masks
// that plain steps would for the tokens it gives, one each, and the cost model weighs
// the passes as without a grammar. A draft is also cut before a <think> or </think>
// token, which switches the grammar off or on (the model's own token, drawn after the
// draft, may be one), and inside a think block with a budget (an explicit
// ThinkingBudget, or the default one of a constrained answer) it stops short of the
// position where </think> is forced. It stops drafting, silently, when the session's
// backend cannot rewind its states (Session.Verify returns errors.ErrUnsupported).
type SpeculativeOptions struct {
	// NewDrafter makes the drafter of one generation (nil: a LookupDrafter with the
	// default LookupOptions). Each generation calls it once, so that generations
	// running at once from the same options do not share a drafter.
	NewDrafter func() Drafter
	// MaxDraft caps the tokens drafted for one pass (0: 8). The drafter may propose
	// fewer, the cost model may ask for fewer, and the generation asks for no more than
	// MaxTokens and the context leave room for. Negative is an error.
	MaxDraft int
	// MTP drafts with the model file's multi-token-prediction head (an MTPDrafter,
	// Model.NewMTPDrafter) instead of NewDrafter's drafter. A model without a head
	// refuses the options with an OptionError wrapping ErrNoMTP (Model.HasMTP).
	MTP bool
	// Always drafts MaxDraft tokens (as many as the drafter proposes) at every pass,
	// without the cost model: for measuring a drafter, or forcing speculation where the
	// cost model would not draft.
	Always bool
}

// defaultMaxDraft is SpeculativeOptions.MaxDraft's default.
const defaultMaxDraft = 8

// NoToken is the ID of a report that carries no token: one that releases answer text
// held back (see Token).
const NoToken int32 = -1

// Token is one report of a generation's stream: a generated token, with the text it
// completes. What the reports say adds up to the Result: the concatenation of their
// Text is Result.Text, of their Thinking Result.Thinking, of their ToolCalls
// Result.ToolCalls.
type Token struct {
	// ID is the generated token's id, or NoToken in a report that releases answer text
	// held back by earlier tokens — a suffix that might have begun a stop string, an
	// incomplete character, whitespace that more text had to follow — which goes out
	// on its own before a <think> token's report and at the end of the generation.
	// Every other report is one generated token, and every generated token but a final
	// stop token has one.
	ID int32
	// Text is the answer text this report adds: empty while a multi-byte character is
	// incomplete, while the text might begin a stop string, inside a tool-call block.
	Text string
	// Thinking is the think-block text this report adds.
	Thinking string
	// Reasoning marks the tokens of a think block, its <think> and </think> markers
	// included: what a server counts as reasoning tokens.
	Reasoning bool
	// ToolCalls are the calls this report completes, in order.
	ToolCalls []ToolCall
	// ToolCallFragments are the pieces of calls being read that this report adds, in
	// order (ToolCallFragment documents them).
	ToolCallFragments []ToolCallFragment
	// LogProb is the token's log-probability under the model (GenerateOptions.LogProbs).
	LogProb float32
	// TopLogProbs are the most likely tokens at this position, best first
	// (GenerateOptions.TopLogProbs).
	TopLogProbs []TokenLogProb
}

// empty reports whether a NoToken report would say nothing.
func (t *Token) empty() bool {
	return t.Text == "" && t.Thinking == "" && len(t.ToolCalls) == 0 && len(t.ToolCallFragments) == 0
}

// FinishReason says why a generation ended.
type FinishReason string

const (
	// FinishStop: an end-of-generation token, a stop token or a stop string.
	FinishStop FinishReason = "stop"
	// FinishLength: MaxTokens were generated.
	FinishLength FinishReason = "length"
	// FinishCancelled: the context was cancelled, or the caller left the token loop.
	FinishCancelled FinishReason = "cancelled"
	// FinishContextFull: the session's context size was reached.
	FinishContextFull FinishReason = "context_full"
)

// Usage counts a generation's tokens and times it.
type Usage struct {
	// PromptTokens is the length of the prompt; CachedTokens how many of them the
	// session already held, and so were not prefilled again.
	PromptTokens, CachedTokens int
	// CompletionTokens counts the tokens generated, the final stop token included.
	CompletionTokens int
	// PrefillTokensPerSecond is the rate of the prompt's new tokens.
	PrefillTokensPerSecond float64
	// DecodeTokensPerSecond is the rate of the decode steps: the forward pass of each
	// generated token but the last, with its sampling. With speculative decoding the
	// tokens a verifying pass gives share its time, drafting and rejected tokens
	// included.
	DecodeTokensPerSecond float64
	// TimeToFirstToken runs from the start of the generation to the first token drawn:
	// restoring cached state and prefilling.
	TimeToFirstToken time.Duration
	// DraftedTokens counts the tokens that speculative decoding proposed and the model
	// verified (GenerateOptions.Speculative); AcceptedTokens how many of them the
	// acceptance rule kept. Tokens kept after the generation's end (past a stop
	// string, say) are counted as accepted, though not generated.
	DraftedTokens, AcceptedTokens int
	// DraftPasses counts the passes that verified drafted tokens: DraftedTokens ÷
	// DraftPasses is the mean draft length that the cost model chose, and
	// CompletionTokens − AcceptedTokens the passes of the whole generation.
	DraftPasses int
}

// Result is a finished generation.
type Result struct {
	// Text is the answer: what the model wrote outside its think block and its tool
	// calls, without the whitespace after </think> and without a stop string; trimmed
	// of surrounding whitespace when tool calls are read. It is what the stream's
	// reports said.
	Text string
	// Thinking is the text of the think block, trimmed of surrounding whitespace.
	Thinking string
	// Tokens are every token generated, the final stop token included.
	Tokens       []int32
	FinishReason FinishReason
	Usage        Usage
	// StopSequence is the stop string that ended the generation, if one did.
	StopSequence string
	// ToolCalls are the calls the model made, in order.
	ToolCalls []ToolCall
	// MalformedToolCalls are the tool-call blocks that could not be parsed; their
	// text is in Text.
	MalformedToolCalls []MalformedToolCall
}

// Generation is one generation in progress, started by Session.Generate. Nothing runs
// until Tokens is ranged over or Result is called.
type Generation struct {
	s   *Session
	ctx context.Context
	p   *Prompt

	started, finished bool
	res               Result
	err               error
	// text and thought are what the reports said: Result.Text and Result.Thinking.
	text, thought strings.Builder
}

// Generate starts a generation of p, which continues from the session's state; p must
// have been prepared by the session's model.
//
// The session remembers the tokens it holds. When they are a prefix of the new prompt
// (the conversation so far, rendered again with a new user message, say), only the rest
// is prefilled; otherwise the session resets and prefills the whole prompt, since the
// recurrent layers' state cannot be rewound. For a chat, the session also keeps a copy of
// its state at the end of the conversation before the assistant's reply
// (Prompt.Checkpoint), because the Qwen templates render an earlier reply without its
// think block, so that the next turn resumes from there: this costs a second copy of the
// state's memory. The generated tokens join the session's history, all but the last one
// fed to the model.
//
// Cancelling ctx ends the generation within one decode step with FinishCancelled and
// what was produced so far: cancellation is a way to finish, not an error. Reaching the
// context size while generating finishes with FinishContextFull.
func (s *Session) Generate(ctx context.Context, p *Prompt) *Generation {
	return &Generation{s: s, ctx: ctx, p: p}
}

// Tokens returns an iterator over the generation's reports (see Token), which runs the
// generation as it is ranged over. Stop tokens are not reported. An error is yielded
// once, as the last pair. Leaving the loop early ends the generation with
// FinishCancelled. It can be ranged over once.
func (g *Generation) Tokens() iter.Seq2[Token, error] {
	return func(yield func(Token, error) bool) {
		if g.started {
			yield(Token{}, errors.New("bonsai: Generation.Tokens: the generation has already run"))
			return
		}
		g.started = true
		// Once the loop body has returned false, yield must not be called again.
		left := false
		report := func(t Token, err error) bool {
			if left {
				return false
			}
			left = !yield(t, err)
			return !left
		}
		g.run(report)
		if g.err != nil {
			report(Token{}, g.err)
		}
	}
}

// Result runs the generation to its end, unless Tokens did, and returns its outcome.
func (g *Generation) Result() (Result, error) {
	if !g.started {
		g.started = true
		g.run(nil)
	}
	if !g.finished && g.err == nil {
		return Result{}, errors.New("bonsai: Generation.Result called while the token loop runs")
	}
	return g.res, g.err
}

// Prefilled reports the prompt's usage once the generation has prefilled it, from
// within the loop over Tokens (the first report comes after): PromptTokens and
// CachedTokens, which a stream's first event states before the reply is known.
// Before the prompt is prefilled both are 0.
func (g *Generation) Prefilled() Usage {
	return Usage{PromptTokens: g.res.Usage.PromptTokens, CachedTokens: g.res.Usage.CachedTokens}
}

func (g *Generation) finish(r FinishReason) {
	g.res.FinishReason = r
	g.finished = true
}

// run performs the generation, reporting each token to yield when it is not nil.
func (g *Generation) run(yield func(Token, error) bool) {
	s, ctx, p := g.s, g.ctx, g.p
	start := time.Now()
	if ctx == nil {
		ctx = context.Background()
	}
	switch {
	case p == nil:
		g.err = errors.New("bonsai: generate: no prompt")
		return
	case p.m != s.m:
		g.err = errors.New("bonsai: generate: the prompt was prepared by another model")
		return
	}
	opt := &p.opt
	smp := s.sampler(opt.SamplerOptions)
	cons := newConstraint(p)
	g.res.Usage.PromptTokens = len(p.ids)

	prefillStart := time.Now()
	cached, err := s.prefillPrompt(ctx, p)
	g.res.Usage.CachedTokens = cached
	if d := time.Since(prefillStart).Seconds(); d > 0 && len(p.ids) > cached {
		g.res.Usage.PrefillTokensPerSecond = float64(len(p.ids)-cached) / d
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			g.finish(FinishCancelled)
			return
		}
		g.err = err
		return
	}
	smp.Observe(p.ids...)

	t := s.m.tok
	f := newTextFilter(opt.Stop)
	f.thinking = p.opensThinking
	f.thinkHead = f.thinking
	f.answerHead = p.closesThinking
	dec := t.NewStreamDecoder()
	stops := opt.StopTokens
	thinkOpen, thinkClose := s.m.thinkIDs()
	var topBuf []candidate
	if opt.TopLogProbs > 0 {
		topBuf = make([]candidate, 0, s.m.weights.Vocab())
	}
	var decodeTime time.Duration
	steps := 0
	ts := cons.stream
	// budget caps the think block (−1: no cap); thinkLen counts the tokens generated
	// in the current one. guard masks the stop tokens out of a think block that an
	// enforced answer must follow.
	budget := -1
	if thinkClose >= 0 {
		budget = p.thinkingBudget()
	}
	guard := cons.g != nil && thinkClose >= 0
	thinkLen := 0
	// answer adds answer text to a report: through the tool-call parser and the
	// trimmer, when calls are read.
	answer := func(tk *Token, text string) {
		if ts == nil {
			tk.Text += text
		} else if text != "" {
			tk.Text += ts.trim.next(ts.feed(text, tk))
		}
	}
	// emit sends a report, and records what it says for the Result.
	emit := func(tk Token) bool {
		g.text.WriteString(tk.Text)
		g.thought.WriteString(tk.Thinking)
		return yield == nil || yield(tk, nil)
	}
	defer func() {
		// Text still held back goes out with a last, token-less report.
		text, thinking := f.finish(dec.Flush())
		last := Token{ID: NoToken, Thinking: thinking}
		answer(&last, text)
		if ts != nil {
			last.Text += ts.trim.next(ts.flush(&last))
		}
		if !last.empty() {
			emit(last)
		}
		g.res.Text, g.res.Thinking, g.res.StopSequence = g.text.String(), g.thought.String(), f.stopSeq
		if ts != nil {
			g.res.ToolCalls, g.res.MalformedToolCalls = ts.calls, ts.malformed
			if len(ts.calls) > 0 && g.res.FinishReason == FinishStop {
				g.res.FinishReason = FinishToolCalls
			}
		}
		g.res.Usage.CompletionTokens = len(g.res.Tokens)
		if decodeTime > 0 {
			g.res.Usage.DecodeTokensPerSecond = float64(steps) / decodeTime.Seconds()
		}
	}()

	ctxSize := s.m.opts.ctxSize
	// A greedy draw from an engine that takes the argmax itself skips the logits.
	_, greedy := s.m.engine.(backend.Greedy)
	if !smp.greedy() || smp.penalised() || opt.LogProbs || opt.TopLogProbs > 0 || cons.g != nil {
		greedy = false
	}
	// sampling is the time spent choosing and reading the last token taken, for the
	// decode rate.
	var sampling time.Duration
	// take records the generated token id, drawn from logits (nil when the engine chose
	// it), at position pos of the session's sequence, and reports it: everything a
	// generated token goes through, whether it was drawn by a step or accepted from a
	// draft. It reports whether the generation has ended (g.err or g.finished set).
	take := func(id int32, logits []float32, pos int, sampleStart time.Time) bool {
		if len(g.res.Tokens) == 0 {
			g.res.Usage.TimeToFirstToken = time.Since(start)
		}
		g.res.Tokens = append(g.res.Tokens, id)
		tk := Token{ID: id}
		if opt.LogProbs || opt.TopLogProbs > 0 {
			z := newLogSoftmax(logits)
			tk.LogProb = z.of(logits[id])
			if opt.TopLogProbs > 0 {
				tk.TopLogProbs = topLogProbs(make([]TokenLogProb, 0, opt.TopLogProbs), logits, opt.TopLogProbs, z, topBuf)
				for i := range tk.TopLogProbs {
					tk.TopLogProbs[i].Text = t.Decode([]int32{tk.TopLogProbs[i].ID})
				}
			}
		}
		isStop := t.IsEndOfGeneration(id) || slices.Contains(stops, id)
		wasThinking := f.thinking
		released := Token{ID: NoToken} // text held back, let out before this token
		switch {
		case isStop:
		case id == thinkOpen:
			text, thinking := f.open(dec.Flush())
			released.Thinking = thinking
			answer(&released, text)
			tk.Reasoning = true
		case id == thinkClose:
			text, thinking := f.close(dec.Flush())
			tk.Thinking = thinking
			answer(&tk, text)
			tk.Reasoning = true
		case t.IsSpecial(id) && t.Type(id) != tokenizer.UserDefined:
			// A control token (<|im_start|>, say) is markup, not text, as llama.cpp
			// renders it by default.
			tk.Reasoning = f.thinking
		default:
			tk.Reasoning = f.thinking
			text, thinking := f.add(dec.Add(id))
			tk.Thinking = thinking
			answer(&tk, text)
		}
		switch {
		case id == thinkOpen && !wasThinking:
			thinkLen = 0
		case wasThinking && f.thinking:
			thinkLen++
		}
		if !isStop {
			if err := cons.accept(id, wasThinking); err != nil {
				g.err = err
				return true
			}
		}
		sampling = time.Since(sampleStart)
		if !released.empty() && !emit(released) {
			g.finish(FinishCancelled)
			return true
		}
		if !isStop && !emit(tk) {
			g.finish(FinishCancelled)
			return true
		}
		switch {
		case isStop || f.stopped:
			g.finish(FinishStop)
		case opt.MaxTokens > 0 && len(g.res.Tokens) >= opt.MaxTokens:
			g.finish(FinishLength)
		case pos >= ctxSize:
			g.finish(FinishContextFull)
		case ctx.Err() != nil:
			g.finish(FinishCancelled)
		default:
			return false
		}
		return true
	}
	// stepFailed ends the generation on a failed forward pass.
	stepFailed := func(err error) {
		switch {
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			g.finish(FinishCancelled)
		case errors.Is(err, ErrContextFull):
			g.finish(FinishContextFull)
		default:
			g.err = err
		}
	}
	spec := g.speculation()
	vocab := s.m.weights.Vocab()
	next := int32(-1) // the next token, when the engine or a verified draft chose it
	var nextLogits []float32
	for {
		if ctx.Err() != nil {
			g.finish(FinishCancelled)
			return
		}
		sampleStart := time.Now()
		var logits []float32
		var id int32
		// The think block has used its budget: </think> comes next. The engine's
		// greedy choice, made before, is overridden.
		force := f.thinking && budget >= 0 && thinkLen >= budget
		if next >= 0 {
			id, logits, next, nextLogits = next, nextLogits, -1, nil
			if force {
				id = thinkClose
			}
		} else {
			if logits = s.Logits(); logits == nil {
				g.err = errors.New("bonsai: generate: the session has no logits")
				return
			}
			switch {
			case force:
				id = thinkClose
			case cons.active(f.thinking):
				if id, err = cons.sample(smp, logits); err != nil {
					g.err = err
					return
				}
			case f.thinking && guard:
				id = cons.sampleThinking(smp, logits, stops)
			default:
				id = smp.Sample(logits)
			}
		}
		smp.Accept(id)
		if take(id, logits, s.Len(), sampleStart) {
			return
		}
		stepStart := time.Now()
		if spec != nil {
			spec.hist = append(spec.hist, id)
			spec.observe(id)
			start := s.Len()
			// Draft no more than MaxTokens and the context leave room for: the pass
			// feeds id and the draft, and the model's token after them comes on top.
			kmax := spec.maxDraft
			if opt.MaxTokens > 0 {
				kmax = min(kmax, opt.MaxTokens-len(g.res.Tokens)-1)
			}
			kmax = min(kmax, ctxSize-start-1)
			if f.thinking && budget >= 0 {
				// No drafted position may be one where </think> is forced: the last
				// one drafted is at most the budget's last token.
				kmax = min(kmax, budget-thinkLen)
			}
			k := kmax
			if !spec.always {
				k = spec.choose(&s.m.costs, kmax)
			}
			var draft []int32
			switch {
			case k > 0:
				spec.endShadow()
				draftStart := time.Now()
				draft = spec.d.Draft(spec.hist, k, spec.draft[:0])
				spec.timeDraft(len(draft), time.Since(draftStart))
				spec.draft = draft
				draft = spec.valid(draft, k, vocab)
				if cons.g != nil || budget >= 0 {
					draft = spec.fit(draft, cons, f.thinking, thinkOpen, thinkClose)
				}
			case kmax > 0 && !spec.always:
				spec.probe(&s.m.costs, kmax, vocab)
			}
			if len(draft) > 0 {
				spec.pass = append(append(spec.pass[:0], id), draft...)
				spec.rows = slices.Grow(spec.rows[:0], len(spec.pass)*vocab)[:len(spec.pass)*vocab]
				passStart := time.Now()
				err := s.verify(ctx, spec.pass, spec.rows)
				passTime := time.Since(passStart)
				switch {
				case errors.Is(err, errors.ErrUnsupported):
					// The backend cannot rewind: plain steps from here on.
					spec = nil
				case err != nil:
					// A cancelled pass may have fed part of the draft: keep id only, as
					// a step would have (best effort; the generation ends anyway).
					if s.Len() > start+1 {
						_ = s.Rewind(start + 1)
					}
					stepFailed(err)
					return
				default:
					// Row i is the logits after id and draft[:i]. They live until the
					// next pass, after the next token (drawn from row accepted) is taken.
					row := func(i int) []float32 { return spec.rows[i*vocab : (i+1)*vocab : (i+1)*vocab] }
					// target(i) is what a plain step at drafted position i would draw
					// from: the row masked by the grammar at that position, or with the
					// end-of-generation and stop tokens out of a think block that an
					// enforced answer follows (sampleThinking).
					// The draft holds no think markers (fit), so one rule holds for all.
					target := row
					dead := -1 // the first position where the grammar allows nothing
					var deadEnd error
					switch {
					case cons.active(f.thinking):
						spec.walk.Set(cons.m)
						target = func(i int) []float32 {
							if i > 0 {
								// fit walked the draft: the grammar allows the token.
								_ = spec.walk.AcceptToken(cons.v, draft[i-1])
							}
							l, err := cons.maskLogits(spec.walk, row(i))
							if err != nil {
								if dead < 0 {
									dead, deadEnd = i, err
								}
								return row(i) // the verdict is overruled below
							}
							return l
						}
					case f.thinking && guard:
						target = func(i int) []float32 { return cons.thinkingLogits(row(i), stops) }
					}
					accepted, after := smp.VerifyDraft(draft, nil, target)
					// VerifyDraft asked for position dead's row, so it had accepted the
					// tokens before it. A plain run takes them and then fails on the
					// dead end: so does this one.
					if dead >= 0 {
						accepted = dead
					}
					spec.d.Accepted(len(draft), accepted)
					spec.acc.add(len(draft), accepted)
					g.res.Usage.DraftedTokens += len(draft)
					g.res.Usage.AcceptedTokens += accepted
					g.res.Usage.DraftPasses++
					decodeTime += sampling + time.Since(stepStart)
					// The accepted tokens go through what a drawn token goes through. When
					// one ends the generation, the session keeps the tokens before it,
					// as plain steps would have left it: every generated token fed but
					// the last.
					keep, ended := start+1+accepted, false
					for j := 1; j <= accepted; j++ {
						x := draft[j-1]
						spec.hist = append(spec.hist, x)
						if take(x, row(j-1), start+j, time.Now()) {
							keep, ended = start+j, true
							break
						}
						decodeTime += sampling
					}
					steps += keep - start
					rewindStart := time.Now()
					if err := s.Rewind(keep); err != nil {
						if g.err == nil {
							g.err = err
						}
						return
					}
					// The pass's cost is its forward pass and the rewind it needs:
					// what it spends beyond the tokens it gives.
					s.m.costs.record(len(spec.pass), passTime+time.Since(rewindStart))
					if ended {
						return
					}
					if deadEnd != nil {
						g.err = deadEnd
						return
					}
					// The model's token after the accepted ones is drawn already.
					next, nextLogits = after, row(accepted)
					continue
				}
			}
		}
		passStart := time.Now()
		var err error
		if greedy {
			next, err = s.stepGreedy(ctx, id)
		} else {
			err = s.Step(ctx, id)
		}
		if err != nil {
			stepFailed(err)
			return
		}
		s.m.costs.record(1, time.Since(passStart))
		// The rate counts the model and the sampler, not the caller's loop body.
		decodeTime += sampling + time.Since(stepStart)
		steps++
	}
}

// speculator is a generation's speculative decoding (GenerateOptions.Speculative).
type speculator struct {
	d        Drafter
	maxDraft int
	always   bool           // draft at every pass, without the cost model
	acc      specAcceptance // the drafts' acceptance so far
	// hist is the sequence so far, the prompt and the tokens generated; draft and
	// pass are the buffers of a draft and of the tokens a pass verifies.
	hist, draft, pass []int32
	// rows holds a pass's logits, row by row, reused from pass to pass.
	rows []float32
	// cost holds the cost model's estimates of the pass costs by width.
	cost []float64
	// draftCost is the running mean of the drafter's wall time per drafted token, in
	// seconds (0 before any draft), which the cost model counts (chooseDraft).
	draftCost float64
	// probeWait is the number of steps the next shadow draft waits for (probe).
	probeWait int
	// shadow is a draft that no pass verifies, asked for while the cost model drafts
	// nothing and checked against the tokens generated: its first shadowAt tokens
	// matched so far.
	shadow   []int32
	shadowAt int
	// walk follows a draft through the grammar, under a constrained answer.
	walk *grammar.Matcher
}

// choose returns the draft length the cost model chooses for the next pass, at most
// kmax.
func (sp *speculator) choose(c *passCosts, kmax int) int {
	if kmax <= 0 {
		return 0
	}
	sp.cost = c.estimate(sp.cost, kmax+1)
	return chooseDraft(sp.cost, c.draftCost(sp.draftCost), sp.acc.alpha(), kmax)
}

// timeDraft adds a drafter call that drafted n tokens in d to the running mean of the
// drafter's time per drafted token. A call that drafted nothing tells nothing of it.
func (sp *speculator) timeDraft(n int, d time.Duration) {
	if n <= 0 || d <= 0 {
		return
	}
	per := d.Seconds() / float64(n)
	if sp.draftCost > 0 {
		sp.draftCost += (per - sp.draftCost) * draftCostWeight
	} else {
		sp.draftCost = per
	}
}

// valid returns the part of draft that may reach the model: a drafter's mistakes must
// not: no more than k tokens, none outside the vocabulary.
func (sp *speculator) valid(draft []int32, k, vocab int) []int32 {
	draft = draft[:min(len(draft), k)]
	if i := slices.IndexFunc(draft, func(x int32) bool { return x < 0 || int(x) >= vocab }); i >= 0 {
		draft = draft[:i]
	}
	return draft
}

// fit returns the part of draft that the generation's rules let a pass verify as
// drafted: the tokens before a <think> or </think> (markers), which switch the
// grammar off or on and start or end a think block's count, so that one rule holds
// for every drafted position (a marker comes from the model's own token, after the
// draft, or the next pass); and, where the grammar constrains the answer, the tokens
// before the first one it does not allow, walked on a clone of the generation's
// matcher (Accept of the token's bytes is enough: no mask).
func (sp *speculator) fit(draft []int32, c *constraint, thinking bool, markers ...int32) []int32 {
	if i := slices.IndexFunc(draft, func(x int32) bool { return slices.Contains(markers, x) }); i >= 0 {
		draft = draft[:i]
	}
	if !c.active(thinking) || len(draft) == 0 {
		return draft
	}
	if sp.walk == nil {
		sp.walk = c.m.Clone()
	} else {
		sp.walk.Set(c.m)
	}
	for i, x := range draft {
		if sp.walk.AcceptToken(c.v, x) != nil {
			return draft[:i]
		}
	}
	return draft
}

// probe asks the drafter for a shadow draft of up to k tokens, unless one is being
// checked: what the generated tokens then say of it keeps the acceptance estimate
// current while nothing is drafted, at the cost of the drafter's time only. That time
// is kept near probeShare of the steps' (c's cost(1), as estimated by the choose
// before it): a drafter whose token costs more than that probes one token at a time,
// and the next probe waits as many steps as this one's time takes to fall to that
// share. A drafter too slow to pay even if every token it drafted were accepted is not
// asked at all. (A probe's time is its own: the MTP head catches up on the positions
// since its last draft first, a cost that drafting at every pass does not have, so it
// does not enter the drafter's cost per token, unless nothing else has measured it.)
func (sp *speculator) probe(c *passCosts, k, vocab int) {
	if len(sp.shadow) > 0 {
		return
	}
	if sp.probeWait > 0 {
		sp.probeWait--
		return
	}
	d := c.draftCost(sp.draftCost)
	var one float64
	if len(sp.cost) > 1 {
		one = sp.cost[1]
	}
	if d > 0 && one > 0 {
		if chooseDraft(sp.cost, d, 1, k) == 0 {
			return
		}
		if d > probeShare*one {
			k = 1
		}
	}
	start := time.Now()
	sp.shadow = sp.valid(sp.d.Draft(sp.hist, k, sp.shadow[:0]), k, vocab)
	took := time.Since(start)
	sp.shadowAt = 0
	if sp.draftCost == 0 {
		sp.timeDraft(len(sp.shadow), took)
	}
	// The time to space by: the drafter's cost when a test fixes it (c.fixed), else
	// this probe's own.
	cost := took.Seconds()
	if fd, ok := c.fixedDraftCost(); ok {
		cost = fd * float64(max(len(sp.shadow), 1))
	}
	if one > 0 && cost > 0 {
		sp.probeWait = int(math.Ceil(cost/(probeShare*one))) - 1
	}
}

// observe checks the generated token id against the shadow draft: a token that
// differs ends it with the tokens before it accepted, as the acceptance rule would
// have (for a sampled token too: the rule accepts a drafted token with the
// probability that the model draws it), and so does its last token matched.
func (sp *speculator) observe(id int32) {
	if len(sp.shadow) == 0 {
		return
	}
	if sp.shadow[sp.shadowAt] != id {
		sp.settle(len(sp.shadow), sp.shadowAt)
		return
	}
	if sp.shadowAt++; sp.shadowAt == len(sp.shadow) {
		sp.settle(len(sp.shadow), sp.shadowAt)
	}
}

// endShadow ends the shadow draft before a draft that the model verifies: the tokens
// matched so far count as a draft accepted whole.
func (sp *speculator) endShadow() {
	if len(sp.shadow) > 0 {
		sp.settle(sp.shadowAt, sp.shadowAt)
	}
}

// settle reports a shadow draft's outcome and forgets it.
func (sp *speculator) settle(drafted, accepted int) {
	sp.d.Accepted(drafted, accepted)
	sp.acc.add(drafted, accepted)
	sp.shadow = sp.shadow[:0]
	sp.shadowAt = 0
}

// speculation returns the generation's speculator, or nil when it drafts nothing:
// the option is off.
func (g *Generation) speculation() *speculator {
	p := g.p
	o := p.opt.Speculative
	if o == nil {
		return nil
	}
	sp := &speculator{maxDraft: o.MaxDraft, always: o.Always, acc: newSpecAcceptance()}
	if sp.maxDraft == 0 {
		sp.maxDraft = defaultMaxDraft
	}
	switch {
	case o.MTP:
		if d, err := g.s.m.NewMTPDrafter(); err == nil { // checkOptions saw the head
			sp.d = d
		}
	case o.NewDrafter != nil:
		sp.d = o.NewDrafter()
	}
	if sp.d == nil {
		sp.d = NewLookupDrafter(LookupOptions{})
	}
	if b, ok := sp.d.(SessionDrafter); ok {
		b.BindSession(g.s)
	} else {
		g.s.mu.Lock()
		if hs, ok := g.s.st.(backend.HiddenStates); ok {
			hs.KeepHidden(-1) // what the prefill kept is for a SessionDrafter
		}
		g.s.mu.Unlock()
	}
	sp.hist = append(make([]int32, 0, len(p.ids)+256), p.ids...)
	sp.draft = make([]int32, 0, sp.maxDraft)
	sp.pass = make([]int32, 0, sp.maxDraft+1)
	if !sp.always {
		sp.shadow = make([]int32, 0, sp.maxDraft)
		sp.cost = make([]float64, sp.maxDraft+2)
	}
	return sp
}

// textFilter turns the decoded text of generated tokens into what a caller sees: the
// thinking, trimmed of the whitespace around it, and the answer, without its leading
// whitespace after </think> and cut at the first stop string. A suffix of the answer
// that might begin a stop string is held back until the next text settles it, so that a
// stop string split across tokens is never shown. Its methods return the answer text and
// the thinking text they let out.
type textFilter struct {
	stops []string

	thinking   bool   // inside a think block
	thinkHead  bool   // no thinking text yet in this block: drop leading whitespace
	thinkWS    string // trailing whitespace of the thinking, held back
	answerHead bool   // no answer text yet after </think>: drop leading whitespace
	held       string // answer text held back: it may begin a stop string

	stopped bool
	stopSeq string
}

func newTextFilter(stops []string) *textFilter {
	f := &textFilter{}
	for _, s := range stops {
		if s != "" {
			f.stops = append(f.stops, s)
		}
	}
	return f
}

// add takes the text of the next token.
func (f *textFilter) add(s string) (text, thinking string) {
	if f.stopped || s == "" {
		return "", ""
	}
	if f.thinking {
		return "", f.addThinking(s)
	}
	return f.addAnswer(s), ""
}

func (f *textFilter) addThinking(s string) string {
	if f.thinkHead {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return ""
		}
		f.thinkHead = false
	}
	s = f.thinkWS + s
	body := strings.TrimRightFunc(s, unicode.IsSpace)
	f.thinkWS = s[len(body):]
	return body
}

func (f *textFilter) addAnswer(s string) string {
	if f.answerHead {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return ""
		}
		f.answerHead = false
	}
	buf := f.held + s
	at, which := -1, ""
	for _, stop := range f.stops {
		if i := strings.Index(buf, stop); i >= 0 && (at < 0 || i < at) {
			at, which = i, stop
		}
	}
	if at >= 0 {
		f.held, f.stopped, f.stopSeq = "", true, which
		return buf[:at]
	}
	hold := 0
	for _, stop := range f.stops {
		hold = max(hold, prefixOverlap(buf, stop))
	}
	f.held = buf[len(buf)-hold:]
	return buf[:len(buf)-hold]
}

// prefixOverlap returns the length of the longest suffix of s that is a proper prefix of
// stop.
func prefixOverlap(s, stop string) int {
	for n := min(len(s), len(stop)-1); n > 0; n-- {
		if strings.HasSuffix(s, stop[:n]) {
			return n
		}
	}
	return 0
}

// open enters a think block (the model wrote <think>). pending is text the decoder still
// held; the answer held back so far is let out, since a stop string does not run on into
// the thinking.
func (f *textFilter) open(pending string) (text, thinking string) {
	text, thinking = f.add(pending)
	if !f.thinking {
		text += f.release()
	}
	f.thinking, f.thinkHead, f.thinkWS = true, true, ""
	return text, thinking
}

// close leaves a think block (the model wrote </think>).
func (f *textFilter) close(pending string) (text, thinking string) {
	text, thinking = f.add(pending)
	if f.thinking {
		f.thinking, f.thinkWS, f.answerHead = false, "", true
	}
	return text, thinking
}

// release lets out the answer text held back.
func (f *textFilter) release() string {
	out := f.held
	f.held = ""
	return out
}

// finish ends the stream: pending is the decoder's remainder. The thinking's trailing
// whitespace is dropped.
func (f *textFilter) finish(pending string) (text, thinking string) {
	text, thinking = f.add(pending)
	if !f.stopped && !f.thinking {
		text += f.release()
	}
	return text, thinking
}

// spaceTrimmer trims a streamed text as strings.TrimSpace trims the whole: it drops the
// leading whitespace, and holds whitespace back until more text follows (so that
// trailing whitespace never goes out).
type spaceTrimmer struct {
	started bool
	pending string
}

// next returns what to let out of the text's next piece s.
func (t *spaceTrimmer) next(s string) string {
	if !t.started {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return ""
		}
		t.started = true
	}
	body := strings.TrimRightFunc(s, unicode.IsSpace)
	if body == "" {
		t.pending += s
		return ""
	}
	out := t.pending + body
	t.pending = s[len(body):]
	return out
}

// thinkIDs returns the ids of <think> and </think>, or −1.
func (m *Model) thinkIDs() (open, close int32) {
	open, close = -1, -1
	if id, ok := m.tok.Lookup(thinkOpen); ok {
		open = id
	}
	if id, ok := m.tok.Lookup(thinkClose); ok {
		close = id
	}
	return open, close
}

const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// promptOpensThinking reports whether a prompt leaves the model inside a think block:
// its last <think> token comes after its last </think>, as when a Qwen template ends the
// generation prompt with "<think>\n".
func (m *Model) promptOpensThinking(ids []int32) bool {
	open, close := m.thinkIDs()
	if open < 0 {
		return false
	}
	return lastIndex(ids, open) > lastIndex(ids, close)
}

// promptClosesThinking reports whether a prompt ends with a closed think block and
// whitespace, as when thinking is switched off ("<think>\n\n</think>\n\n"): the answer
// then starts at once, and its leading whitespace goes.
func (m *Model) promptClosesThinking(ids []int32) bool {
	_, close := m.thinkIDs()
	c := lastIndex(ids, close)
	if close < 0 || c < 0 {
		return false
	}
	return strings.TrimSpace(m.tok.Decode(ids[c+1:])) == ""
}

func lastIndex(ids []int32, id int32) int {
	for i := len(ids) - 1; i >= 0; i-- {
		if ids[i] == id {
			return i
		}
	}
	return -1
}
