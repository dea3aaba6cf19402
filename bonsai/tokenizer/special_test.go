package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// partitionReference is llama.cpp's tokenizer_st_partition written out: for each
// special token in turn, every text fragment is rescanned.
func (t *Tokenizer) partitionReference(text string, parseSpecial bool) []fragment {
	frags := []fragment{{0, len(text), -1}}
	for _, id := range t.specials {
		if !parseSpecial && t.attrs[id]&(attrControl|attrUnknown) != 0 {
			continue
		}
		s := t.tokens[id]
		var next []fragment
		for _, f := range frags {
			if f.tok >= 0 {
				next = append(next, f)
				continue
			}
			start := f.start
			for start < f.end {
				i := strings.Index(text[start:f.end], s)
				if i < 0 {
					break
				}
				if i > 0 {
					next = append(next, fragment{start, start + i, -1})
				}
				next = append(next, fragment{start + i, start + i + len(s), id})
				start += i + len(s)
			}
			if start < f.end {
				next = append(next, fragment{start, f.end, -1})
			}
		}
		frags = next
	}
	return frags
}

// TestPartition compares the one-pass partition with the reference on random strings
// made of pieces of special tokens, with overlaps and near misses.
func TestPartition(t *testing.T) {
	tk := qwen3(t, "qwen35")
	pieces := []string{"<|im_start|>", "<|im_end|>", "<think>", "</think>", "</s>", "<|endoftext|>",
		"<tool_call>", "</tool_call>", "<|fim_prefix|>", "<", "|", ">", "/", "<|", "|>", "im_", "think", "s", "x", " ", "\n",
		"<|im_start", "end|>", "<thi", "nk>", "</", "<|endoftext"}
	rng := rand.New(rand.NewPCG(3, 4))
	sc := new(bpeScratch)
	for range 5000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		if text == "" {
			continue
		}
		for _, special := range []bool{true, false} {
			want := tk.partitionReference(text, special)
			got := tk.partition(text, special, sc)
			// The reference keeps token fragments' positions; the partition does too.
			require.Equal(t, want, got, "%q special=%v", text, special)
		}
	}
}
