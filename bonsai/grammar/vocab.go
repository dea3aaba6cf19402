package grammar

import (
	"slices"
	"sort"
	"sync"
)

// Vocab is a model vocabulary prepared for masking: a trie of the tokens' bytes laid out
// in depth-first order. It is immutable and safe for concurrent use.
type Vocab struct {
	size    int      // ids are in [0, size)
	bytesOf [][]byte // token id → its bytes (nil: never allowed by a grammar)

	// Trie nodes in depth-first order, what the walk reads of each (see hotNode);
	// the arrays below it build it and are dropped then.
	hot []hotNode
	// mixed are the nodes of hot outside every text-only subtree (ends renumbered),
	// mixedOrig their indices in hot: a walk from a state that counts text reads
	// only these.
	mixed     []hotNode
	mixedOrig []int32
	// Node i's subtree is [i, end[i]).
	nbyte []byte
	depth []uint16
	end   []int32
	sub   []byteSet // the bytes of node i and all below it
	safe  []uint8   // see textSafe
	all   []uint64  // the mask of every token in the trie
	rem   []uint16  // the most bytes a token continues with from node i, its byte included
	// Tokens in depth-first order: order[tokLo[i]:tokAt[i]] end at node i,
	// order[tokLo[i]:subHi[i]] end in its subtree.
	order               []int32
	tokLo, tokAt, subHi []int32
	maxDepth            int

	// Character counts, see countText.
	lead, maxLead []uint16
	allText       []bool
	ordLead       []uint16
	ordText       []bool
	maxChars      int
	textOnce      sync.Once
	textMasks     [][]uint64 // see textUpTo
	textCounts    []int
}

// NewVocab prepares a vocabulary of size tokens. pieces[id] is the bytes token id
// stands for; a token with ok false (control tokens, say) or no bytes is never allowed
// by a grammar (a caller allows end-of-generation tokens itself where a grammar is
// complete).
func NewVocab(size int, piece func(id int32) (b []byte, ok bool)) *Vocab {
	v := &Vocab{size: size, bytesOf: make([][]byte, size)}
	ids := make([]int32, 0, size)
	for id := range int32(size) {
		if b, ok := piece(id); ok && len(b) > 0 && len(b) < 1<<16 {
			v.bytesOf[id] = slices.Clone(b)
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := v.bytesOf[ids[i]], v.bytesOf[ids[j]]
		if c := slices.Compare(a, b); c != 0 {
			return c < 0
		}
		return ids[i] < ids[j]
	})
	// In sorted order a token's prefixes come before it: build the trie with a path
	// stack. A token ends at the node of its last byte.
	type open struct{ node int32 }
	var path []open
	for _, id := range ids {
		b := v.bytesOf[id]
		// Keep the common prefix of the path and b.
		k := 0
		for k < len(path) && k < len(b) && v.nbyte[path[k].node] == b[k] {
			k++
		}
		for len(path) > k {
			v.closeNode(path[len(path)-1].node)
			path = path[:len(path)-1]
		}
		for ; k < len(b); k++ {
			n := int32(len(v.nbyte))
			v.nbyte = append(v.nbyte, b[k])
			v.depth = append(v.depth, uint16(k+1))
			v.end = append(v.end, 0)
			v.sub = append(v.sub, single(b[k]))
			v.tokLo = append(v.tokLo, int32(len(v.order)))
			v.tokAt = append(v.tokAt, int32(len(v.order)))
			v.subHi = append(v.subHi, 0)
			path = append(path, open{n})
		}
		last := path[len(path)-1].node
		v.order = append(v.order, id)
		v.tokAt[last] = int32(len(v.order))
		v.maxDepth = max(v.maxDepth, len(b))
	}
	for len(path) > 0 {
		v.closeNode(path[len(path)-1].node)
		path = path[:len(path)-1]
	}
	// Subtree byte sets, children before parents (reverse depth-first order).
	for i := len(v.nbyte) - 1; i >= 0; i-- {
		for c := int32(i) + 1; c < v.end[i]; c = v.end[c] {
			s := &v.sub[i]
			for w := range s {
				s[w] |= v.sub[c][w]
			}
		}
	}
	v.textSafe()
	v.countText()
	v.textUpTo(0) // built now, not in a generation's first mask
	v.packHot()
	v.all = make([]uint64, (size+63)/64)
	for _, id := range v.order {
		v.all[id>>6] |= 1 << (id & 63)
	}
	return v
}

func (v *Vocab) closeNode(n int32) {
	v.end[n] = int32(len(v.nbyte))
	v.subHi[n] = int32(len(v.order))
}

// Size is the number of token ids.
func (v *Vocab) Size() int { return v.size }

// Nodes is the number of trie nodes.
func (v *Vocab) Nodes() int { return len(v.hot) }

// hotNode is what the mask's walk reads of a trie node at every visit, in one 16-byte
// record: a walk that skips subtrees jumps across the trie, and one cache line then
// serves a node where separate arrays would each cost one.
type hotNode struct {
	end          int32 // the node's subtree is [i, end)
	tokLo, tokAt int32 // the tokens ending at the node: order[tokLo:tokAt]
	depth        uint16
	nbyte        byte
	flags        uint8 // nodeSafe, nodeAllText, nodeLeaf
}

const (
	nodeSafe    = 1 << iota // every token below continues with text from a boundary
	nodeAllText             // every token below is text as a whole
	nodeLeaf                // no node below
)

// packHot builds v.hot from the build's arrays, and drops those only the build used.
func (v *Vocab) packHot() {
	v.hot = make([]hotNode, len(v.nbyte))
	for i := range v.hot {
		h := hotNode{end: v.end[i], tokLo: v.tokLo[i], tokAt: v.tokAt[i], depth: v.depth[i], nbyte: v.nbyte[i]}
		if v.safe[i]&(1<<tBoundary) != 0 {
			h.flags |= nodeSafe
		}
		if v.allText[i] {
			h.flags |= nodeAllText
		}
		if v.end[i] == int32(i)+1 {
			h.flags |= nodeLeaf
		}
		v.hot[i] = h
	}
	// The nodes outside every text-only subtree, in the same order, their ends
	// moved to this array.
	var open []int32 // mixed nodes whose subtree is not closed yet
	for i := int32(0); i < int32(len(v.hot)); {
		h := v.hot[i]
		if h.flags&nodeAllText != 0 {
			i = h.end
			continue
		}
		for len(open) > 0 && v.mixed[open[len(open)-1]].depth >= h.depth {
			v.mixed[open[len(open)-1]].end = int32(len(v.mixed))
			open = open[:len(open)-1]
		}
		open = append(open, int32(len(v.mixed)))
		v.mixed = append(v.mixed, h)
		v.mixedOrig = append(v.mixedOrig, i)
		i++
	}
	for _, j := range open {
		v.mixed[j].end = int32(len(v.mixed))
	}
	for j := range v.mixed {
		if v.mixed[j].end == int32(j)+1 {
			v.mixed[j].flags |= nodeLeaf
		}
	}
	v.nbyte, v.depth, v.end, v.tokLo, v.tokAt, v.safe, v.allText = nil, nil, nil, nil, nil, nil, nil
}

// maxMaskBytes bounds the memory of the masks an automaton remembers (as maskForm:
// a few hundred bytes to a few KB each).
const maxMaskBytes = 8 << 20

// Mask sets dst (a bitset of at least (Size+63)/64 words, bit id of word id/64) to the
// tokens whose bytes the grammar allows next, and returns how many there are.
// End-of-generation tokens are not in it: the caller adds them where Accepting.
func (m *Matcher) Mask(v *Vocab, dst []uint64) int {
	words := (v.size + 63) / 64
	dst = dst[:words]
	clear(dst)
	if m.err != nil || m.cur < 0 {
		return 0
	}
	a := m.a
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.maskVocab == nil {
		a.maskVocab = v
	}
	a.g.masks.Add(1)
	if st := &a.states[m.cur]; st.mask != nil && a.maskVocab == v {
		return v.writeMask(dst, *st.mask)
	}
	a.g.coldMasks.Add(1)
	n := m.walk(v, dst)
	if size := 4*len(m.form.ranges) + 64; a.maskVocab == v && a.maskBytes+size <= maxMaskBytes {
		f := m.form
		f.ranges = slices.Clone(f.ranges)
		a.states[m.cur].mask = &f
		a.maskBytes += size
	}
	return n
}

// walk computes the mask of the current state over the trie. It collects the allowed
// tokens as ranges of the depth-first token order, then writes whichever is shorter:
// the allowed tokens onto an empty mask, or the others off a full one (inside a JSON
// string nearly every token is allowed).
func (m *Matcher) walk(v *Vocab, dst []uint64) int {
	a := m.a
	g := a.g
	if cap(m.stk) < v.maxDepth+1 {
		m.stk = make([]int32, v.maxDepth+1)
	}
	stk := m.stk[:v.maxDepth+1]
	stk[0] = m.cur
	ranges := m.ranges[:0]
	count := 0
	add := func(lo, hi int32) {
		if lo == hi {
			return
		}
		count += int(hi - lo)
		if n := len(ranges); n > 0 && ranges[n-1] == lo {
			ranges[n-1] = hi
			return
		}
		ranges = append(ranges, lo, hi)
	}
	// A root state that counts text needs no walk of the text tokens: they are
	// textUpTo's mask. The walk then visits only subtrees holding other tokens.
	cap := v.counterCap()
	r0 := a.textCounter(m.cur, cap)
	rootText := r0 >= 0 && (r0 < cap || v.maxChars < cap)
	hot, orig := v.hot, []int32(nil)
	if rootText {
		// Only the nodes outside every text-only subtree, packed: the walk reads
		// them in order rather than jumping over what it skips.
		hot, orig = v.mixed, v.mixedOrig
	}
	trans := a.trans
	classes := g.classes
	class := &g.class
	nodes := int32(len(hot))
	visited := 0
	lastP, lastR := int32(dead), 0 // textCounter of the last parent asked: siblings share it
	for i := int32(0); i < nodes; {
		n := &hot[i]
		visited++
		p := stk[n.depth-1]
		s := trans[int(p)*classes+int(class[n.nbyte])]
		if s == unknown {
			s = a.step(p, n.nbyte)
			trans = a.trans
		}
		if s == dead {
			i = n.end
			continue
		}
		if n.flags&nodeLeaf == 0 {
			o := i // the node's index in the whole trie
			if orig != nil {
				o = orig[i]
			}
			if n.flags&nodeSafe != 0 {
				// Every token below continues with text from a character boundary.
				if p != lastP {
					lastP, lastR = p, a.textCounter(p, cap)
					trans = a.trans
				}
				if r := lastR; r >= 0 {
					before := int(v.lead[o]) // the characters the path before i started
					if n.nbyte&0xC0 != 0x80 {
						before--
					}
					if most := int(v.maxLead[o]) - before; most <= r && (r < cap || most <= cap) {
						add(n.tokLo, v.subHi[o])
						i = n.end
						continue
					} else if r < cap {
						for k := n.tokLo; k < v.subHi[o]; k++ {
							if int(v.ordLead[k])-before <= r {
								add(k, k+1)
							}
						}
						i = n.end
						continue
					}
				}
				budget := a.textBudget(p)
				trans = a.trans
				if int(v.rem[o]) <= budget {
					// Text keeps the state alive.
					add(n.tokLo, v.subHi[o])
					i = n.end
					continue
				}
			}
			if s == p {
				loop := a.loopSet(p)
				trans = a.trans
				if v.sub[o].subsetOf(loop) {
					// Every byte below keeps the state: the whole subtree is allowed.
					add(n.tokLo, v.subHi[o])
					i = n.end
					continue
				}
			}
		}
		stk[n.depth] = s
		add(n.tokLo, n.tokAt)
		i++
	}
	m.ranges, m.walked = ranges, visited
	m.form = maskForm{text: -1, ranges: ranges, count: count}
	switch {
	case rootText:
		// The text tokens that fit, and what the walk found besides (some of it
		// text tokens again: setting them twice is harmless, and the count is read
		// off the mask).
		m.form.text = min(r0, cap-1)
		m.form.count = -1 // read off the mask once it is written
	case count > len(v.order)/2:
		m.form.complement = true
	}
	m.form.count = v.writeMask(dst, m.form)
	return m.form.count
}

// maskForm is a mask as the walk finds it, ranges of the depth-first token order
// (count: how many tokens it allows, -1 until its first writing counts them):
// set on textUpTo(text)'s mask (text ≥ 0), or set on an empty mask, or (complement)
// the only ones not cleared from the mask of every token. A mask remembered so takes
// a few hundred bytes where the bitset of a 248k vocabulary takes 31 KB, and is
// written back as fast.
type maskForm struct {
	text       int
	complement bool
	ranges     []int32
	count      int
}

// writeMask writes f to dst (zeroed) and returns how many tokens it allows.
func (v *Vocab) writeMask(dst []uint64, f maskForm) int {
	set := func(ids []int32) {
		for _, id := range ids {
			dst[id>>6] |= 1 << (id & 63)
		}
	}
	unset := func(ids []int32) {
		for _, id := range ids {
			dst[id>>6] &^= 1 << (id & 63)
		}
	}
	ranges := f.ranges
	switch {
	case f.text >= 0:
		text, _ := v.textUpTo(f.text)
		copy(dst, text)
		for k := 0; k < len(ranges); k += 2 {
			set(v.order[ranges[k]:ranges[k+1]])
		}
		if f.count < 0 {
			return popcountWords(dst)
		}
		return f.count
	case !f.complement:
		for k := 0; k < len(ranges); k += 2 {
			set(v.order[ranges[k]:ranges[k+1]])
		}
		return f.count
	}
	copy(dst, v.all)
	prev := int32(0)
	for k := 0; k < len(ranges); k += 2 {
		unset(v.order[prev:ranges[k]])
		prev = ranges[k+1]
	}
	unset(v.order[prev:])
	return f.count
}
