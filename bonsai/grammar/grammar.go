// Package grammar is bonsai's constrained-decoding engine: a context-free grammar over
// bytes, compiled from a JSON Schema, a GBNF grammar or the tool-call syntax of Qwen3.5,
// and matched against a model's vocabulary token by token.
//
// A Grammar is a set of rules whose right-hand sides are sequences of byte classes and
// rule references. A Matcher runs it as a pushdown automaton: its state is the set of
// parse stacks alive after the bytes so far, hash-consed so that equal states are one
// number. The automaton is built lazily, a state and a byte class at a time, and
// remembered, so that after a few steps advancing over a byte is a table lookup; its
// byte classes are the partition of the 256 bytes that the grammar's terminals induce.
//
// Mask walks a Vocab — a trie of the tokens' bytes, in depth-first order — from the
// current state, skipping every subtree whose prefix the grammar rejects, and taking
// whole subtrees at once where the state loops on every byte they hold (the body of a
// JSON string, say). The mask of a state is remembered too: decoding revisits the same
// states (inside a string, between array items) and then the mask is a copy. This is
// the design of llguidance's token trie and XGrammar's per-state token cache, on a
// byte-level automaton rather than a lexer.
package grammar

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
)

// ErrDeadEnd is returned when no token can continue the output: the grammar cannot be
// completed with the vocabulary (never a hang).
var ErrDeadEnd = errors.New("grammar: no token can continue the output (dead end)")

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(b byte)      { s[b>>6] |= 1 << (b & 63) }
func (s *byteSet) has(b byte) bool { return s[b>>6]&(1<<(b&63)) != 0 }
func (s *byteSet) addRange(lo, hi byte) {
	for c := int(lo); c <= int(hi); c++ {
		s.add(byte(c))
	}
}
func (s byteSet) subsetOf(t byteSet) bool {
	return s[0]&^t[0] == 0 && s[1]&^t[1] == 0 && s[2]&^t[2] == 0 && s[3]&^t[3] == 0
}
func (s byteSet) empty() bool { return s[0]|s[1]|s[2]|s[3] == 0 }
func (s byteSet) count() int {
	return bits.OnesCount64(s[0]) + bits.OnesCount64(s[1]) + bits.OnesCount64(s[2]) + bits.OnesCount64(s[3])
}

func single(b byte) byteSet { var s byteSet; s.add(b); return s }

// elem kinds in the flat program.
const (
	kEnd  = 0 // end of an alternative
	kTerm = 1 // a byte class
	kRef  = 2 // a rule
	kRep  = 3 // a counted repetition of a rule
)

type elem struct {
	kind uint8
	arg  int32 // kTerm: set index; kRef: rule index; kRep: repetition index
}

// repSpec is a counted repetition: rule, min to max times (max < 0: unbounded, the
// count then stopping at min, all that matters once there). Its frames on a parse
// stack carry how many copies are done, so that a bound of 200 is one element of
// the program rather than 200 rules, and a state inside the repetition says how many
// copies are left (see textCounter).
type repSpec struct {
	rule     int32
	min, max int32
}

// Grammar is a compiled grammar. It is safe for concurrent use. Its matchers share
// one lazily built automaton — states, transitions, remembered masks — so that the
// second output of a schema finds most of its masks made by the first.
type Grammar struct {
	mu     sync.Mutex
	shared *automaton // where new matchers start; see (*Grammar).automaton
	// masks counts the masks its matchers made, coldMasks those walked rather
	// than remembered: see MaskStats.
	masks, coldMasks atomic.Int64

	prog  []elem    // alternatives, each ended by kEnd
	rules [][]int32 // rule → the program positions where its alternatives start
	reps  []repSpec
	names []string
	sets  []byteSet
	root  int32
	// class maps a byte to its class: bytes no terminal tells apart share one.
	class   [256]uint8
	classes int
	// classRep is a byte of each class.
	classRep []byte
}

// Rules is the number of rules, for diagnostics and limits.
func (g *Grammar) Rules() int { return len(g.rules) }

// MaskStats returns how many token masks the grammar's matchers have made
// (Matcher.Mask) and how many of them were cold: computed by a walk of the vocabulary,
// tens of microseconds to a millisecond, rather than copied from a mask the automaton
// the matchers share remembers, a few microseconds. For diagnostics: a grammar that
// serves many outputs should find most masks warm.
func (g *Grammar) MaskStats() (masks, cold int64) { return g.masks.Load(), g.coldMasks.Load() }

// builder assembles a Grammar.
type builder struct {
	alts   [][][]elem // rule → alternatives
	names  []string
	sets   []byteSet
	setIdx map[byteSet]int32
	reps   []repSpec
	size   int
	limit  int
}

func newBuilder() *builder {
	return &builder{setIdx: map[byteSet]int32{}, limit: 1 << 21}
}

var errTooLarge = errors.New("the grammar is too large")

func (b *builder) newRule(name string) int32 {
	b.alts = append(b.alts, nil)
	b.names = append(b.names, name)
	return int32(len(b.alts) - 1)
}

func (b *builder) addAlt(r int32, seq ...elem) {
	b.size += len(seq) + 1
	if b.size > b.limit {
		return // build reports it; nothing more is kept
	}
	b.alts[r] = append(b.alts[r], seq)
}

func (b *builder) term(s byteSet) elem {
	i, ok := b.setIdx[s]
	if !ok {
		i = int32(len(b.sets))
		b.sets = append(b.sets, s)
		b.setIdx[s] = i
	}
	return elem{kind: kTerm, arg: i}
}

func ref(r int32) elem { return elem{kind: kRef, arg: r} }

// lit is the sequence of a literal's bytes.
func (b *builder) lit(s string) []elem {
	out := make([]elem, len(s))
	for i := range len(s) {
		out[i] = b.term(single(s[i]))
	}
	return out
}

// seqRule is a new rule with the single alternative seq.
func (b *builder) seqRule(name string, seq ...elem) int32 {
	r := b.newRule(name)
	b.addAlt(r, seq...)
	return r
}

// star is a rule matching zero or more x (right-recursive: the stack does not grow).
func (b *builder) star(name string, x ...elem) int32 {
	r := b.newRule(name)
	b.addAlt(r, append(append([]elem{}, x...), ref(r))...)
	b.addAlt(r)
	return r
}

// repeat is a rule matching min to max copies of x (max < 0: unbounded): one
// counted element (kRep), whatever its bounds.
func (b *builder) repeat(name string, x []elem, min, max int) int32 {
	body := int32(-1)
	if len(x) == 1 && x[0].kind == kRef {
		body = x[0].arg
	} else {
		body = b.seqRule(name+"-x", x...)
	}
	b.reps = append(b.reps, repSpec{rule: body, min: int32(min), max: int32(max)})
	return b.seqRule(name, elem{kind: kRep, arg: int32(len(b.reps) - 1)})
}

// build flattens the rules into a Grammar with the given root.
func (b *builder) build(root int32) (*Grammar, error) {
	if b.size > b.limit {
		return nil, errTooLarge
	}
	g := &Grammar{root: root, names: b.names, sets: b.sets, reps: b.reps, rules: make([][]int32, len(b.alts))}
	for r, alts := range b.alts {
		for _, seq := range alts {
			g.rules[r] = append(g.rules[r], int32(len(g.prog)))
			g.prog = append(g.prog, seq...)
			g.prog = append(g.prog, elem{kind: kEnd})
		}
	}
	// Byte classes: bytes with the same membership in every set.
	sig := map[string]uint8{}
	for c := range 256 {
		key := make([]byte, 0, len(g.sets))
		for _, s := range g.sets {
			if s.has(byte(c)) {
				key = append(key, 1)
			} else {
				key = append(key, 0)
			}
		}
		id, ok := sig[string(key)]
		if !ok {
			id = uint8(len(sig))
			sig[string(key)] = id
			g.classRep = append(g.classRep, byte(c))
		}
		g.class[c] = id
	}
	g.classes = len(sig)
	if err := g.checkLeftRecursion(); err != nil {
		return nil, err
	}
	return g, nil
}

// nullable reports which rules match the empty string.
func (g *Grammar) nullable() []bool {
	null := make([]bool, len(g.rules))
	for changed := true; changed; {
		changed = false
		for r, alts := range g.rules {
			if null[r] {
				continue
			}
			for _, p := range alts {
				ok := true
				for ; g.prog[p].kind != kEnd; p++ {
					if !g.elemNullable(g.prog[p], null) {
						ok = false
						break
					}
				}
				if ok {
					null[r], changed = true, true
					break
				}
			}
		}
	}
	return null
}

// elemNullable reports whether e can match the empty string, given the rules' null.
func (g *Grammar) elemNullable(e elem, null []bool) bool {
	switch e.kind {
	case kRef:
		return null[e.arg]
	case kRep:
		rs := g.reps[e.arg]
		return rs.min == 0 || null[rs.rule]
	}
	return false
}

// checkLeftRecursion rejects a rule that can reach itself without reading a byte: the
// automaton's closure would not end.
func (g *Grammar) checkLeftRecursion() error {
	null := g.nullable()
	// first[r] lists the rules r can begin with (without reading a byte).
	first := make([][]int32, len(g.rules))
	for r, alts := range g.rules {
		for _, p := range alts {
			for ; g.prog[p].kind == kRef || g.prog[p].kind == kRep; p++ {
				e := g.prog[p]
				if e.kind == kRep {
					first[r] = append(first[r], g.reps[e.arg].rule)
				} else {
					first[r] = append(first[r], e.arg)
				}
				if !g.elemNullable(e, null) {
					break
				}
			}
		}
	}
	state := make([]uint8, len(g.rules)) // 0 new, 1 on the path, 2 done
	var visit func(r int32) error
	visit = func(r int32) error {
		state[r] = 1
		for _, s := range first[r] {
			switch state[s] {
			case 1:
				return fmt.Errorf("rule %s is left-recursive", g.names[s])
			case 0:
				if err := visit(s); err != nil {
					return err
				}
			}
		}
		state[r] = 2
		return nil
	}
	for r := range g.rules {
		if state[r] == 0 {
			if err := visit(int32(r)); err != nil {
				return err
			}
		}
	}
	return nil
}
