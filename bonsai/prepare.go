package bonsai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bonsai-go/sdk/bonsai/grammar"
	"github.com/bonsai-go/sdk/internal/prepcount"
)

// Prompt is a generation prepared by Model.Prepare, as database/sql prepares a
// statement: its input checked, rendered with the chat template and tokenized, its
// options checked, and its grammar compiled, once (or found in the model's cache of
// grammars, shared with the other Prompts that ask for it: see WithGrammarCache). A Prompt is immutable and safe for
// concurrent use; it may be generated any number of times, on any session of the model
// that prepared it (Session.Generate).
type Prompt struct {
	m   *Model
	opt GenerateOptions
	ids []int32
	// checkpoint, when positive, is the length of the prompt without the chat
	// template's generation prompt: where the session keeps a checkpoint.
	checkpoint int
	// boundaries are the lengths, ascending, at which the prompt's conversation ends a
	// message (the system prompt, each turn; checkpoint the last): where the model's
	// prefix cache keeps states. Without a prefix cache, only checkpoint.
	boundaries []int
	// opensThinking: the prompt leaves the model inside a think block;
	// closesThinking: it ends with a closed one, the answer next.
	opensThinking, closesThinking bool

	// grammar constrains the answer, or is nil. It is immutable: each generation
	// matches it with a Matcher of its own.
	grammar *grammar.Grammar
	// toolSchemas are the parameters of the tools whose calls are read, by name; nil
	// when no calls are read (no tools, or ToolChoiceNone).
	toolSchemas map[string]json.RawMessage
	// enforced: the grammar enforces the calls (ToolChoiceRequired, ToolChoiceFunction).
	enforced bool
}

// Tokens returns the prompt's tokens, as the session is fed them. The slice is the
// Prompt's: it must not be modified.
func (p *Prompt) Tokens() []int32 { return p.ids }

// Len returns the number of the prompt's tokens.
func (p *Prompt) Len() int { return len(p.ids) }

// Checkpoint returns the length of a chat prompt without the template's generation
// prompt, where Generate keeps a copy of the session's state for the next turn (see
// Session.Generate), or 0 for none.
func (p *Prompt) Checkpoint() int { return p.checkpoint }

// Options returns the generation's options. Their slices are the Prompt's: they must
// not be modified.
func (p *Prompt) Options() GenerateOptions { return p.opt }

// Errors of Prepare, for callers to map to their own shapes (errors.Is):
// ErrInvalidInput, ErrInvalidOptions (an *OptionError, errors.As), ErrInvalidSchema
// (an option's schema or grammar, within an *OptionError) and ErrContextFull (a prompt
// longer than the context, a *PromptTooLongError).
var (
	// ErrInvalidInput: an Input with none or several of its fields set, a prompt that
	// tokenizes to nothing, a token id outside the vocabulary, a conversation the chat
	// template cannot render.
	ErrInvalidInput = errors.New("invalid input")
	// ErrInvalidOptions: GenerateOptions out of range or contradictory, a tool without
	// a name or defined twice, a tool choice the tools cannot satisfy, a schema or
	// grammar the engine refuses. The error is an *OptionError.
	ErrInvalidOptions = errors.New("invalid options")
)

// PromptTooLongError is Prepare's error for a prompt longer than the context: it is
// ErrContextFull (errors.Is) and says by how much, for a server's message in its API's
// words.
type PromptTooLongError struct {
	Tokens      int // the prompt's length in tokens
	ContextSize int // the model's context size
}

// Error says the prompt's length and the context size.
func (e *PromptTooLongError) Error() string {
	return fmt.Sprintf("bonsai: %v: the prompt has %d tokens, the context holds %d", ErrContextFull, e.Tokens, e.ContextSize)
}

// Unwrap returns ErrContextFull.
func (e *PromptTooLongError) Unwrap() error { return ErrContextFull }

// OptionError is the error for GenerateOptions that Prepare refuses. It is
// ErrInvalidOptions (errors.Is), and unwraps to the cause: a schema or grammar the
// engine refuses is ErrInvalidSchema too, with a *SchemaError underneath.
type OptionError struct {
	// Option is the GenerateOptions (or SamplerOptions) field at fault: "TopK",
	// "ResponseFormat", "Tools", "ToolChoice", "Grammar"...
	Option string
	// Tool is the index in Tools of the tool at fault, or −1.
	Tool int
	// Err says what is wrong with the option.
	Err error
}

// Error returns "bonsai: option OPTION[TOOL]: ERR".
func (e *OptionError) Error() string {
	opt := e.Option
	if e.Tool >= 0 {
		opt += "[" + strconv.Itoa(e.Tool) + "]"
	}
	return fmt.Sprintf("bonsai: option %s: %v", opt, e.Err)
}

// Unwrap returns Err.
func (e *OptionError) Unwrap() error { return e.Err }

// Is makes every OptionError ErrInvalidOptions.
func (e *OptionError) Is(target error) bool { return target == ErrInvalidOptions }

// Prepare checks and prepares a generation of in with opt: everything that can fail
// before a forward pass fails here, so that a server can answer a bad request before it
// waits for a session. The errors are described at ErrInvalidInput.
func (m *Model) Prepare(in Input, opt GenerateOptions) (*Prompt, error) {
	if m.tok == nil {
		return nil, errors.New("bonsai: the model has no tokenizer")
	}
	p := &Prompt{m: m, opt: cloneOptions(opt)}
	if err := p.checkOptions(); err != nil {
		return nil, err
	}
	if err := p.compile(); err != nil {
		return nil, err
	}
	if err := p.tokenize(in); err != nil {
		return nil, err
	}
	p.opensThinking = m.promptOpensThinking(p.ids)
	p.closesThinking = !p.opensThinking && m.promptClosesThinking(p.ids)
	return p, nil
}

// thinkingBudget returns the most tokens a think block may hold (see
// GenerateOptions.ThinkingBudget), or −1 for no cap.
func (p *Prompt) thinkingBudget() int {
	if p.opt.ThinkingBudget > 0 {
		return p.opt.ThinkingBudget
	}
	if p.grammar == nil {
		return -1
	}
	// Half of what the generation may write: MaxTokens, or the context's room after
	// the prompt where that is less.
	room := p.m.opts.ctxSize - len(p.ids)
	if n := p.opt.MaxTokens; n > 0 && n < room {
		room = n
	}
	return max(room, 0) / 2
}

// cloneOptions copies what opt refers to, so that the caller's later changes do not
// reach a Prompt.
func cloneOptions(opt GenerateOptions) GenerateOptions {
	opt.Stop = slices.Clone(opt.Stop)
	opt.StopTokens = slices.Clone(opt.StopTokens)
	opt.Tools = slices.Clone(opt.Tools)
	for i := range opt.Tools {
		opt.Tools[i].Parameters = bytes.Clone(opt.Tools[i].Parameters)
	}
	if opt.Thinking != nil {
		v := *opt.Thinking
		opt.Thinking = &v
	}
	if opt.ParallelToolCalls != nil {
		v := *opt.ParallelToolCalls
		opt.ParallelToolCalls = &v
	}
	if opt.Speculative != nil {
		v := *opt.Speculative
		opt.Speculative = &v
	}
	if opt.ResponseFormat != nil {
		rf := *opt.ResponseFormat
		rf.Schema = bytes.Clone(rf.Schema)
		opt.ResponseFormat = &rf
	}
	return opt
}

func optionError(option string, tool int, format string, args ...any) error {
	return &OptionError{Option: option, Tool: tool, Err: fmt.Errorf(format, args...)}
}

// checkOptions checks the options' ranges, the tools and the tool choice.
func (p *Prompt) checkOptions() error {
	opt := &p.opt
	switch {
	case opt.MaxTokens < 0:
		return optionError("MaxTokens", -1, "%d is negative", opt.MaxTokens)
	case opt.TopLogProbs < 0:
		return optionError("TopLogProbs", -1, "%d is negative", opt.TopLogProbs)
	case opt.ThinkingBudget < 0:
		return optionError("ThinkingBudget", -1, "%d is negative", opt.ThinkingBudget)
	case opt.Speculative != nil && opt.Speculative.MaxDraft < 0:
		return optionError("Speculative", -1, "MaxDraft %d is negative", opt.Speculative.MaxDraft)
	case opt.Speculative != nil && opt.Speculative.MTP && !p.m.HasMTP():
		return optionError("Speculative", -1, "MTP: %w", ErrNoMTP)
	}
	if err := checkSamplerOptions(opt.SamplerOptions); err != nil {
		return err
	}
	names := make(map[string]bool, len(opt.Tools))
	for i, t := range opt.Tools {
		if t.Name == "" {
			return optionError("Tools", i, "the tool has no name")
		}
		if names[t.Name] {
			return optionError("Tools", i, "%q is defined twice", t.Name)
		}
		names[t.Name] = true
	}
	mode := opt.ToolChoice.Mode
	switch mode {
	case "", ToolChoiceAuto, ToolChoiceNone:
	case ToolChoiceRequired:
		if len(opt.Tools) == 0 {
			return optionError("ToolChoice", -1, "required, but no tools are given")
		}
	case ToolChoiceFunction:
		if !names[opt.ToolChoice.Name] {
			return optionError("ToolChoice", -1, "function %q is not among the tools", opt.ToolChoice.Name)
		}
	default:
		return optionError("ToolChoice", -1, "unknown mode %q", mode)
	}
	p.enforced = mode == ToolChoiceRequired || mode == ToolChoiceFunction
	set := 0
	if p.enforced {
		set++
	}
	if opt.Grammar != "" {
		set++
	}
	if rf := opt.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", ResponseFormatText:
		case ResponseFormatJSONObject, ResponseFormatJSONSchema:
			set++
			if rf.Type == ResponseFormatJSONSchema && len(rf.Schema) == 0 {
				return &OptionError{Option: "ResponseFormat", Tool: -1, Err: &grammar.SchemaError{Keyword: "schema", Reason: "no schema given"}}
			}
		default:
			return optionError("ResponseFormat", -1, "unknown type %q", rf.Type)
		}
	}
	if set > 1 {
		which := "ResponseFormat"
		if opt.Grammar != "" {
			which = "Grammar"
		}
		return optionError(which, -1, "set at most one of Grammar, a JSON ResponseFormat and a required tool choice")
	}
	if len(opt.Tools) > 0 && mode != ToolChoiceNone {
		p.toolSchemas = make(map[string]json.RawMessage, len(opt.Tools))
		for _, t := range opt.Tools {
			p.toolSchemas[t.Name] = t.Parameters
		}
	}
	return nil
}

// compile compiles the grammar the options ask for, or finds it in the model's
// cache of grammars (see WithGrammarCache).
func (p *Prompt) compile() error {
	opt := &p.opt
	var (
		option string
		key    grammarKey
		build  func() (*grammar.Grammar, error)
	)
	switch rf := opt.ResponseFormat; {
	case p.enforced:
		return p.compileTools()
	case opt.Grammar != "":
		option, key = "Grammar", gbnfKey(opt.Grammar)
		build = func() (*grammar.Grammar, error) { return grammar.ParseGBNF(opt.Grammar) }
	case rf != nil && rf.Type == ResponseFormatJSONObject:
		// Any JSON object is the schema {"type":"object"}, and shares its grammar.
		option, key = "ResponseFormat", schemaKey(jsonObjectSchema, false)
		build = func() (*grammar.Grammar, error) {
			return grammar.CompileJSONSchema(jsonObjectSchema, grammar.SchemaOptions{})
		}
	case rf != nil && rf.Type == ResponseFormatJSONSchema:
		option, key = "ResponseFormat", schemaKey(rf.Schema, rf.Strict)
		build = func() (*grammar.Grammar, error) {
			return grammar.CompileJSONSchema(rf.Schema, grammar.SchemaOptions{Strict: rf.Strict})
		}
	default:
		return nil
	}
	g, err := p.m.grammarOf(key, build)
	if err != nil {
		return &OptionError{Option: option, Tool: -1, Err: err}
	}
	p.grammar = g
	return nil
}

// jsonObjectSchema is the schema of ResponseFormatJSONObject.
var jsonObjectSchema = []byte(`{"type":"object"}`)

// compileTools compiles the grammar of a required or named tool choice: one or more
// calls in Qwen3.5's markup, each function's parameters constrained by its schema. A
// schema the engine refuses names its tool, and the path within that tool's schema.
func (p *Prompt) compileTools() error {
	opt := &p.opt
	var fns []grammar.Function
	var index []int // the tool of each function
	for i, t := range opt.Tools {
		if opt.ToolChoice.Mode == ToolChoiceFunction && t.Name != opt.ToolChoice.Name {
			continue
		}
		fns = append(fns, grammar.Function{Name: t.Name, Parameters: t.Parameters})
		index = append(index, i)
	}
	parallel := opt.ParallelToolCalls == nil || *opt.ParallelToolCalls
	g, err := p.m.grammarOf(toolsKey(fns, parallel), func() (*grammar.Grammar, error) {
		return grammar.ToolCalls(fns, parallel)
	})
	if err == nil {
		p.grammar = g
		return nil
	}
	// The error names no tool unless its path begins /tools/<i>: then the tool at
	// fault is the first whose calls alone do not compile, and its error has the path
	// within its own schema.
	tool := -1
	if se, ok := errors.AsType[*SchemaError](err); ok {
		if rest, ok := strings.CutPrefix(se.Path, "/tools/"); ok {
			n, path, _ := strings.Cut(rest, "/")
			if i, e := strconv.Atoi(n); e == nil && i >= 0 && i < len(index) {
				tool = index[i]
				if path != "" {
					path = "/" + path
				}
				err = &SchemaError{Keyword: se.Keyword, Path: path, Reason: se.Reason}
			}
		}
	}
	for i := 0; tool < 0 && i < len(fns) && len(fns) > 1; i++ {
		prepcount.Compilations.Add(1)
		if _, e := grammar.ToolCalls(fns[i:i+1], parallel); e != nil {
			tool, err = index[i], e
		}
	}
	if tool < 0 && len(fns) == 1 {
		tool = index[0]
	}
	return &OptionError{Option: "Tools", Tool: tool, Err: err}
}

// tokenize turns the input into the prompt's tokens, and for a chat finds the
// boundaries of its messages.
func (p *Prompt) tokenize(in Input) error {
	m, tok := p.m, p.m.tok
	n := 0
	for _, set := range []bool{in.Text != "", len(in.Messages) > 0, len(in.Tokens) > 0} {
		if set {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("bonsai: %w: set one of Text, Messages and Tokens", ErrInvalidInput)
	}
	// bos reports whether text gets a BOS: when the vocabulary asks for one and the
	// text does not begin with it.
	bos := func(text string) bool {
		id, ok := tok.BOS()
		return ok && tok.AddBOS() && !strings.HasPrefix(text, tok.Piece(id))
	}
	encode := func(text string, parseSpecial bool) []int32 {
		prepcount.Tokenizations.Add(1)
		var ids []int32
		if bos(text) {
			id, _ := tok.BOS()
			ids = []int32{id}
		}
		return tok.AppendEncode(ids, text, parseSpecial)
	}
	switch {
	case len(in.Tokens) > 0:
		p.ids = slices.Clone(in.Tokens)
	case len(in.Messages) > 0:
		copt := ChatOptions{AddGenerationPrompt: true, EnableThinking: p.opt.Thinking, Tools: p.opt.Tools}
		text, err := m.renderChat(in.Messages, copt, &prepcount.Renders)
		if err != nil {
			return fmt.Errorf("bonsai: %w: %v", ErrInvalidInput, err)
		}
		p.ids = encode(text, true)
		p.findBoundaries(in.Messages, copt, text, encode)
	default:
		p.ids = encode(in.Text, p.opt.ParseSpecial)
		// As llama.cpp tokenizes a prompt with its special tokens added: EOS last when
		// the vocabulary asks for it (tokenizer.ggml.add_eos_token), unless the text
		// already ends with it. A chat rendering gets none: the template writes every
		// end-of-turn marker itself, and the generation prompt must end open.
		if id, ok := tok.EOS(); ok && tok.AddEOS() && (len(p.ids) == 0 || p.ids[len(p.ids)-1] != id) {
			p.ids = append(p.ids, id)
		}
	}
	if len(p.ids) == 0 {
		return fmt.Errorf("bonsai: %w: empty prompt", ErrInvalidInput)
	}
	vocab := int32(m.weights.Vocab())
	for i, id := range p.ids {
		if id < 0 || id >= vocab {
			return fmt.Errorf("bonsai: %w: prompt token %d at index %d out of range [0, %d)", ErrInvalidInput, id, i, vocab)
		}
	}
	if ctxSize := m.opts.ctxSize; len(p.ids) > ctxSize {
		return &PromptTooLongError{Tokens: len(p.ids), ContextSize: ctxSize}
	}
	return nil
}

// findBoundaries finds where the chat prompt's tokens end its first k messages, for
// each k (the whole conversation only, without a prefix cache to fill): where the
// rendering of those messages, without the generation prompt, is a prefix of the
// prompt's text and, in tokens too, of the prompt's tokens (a template may render an
// earlier turn differently once later ones follow; then there is none).
//
// The tokens are not encoded again when the head's end is provably a token boundary of
// the whole: the tokenizer cuts special tokens out of the text before it encodes the
// pieces between them, so when a special token of the prompt starts exactly where the
// head ends, the head's tokens are the prompt's tokens before it. The prompt's text is
// then the concatenation of its tokens' pieces (it is valid UTF-8), which locates that
// token.
func (p *Prompt) findBoundaries(msgs []Message, copt ChatOptions, text string, encode func(string, bool) []int32) {
	m, tok := p.m, p.m.tok
	copt.AddGenerationPrompt = false
	first := len(msgs)
	if m.prefix != nil {
		first = 1
	}
	// ends[i] is the byte offset in text where token i ends; valid only if the pieces
	// spell text.
	var ends []int
	if utf8.ValidString(text) {
		ends = make([]int, len(p.ids))
		at := 0
		start := 0
		if id, ok := tok.BOS(); ok && len(p.ids) > 0 && p.ids[0] == id && !strings.HasPrefix(text, tok.Piece(id)) {
			start = 1 // the BOS Prepare added is not in the text
		}
		for i := start; i < len(p.ids); i++ {
			at += len(tok.Piece(p.ids[i]))
			ends[i] = at
		}
		if at != len(text) {
			ends = nil
		}
	}
	for k := first; k <= len(msgs); k++ {
		head, err := m.renderChat(msgs[:k], copt, &prepcount.BoundaryRenders)
		if err != nil || head == "" || len(head) >= len(text) || !strings.HasPrefix(text, head) {
			continue
		}
		b := -1
		if ends != nil {
			// The token that starts at len(head): the one after the last to end there.
			i, found := slices.BinarySearch(ends, len(head))
			if found && i+1 < len(p.ids) && tok.IsSpecial(p.ids[i+1]) {
				b = i + 1
			}
		}
		if b < 0 {
			ids := encode(head, true)
			if len(ids) < len(p.ids) && slices.Equal(ids, p.ids[:len(ids)]) {
				b = len(ids)
			}
		}
		if b > 0 && (len(p.boundaries) == 0 || b > p.boundaries[len(p.boundaries)-1]) {
			p.boundaries = append(p.boundaries, b)
			if k == len(msgs) {
				p.checkpoint = b
			}
		}
	}
}
