package grammar

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// exploredCounter is textCounter by search alone: the capped search over every text
// byte class, with no memo of earlier answers and no reading of the state's shape.
func exploredCounter(a *automaton, s int32, h int) int {
	counters, stamps := a.counters, a.cstamp
	a.counters, a.cstamp = nil, nil
	defer func() { a.counters, a.cstamp = counters, stamps }()
	return a.counterOf(tBoundary, s, h, false)
}

// TestCountedTextEqualsSearch checks countedText — the copies left, read off a state's
// counted repetition — against the search over text, on every state random outputs
// of bounded, unbounded and patterned strings pass through: where the shape gives an
// answer, the search finds a counter with the same count (capped); where the search
// finds a counter, so does textCounter.
func TestCountedTextEqualsSearch(t *testing.T) {
	schemas := append([]struct{ name, src string }{
		{"short", `{"type":"string","minLength":2,"maxLength":5}`},
		{"unbounded", `{"type":"array","items":{"type":"string"}}`},
		{"pattern", `{"type":"string","pattern":"^[a-z]{2,4}x$"}`},
		{"enum", `{"enum":["ab","abc","é"]}`},
	}, maskSchemas...)
	v := fuzzVocab
	const h = 12
	shaped := 0
	for _, sc := range schemas {
		g, err := CompileJSONSchema([]byte(sc.src), SchemaOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for seed := range uint64(4) {
			m := NewMatcher(g)
			rng := rand.New(rand.NewPCG(seed, 11))
			mask := make([]uint64, (v.Size()+63)/64)
			for step := 0; step < 80 && !m.Done(); step++ {
				n := m.Mask(v, mask)
				if n == 0 {
					break
				}
				if err := m.AcceptToken(v, nthSet(mask, rng.IntN(n))); err != nil {
					t.Fatal(err)
				}
			}
		}
		a := NewMatcher(g).a
		for s := range int32(len(a.states)) {
			want := exploredCounter(a, s, h)
			if r, ok := a.countedText(s); ok {
				shaped++
				if min(r, h) != want {
					t.Errorf("%s: state %d: shape says %d text characters left, the search %d (cap %d)", sc.name, s, r, want, h)
				}
			}
			if got := a.textCounter(s, h); want >= 0 && got != want {
				t.Errorf("%s: state %d: textCounter %d, the search %d", sc.name, s, got, want)
			}
		}
	}
	if shaped < 100 {
		t.Fatalf("only %d states had a counted shape: the test checks too little", shaped)
	}
}

// TestTextChar: the JSON string character is a text character rule; a rule missing
// a row, taking a byte too many or leaving '<' out is not.
func TestTextChar(t *testing.T) {
	c := newSchemaCompiler(nil, SchemaOptions{})
	ok := c.charRule()
	noLT := c.charNoLT()
	b := c.b
	short := b.newRule("short") // no 4-byte characters
	for i, seq := range utf8Multi(b) {
		if i < 5 {
			b.addAlt(short, seq...)
		}
	}
	var ascii byteSet
	ascii.addRange(0x20, 0x7f)
	ascii[0] &^= 1 << '"'
	ascii[1] &^= 1 << ('\\' - 64)
	b.addAlt(short, b.term(ascii))
	long := b.newRule("long") // ASCII followed by one more byte
	b.addAlt(long, b.term(ascii), b.term(ascii))
	g, err := b.build(ok)
	if err != nil {
		t.Fatal(err)
	}
	a := newAutomaton(g)
	for _, c := range []struct {
		rule int32
		want bool
	}{{ok, true}, {noLT, false}, {short, false}, {long, false}} {
		if got := a.textChar(c.rule); got != c.want {
			t.Errorf("rule %s: textChar %v, want %v", g.names[c.rule], got, c.want)
		}
	}
}

// TestSharedAutomaton runs matchers of one grammar on many goroutines at once (run
// with -race): every mask equals the plain per-token walk, and the second output of
// a schema finds masks the first remembered.
func TestSharedAutomaton(t *testing.T) {
	v := fuzzVocab
	g, err := CompileJSONSchema([]byte(maskSchemas[0].src), SchemaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := NewMatcher(g)
			rng := rand.New(rand.NewPCG(uint64(w), 5))
			mask := make([]uint64, (v.Size()+63)/64)
			for step := 0; step < 200 && !m.Accepting(); step++ {
				n := m.Mask(v, mask)
				m.a.mu.Lock()
				want := plainMask(m, v)
				m.a.mu.Unlock()
				for i := range want {
					if mask[i] != want[i] {
						errs <- fmt.Errorf("goroutine %d step %d: mask word %d = %#x, plain walk %#x", w, step, i, mask[i], want[i])
						return
					}
				}
				if n == 0 {
					errs <- fmt.Errorf("goroutine %d step %d: dead end", w, step)
					return
				}
				if err := m.AcceptToken(v, nthSet(mask, rng.IntN(n))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// A second output from the start: its first masks were remembered.
	m := NewMatcher(g)
	m.a.mu.Lock()
	warm := m.a.states[m.cur].mask != nil
	m.a.mu.Unlock()
	if !warm {
		t.Error("a new matcher's first state has no remembered mask: the automaton is not shared")
	}
}
