package grammar

import (
	"math/rand/v2"
	"testing"
)

// textBudgetSearch is textBudget as first written, kept as the reference: a search
// of the pairs (decoder state, automaton state) layer by layer, the first layer with
// a killing byte giving the budget.
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

// plainMask is the mask by definition: token id is allowed where each of its bytes,
// stepped from the matcher's state, leaves a parse alive. No trie, no shortcut.
func plainMask(m *Matcher, v *Vocab) []uint64 {
	dst := make([]uint64, (v.Size()+63)/64)
	for id, b := range v.bytesOf {
		if b == nil {
			continue
		}
		s := m.cur
		for _, c := range b {
			if s = m.a.step(s, c); s == dead {
				break
			}
		}
		if s != dead {
			dst[id>>6] |= 1 << (id & 63)
		}
	}
	return dst
}

// TestMaskEqualsPlain walks random valid outputs of the benchmark schemas over
// Qwen3's vocabulary and checks at every step that Mask (the trie walk with its text
// shortcut, budgets remembered per pair) equals plainMask bit for bit, and that every
// state's remembered budget equals the layered search's.
func TestMaskEqualsPlain(t *testing.T) {
	v := qwen3Vocab(t)
	seeds := uint64(2)
	if testing.Short() {
		seeds = 1
	}
	for _, sc := range maskSchemas {
		g, err := CompileJSONSchema([]byte(sc.src), SchemaOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for seed := range seeds {
			m := NewMatcher(g)
			rng := rand.New(rand.NewPCG(seed, 7))
			mask := make([]uint64, (v.Size()+63)/64)
			for step := 0; step < 300 && !m.Accepting(); step++ {
				n := m.Mask(v, mask)
				want := plainMask(m, v)
				for w := range want {
					if mask[w] != want[w] {
						t.Fatalf("%s seed %d step %d: mask word %d = %#x, plain walk %#x", sc.name, seed, step, w, mask[w], want[w])
					}
				}
				if pc := popcountWords(want); n != pc {
					t.Fatalf("%s seed %d step %d: Mask counted %d tokens, the plain walk allows %d", sc.name, seed, step, n, pc)
				}
				if n == 0 {
					t.Fatalf("%s seed %d step %d: dead end", sc.name, seed, step)
				}
				if err := m.AcceptToken(v, nthSet(mask, rng.IntN(n))); err != nil {
					t.Fatal(err)
				}
			}
			for s := range int32(len(m.a.states)) {
				if !m.a.states[s].budgetKnown {
					continue
				}
				if got, want := m.a.textBudget(s), m.a.textBudgetSearch(s); got != want {
					t.Errorf("%s seed %d: state %d budget %d, layered search %d", sc.name, seed, s, got, want)
				}
			}
		}
	}
}

// fuzzVocab is a small vocabulary with what the text shortcut meets: every single
// byte, JSON punctuation, text runs shorter and longer than maxTextBudget, escapes,
// multi-byte characters whole and cut.
var fuzzVocab = func() *Vocab {
	var pieces [][]byte
	for c := range 256 {
		pieces = append(pieces, []byte{byte(c)})
	}
	for _, s := range []string{`"`, `":`, `", "`, `{"`, `"}`, `"]`, `],`, `[{`, `}]`, `null`, `true`, `false`,
		`123`, `-0.5`, `1e3`, `0.25`, `abc`, `hello world`, ` the`, `    `, `  `, "\n", `\n`, `\"`, `\\`, `\u00e9`,
		"é", "日本", "\xe6\x97", "\xf0\x9f", "😀x", `a"b`, `ab`, `abcdefghij`, `aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`,
		`                                                                 `, `2024-01-02`, `T12:00:00Z`, `@example.com`, `http://`} {
		pieces = append(pieces, []byte(s))
	}
	return NewVocab(len(pieces), func(id int32) ([]byte, bool) { return pieces[id], true })
}()

// FuzzMaskEqualsPlain: on random walks through fuzzed schemas, Mask equals the
// per-token definition bit for bit.
func FuzzMaskEqualsPlain(f *testing.F) {
	for _, sc := range maskSchemas {
		f.Add([]byte(sc.src), uint64(1))
	}
	for _, s := range []string{`{"type":"string","maxLength":3}`, `{"type":"string","minLength":2,"maxLength":70}`,
		`{"type":"array","items":{"type":"string","maxLength":5},"maxItems":3}`, `{"type":"string","pattern":"^(ab)*c{2,3}$"}`,
		`{"type":"string","format":"date-time"}`, `{"type":"number","minimum":-1,"exclusiveMaximum":1}`, `{"$ref":"#"}`} {
		f.Add([]byte(s), uint64(2))
	}
	v := fuzzVocab
	f.Fuzz(func(t *testing.T, schema []byte, seed uint64) {
		g, err := CompileJSONSchema(schema, SchemaOptions{})
		if err != nil {
			return
		}
		m := NewMatcher(g)
		if m.Err() != nil {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 3))
		mask := make([]uint64, (v.Size()+63)/64)
		for step := 0; step < 60 && !m.Done(); step++ {
			n := m.Mask(v, mask)
			want := plainMask(m, v)
			for w := range want {
				if mask[w] != want[w] {
					t.Fatalf("step %d: mask word %d = %#x, plain walk %#x", step, w, mask[w], want[w])
				}
			}
			if pc := popcountWords(want); n != pc {
				t.Fatalf("step %d: Mask counted %d tokens, the plain walk allows %d", step, n, pc)
			}
			if n == 0 {
				return
			}
			if err := m.AcceptToken(v, nthSet(mask, rng.IntN(n))); err != nil {
				t.Fatal(err)
			}
		}
	})
}
