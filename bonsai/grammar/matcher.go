package grammar

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
)

// accept is the stack id of a finished parse.
const accept = -1

// dead is the state with no parse alive.
const dead = -1

// unknown marks a transition not computed yet.
const unknown = -2

// maxStates bounds a Matcher's automaton; a grammar that needs more is refused at run
// time with an error rather than exhausting memory.
const maxStates = 1 << 17

// stackNode is one frame of a parse stack: a program position, and the rest.
type stackNode struct {
	pos    int32
	parent int32 // stack id, or accept for the bottom
	count  int32 // at a kRep: the copies done once the one inside returns
}

type state struct {
	stacks []int32 // sorted stack ids: each top at a terminal, or accept
	loop   byteSet // the bytes on which the state goes to itself
	looped bool    // loop is computed
	accept bool
	// budget: see textBudget, when budgetKnown.
	budgetKnown bool
	budget      uint8
	mask        *maskForm // the remembered token mask, when computed
}

// automaton is the lazily built deterministic automaton of a grammar, shared by the
// matchers started on it: mu guards all of it.
type automaton struct {
	mu     sync.Mutex
	g      *Grammar
	nodes  []stackNode
	nodeID map[stackNode]int32
	states []state
	// trans[s*classes+c] is the state after a byte of class c from state s: a state,
	// dead, or unknown.
	trans []int32
	byKey map[string]int32
	// Remembered masks are of one vocabulary, the first a matcher asked with, and
	// take at most maxMaskBytes.
	maskVocab *Vocab
	maskBytes int

	reps    []byte       // see textReps
	budgets []budgetMemo // budgetOf's answers, by s*tStates+d
	// textCounter's answers by s*tStates+d, and the pairs on its search's path
	counters []counterMemo
	cstamp   []int32
	cepoch   int32
	// see countedText
	textChars map[int32]bool
	afterText map[[2]int32]bool
	scratch   []int32
	// stamps of textBudget's search
	epoch                 int32
	seenStamp, layerStamp []int32

	// scratch for closure
	seen   []uint32 // by node id: the closure that last saw a frame
	pass   uint32   // the current closure
	out    []int32
	keyBuf []byte
}

func newAutomaton(g *Grammar) *automaton {
	return &automaton{g: g, nodeID: map[stackNode]int32{}, byKey: map[string]int32{}, pass: 1}
}

func (a *automaton) node(pos, parent, count int32) int32 {
	k := stackNode{pos, parent, count}
	if id, ok := a.nodeID[k]; ok {
		return id
	}
	id := int32(len(a.nodes))
	a.nodes = append(a.nodes, k)
	a.nodeID[k] = id
	return id
}

// expand adds to a.out the stacks reached from position pos over parent without
// reading a byte: each with a terminal on top, or accept.
func (a *automaton) expand(pos, parent, count int32) {
	// Every frame the closure meets is interned, so that seen is a slice by id
	// rather than a second map: closures are most of a new state's cost.
	id := a.node(pos, parent, count)
	for len(a.seen) <= int(id) {
		a.seen = append(a.seen, 0)
	}
	if a.seen[id] == a.pass {
		return
	}
	a.seen[id] = a.pass
	e := a.g.prog[pos]
	switch e.kind {
	case kTerm:
		a.out = append(a.out, id)
	case kEnd:
		if parent == accept {
			a.out = append(a.out, accept)
			return
		}
		n := a.nodes[parent]
		a.expand(n.pos, n.parent, n.count)
	case kRef:
		np := parent
		if a.g.prog[pos+1].kind != kEnd { // not a tail call: remember where to go on
			np = a.node(pos+1, parent, 0)
		}
		for _, alt := range a.g.rules[e.arg] {
			a.expand(alt, np, 0)
		}
	case kRep:
		rs := a.g.reps[e.arg]
		if rs.max < 0 || count < rs.max {
			// Another copy, returning here with one more done.
			next := count + 1
			if rs.max < 0 {
				next = min(next, rs.min)
			}
			ret := a.node(pos, parent, next)
			for _, alt := range a.g.rules[rs.rule] {
				a.expand(alt, ret, 0)
			}
		}
		if count >= rs.min {
			a.expand(pos+1, parent, 0)
		}
	}
}

// intern returns the state of the stacks in a.out.
func (a *automaton) intern() (int32, error) {
	a.pass++
	if len(a.out) == 0 {
		return dead, nil
	}
	slices.Sort(a.out)
	a.out = slices.Compact(a.out)
	a.keyBuf = a.keyBuf[:0]
	for _, s := range a.out {
		a.keyBuf = binary.LittleEndian.AppendUint32(a.keyBuf, uint32(s))
	}
	if id, ok := a.byKey[string(a.keyBuf)]; ok {
		a.out = a.out[:0]
		return id, nil
	}
	if len(a.states) >= maxStates {
		return dead, fmt.Errorf("grammar: the automaton exceeds %d states", maxStates)
	}
	st := state{stacks: slices.Clone(a.out)}
	for range a.g.classes {
		a.trans = append(a.trans, unknown)
	}
	st.accept = st.stacks[0] == accept
	id := int32(len(a.states))
	a.states = append(a.states, st)
	a.byKey[string(a.keyBuf)] = id
	a.out = a.out[:0]
	return id, nil
}

func (a *automaton) start() (int32, error) {
	for _, alt := range a.g.rules[a.g.root] {
		a.expand(alt, accept, 0)
	}
	return a.intern()
}

// step returns the state after byte c from state s (dead when none).
func (a *automaton) step(s int32, c byte) int32 {
	t := int(s)*a.g.classes + int(a.g.class[c])
	if n := a.trans[t]; n != unknown {
		return n
	}
	for _, id := range a.states[s].stacks {
		if id == accept {
			continue
		}
		n := a.nodes[id]
		if a.g.sets[a.g.prog[n.pos].arg].has(c) {
			a.expand(n.pos+1, n.parent, 0)
		}
	}
	next, err := a.intern()
	if err != nil {
		next = dead // over the bound: refuse the byte; Mask reports the dead end
	}
	a.trans[t] = next
	return next
}

// loopSet returns the bytes on which state s goes to itself.
func (a *automaton) loopSet(s int32) byteSet {
	st := &a.states[s]
	if !st.looped {
		var l byteSet
		for cl := range a.g.classes {
			if a.step(s, a.g.classRep[cl]) == s {
				for c := range 256 {
					if int(a.g.class[c]) == cl {
						l.add(byte(c))
					}
				}
			}
		}
		st = &a.states[s]
		st.loop, st.looped = l, true
	}
	return st.loop
}

// Matcher follows the output of a generation through a grammar. It is not safe for
// concurrent use.
type Matcher struct {
	a      *automaton
	stk    []int32 // walk's scratch
	ranges []int32
	walked int      // trie nodes the last walk visited, for the benchmarks
	form   maskForm // the last walk's mask
	cur    int32
	err    error
}

// retireStates is the size at which a grammar's shared automaton is left to the
// matchers already on it and new matchers start a fresh one: however many outputs
// a grammar serves, an automaton stays well below maxStates.
const retireStates = maxStates / 4

// automaton returns the automaton a new matcher of g starts on.
func (g *Grammar) automaton() *automaton {
	g.mu.Lock()
	defer g.mu.Unlock()
	if a := g.shared; a != nil {
		a.mu.Lock()
		n := len(a.states)
		a.mu.Unlock()
		if n < retireStates {
			return a
		}
	}
	g.shared = newAutomaton(g)
	return g.shared
}

// NewMatcher returns a matcher at the start of the grammar. Matchers of one grammar
// share its automaton (each call on a matcher holds the automaton's lock), so that
// what one output builds serves the next; a Matcher itself is not safe for concurrent
// use.
func NewMatcher(g *Grammar) *Matcher {
	a := g.automaton()
	a.mu.Lock()
	s, err := a.start()
	a.mu.Unlock()
	if err == nil && s == dead {
		err = fmt.Errorf("grammar: the grammar matches nothing")
	}
	return &Matcher{a: a, cur: s, err: err}
}

// Clone returns a matcher at m's position: on the same shared automaton, in the same
// state, with scratch of its own. It is cheap (no state is copied but the position),
// so a caller can look ahead along a guess — a speculative draft — and discard the
// clone, leaving m where it was. The clone and m may be used by different goroutines.
func (m *Matcher) Clone() *Matcher {
	return &Matcher{a: m.a, cur: m.cur, err: m.err}
}

// Set moves m to src's position, as Clone would, keeping m's scratch: a matcher reused
// for look-ahead allocates nothing.
func (m *Matcher) Set(src *Matcher) {
	m.a, m.cur, m.err = src.a, src.cur, src.err
}

// Err reports a matcher that cannot go on.
func (m *Matcher) Err() error { return m.err }

// Accepting reports whether the output so far is a complete match.
func (m *Matcher) Accepting() bool {
	if m.cur < 0 {
		return false
	}
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	return m.a.states[m.cur].accept
}

// Done reports whether the output is complete and nothing may follow.
func (m *Matcher) Done() bool {
	if m.cur < 0 {
		return false
	}
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	st := &m.a.states[m.cur]
	return st.accept && len(st.stacks) == 1
}

// Accept advances over bytes, or reports that the grammar does not allow them (the
// matcher is then unchanged).
func (m *Matcher) Accept(b []byte) error {
	if m.err != nil {
		return m.err
	}
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	s := m.cur
	for i, c := range b {
		if s = m.a.step(s, c); s == dead {
			return fmt.Errorf("grammar: byte %d (%q) of %q is not allowed here", i, c, b)
		}
	}
	m.cur = s
	return nil
}

// AcceptToken advances over the bytes of token id.
func (m *Matcher) AcceptToken(v *Vocab, id int32) error {
	if int(id) >= len(v.bytesOf) || v.bytesOf[id] == nil {
		return fmt.Errorf("grammar: token %d is not allowed here", id)
	}
	return m.Accept(v.bytesOf[id])
}

// States is the number of states built so far in the automaton the matcher is on
// (shared with the grammar's other matchers).
func (m *Matcher) States() int {
	m.a.mu.Lock()
	defer m.a.mu.Unlock()
	return len(m.a.states)
}
