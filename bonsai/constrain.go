package bonsai

import (
	"fmt"
	"math"

	"github.com/bonsai-go/sdk/bonsai/grammar"
	"github.com/bonsai-go/sdk/bonsai/tokenizer"
)

// constraint is a generation's tool-call reading and constrained decoding.
type constraint struct {
	stream *toolStream // nil: no tools to read
	g      *grammar.Grammar
	m      *grammar.Matcher
	v      *grammar.Vocab
	// eos are the tokens allowed when the grammar is complete.
	eos    []int32
	mask   []uint64
	masked []float32
}

// active reports whether the grammar masks this step: it constrains the answer, not a
// think block.
func (c *constraint) active(thinking bool) bool { return c != nil && c.g != nil && !thinking }

// prepareTools checks the tool options and compiles the grammar they ask for. Nothing
// runs before it: a bad schema is the generation's first and only report.
func (g *Generation) prepareTools() (*constraint, error) {
	opt := &g.opt
	c := &constraint{}
	names := make(map[string]bool, len(opt.Tools))
	for i, t := range opt.Tools {
		if t.Name == "" {
			return nil, fmt.Errorf("%w: tool %d has no name", errToolChoice, i)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("%w: tool %q defined twice", errToolChoice, t.Name)
		}
		names[t.Name] = true
	}
	mode := opt.ToolChoice.Mode
	switch mode {
	case "", ToolChoiceAuto, ToolChoiceNone:
	case ToolChoiceRequired:
		if len(opt.Tools) == 0 {
			return nil, fmt.Errorf("%w: required, but no tools are given", errToolChoice)
		}
	case ToolChoiceFunction:
		if !names[opt.ToolChoice.Name] {
			return nil, fmt.Errorf("%w: function %q is not among the tools", errToolChoice, opt.ToolChoice.Name)
		}
	default:
		return nil, fmt.Errorf("%w: unknown mode %q", errToolChoice, mode)
	}
	enforced := mode == ToolChoiceRequired || mode == ToolChoiceFunction
	set := 0
	if enforced {
		set++
	}
	if opt.Grammar != "" {
		set++
	}
	if rf := opt.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object", "json_schema":
			set++
			if rf.Type == "json_schema" && len(rf.Schema) == 0 {
				return nil, fmt.Errorf("bonsai: response_format json_schema: %w", &grammar.SchemaError{Keyword: "schema", Reason: "no schema given"})
			}
		default:
			return nil, fmt.Errorf("bonsai: response_format: unknown type %q", rf.Type)
		}
	}
	if set > 1 {
		return nil, fmt.Errorf("bonsai: generate: set at most one of Grammar, a JSON ResponseFormat and a required tool choice")
	}
	if len(opt.Tools) > 0 && mode != ToolChoiceNone {
		c.stream = newToolStream(opt.Tools, enforced)
	}
	var err error
	switch {
	case enforced:
		c.g, err = toolGrammar(opt)
	case opt.Grammar != "":
		c.g, err = grammar.ParseGBNF(opt.Grammar)
	case opt.ResponseFormat != nil && opt.ResponseFormat.Type == "json_object":
		c.g, err = grammar.CompileJSONSchema([]byte(`{"type":"object"}`), grammar.SchemaOptions{})
	case opt.ResponseFormat != nil && opt.ResponseFormat.Type == "json_schema":
		c.g, err = grammar.CompileJSONSchema(opt.ResponseFormat.Schema, grammar.SchemaOptions{Strict: opt.ResponseFormat.Strict})
	}
	if err != nil {
		return nil, fmt.Errorf("bonsai: %w", err)
	}
	if c.g != nil {
		m := g.s.m
		c.v = m.grammarVocab()
		c.m = grammar.NewMatcher(c.g)
		for id := range int32(m.tok.Len()) {
			if m.tok.IsEndOfGeneration(id) {
				c.eos = append(c.eos, id)
			}
		}
		c.mask = make([]uint64, (m.weights.Vocab()+63)/64)
		c.masked = make([]float32, m.weights.Vocab())
	}
	return c, nil
}

// toolGrammar is the grammar of a required or named tool choice: one or more calls in
// Qwen3.5's markup, each function's parameters constrained by its schema.
func toolGrammar(opt *GenerateOptions) (*grammar.Grammar, error) {
	var fns []grammar.Function
	for _, t := range opt.Tools {
		if opt.ToolChoice.Mode == ToolChoiceFunction && t.Name != opt.ToolChoice.Name {
			continue
		}
		fns = append(fns, grammar.Function{Name: t.Name, Parameters: t.Parameters})
	}
	parallel := opt.ParallelToolCalls == nil || *opt.ParallelToolCalls
	return grammar.ToolCalls(fns, parallel)
}

// sample draws the next token from the logits masked by the grammar, with the
// sampler's settings. The end-of-generation tokens are allowed only where the grammar
// is complete. A mask with no token allowed is an error, not a hang.
func (c *constraint) sample(smp *Sampler, logits []float32) (int32, error) {
	allowed := c.m.Mask(c.v, c.mask)
	if c.m.Accepting() {
		for _, id := range c.eos {
			if int(id) < len(logits) {
				c.mask[id>>6] |= 1 << (id & 63)
				allowed++
			}
		}
	}
	if allowed == 0 {
		return 0, fmt.Errorf("bonsai: generate: %w", grammar.ErrDeadEnd)
	}
	ninf := float32(math.Inf(-1))
	for i, l := range logits {
		if c.mask[i>>6]&(1<<(i&63)) != 0 {
			c.masked[i] = l
		} else {
			c.masked[i] = ninf
		}
	}
	return smp.Sample(c.masked), nil
}

// accept advances the grammar over the token drawn, when it constrained the step.
func (c *constraint) accept(id int32, thinking bool) error {
	if !c.active(thinking) {
		return nil
	}
	if err := c.m.AcceptToken(c.v, id); err != nil {
		return fmt.Errorf("bonsai: generate: %w", err)
	}
	return nil
}

// grammarVocab returns the model's vocabulary prepared for masking, built on first use
// and shared by every session. Control tokens are never allowed by a grammar (the
// end-of-generation ones are added where it is complete); user-defined tokens
// (<tool_call>, <think>) stand for their text.
func (m *Model) grammarVocab() *grammar.Vocab {
	m.vocabOnce.Do(func() {
		t := m.tok
		m.vocab = grammar.NewVocab(m.weights.Vocab(), func(id int32) ([]byte, bool) {
			if int(id) >= t.Len() || t.IsEndOfGeneration(id) || (t.IsSpecial(id) && t.Type(id) != tokenizer.UserDefined) {
				return nil, false
			}
			return []byte(t.Piece(id)), true
		})
	})
	return m.vocab
}
