package grammar

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai/tokenizer"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth"
)

// realVocabSize is the vocabulary of Ternary Bonsai 2 27B (Qwen3.5's).
const realVocabSize = 248320

// byteChars inverts GPT-2's bytes_to_unicode.
var byteChars = func() map[rune]byte {
	inv := map[rune]byte{}
	next := rune(256)
	for b := range 256 {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF) {
			r = next
			next++
		}
		inv[r] = byte(b)
	}
	return inv
}()

// byteLevel decodes GPT-2's bytes_to_unicode spelling.
func byteLevel(s string) []byte {
	inv := byteChars
	var out []byte
	for _, r := range s {
		out = append(out, inv[r])
	}
	return out
}

var (
	vocabOnce              sync.Once
	synthVocab, mixedVocab *Vocab
	vocabErr               error
)

// qwen3Tokenizer reads Qwen3's real byte-level BPE vocabulary (151,669 ids), from
// the GGUF bonsai/tokenizer/testdata ships.
func qwen3Tokenizer() (*tokenizer.Tokenizer, error) {
	data, err := os.ReadFile(filepath.Join("..", "tokenizer", "testdata", "qwen3-vocab.gguf.gz"))
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if data, err = io.ReadAll(zr); err != nil {
		return nil, err
	}
	f, err := gguf.Parse(data)
	if err != nil {
		return nil, err
	}
	return tokenizer.FromGGUF(f)
}

// benchVocabs returns two vocabularies of the 27B's size: the synthetic one of
// internal/synth (its corpus merges, then filler merges), and Qwen3's real 151,669
// tokens (bonsai/tokenizer/testdata) completed to 248,320 with synthetic tokens.
func benchVocabs(tb testing.TB) (synthetic, mixed *Vocab) {
	vocabOnce.Do(func() {
		sv, err := synth.NewVocabulary(realVocabSize)
		if err != nil {
			vocabErr = err
			return
		}
		pieces := make([][]byte, len(sv.Tokens))
		for i, s := range sv.Tokens {
			if sv.Types[i] == synth.TokenNormal {
				pieces[i] = byteLevel(s)
			}
		}
		synthVocab = NewVocab(len(pieces), func(id int32) ([]byte, bool) { return pieces[id], pieces[id] != nil })

		tok, err := qwen3Tokenizer()
		if err != nil {
			vocabErr = err
			return
		}
		seen := map[string]bool{}
		var mixed [][]byte
		for id := range int32(tok.Len()) {
			p := []byte(tok.Piece(id))
			if tok.IsSpecial(id) && tok.Type(id) != tokenizer.UserDefined {
				p = nil
			}
			mixed = append(mixed, p)
			seen[string(p)] = true
		}
		for _, p := range pieces {
			if len(mixed) == realVocabSize {
				break
			}
			if p != nil && !seen[string(p)] {
				mixed = append(mixed, p)
			}
		}
		mixedVocab = NewVocab(len(mixed), func(id int32) ([]byte, bool) { return mixed[id], mixed[id] != nil })
	})
	if vocabErr != nil {
		tb.Fatal(vocabErr)
	}
	return synthVocab, mixedVocab
}

// typicalSchema is a tool's argument schema of the usual size.
const typicalSchema = `{"type":"object","properties":{
 "location":{"type":"string","description":"City and country"},
 "unit":{"type":"string","enum":["celsius","fahrenheit"]},
 "days":{"type":"integer"},
 "include":{"type":"array","items":{"type":"string","enum":["wind","rain","uv"]},"maxItems":3},
 "coords":{"anyOf":[{"type":"null"},{"type":"object","properties":{"lat":{"type":"number"},"lon":{"type":"number"}},"required":["lat","lon"],"additionalProperties":false}]},
 "notes":{"type":"string","maxLength":40}
},"required":["location","unit","days","include","coords","notes"],"additionalProperties":false}`

// trajectory draws a random valid output token by token (uniformly among the allowed
// tokens, with the end taken as soon as allowed) and returns the tokens.
func trajectory(tb testing.TB, g *Grammar, v *Vocab, seed uint64, steps int) []int32 {
	m := NewMatcher(g)
	rng := rand.New(rand.NewPCG(seed, 1))
	mask := make([]uint64, (v.Size()+63)/64)
	var ids []int32
	for range steps {
		if m.Accepting() {
			break
		}
		n := m.Mask(v, mask)
		if n == 0 {
			tb.Fatalf("dead end after %d tokens", len(ids))
		}
		k := rng.IntN(n)
		id := int32(-1)
		for w, word := range mask {
			for ; word != 0; word &= word - 1 {
				if k == 0 {
					id = int32(w*64 + bitsTrailing(word))
					break
				}
				k--
			}
			if id >= 0 {
				break
			}
		}
		if err := m.AcceptToken(v, id); err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// BenchmarkMask: the token mask during a generation, as decoding computes it (fresh
// matcher per output; masks of revisited states remembered), and the uncached walk
// of the trie from each state of the same outputs. Metrics are per token.
func BenchmarkMask(b *testing.B) {
	synthetic, mixed := benchVocabs(b)
	schema, err := CompileJSONSchema([]byte(typicalSchema), SchemaOptions{})
	if err != nil {
		b.Fatal(err)
	}
	tools, err := ToolCalls([]Function{{Name: "get_weather", Parameters: []byte(typicalSchema)}, {Name: "search", Parameters: []byte(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}`)}}, true)
	if err != nil {
		b.Fatal(err)
	}
	for _, vc := range []struct {
		name string
		v    *Vocab
		g    *Grammar
	}{{"schema/qwen3+synth-248320", mixed, schema}, {"schema/synth-248320", synthetic, schema}, {"tools/qwen3+synth-248320", mixed, tools}} {
		v, g := vc.v, vc.g
		var outs [][]int32
		for seed := range uint64(8) {
			outs = append(outs, trajectory(b, g, v, seed, 400))
		}
		mask := make([]uint64, (v.Size()+63)/64)
		b.Run(vc.name+"/decode", func(b *testing.B) {
			var all []time.Duration
			for i := 0; i < b.N; i++ {
				for _, ids := range outs {
					m := NewMatcher(g)
					for _, id := range ids {
						t0 := time.Now()
						m.Mask(v, mask)
						all = append(all, time.Since(t0))
						_ = m.AcceptToken(v, id)
					}
				}
			}
			b.ReportMetric(float64(median(all).Microseconds())/1000, "ms/token-median")
			b.ReportMetric(float64(quantile(all, 0.9).Microseconds())/1000, "ms/token-p90")
			b.ReportMetric(float64(quantile(all, 1).Microseconds())/1000, "ms/token-max")
		})
		b.Run(vc.name+"/uncached", func(b *testing.B) {
			var all []time.Duration
			for i := 0; i < b.N; i++ {
				for _, ids := range outs {
					m := NewMatcher(g)
					for _, id := range ids {
						clear(mask)
						m.walk(v, mask) // warms the automaton's transitions
						clear(mask)
						t0 := time.Now()
						m.walk(v, mask)
						all = append(all, time.Since(t0))
						_ = m.AcceptToken(v, id)
					}
				}
			}
			b.ReportMetric(float64(median(all).Microseconds())/1000, "ms/token-median")
			b.ReportMetric(float64(quantile(all, 0.9).Microseconds())/1000, "ms/token-p90")
		})
	}
}

// BenchmarkCompileSchema compiles the typical schema; the first masks are included in
// BenchmarkMask's decode figures.
func BenchmarkCompileSchema(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := CompileJSONSchema([]byte(typicalSchema), SchemaOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNewVocab(b *testing.B) {
	synthetic, _ := benchVocabs(b)
	pieces := make([][]byte, synthetic.Size())
	for i := range pieces {
		pieces[i] = synthetic.bytesOf[i]
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		NewVocab(len(pieces), func(id int32) ([]byte, bool) { return pieces[id], pieces[id] != nil })
	}
}

func bitsTrailing(w uint64) int {
	n := 0
	for w&1 == 0 {
		w >>= 1
		n++
	}
	return n
}
