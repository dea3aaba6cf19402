package bonsai

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"sync"

	"github.com/bonsai-go/sdk/bonsai/grammar"
	"github.com/bonsai-go/sdk/internal/prepcount"
)

// DefaultGrammarCache is the number of compiled grammars a model keeps when
// WithGrammarCache does not say otherwise.
const DefaultGrammarCache = 64

// WithGrammarCache sets how many compiled grammars the model keeps for its Prepare
// calls (default DefaultGrammarCache; 0 or less keeps none). Prepare calls that ask for
// the same grammar — the same GBNF text, the same JSON schema bytes and Strict flag,
// json_object, or a required tool choice over the same tools (names and parameter
// bytes, in order) with the same ParallelToolCalls — share one compiled grammar, and so
// the automaton and token masks its generations build: a server's second request with
// a schema finds most masks already computed (a few microseconds each, where a new one
// costs tens of microseconds to a millisecond). The least recently used grammar goes
// first. Each grammar kept may hold up to 8 MiB of remembered masks (the grammar
// package's bound; a few MB at most in practice, kept as ranges of tokens) besides its
// automaton, so n bounds that memory to n × 8 MiB and some. A grammar that fails to
// compile is not kept.
func WithGrammarCache(n int) Option { return func(o *options) { o.grammars = n } }

// grammarKey identifies a compiled grammar by everything that determines it: the
// SHA-256 of an encoding in which every field carries its length, so that distinct
// inputs give distinct encodings (and, but for a SHA-256 collision, distinct keys). The
// bytes are not normalized: two spellings of one schema are two grammars.
type grammarKey [sha256.Size]byte

// The kinds of grammar a key names.
const (
	keyGBNF   = 'g' // the GBNF text
	keySchema = 's' // Strict, the schema's bytes
	keyTools  = 't' // parallel, the number of functions, each one's name and parameters
)

// keyWriter writes a key's encoding.
type keyWriter struct{ h hash.Hash }

func newKey(kind byte) keyWriter {
	k := keyWriter{sha256.New()}
	k.h.Write([]byte{kind})
	return k
}

func (k keyWriter) bytes(b []byte) {
	k.h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(b))))
	k.h.Write(b)
}

func (k keyWriter) flag(on bool) {
	b := byte(0)
	if on {
		b = 1
	}
	k.h.Write([]byte{b})
}

func (k keyWriter) count(n int) { k.h.Write(binary.LittleEndian.AppendUint64(nil, uint64(n))) }

func (k keyWriter) sum() grammarKey {
	var key grammarKey
	k.h.Sum(key[:0])
	return key
}

func gbnfKey(src string) grammarKey {
	k := newKey(keyGBNF)
	k.bytes([]byte(src))
	return k.sum()
}

func schemaKey(schema []byte, strict bool) grammarKey {
	k := newKey(keySchema)
	k.flag(strict)
	k.bytes(schema)
	return k.sum()
}

func toolsKey(fns []grammar.Function, parallel bool) grammarKey {
	k := newKey(keyTools)
	k.flag(parallel)
	k.count(len(fns))
	for _, f := range fns {
		k.bytes([]byte(f.Name))
		k.bytes(f.Parameters)
	}
	return k.sum()
}

// grammarOf returns the grammar of key from the model's cache, or compile's, and
// counts which: a grammar found is no compilation.
func (m *Model) grammarOf(key grammarKey, compile func() (*grammar.Grammar, error)) (*grammar.Grammar, error) {
	g, compiled, err := m.grammars.get(key, compile)
	if compiled {
		prepcount.Compilations.Add(1)
	} else {
		prepcount.GrammarCacheHits.Add(1)
	}
	return g, err
}

// grammarCache keeps a model's most recently used compiled grammars. It is safe for
// concurrent use; a nil or empty cache keeps nothing.
type grammarCache struct {
	mu      sync.Mutex
	max     int
	entries map[grammarKey]*list.Element // of *grammarEntry
	lru     list.List                    // most recently used first
}

// grammarEntry is a grammar kept, or being compiled.
type grammarEntry struct {
	key   grammarKey
	ready chan struct{} // closed once g and err are final
	g     *grammar.Grammar
	err   error
}

// errUnfinished is the error of a compilation that panicked, for the calls that
// waited on it.
var errUnfinished = errors.New("bonsai: the grammar's compilation did not finish")

func newGrammarCache(max int) *grammarCache {
	if max <= 0 {
		return nil
	}
	return &grammarCache{max: max, entries: map[grammarKey]*list.Element{}}
}

// get returns the grammar of key: the one kept, or the one another call is compiling
// (waiting for it), or else compile's, which it keeps unless it is an error. compiled
// reports whether this call compiled it.
func (c *grammarCache) get(key grammarKey, compile func() (*grammar.Grammar, error)) (g *grammar.Grammar, compiled bool, err error) {
	if c == nil {
		g, err = compile()
		return g, true, err
	}
	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		c.lru.MoveToFront(el)
		c.mu.Unlock()
		e := el.Value.(*grammarEntry)
		// Calls that ask together share one compilation, and so one automaton.
		<-e.ready
		return e.g, false, e.err
	}
	e := &grammarEntry{key: key, ready: make(chan struct{}), err: errUnfinished}
	c.entries[key] = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		old := c.lru.Remove(c.lru.Back()).(*grammarEntry)
		delete(c.entries, old.key)
	}
	c.mu.Unlock()
	defer func() {
		if e.err != nil {
			c.mu.Lock()
			if el, ok := c.entries[key]; ok && el.Value == e {
				c.lru.Remove(el)
				delete(c.entries, key)
			}
			c.mu.Unlock()
		}
		close(e.ready)
	}()
	e.g, e.err = compile()
	return e.g, true, e.err
}

// len returns the number of grammars kept or being compiled.
func (c *grammarCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
