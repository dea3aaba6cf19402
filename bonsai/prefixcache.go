package bonsai

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// The prefix cache keeps copies of whole sequence states at chat-template boundaries —
// the end of the system prompt, the end of each turn — shared by every session of a
// model, so that a request whose conversation begins like an earlier one (a long system
// prompt, a conversation continued on another session) starts from the longest prefix
// cached instead of prefilling it. A hybrid model cannot do what a transformer's cache
// does, keep one KV cache and rewind it to any shared prefix: its Gated DeltaNet layers
// hold a recurrent state that only moves forward, so the state is kept whole at the
// points a conversation is likely to be resumed from. The cache is bounded in bytes and
// evicts the least recently used entry.
type prefixCache struct {
	limit int64

	mu      sync.Mutex
	entries map[[32]byte]*list.Element // of *prefixEntry
	lru     list.List                  // front: most recently used
	stats   PrefixCacheStats
}

// prefixEntry is one cached state: the tokens it holds and the logits of the last.
type prefixEntry struct {
	key    [32]byte
	tokens []int32
	st     backend.State
	logits []float32
	bytes  int64
}

// PrefixCacheStats describes a model's prefix cache (WithPrefixCache).
type PrefixCacheStats struct {
	Entries   int   // the cached prefixes
	Bytes     int64 // held by the entries' states and logits
	Limit     int64 // the most Bytes may reach (WithPrefixCache's limit)
	Hits      int64 // prompts that started from a cached prefix
	HitTokens int64 // the prompt tokens those hits skipped
	Misses    int64 // prompts with boundaries past what their session held, none cached
	Inserts   int64 // prefixes added
	Evictions int64 // prefixes dropped, least recently used first, to stay within Limit
}

func newPrefixCache(limit int64) *prefixCache {
	return &prefixCache{limit: limit, entries: map[[32]byte]*list.Element{}}
}

func prefixKey(tokens []int32) [32]byte {
	h := sha256.New()
	var b [4]byte
	for _, t := range tokens {
		binary.LittleEndian.PutUint32(b[:], uint32(t))
		h.Write(b[:])
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// restore makes dst (a state of the model's engine) a copy of the cached state of
// exactly tokens, copying its logits into logits, and reports whether there was one. A
// failed copy leaves dst in no particular state and returns the error.
func (c *prefixCache) restore(dst backend.State, tokens []int32, logits []float32) (bool, error) {
	key := prefixKey(tokens)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return false, nil
	}
	e := el.Value.(*prefixEntry)
	if !slices.Equal(e.tokens, tokens) {
		return false, nil
	}
	if err := copyState(dst, e.st); err != nil {
		return false, err
	}
	copy(logits, e.logits)
	c.lru.MoveToFront(el)
	c.stats.Hits++
	c.stats.HitTokens += int64(len(tokens))
	return true, nil
}

// has reports whether the state of exactly tokens is cached.
func (c *prefixCache) has(tokens []int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[prefixKey(tokens)]
	return ok
}

// miss counts a prompt that found nothing to start from.
func (c *prefixCache) miss() {
	c.mu.Lock()
	c.stats.Misses++
	c.mu.Unlock()
}

// insert caches st (which the cache now owns) as the state of tokens, evicting the least
// recently used entries beyond the limit. A state larger than the whole limit is not
// kept.
func (c *prefixCache) insert(tokens []int32, st backend.State, logits []float32) {
	e := &prefixEntry{key: prefixKey(tokens), tokens: slices.Clone(tokens), st: st, logits: slices.Clone(logits)}
	e.bytes = st.Bytes() + 4*int64(len(logits)) + 4*int64(len(tokens))
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.entries[e.key]; dup || e.bytes > c.limit {
		st.Close()
		return
	}
	for c.stats.Bytes+e.bytes > c.limit {
		c.evictLocked()
	}
	c.entries[e.key] = c.lru.PushFront(e)
	c.stats.Bytes += e.bytes
	c.stats.Entries++
	c.stats.Inserts++
}

func (c *prefixCache) evictLocked() {
	el := c.lru.Back()
	e := el.Value.(*prefixEntry)
	c.lru.Remove(el)
	delete(c.entries, e.key)
	e.st.Close()
	c.stats.Bytes -= e.bytes
	c.stats.Entries--
	c.stats.Evictions++
}

// close releases every entry's state.
func (c *prefixCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.lru.Len() > 0 {
		c.evictLocked()
	}
}

func (c *prefixCache) snapshot() PrefixCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Limit = c.limit
	return s
}
