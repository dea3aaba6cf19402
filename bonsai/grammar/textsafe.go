package grammar

// Text runs. Most of a vocabulary is text: inside a JSON string nearly every token is
// allowed, and walking the trie node by node to find that out is the mask's main cost.
// The vocabulary knows, for each trie node, whether every token below it continues
// with text only — printable ASCII other than '"' and '\', and well-formed UTF-8, a
// character possibly cut at the token's end — read from a character boundary (the
// decoder below). A state knows whether every such text leaves it alive. Where both
// hold, the whole subtree is allowed without a walk.

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
	for i := len(v.nbyte) - 1; i >= 0; i-- {
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

// maxTextPairs bounds the search of textAlive.
const maxTextPairs = 256

// textAlive reports whether every text read from state s (at a character boundary)
// leaves the automaton alive: the pairs (decoder state, automaton state) reachable
// over text never meet a dead automaton state.
func (a *automaton) textAlive(s int32) bool {
	st := &a.states[s]
	if st.textKnown {
		return st.textAlive
	}
	type pair struct {
		d uint8
		s int32
	}
	seen := map[pair]bool{{tBoundary, s}: true}
	queue := []pair{{tBoundary, s}}
	alive := true
	for len(queue) > 0 && alive {
		p := queue[0]
		queue = queue[1:]
		for _, c := range a.textReps() {
			d := textNext[p.d][c]
			if d == dText {
				continue
			}
			n := a.step(p.s, c)
			if n == dead {
				alive = false
				break
			}
			q := pair{d, n}
			if !seen[q] {
				if len(seen) >= maxTextPairs {
					alive = false
					break
				}
				seen[q] = true
				queue = append(queue, q)
			}
		}
	}
	st = &a.states[s]
	st.textKnown, st.textAlive = true, alive
	return alive
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
