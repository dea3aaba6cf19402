package grammar

// Text runs. Most of a vocabulary is text: inside a JSON string nearly every token is
// allowed, and walking the trie node by node to find that out is the mask's main cost.
// The vocabulary knows, for each trie node, whether every token below it continues
// with text only, and the most bytes it continues with — printable ASCII other than '"' and '\', and well-formed UTF-8, a
// character possibly cut at the token's end — read from a character boundary (the
// decoder below). A state knows whether every such text leaves it alive. Where both
// hold (a state's budget covering the subtree's longest continuation), the whole
// subtree is allowed without a walk. A bounded string (maxLength) has a budget too, so
// the shortcut serves there as well.

// The text decoder's states: 0 at a character boundary, the others inside a multi-byte
// character (Unicode's table 3-7), dText when the byte is not text.
const (
	tBoundary = iota
	tNeed1
	tNeed2
	tNeed3
	tAfterE0
	tAfterED
	tAfterF0
	tAfterF4
	tStates
	dText = 0xFF
)

// textNext is the text decoder's transition.
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
	set := func(s int, lo, hi int, to uint8) {
		for c := lo; c <= hi; c++ {
			t[s][c] = to
		}
	}
	set(tBoundary, 0xC2, 0xDF, tNeed1)
	set(tBoundary, 0xE0, 0xE0, tAfterE0)
	set(tBoundary, 0xE1, 0xEC, tNeed2)
	set(tBoundary, 0xED, 0xED, tAfterED)
	set(tBoundary, 0xEE, 0xEF, tNeed2)
	set(tBoundary, 0xF0, 0xF0, tAfterF0)
	set(tBoundary, 0xF1, 0xF3, tNeed3)
	set(tBoundary, 0xF4, 0xF4, tAfterF4)
	set(tNeed1, 0x80, 0xBF, tBoundary)
	set(tNeed2, 0x80, 0xBF, tNeed1)
	set(tNeed3, 0x80, 0xBF, tNeed2)
	set(tAfterE0, 0xA0, 0xBF, tNeed1)
	set(tAfterED, 0x80, 0x9F, tNeed1)
	set(tAfterF0, 0x90, 0xBF, tNeed2)
	set(tAfterF4, 0x80, 0x8F, tNeed2)
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
// does. It searches the pairs (decoder state, automaton state) layer by layer; a layer
// that brings no new pair means every text does (maxTextBudget).
func (a *automaton) textBudget(s int32) int {
	st := &a.states[s]
	if st.budgetKnown {
		return int(st.budget)
	}
	budget, ok := a.budgetOf(tBoundary, s, 0)
	if !ok {
		budget = a.textBudgetSearch(s)
	}
	st = &a.states[s]
	st.budgetKnown, st.budget = true, uint8(budget)
	return budget
}

// maxBudgetDepth bounds budgetOf's recursion: a longer chain of text (a string of
// more than this many bytes left) is left to the layered search.
const maxBudgetDepth = 320

// budgetOf returns the budget of the pair (decoder state d, automaton state s): 0
// where a text byte kills s, else one more than the least budget of the pairs a text
// byte leads to, capped at maxTextBudget. That is the layered search's answer (the
// length of the shortest killing text, less one), but each pair's is remembered, so
// the states of a bounded string, each one byte on from the last, share their work
// instead of each searching maxTextBudget layers ahead. The recursion assumes the
// pairs reached form no cycle; it reports false where one does (text looping in a
// state, as in an unbounded string) or where it runs deeper than maxBudgetDepth, and
// the caller searches instead.
func (a *automaton) budgetOf(d uint8, s int32, depth int) (int, bool) {
	k := int(s)*tStates + int(d)
	if len(a.budgetMemo) <= k {
		a.budgetMemo = append(a.budgetMemo, make([]uint8, k+1-len(a.budgetMemo)+len(a.budgetMemo)/2)...)
	}
	switch m := a.budgetMemo[k]; {
	case m >= 2:
		return int(m - 2), true
	case m == 1: // on the recursion's path: a cycle
		return 0, false
	}
	if depth > maxBudgetDepth {
		return 0, false
	}
	reps := a.textReps()
	// A killing byte settles it before any recursion (and before a looping byte,
	// such as a space between values, would report a cycle).
	for _, c := range reps {
		if textNext[d][c] != dText && a.step(s, c) == dead {
			a.budgetMemo[k] = 2
			return 0, true
		}
	}
	a.budgetMemo[k] = 1
	b := maxTextBudget
	for _, c := range reps {
		nd := textNext[d][c]
		if nd == dText {
			continue
		}
		sub, ok := a.budgetOf(nd, a.step(s, c), depth+1)
		if !ok {
			a.budgetMemo[k] = 0
			return 0, false
		}
		b = min(b, sub+1)
	}
	a.budgetMemo[k] = uint8(b + 2)
	return b, true
}

// textBudgetSearch is textBudget by a search of the pairs (decoder state, automaton
// state) layer by layer.
func (a *automaton) textBudgetSearch(s int32) int {
	type pair struct {
		d uint8
		s int32
	}
	a.epoch++
	seen := func(p pair, layer int32) (first, inLayer bool) {
		k := int(p.s)*tStates + int(p.d)
		for len(a.seenStamp) <= k {
			a.seenStamp = append(a.seenStamp, 0)
			a.layerStamp = append(a.layerStamp, 0)
		}
		first = a.seenStamp[k] != a.epoch
		inLayer = a.layerStamp[k] == a.epoch*64+layer
		a.seenStamp[k], a.layerStamp[k] = a.epoch, a.epoch*64+layer
		return first, inLayer
	}
	cur := []pair{{tBoundary, s}}
	seen(cur[0], 0)
	budget := maxTextBudget
	reps := a.textReps()
search:
	for layer := int32(1); layer <= maxTextBudget; layer++ {
		var next []pair
		fresh := false
		for _, p := range cur {
			for _, c := range reps {
				d := textNext[p.d][c]
				if d == dText {
					continue
				}
				n := a.step(p.s, c)
				if n == dead {
					budget = int(layer) - 1
					break search
				}
				q := pair{d, n}
				first, inLayer := seen(q, layer)
				if !inLayer {
					next = append(next, q)
				}
				fresh = fresh || first
			}
		}
		if !fresh {
			break // nothing new: the layers repeat
		}
		cur = next
	}
	return budget
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
