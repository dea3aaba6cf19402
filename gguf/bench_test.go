package gguf

import (
	"strconv"
	"testing"
)

// vocabImage is a header like a real model's: a 250k-entry tokenizer
// (tokens, scores, types, merges) and a few hundred tensor infos.
func vocabImage(tb testing.TB) []byte {
	const n = 250_000
	tokens := make([]string, n)
	scores := make([]float32, n)
	types := make([]int32, n)
	for i := range tokens {
		tokens[i] = "tok" + strconv.Itoa(i*7919)
		scores[i] = float32(-i)
		types[i] = 1
	}
	merges := make([]string, n)
	for i := range merges {
		merges[i] = "a" + strconv.Itoa(i) + " b" + strconv.Itoa(i)
	}
	kv := []KV{
		{"general.architecture", MustValue("qwen35")},
		{"qwen35.block_count", MustValue(uint32(64))},
		{"tokenizer.ggml.model", MustValue("gpt2")},
		{"tokenizer.ggml.tokens", MustValue(tokens)},
		{"tokenizer.ggml.scores", MustValue(scores)},
		{"tokenizer.ggml.token_type", MustValue(types)},
		{"tokenizer.ggml.merges", MustValue(merges)},
	}
	var tensors []tensorBlob
	for i := range 850 {
		tensors = append(tensors, tensorBlob{
			TensorInfo{Name: "blk." + strconv.Itoa(i/13) + ".w" + strconv.Itoa(i%13) + ".weight", Type: TypePQ2_0, Shape: []int64{128, 1}},
			make([]byte, 34),
		})
	}
	return writeFile(tb, kv, tensors)
}

func BenchmarkParse(b *testing.B) {
	image := vocabImage(b)
	b.SetBytes(int64(len(image)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(image); err != nil {
			b.Fatal(err)
		}
	}
}

func TestVocabImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the 27B-sized vocabulary image (12.7 MB)")
	}
	f, err := Parse(vocabImage(t))
	if err != nil {
		t.Fatal(err)
	}
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(toks) != 250_000 || toks[1] != "tok7919" {
		t.Fatalf("tokens: %d %v", len(toks), err)
	}
}
