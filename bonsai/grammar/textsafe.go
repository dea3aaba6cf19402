package grammar

import "fmt"

// Text runs. Most of a vocabulary is text: inside a JSON string nearly every token is
// allowed, and walking the trie node by node to find that out is the mask's main cost.
// The vocabulary knows, for each trie node, whether every token below it continues
// with text only, and the most bytes it continues with — printable ASCII other than '"' and '\', and well-formed UTF-8, a
// character possibly cut at the token's end — read from a character boundary (the
// decoder below). A state knows whether every such text leaves it alive. Where both
// hold (a state's budget covering the subtree's longest continuation), the whole
// subtree is allowed without a walk. A bounded string (maxLength) has a budget too, so
// the shortcut serves there as well.

// The text decoder's states: tBoundary at a character boundary, one for each rest of
// a multi-byte row of utf8Rows (the byte ranges still to come), and dText when a byte
// is not text.
const (
	tBoundary = 0
	tStates   = 8 // tBoundary and the seven distinct rests of utf8Rows
	dText     = 0xFF
)

// textNext is the text decoder's transition, built from utf8Rows.
var textNext = func() (t [tStates][256]uint8) {
	for s := range t {
		for c := range t[s] {
			t[s][c] = dText
		}
	}
	for c := 0x20; c <= 0x7F; c++ {
		if c != '"' && c != '\\' {
			t[tBoundary][c] = tBoundary
		}
	}
	// A state per distinct rest of a row: rows sharing a rest share its state.
	rests := map[string]uint8{"": tBoundary}
	stateOf := func(rest [][2]byte) uint8 {
		key := fmt.Sprint(rest)
		if len(rest) == 0 {
			key = ""
		}
		if s, ok := rests[key]; ok {
			return s
		}
		s := uint8(len(rests))
		if int(s) >= tStates {
			panic("grammar: utf8Rows have more rests than tStates")
		}
		rests[key] = s
		return s
	}
	for _, row := range utf8Rows {
		from := uint8(tBoundary)
		for i, r := range row {
			to := stateOf(row[i+1:])
			for c := int(r[0]); c <= int(r[1]); c++ {
				t[from][c] = to
			}
			from = to
		}
	}
	if len(rests) != tStates {
		panic("grammar: utf8Rows have fewer rests than tStates")
	}
	return t
}()

// textSafe computes, for each trie node, the decoder states from which every token
// below it (from the node's byte on) is text: bit s set for state s.
func (v *Vocab) textSafe() {
	v.safe = make([]uint8, len(v.nbyte))
	v.rem = make([]uint16, len(v.nbyte))
	for i := len(v.nbyte) - 1; i >= 0; i-- {
		rem := uint16(1)
		for c := int32(i) + 1; c < v.end[i]; c = v.end[c] {
			rem = max(rem, v.rem[c]+1)
		}
		v.rem[i] = rem
		b := v.nbyte[i]
		var bitsOK uint8
		for s := range tStates {
			n := textNext[s][b]
			if n == dText {
				continue
			}
			ok := true
			for c := int32(i) + 1; c < v.end[i]; c = v.end[c] {
				if v.safe[c]&(1<<n) == 0 {
					ok = false
					break
				}
			}
			if ok {
				bitsOK |= 1 << s
			}
		}
		v.safe[i] = bitsOK
	}
}

// maxTextBudget caps textBudget: longer tokens are walked.
const maxTextBudget = 48

// textBudget returns how many bytes of text, read from state s (at a character
// boundary), surely leave the automaton alive: every text of at most that many bytes
// does — the length of the shortest text whose last byte kills s, less one, capped at
// maxTextBudget.
func (a *automaton) textBudget(s int32) int {
	st := &a.states[s]
	if st.budgetKnown {
		return int(st.budget)
	}
	budget := a.budgetOf(tBoundary, s, maxTextBudget)
	st = &a.states[s]
	st.budgetKnown, st.budget = true, uint8(budget)
	return budget
}

// budgetMemo is budgetOf's answer v for a pair, computed with the cap h (h = 0:
// unknown).
type budgetMemo struct{ v, h uint8 }

// budgetOf returns the budget of the pair (text decoder state d, automaton state s)
// capped at h: min(h, the length of the shortest text from d whose last byte kills s,
// less one). That is 0 where a text byte kills s, else min(h, 1 + the least capped
// at h-1 of the pairs a text byte leads to). Each pair remembers its answer, so the
// states of a bounded string, each a byte on from the last, share their work rather
// than each searching maxTextBudget bytes ahead anew; the cap keeps the recursion
// finite where text loops (an unbounded string) and maxTextBudget deep at most.
func (a *automaton) budgetOf(d uint8, s int32, h int) int {
	if h == 0 {
		return 0
	}
	k := int(s)*tStates + int(d)
	if len(a.budgets) <= k {
		a.budgets = append(a.budgets, make([]budgetMemo, k+1-len(a.budgets)+len(a.budgets)/2)...)
	}
	if m := a.budgets[k]; m.h != 0 && (m.v < m.h || h <= int(m.h)) {
		// v < h: the shortest killing text is known exactly; else it is at least
		// m.h long, which answers any cap up to m.h.
		return min(h, int(m.v))
	}
	reps := a.textReps()
	b := h
	for _, c := range reps {
		if textNext[d][c] != dText && a.step(s, c) == dead {
			b = 0
			break
		}
	}
	for _, c := range reps {
		if b == 0 {
			break
		}
		if nd := textNext[d][c]; nd != dText {
			b = min(b, 1+a.budgetOf(nd, a.step(s, c), h-1))
		}
	}
	if m := a.budgets[k]; h > int(m.h) {
		a.budgets[k] = budgetMemo{uint8(b), uint8(h)}
	}
	return b
}

// textReps returns a byte of each class of the partition that both the grammar's byte
// classes and the text decoder induce: bytes of one class act alike in both.
func (a *automaton) textReps() []byte {
	if a.reps == nil {
		seen := map[[tStates + 1]uint8]bool{}
		for c := range 256 {
			var k [tStates + 1]uint8
			for s := range tStates {
				k[s] = textNext[s][c]
			}
			k[tStates] = a.g.class[c]
			if !seen[k] {
				seen[k] = true
				a.reps = append(a.reps, byte(c))
			}
		}
	}
	return a.reps
}
