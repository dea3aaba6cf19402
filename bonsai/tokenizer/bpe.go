package tokenizer

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
)

// A merge is the result of merging a pair of symbols: its rank (the merge's index in
// tokenizer.ggml.merges; lower merges first) and the symbol it makes.
type merge struct {
	rank   int32
	result int32
}

// pairKey is the key of the merge of symbols a and b.
func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// A mergeTable maps pair keys to merges: open addressing with linear probing, the key
// and the merge side by side, at most half full. Symbol ids are below 2^31, so a key's
// top bit is free to mark a used slot.
type mergeTable struct {
	slots []mergeSlot
	shift uint
}

type mergeSlot struct {
	key uint64 // pairKey | used, or 0
	m   merge
}

const used = 1 << 63

func newMergeTable(n int) mergeTable {
	bits := uint(4)
	for 1<<bits < 2*n {
		bits++
	}
	return mergeTable{slots: make([]mergeSlot, 1<<bits), shift: 64 - bits}
}

func (t *mergeTable) index(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> t.shift }

// get returns the merge of key.
func (t *mergeTable) get(key uint64) (merge, bool) {
	key |= used
	mask := uint64(len(t.slots) - 1)
	for i := t.index(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key {
			return s.m, true
		}
		if s.key == 0 {
			return merge{}, false
		}
	}
}

// add adds the merge of key unless the table has one.
func (t *mergeTable) add(key uint64, m merge) {
	key |= used
	mask := uint64(len(t.slots) - 1)
	for i := t.index(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key {
			return
		}
		if s.key == 0 {
			*s = mergeSlot{key, m}
			return
		}
	}
}

// bpe merges the symbols of one word in place, as llama.cpp does: repeatedly the pair
// of adjacent symbols with the lowest merge rank, the leftmost of equal ones, until no
// pair has a merge. It returns the merged symbols (a prefix of syms).
func (t *Tokenizer) bpe(syms []int32, scratch *bpeScratch) []int32 {
	if len(syms) < 2 {
		return syms
	}
	if len(syms) > 48 {
		return t.bpeLong(syms, scratch)
	}
	// Short words: keep the rank of each adjacent pair and rescan for the minimum.
	ranks := scratch.ranks[:0]
	results := scratch.results[:0]
	for i := 0; i+1 < len(syms); i++ {
		m, ok := t.merges.get(pairKey(syms[i], syms[i+1]))
		if !ok {
			m.rank = noMerge
		}
		ranks = append(ranks, m.rank)
		results = append(results, m.result)
	}
	for {
		best, bi := int32(noMerge), -1
		for i, r := range ranks {
			if r < best {
				best, bi = r, i
			}
		}
		if bi < 0 {
			break
		}
		syms[bi] = results[bi]
		copy(syms[bi+1:], syms[bi+2:])
		syms = syms[:len(syms)-1]
		copy(ranks[bi:], ranks[bi+1:])
		ranks = ranks[:len(ranks)-1]
		copy(results[bi:], results[bi+1:])
		results = results[:len(results)-1]
		for _, i := range [2]int{bi - 1, bi} {
			if i < 0 || i >= len(ranks) {
				continue
			}
			m, ok := t.merges.get(pairKey(syms[i], syms[i+1]))
			if !ok {
				m.rank = noMerge
			}
			ranks[i], results[i] = m.rank, m.result
		}
	}
	scratch.ranks, scratch.results = ranks, results
	return syms
}

func (t *Tokenizer) mergeOf(a, b int32) merge {
	m, _ := t.merges.get(pairKey(a, b))
	return m
}

// noMerge is the rank of a pair that has no merge.
const noMerge = int32(1<<31 - 1)

// bpeLong is bpe for long words (runs of white space, long words in scripts without
// spaces): a linked list of symbols and a heap of candidate pairs, O(n log n).
func (t *Tokenizer) bpeLong(syms []int32, scratch *bpeScratch) []int32 {
	n := len(syms)
	if cap(scratch.links) < 2*n {
		scratch.links = make([]int32, 2*n)
	}
	prev, next := scratch.links[:n], scratch.links[n:2*n]
	for i := range n {
		prev[i], next[i] = int32(i-1), int32(i+1)
	}
	next[n-1] = -1
	h := scratch.heap[:0]
	push := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		m, ok := t.merges.get(pairKey(syms[l], syms[r]))
		if !ok {
			return
		}
		h = heapPush(h, candidate{rank: m.rank, left: l, right: r, a: syms[l], b: syms[r]})
	}
	for i := 0; i+1 < n; i++ {
		push(int32(i), int32(i+1))
	}
	const dead = -2
	for len(h) > 0 {
		var c candidate
		c, h = heapPop(h)
		l, r := c.left, c.right
		// Skip a stale candidate: one of its symbols merged since it was pushed.
		if syms[l] == dead || syms[r] == dead || syms[l] != c.a || syms[r] != c.b || next[l] != r {
			continue
		}
		syms[l] = t.mergeOf(c.a, c.b).result
		syms[r] = dead
		next[l] = next[r]
		if next[r] >= 0 {
			prev[next[r]] = l
		}
		push(prev[l], l)
		push(l, next[l])
	}
	scratch.heap = h
	out := syms[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

// A candidate is a pair of adjacent symbols that has a merge: the symbols at left and
// right, which were a and b when it was pushed.
type candidate struct {
	rank, left, right, a, b int32
}

func (c candidate) less(d candidate) bool {
	return c.rank < d.rank || c.rank == d.rank && c.left < d.left
}

func heapPush(h []candidate, c candidate) []candidate {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	return h
}

func heapPop(h []candidate) (candidate, []candidate) {
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].less(h[m]) {
			m = l
		}
		if r < len(h) && h[r].less(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top, h
}

// bpeScratch holds the buffers of one encoding.
type bpeScratch struct {
	syms    []int32
	ranks   []int32
	results []int32
	heap    []candidate
	links   []int32
	ends    []int
	frags   []fragment
	cut     []fragment
	added   []fragment
	merged  []fragment
	occs    []occurrence
}

var scratchPool = sync.Pool{New: func() any { return new(bpeScratch) }}

// The word cache maps a word (its bytes) to its token ids. It is a table of atomic
// pointers, so lookups take no lock: a word may sit in either of two slots chosen by
// its hash, and a new word takes an empty one or evicts the second one's word. A word
// longer than cacheMaxWordSize is not cached.
const (
	cacheSlots       = 1 << 16
	cacheMaxWordSize = 64
)

type cacheEntry struct {
	word string
	ids  []int32
}

type wordCache struct {
	seed  maphash.Seed
	slots [cacheSlots]atomic.Pointer[cacheEntry]
}

func newWordCache() *wordCache {
	return &wordCache{seed: maphash.MakeSeed()}
}

func (c *wordCache) slots2(word string) (a, b *atomic.Pointer[cacheEntry]) {
	h := maphash.String(c.seed, word)
	return &c.slots[h&(cacheSlots-1)], &c.slots[(h>>32)&(cacheSlots-1)]
}

func (c *wordCache) get(word string) ([]int32, bool) {
	a, b := c.slots2(word)
	if e := a.Load(); e != nil && e.word == word {
		return e.ids, true
	}
	if e := b.Load(); e != nil && e.word == word {
		return e.ids, true
	}
	return nil, false
}

func (c *wordCache) put(word string, ids []int32) {
	e := &cacheEntry{word: strings.Clone(word), ids: ids}
	a, b := c.slots2(word)
	if a.CompareAndSwap(nil, e) {
		return
	}
	b.Store(e)
}
