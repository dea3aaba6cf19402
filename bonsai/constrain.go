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
	eos []int32
	// blocked are tokens the grammar may spell but the mask leaves out: <think> and
	// </think> under a JSON or tool-call grammar, which the generator reads as markup
	// that switches the grammar off or on (inside a JSON string they ended the
	// constraint). A GBNF grammar may ask for them.
	blocked []int32
	mask    []uint64
	masked  []float32
}

// active reports whether the grammar masks this step: it constrains the answer, not a
// think block.
func (c *constraint) active(thinking bool) bool { return c != nil && c.g != nil && !thinking }

// newConstraint makes a generation's reading of calls and its matcher from p's
// immutable parts; Prepare checked and compiled them.
func newConstraint(p *Prompt) *constraint {
	c := &constraint{g: p.grammar}
	if p.toolSchemas != nil {
		c.stream = newToolStream(p.toolSchemas, p.enforced)
	}
	if c.g != nil {
		m := p.m
		c.v = m.grammarVocab()
		c.m = grammar.NewMatcher(c.g)
		c.eos = m.eogTokens()
		if p.opt.Grammar == "" {
			open, close := m.thinkIDs()
			for _, id := range []int32{open, close} {
				if id >= 0 {
					c.blocked = append(c.blocked, id)
				}
			}
		}
		c.mask = make([]uint64, (m.weights.Vocab()+63)/64)
		c.masked = make([]float32, m.weights.Vocab())
	}
	return c
}

// sample draws the next token from the logits masked by the grammar, with the
// sampler's settings. The end-of-generation tokens are allowed only where the grammar
// is complete. A mask with no token allowed is an error, not a hang.
func (c *constraint) sample(smp *Sampler, logits []float32) (int32, error) {
	masked, err := c.maskLogits(c.m, logits)
	if err != nil {
		return 0, err
	}
	return smp.Sample(masked), nil
}

// maskLogits returns the logits that a step at matcher m's position draws from: those
// the grammar allows there, the blocked tokens left out, the end-of-generation tokens
// let in where it is complete, and −Inf elsewhere. The slice is c's, valid until the
// next call. A mask with no token allowed is ErrDeadEnd. Speculation masks each
// drafted position with a clone of c.m, so that the model's tokens are checked
// against the distribution a plain step would draw from.
func (c *constraint) maskLogits(m *grammar.Matcher, logits []float32) ([]float32, error) {
	allowed := m.Mask(c.v, c.mask)
	for _, id := range c.blocked {
		if int(id) < len(logits) && c.mask[id>>6]&(1<<(id&63)) != 0 {
			c.mask[id>>6] &^= 1 << (id & 63)
			allowed--
		}
	}
	if m.Accepting() {
		for _, id := range c.eos {
			if int(id) < len(logits) {
				c.mask[id>>6] |= 1 << (id & 63)
				allowed++
			}
		}
	}
	if allowed == 0 {
		return nil, fmt.Errorf("bonsai: generate: %w", grammar.ErrDeadEnd)
	}
	ninf := float32(math.Inf(-1))
	for i, l := range logits {
		if c.mask[i>>6]&(1<<(i&63)) != 0 {
			c.masked[i] = l
		} else {
			c.masked[i] = ninf
		}
	}
	return c.masked, nil
}

// sampleThinking draws a token of a think block that an enforced answer follows: as the
// sampler draws it, but never an end-of-generation token or one of stops, which would
// end the reply before the answer.
func (c *constraint) sampleThinking(smp *Sampler, logits []float32, stops []int32) int32 {
	return smp.Sample(c.thinkingLogits(logits, stops))
}

// thinkingLogits returns the logits sampleThinking draws from: the end-of-generation
// tokens and stops at −Inf. The slice is c's, valid until the next call.
func (c *constraint) thinkingLogits(logits []float32, stops []int32) []float32 {
	copy(c.masked, logits)
	ninf := float32(math.Inf(-1))
	for _, ids := range [][]int32{c.eos, stops} {
		for _, id := range ids {
			if id >= 0 && int(id) < len(c.masked) {
				c.masked[id] = ninf
			}
		}
	}
	return c.masked
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

// eogTokens returns the tokenizer's end-of-generation tokens, which a grammar allows
// where it is complete.
func (m *Model) eogTokens() []int32 {
	var eos []int32
	for id := range int32(m.tok.Len()) {
		if m.tok.IsEndOfGeneration(id) {
			eos = append(eos, id)
		}
	}
	return eos
}
