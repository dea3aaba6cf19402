package grammar

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai/tokenizer"
)

// maskSchemas are ordinary tool-argument schemas: bounded strings of up to 200
// characters, enums, number and integer ranges, an array of objects through a $ref,
// and anyOf with null.
var maskSchemas = []struct{ name, src string }{
	{"bounded", `{"type":"object","properties":{
 "title":{"type":"string","minLength":1,"maxLength":80},
 "summary":{"type":"string","maxLength":200},
 "tags":{"type":"array","items":{"type":"string","maxLength":20},"maxItems":4}
},"required":["title","summary","tags"],"additionalProperties":false}`},
	{"enum-range", `{"type":"object","properties":{
 "status":{"enum":["open","closed","pending","rejected"]},
 "priority":{"type":"integer","minimum":1,"maximum":5},
 "score":{"type":"number","minimum":0,"maximum":100},
 "temperature":{"type":"number","minimum":-50.5,"maximum":60}
},"required":["status","priority","score","temperature"],"additionalProperties":false}`},
	{"ref-array", `{"$defs":{"item":{"type":"object","properties":{
  "name":{"type":"string","maxLength":60},
  "qty":{"type":"integer","minimum":0,"maximum":999},
  "unit":{"enum":["kg","g","l","ml","pcs"]}
 },"required":["name","qty","unit"],"additionalProperties":false}},
 "type":"object","properties":{
 "items":{"type":"array","items":{"$ref":"#/$defs/item"},"minItems":1,"maxItems":5},
 "note":{"anyOf":[{"type":"null"},{"type":"string","maxLength":100}]}
},"required":["items","note"],"additionalProperties":false}`},
	{"weather", typicalSchema},
}

var (
	qwenOnce  sync.Once
	qwenVocab *Vocab
	qwenErr   error
)

// qwen3Vocab returns Qwen3's real byte-level BPE vocabulary (151,669 ids, from the
// GGUF bonsai/tokenizer/testdata ships), control tokens never allowed.
func qwen3Vocab(tb testing.TB) *Vocab {
	qwenOnce.Do(func() {
		tok, err := qwen3Tokenizer()
		if err != nil {
			qwenErr = err
			return
		}
		pieces := make([][]byte, tok.Len())
		for id := range int32(tok.Len()) {
			if tok.IsSpecial(id) && tok.Type(id) != tokenizer.UserDefined {
				continue
			}
			pieces[id] = []byte(tok.Piece(id))
		}
		qwenVocab = NewVocab(len(pieces), func(id int32) ([]byte, bool) { return pieces[id], pieces[id] != nil })
	})
	if qwenErr != nil {
		tb.Fatal(qwenErr)
	}
	return qwenVocab
}

// maskWalk is one random valid output drawn live: from a fresh Matcher, each step
// computes the mask (timed: this is the mask decoding waits for), then takes a token
// uniformly among the allowed ones, until the output is complete or maxSteps.
// cold reports, per mask, whether the state had no remembered mask yet.
func maskWalk(tb testing.TB, g *Grammar, v *Vocab, seed uint64, maxSteps int, mask []uint64, times []time.Duration, cold []bool) ([]time.Duration, []bool, *Matcher) {
	m := NewMatcher(g)
	rng := rand.New(rand.NewPCG(seed, 29))
	for range maxSteps {
		if m.Accepting() {
			break
		}
		c := m.cur >= 0 && m.a.states[m.cur].mask == nil
		t0 := time.Now()
		n := m.Mask(v, mask)
		times = append(times, time.Since(t0))
		cold = append(cold, c)
		if n == 0 {
			tb.Fatalf("dead end after %d masks", len(times))
		}
		id := nthSet(mask, rng.IntN(n))
		if err := m.AcceptToken(v, id); err != nil {
			tb.Fatal(err)
		}
	}
	return times, cold, m
}

// nthSet returns the k-th set bit of mask, counting from 0.
func nthSet(mask []uint64, k int) int32 {
	for w, word := range mask {
		if c := popcount(word); k >= c {
			k -= c
			continue
		}
		for ; word != 0; word &= word - 1 {
			if k == 0 {
				return int32(w*64 + bitsTrailing(word))
			}
			k--
		}
	}
	return -1
}

func popcount(w uint64) int {
	n := 0
	for ; w != 0; w &= w - 1 {
		n++
	}
	return n
}

// maskOutputs is how many random outputs each schema's figures are drawn from.
const maskOutputs = 8

// namedVocab is a vocabulary the mask benchmarks run over.
type namedVocab struct {
	name string
	v    *Vocab
}

// maskVocabs are the mask benchmarks' vocabularies: Qwen3's real one and the 27B's
// 248,320 tokens.
func maskVocabs(b *testing.B) []namedVocab {
	synthetic, _ := benchVocabs(b)
	return []namedVocab{{"qwen3-151669", qwen3Vocab(b)}, {"synth-248320", synthetic}}
}

// BenchmarkMaskSchemas walks random valid outputs of maskSchemas over Qwen3's real
// vocabulary and the 27B's 248,320-token one, a fresh Matcher per output as in
// production, and reports the per-mask median, p99 and max (µs), the share of masks
// met in a state without a remembered mask (cold), and the heap a grammar holds after
// maskOutputs outputs (its shared automaton and remembered masks). Each b.N round
// compiles the schema afresh, so every round's first output starts cold.
func BenchmarkMaskSchemas(b *testing.B) {
	for _, vc := range maskVocabs(b) {
		for _, sc := range maskSchemas {
			if _, err := CompileJSONSchema([]byte(sc.src), SchemaOptions{}); err != nil {
				b.Fatal(err)
			}
			v := vc.v
			b.Run(vc.name+"/"+sc.name, func(b *testing.B) {
				mask := make([]uint64, (v.Size()+63)/64)
				var times []time.Duration
				var cold []bool
				for i := 0; i < b.N; i++ {
					g, _ := CompileJSONSchema([]byte(sc.src), SchemaOptions{})
					for seed := range uint64(maskOutputs) {
						times, cold, _ = maskWalk(b, g, v, seed, 600, mask, times, cold)
					}
				}
				b.StopTimer()
				ncold := 0
				for _, c := range cold {
					if c {
						ncold++
					}
				}
				us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
				b.ReportMetric(us(median(times)), "µs-median")
				b.ReportMetric(us(quantile(times, 0.99)), "µs-p99")
				b.ReportMetric(us(quantile(times, 1)), "µs-max")
				b.ReportMetric(float64(len(times))/float64(b.N*maskOutputs), "masks/output")
				b.ReportMetric(float64(ncold)/float64(len(times)), "cold-share")
				// The heap a grammar's shared automaton holds after maskOutputs outputs:
				// its states, transitions and remembered masks.
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				g2, _ := CompileJSONSchema([]byte(sc.src), SchemaOptions{})
				for seed := range uint64(maskOutputs) {
					maskWalk(b, g2, v, seed, 600, mask, nil, nil)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1024, "KiB/grammar")
				runtime.KeepAlive(g2)
			})
		}
	}
}

// BenchmarkMaskCompile compiles each of maskSchemas; ns/op is the compile time, and
// KiB/grammar the heap a compiled Grammar holds.
func BenchmarkMaskCompile(b *testing.B) {
	for _, sc := range maskSchemas {
		b.Run(sc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := CompileJSONSchema([]byte(sc.src), SchemaOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			g, _ := CompileJSONSchema([]byte(sc.src), SchemaOptions{})
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/1024, "KiB/grammar")
			runtime.KeepAlive(g)
		})
	}
}

// BenchmarkMaskWalkNodes measures the fresh-state walk itself: over the states of
// output 0 of each schema, the walk is run once to build the automaton's transitions
// it needs, then timed again (no remembered mask) and its visited nodes counted.
// ns/node is the timed walks' total over their visited nodes; µs-first is the first
// walk of a state (building transitions, text budgets and loop sets on the way),
// µs-warm the walk again once they are built.
func BenchmarkMaskWalkNodes(b *testing.B) {
	for _, vc := range maskVocabs(b) {
		for _, sc := range maskSchemas {
			g, err := CompileJSONSchema([]byte(sc.src), SchemaOptions{})
			if err != nil {
				b.Fatal(err)
			}
			v := vc.v
			mask := make([]uint64, (v.Size()+63)/64)
			var ids []int32
			{
				m := NewMatcher(g)
				rng := rand.New(rand.NewPCG(0, 29))
				for range 600 {
					if m.Accepting() {
						break
					}
					n := m.Mask(v, mask)
					id := nthSet(mask, rng.IntN(n))
					ids = append(ids, id)
					if err := m.AcceptToken(v, id); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.Run(vc.name+"/"+sc.name, func(b *testing.B) {
				var total time.Duration
				var firsts, warms []time.Duration
				var visited, walks, maxVisited int
				for i := 0; i < b.N; i++ {
					m := NewMatcher(g)
					for _, id := range ids {
						clear(mask)
						t0 := time.Now()
						m.walk(v, mask) // builds the transitions
						firsts = append(firsts, time.Since(t0))
						clear(mask)
						t0 = time.Now()
						m.walk(v, mask)
						warms = append(warms, time.Since(t0))
						total += warms[len(warms)-1]
						n := m.walked
						visited += n
						maxVisited = max(maxVisited, n)
						walks++
						_ = m.AcceptToken(v, id)
					}
				}
				b.ReportMetric(float64(visited)/float64(walks), "nodes/walk")
				b.ReportMetric(float64(maxVisited), "nodes-max")
				b.ReportMetric(float64(total.Nanoseconds())/float64(visited), "ns/node")
				us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
				b.ReportMetric(us(median(warms)), "µs-warm-median")
				b.ReportMetric(us(quantile(warms, 1)), "µs-warm-max")
				b.ReportMetric(us(median(firsts)), "µs-first-median")
				b.ReportMetric(us(quantile(firsts, 1)), "µs-first-max")
			})
		}
	}
}
