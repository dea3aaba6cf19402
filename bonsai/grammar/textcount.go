package grammar

import (
	"math/bits"
	"slices"
)

// Counted text. Inside a JSON string bounded by maxLength, every position is an
// automaton state of its own, and without help each one's first mask walks most of the
// trie: the tokens that fit the characters left must be told from those that do not,
// node by node. But such a state treats text as a counter: every text of at most r
// characters leaves it alive and every longer one kills it at the first byte of its
// (r+1)-th character. Where a state is such a counter, a token made of text is allowed
// exactly when it starts at most r characters, which the vocabulary knows for every
// token without the automaton: the text tokens of at most r characters are one bitset
// per r (Vocab.textUpTo), and the walk visits only the trie nodes whose subtrees hold
// something other than text. The mask of a bounded string's position is then a copy
// and a short walk — the budget class of the issue this answers, held by the
// vocabulary rather than the grammar, so that every grammar gets it.
//
// A character is counted at its first byte (ASCII or a multi-byte lead), so a token
// ending inside a character has started it, as the grammar's repetition of characters
// has. Whether a state is a counter is decided on the automaton itself, over one byte
// of each class that the grammar and the text decoder tell apart (textReps), so no
// grammar's shape is assumed.

// counterMemo is textCounter's answer for a (state, decoder state) pair, computed with
// the cap h: kind cUnknown, cPure (r) or cImpure.
type counterMemo struct {
	kind uint8
	r, h uint8
}

const (
	cUnknown = iota
	cPure
	cImpure
)

// counterCycle is counterOf's answer when the same-cap search met a cycle.
const counterCycle = -2

// counterImpure is counterOf's answer for a state that is not a counter.
const counterImpure = -1

// textCounter returns r when state s (at a character boundary) is a counter capped at
// h: every text of at most r characters leaves it alive, and every text of r+1 to h
// characters kills it (r = h: every text of at most h characters leaves it alive). It
// returns -1 for a state that is not such a counter. h is at most 255.
func (a *automaton) textCounter(s int32, h int) int {
	k := int(s)*tStates + tBoundary
	if k < len(a.counters) {
		if r, ok := a.counters[k].answer(h); ok {
			return r
		}
	}
	if r, ok := a.countedText(s); ok {
		// Read off the state: no search, no state built.
		for len(a.counters) <= k {
			a.counters = append(a.counters, counterMemo{})
			a.cstamp = append(a.cstamp, 0)
		}
		if r < 255 {
			a.counters[k] = counterMemo{kind: cPure, r: uint8(r), h: 255}
		} else {
			a.counters[k] = counterMemo{kind: cPure, r: 255, h: 255}
		}
		return min(r, h)
	}
	// Same cap all the way down first: a bounded string's positions are then each
	// answered from the next one's memo. A text loop (an unbounded string) makes that
	// search circular; the capped search below ends because the cap falls with each
	// character.
	a.cepoch++
	if r := a.counterOf(tBoundary, s, h, true); r != counterCycle {
		return r
	}
	return a.counterOf(tBoundary, s, h, false)
}

// answer reports the memo's answer for cap h, if it holds one.
func (m counterMemo) answer(h int) (int, bool) {
	switch m.kind {
	case cPure:
		if m.r < m.h {
			// Exact: text of more than r characters dies at character r+1,
			// whatever the cap.
			return min(int(m.r), h), true
		}
		if h <= int(m.h) {
			return h, true
		}
	case cImpure:
		if h >= int(m.h) {
			return counterImpure, true
		}
	}
	return 0, false
}

// counterOf is textCounter for decoder state d. With same, the successors after a
// character's first byte are asked with the cap h rather than h-1 (their answer
// capped to h-1 is the same, and is remembered once for every position of a chain),
// and a pair met again on the search's path ends it with counterCycle. An impure
// answer is always safe: it only sends the walk the long way.
func (a *automaton) counterOf(d uint8, s int32, h int, same bool) int {
	if h == 0 {
		return 0 // no text of 1 to 0 characters: vacuously a counter
	}
	k := int(s)*tStates + int(d)
	if len(a.counters) <= k {
		n := k + 1 + len(a.counters)/2
		a.counters = append(a.counters, make([]counterMemo, n-len(a.counters))...)
		a.cstamp = append(a.cstamp, make([]int32, n-len(a.cstamp))...)
	}
	if r, ok := a.counters[k].answer(h); ok {
		return r
	}
	if same {
		if a.cstamp[k] == a.cepoch {
			return counterCycle
		}
		a.cstamp[k] = a.cepoch
		defer func() { a.cstamp[k] = 0 }()
	}
	// A first byte that dies beside one that lives is impure at once: decide it
	// before searching deeper, where the search could run to the cap.
	var dies, lives bool
	for _, c := range a.textReps() {
		if textNext[d][c] == dText {
			continue
		}
		if a.step(s, c) == dead {
			dies = true
		} else {
			lives = true
		}
	}
	if dies && (lives || d != tBoundary) {
		// (A character's later byte may not die: it was counted at its lead.)
		if old := a.counters[k]; old.kind == cUnknown {
			a.counters[k] = counterMemo{kind: cImpure, h: 1}
		}
		return counterImpure
	}
	r := -1 // the count every text byte agrees on; -1: none yet
	agree := func(v int) bool {
		if r < 0 {
			r = v
		}
		return r == v
	}
	impure := false
	for _, c := range a.textReps() {
		nd := textNext[d][c]
		if nd == dText {
			continue
		}
		lead := c&0xC0 != 0x80
		next := a.step(s, c)
		var v int
		switch {
		case next == dead && lead:
			v = 0 // the first character already dies
		case next == dead:
			impure = true // a started character cannot end: not text-shaped
		case lead:
			var sub int
			if same {
				sub = a.counterOf(nd, next, h, true)
				if sub == counterCycle {
					return counterCycle
				}
				if sub >= 0 {
					sub = min(sub, h-1)
				}
			} else {
				sub = a.counterOf(nd, next, h-1, false)
			}
			if sub < 0 {
				impure = true
			} else {
				v = 1 + sub
			}
		default:
			sub := a.counterOf(nd, next, h, same)
			if sub == counterCycle {
				return counterCycle
			}
			if sub < 0 {
				impure = true
			} else {
				v = sub
			}
		}
		if impure || !agree(v) {
			impure = true
			break
		}
	}
	memo := counterMemo{kind: cPure, r: uint8(max(r, 0)), h: uint8(h)}
	if impure || r < 0 {
		memo, r = counterMemo{kind: cImpure, h: uint8(h)}, counterImpure
	}
	if old := a.counters[k]; old.kind == cUnknown || memo.h > old.h || memo.kind == cPure && memo.r < memo.h {
		a.counters[k] = memo
	}
	return r
}

// counterCap is the cap the walk asks textCounter with: one more than the most
// characters a token of v starts, so that r = the cap allows every text token.
func (v *Vocab) counterCap() int { return min(v.maxChars, 254) + 1 }

// textUpTo returns the mask of the tokens made wholly of text (from a character
// boundary) that start at most r characters, and how many they are; r is at most
// v.counterCap()-1.
func (v *Vocab) textUpTo(r int) ([]uint64, int) {
	v.textOnce.Do(func() {
		top := v.counterCap() - 1
		v.textMasks = make([][]uint64, top+1)
		v.textCounts = make([]int, top+1)
		words := (v.size + 63) / 64
		byLead := make([][]int32, top+1)
		for k, id := range v.order {
			if v.ordText[k] && int(v.ordLead[k]) <= top {
				byLead[v.ordLead[k]] = append(byLead[v.ordLead[k]], id)
			}
		}
		cur := make([]uint64, words)
		n := 0
		for r := 0; r <= top; r++ {
			for _, id := range byLead[r] {
				cur[id>>6] |= 1 << (id & 63)
			}
			n += len(byLead[r])
			v.textMasks[r] = append([]uint64(nil), cur...)
			v.textCounts[r] = n
		}
	})
	return v.textMasks[r], v.textCounts[r]
}

// countText fills the vocabulary's per-node character counts: lead[i], the characters
// the path to node i starts; maxLead[i], the most any token below i starts; allText[i],
// whether every token below i is text from a boundary; and ordLead/ordText by
// depth-first token position.
func (v *Vocab) countText() {
	n := len(v.nbyte)
	v.lead = make([]uint16, n)
	v.maxLead = make([]uint16, n)
	v.allText = make([]bool, n)
	v.ordLead = make([]uint16, len(v.order))
	v.ordText = make([]bool, len(v.order))
	path := make([]uint8, v.maxDepth+1) // decoder state after the path, by depth
	lead := make([]uint16, v.maxDepth+1)
	path[0] = tBoundary
	for i := range n {
		d := v.depth[i]
		c := v.nbyte[i]
		ds := uint8(dText)
		if path[d-1] != dText {
			ds = textNext[path[d-1]][c]
		}
		path[d] = ds
		lead[d] = lead[d-1]
		if c&0xC0 != 0x80 {
			lead[d]++
		}
		v.lead[i] = lead[d]
		for k := v.tokLo[i]; k < v.tokAt[i]; k++ {
			v.ordLead[k] = lead[d]
			v.ordText[k] = ds != dText
			v.maxChars = max(v.maxChars, int(lead[d]))
		}
	}
	// Subtree maxima, children before parents.
	for i := n - 1; i >= 0; i-- {
		ml := uint16(0)
		all := true
		for k := v.tokLo[i]; k < v.tokAt[i]; k++ {
			ml = max(ml, v.ordLead[k])
			all = all && v.ordText[k]
		}
		for c := int32(i) + 1; c < v.end[i]; c = v.end[c] {
			ml = max(ml, v.maxLead[c])
			all = all && v.allText[c]
		}
		v.maxLead[i], v.allText[i] = ml, all
	}
}

// popcountWords is the number of bits set in w.
func popcountWords(w []uint64) int {
	n := 0
	for _, x := range w {
		n += bits.OnesCount64(x)
	}
	return n
}

// textLead is the bytes a text begins with: ASCII text and multi-byte leads.
var textLead = func() (s byteSet) {
	for c := range 256 {
		if textNext[tBoundary][c] != dText {
			s.add(byte(c))
		}
	}
	return s
}()

func (s byteSet) meets(t byteSet) bool {
	return s[0]&t[0] != 0 || s[1]&t[1] != 0 || s[2]&t[2] != 0 || s[3]&t[3] != 0
}

// unboundedText is countedText's answer for a repetition without a bound.
const unboundedText = 1 << 30

// countedText reads textCounter's answer off the state where its shape gives it: every
// stack that can take a text byte starts a copy of a text-character rule (textChar)
// inside one counted repetition, after which no text can follow (the closing quote of a
// string). Each character of text is then one copy, and the copies left are the answer;
// a state where no stack takes a text byte is a counter at 0. Other shapes report false.
func (a *automaton) countedText(s int32) (int, bool) {
	g := a.g
	frame := int32(-1)
	for _, id := range a.states[s].stacks {
		if id == accept {
			continue
		}
		n := a.nodes[id]
		if !g.sets[g.prog[n.pos].arg].meets(textLead) {
			continue
		}
		if n.parent == accept || frame >= 0 && n.parent != frame {
			return 0, false
		}
		frame = n.parent
	}
	if frame < 0 {
		return 0, true
	}
	f := a.nodes[frame]
	if g.prog[f.pos].kind != kRep {
		return 0, false
	}
	rs := g.reps[g.prog[f.pos].arg]
	if !a.textChar(rs.rule) || a.textAfter(f.pos, f.parent) {
		return 0, false
	}
	// Every text stack must start an alternative of the rule: one in the middle
	// of a character is not this shape.
	for _, id := range a.states[s].stacks {
		if id == accept {
			continue
		}
		n := a.nodes[id]
		if g.sets[g.prog[n.pos].arg].meets(textLead) && !slices.Contains(g.rules[rs.rule], n.pos) {
			return 0, false
		}
	}
	if rs.max < 0 {
		return unboundedText, true
	}
	// The frame counts the copy under way: copies left, it included.
	return int(rs.max - f.count + 1), true
}

// textChar reports whether rule matches, among the strings that begin with a text
// byte, exactly the text characters, each wholly: alternatives of byte classes only,
// each class sequence beginning with text spelling one complete character whatever
// bytes it takes, and every character spelled (ASCII by one-byte alternatives, each
// row of utf8Rows by an alternative that holds it).
func (a *automaton) textChar(rule int32) bool {
	if v, ok := a.textChars[rule]; ok {
		return v
	}
	if a.textChars == nil {
		a.textChars = map[int32]bool{}
	}
	g := a.g
	ok := func() bool {
		var ascii byteSet
		rows := make([]bool, len(utf8Rows))
		for _, p := range g.rules[rule] {
			var seq []byteSet
			for ; g.prog[p].kind != kEnd; p++ {
				if g.prog[p].kind != kTerm {
					return false
				}
				seq = append(seq, g.sets[g.prog[p].arg])
			}
			if len(seq) == 0 {
				return false // a copy of nothing: text would not be counted
			}
			if !seq[0].meets(textLead) {
				continue
			}
			if !seq[0].subsetOf(textLead) {
				return false
			}
			// The decoder states every string of the sequence can be in.
			at := uint16(1 << tBoundary)
			for i, set := range seq {
				var next uint16
				for d := range tStates {
					if at&(1<<d) == 0 {
						continue
					}
					for c := range 256 {
						if set.has(byte(c)) {
							t := textNext[d][c]
							if t == dText {
								return false
							}
							next |= 1 << t
						}
					}
				}
				if i < len(seq)-1 && next&(1<<tBoundary) != 0 {
					return false // a character ends before the alternative
				}
				at = next
			}
			if at != 1<<tBoundary {
				return false
			}
			if len(seq) == 1 {
				for w := range ascii {
					ascii[w] |= seq[0][w]
				}
				continue
			}
			for r, row := range utf8Rows {
				if len(row) != len(seq) {
					continue
				}
				holds := true
				for i, rg := range row {
					var want byteSet
					want.addRange(rg[0], rg[1])
					holds = holds && want.subsetOf(seq[i])
				}
				rows[r] = rows[r] || holds
			}
		}
		var want byteSet
		for c := range 0x80 {
			if textNext[tBoundary][c] == tBoundary {
				want.add(byte(c))
			}
		}
		if !want.subsetOf(ascii) {
			return false
		}
		for _, r := range rows {
			if !r {
				return false
			}
		}
		return true
	}()
	a.textChars[rule] = ok
	return ok
}

// textAfter reports whether anything after the repetition at pos (under parent) can
// take a text byte first.
func (a *automaton) textAfter(pos, parent int32) bool {
	key := [2]int32{pos, parent}
	if v, ok := a.afterText[key]; ok {
		return v
	}
	if a.afterText == nil {
		a.afterText = map[[2]int32]bool{}
	}
	saved := a.out
	a.out = a.scratch[:0]
	a.pass++
	a.expand(pos+1, parent, 0)
	a.pass++
	text := false
	for _, id := range a.out {
		if id != accept && a.g.sets[a.g.prog[a.nodes[id].pos].arg].meets(textLead) {
			text = true
		}
	}
	a.scratch, a.out = a.out, saved
	a.afterText[key] = text
	return text
}
