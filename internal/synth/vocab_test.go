package synth

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestByteTokens(t *testing.T) {
	// GPT-2's (and Qwen's) first ids: "!" is 0, "Ā" (byte 0) 188, "Ċ" (newline) 198,
	// "Ġ" (space) 220.
	assert.Equal(t, "!", byteTokens[0])
	assert.Equal(t, "~", byteTokens[93])
	assert.Equal(t, "Ā", byteTokens[188])
	assert.Equal(t, "Ċ", byteTokens[198])
	assert.Equal(t, "Ġ", byteTokens[220])
	assert.Equal(t, 220, byteIDs[' '])
	assert.Equal(t, "Ġ", byteSpelling[' '])
	seen := map[string]bool{}
	for b := range 256 {
		s := byteSpelling[b]
		require.Equal(t, s, byteTokens[byteIDs[b]], "byte %d", b)
		require.False(t, seen[s], "byte %d spelled like another", b)
		seen[s] = true
		require.NotContains(t, s, " ", "a byte token must not contain a space: merges are split at it")
	}
}

func TestPreTokenize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Hello, world!", []string{"Hello", ",", " world", "!"}},
		{"It's they'RE we'll", []string{"It", "'s", " they", "'RE", " we", "'ll"}},
		{"x  = 2024;", []string{"x", " ", " =", " ", "2", "0", "2", "4", ";"}},
		{"a\n\n  b", []string{"a", "\n\n", " ", " b"}},
		{"end.\n", []string{"end", ".\n"}},
		{"trailing   ", []string{"trailing", "   "}},
		{"\t\"ok\"", []string{"\t", "\"ok", "\""}},
		{"(naïve café)", []string{"(naïve", " café", ")"}},
		{"日本語です", []string{"日本語です"}},
		{"😀😀 ok", []string{"😀😀", " ok"}},
		{"tab\tsep", []string{"tab", "\tsep"}},
	} {
		assert.Equal(t, c.want, preTokenize(c.in), "%q", c.in)
		assert.Equal(t, c.in, strings.Join(preTokenize(c.in), ""))
	}
}

func TestVocabularyPresets(t *testing.T) {
	want := map[string]struct{ bos, eos, think int }{
		"tiny":        {494, 496, 510},
		"small":       {2030, 2032, 2046},
		"real-widths": {4078, 4080, 4094},
		"27b":         {248302, 248304, 248318},
	}
	for _, name := range Presets() {
		cfg, err := Preset(name)
		require.NoError(t, err)
		start := time.Now()
		v, err := NewVocabulary(cfg.Vocab)
		require.NoError(t, err)
		t.Logf("%s: %d tokens, %d merges (%d learned), built in %v", name, len(v.Tokens), len(v.Merges), min(len(v.Merges), len(learnedMerges())), time.Since(start))
		checkVocabulary(t, v, cfg.Vocab)
		w := want[name]
		assert.Equal(t, w.bos, v.BOS, name)
		assert.Equal(t, w.bos, v.Pad, name)
		assert.Equal(t, w.eos, v.EOS, name)
		assert.Equal(t, w.think, v.ID(ThinkStart), name)
		assert.Equal(t, cfg.Vocab-1, v.ID(ThinkEnd), name)
		assert.Equal(t, cfg.Vocab-18, v.ID(EndOfText), name)
		assert.Equal(t, w.bos+1, v.ID(IMStart), name)
	}
}

// checkVocabulary checks what any BPE tokenizer (llama.cpp's included) relies on. Plain
// comparisons rather than testify calls keep it fast over 248320 tokens.
func checkVocabulary(t *testing.T, v *Vocabulary, size int) {
	t.Helper()
	require.Len(t, v.Tokens, size)
	require.Len(t, v.Types, size)
	// Unique spellings: llama.cpp asserts it.
	ids := make(map[string]int, size)
	for i, tok := range v.Tokens {
		if tok == "" {
			t.Fatalf("token %d is empty", i)
		}
		if j, dup := ids[tok]; dup {
			t.Fatalf("tokens %d and %d are both %q", j, i, tok)
		}
		ids[tok] = i
	}
	require.Equal(t, byteTokens[:], v.Tokens[:256])
	nSpecial := size - 256 - len(v.Merges)
	require.GreaterOrEqual(t, nSpecial, 5)
	// Merge i joins two earlier tokens into token 256 + i.
	for i, m := range v.Merges {
		a, b, ok := strings.Cut(m, " ")
		if !ok || strings.Contains(b, " ") {
			t.Fatalf("merge %d %q is not two tokens", i, m)
		}
		ia, oka := ids[a]
		ib, okb := ids[b]
		if !oka || !okb || ia >= 256+i || ib >= 256+i {
			t.Fatalf("merge %d %q: a part is unknown or later (%d %v, %d %v)", i, m, ia, oka, ib, okb)
		}
		if a+b != v.Tokens[256+i] {
			t.Fatalf("merge %d %q makes %q, token %d is %q", i, m, a+b, 256+i, v.Tokens[256+i])
		}
	}
	for i := range 256 + len(v.Merges) {
		if v.Types[i] != TokenNormal {
			t.Fatalf("token %d %q has type %d", i, v.Tokens[i], v.Types[i])
		}
	}
	for i := 256 + len(v.Merges); i < size; i++ {
		tok := v.Tokens[i]
		want := TokenControl
		if !strings.HasPrefix(tok, "<|") {
			want = TokenUserDefined
		}
		require.Equal(t, want, v.Types[i], "special %q", tok)
	}
	for _, s := range []string{EndOfText, IMStart, IMEnd, ThinkStart, ThinkEnd} {
		require.GreaterOrEqual(t, v.ID(s), 256+len(v.Merges), s)
	}
	assert.Equal(t, EndOfText, v.Tokens[v.BOS])
	assert.Equal(t, IMEnd, v.Tokens[v.EOS])
}

func TestVocabularySmallSizes(t *testing.T) {
	_, err := NewVocabulary(MinVocabulary - 1)
	require.ErrorContains(t, err, "synth: a vocabulary of 260 tokens")
	for _, size := range []int{MinVocabulary, 262, 273, 274, 275, 300} {
		v, err := NewVocabulary(size)
		require.NoError(t, err, size)
		checkVocabulary(t, v, size)
	}
	v, _ := NewVocabulary(MinVocabulary)
	assert.Equal(t, []string{EndOfText, IMStart, IMEnd, ThinkStart, ThinkEnd}, v.Tokens[256:])
	assert.Empty(t, v.Merges)
	v, _ = NewVocabulary(263) // two optional specials fit, in Qwen's order
	assert.Equal(t, []string{EndOfText, IMStart, IMEnd, "<|object_ref_start|>", "<|object_ref_end|>", ThinkStart, ThinkEnd}, v.Tokens[256:])
	v, _ = NewVocabulary(275) // all eighteen and one merge
	assert.Len(t, v.Merges, 1)
	assert.Equal(t, EndOfText, v.Tokens[257])
}

func TestVocabularyPrefix(t *testing.T) {
	// A smaller vocabulary is a prefix of a larger one up to its special tokens, across
	// the end of the learned merges and into the filler.
	big, err := NewVocabulary(8192)
	require.NoError(t, err)
	for _, size := range []int{512, 2048, 4096} {
		v, err := NewVocabulary(size)
		require.NoError(t, err)
		n := 256 + len(v.Merges)
		assert.Equal(t, big.Tokens[:n], v.Tokens[:n], size)
		assert.Equal(t, big.Merges[:len(v.Merges)], v.Merges, size)
	}
}

func TestTrainBPEDeterministic(t *testing.T) {
	a := trainBPE(corpus)
	b := trainBPE(corpus)
	require.Equal(t, a, b)
	require.Equal(t, learnedMerges(), a)
	// The corpus teaches the tiny and small vocabularies all their merges.
	assert.Greater(t, len(a), 2048-256-18)
}

// bpeEncode is a textbook BPE encoder over the vocabulary's merges: split a pre-token
// into byte tokens, then apply the best-ranked adjacent merge until none applies.
func bpeEncode(v *Vocabulary, rank map[string]int, pretoken string) []string {
	var syms []string
	for i := range len(pretoken) {
		syms = append(syms, byteSpelling[pretoken[i]])
	}
	for {
		best, at := -1, -1
		for i := 1; i < len(syms); i++ {
			if r, ok := rank[syms[i-1]+" "+syms[i]]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			return syms
		}
		syms = slices.Replace(syms, at-1, at+1, syms[at-1]+syms[at])
	}
}

func TestVocabularyEncodes(t *testing.T) {
	v, err := NewVocabulary(2048)
	require.NoError(t, err)
	rank := map[string]int{}
	for i, m := range v.Merges {
		rank[m] = i
	}
	ids := map[string]int{}
	for i, tok := range v.Tokens {
		ids[tok] = i
	}
	var total, bytes int
	for _, piece := range splitSpecials(corpus) {
		for _, w := range preTokenize(piece) {
			syms := bpeEncode(v, rank, w)
			for _, s := range syms {
				_, ok := ids[s]
				require.True(t, ok, "%q encodes to unknown %q", w, s)
			}
			var spelled strings.Builder
			for i := range len(w) {
				spelled.WriteString(byteSpelling[w[i]])
			}
			require.Equal(t, spelled.String(), strings.Join(syms, ""))
			total += len(syms)
			bytes += len(w)
		}
	}
	t.Logf("corpus: %d bytes, %d tokens with the 2048 vocabulary", bytes, total)
	assert.Less(t, total, bytes/3, "the learned merges should compress the text they were learned from")
	assert.Equal(t, []string{"Ġthe"}, bpeEncode(v, rank, " the"))
}

func TestTokenizerMetadata(t *testing.T) {
	data := build(t, "tiny", 1, 0)
	f, err := gguf.Parse(data)
	require.NoError(t, err)
	s := func(key string) string {
		v, err := f.String(key)
		require.NoError(t, err, key)
		return v
	}
	assert.Equal(t, "gpt2", s(KeyTokenizerModel))
	assert.Equal(t, "qwen35", s(KeyTokenizerPre))
	assert.Equal(t, ChatTemplate, s(KeyChatTemplate))
	tokens, err := f.Strings(KeyTokens)
	require.NoError(t, err)
	assert.Len(t, tokens, 512)
	merges, err := f.Strings(KeyMerges)
	require.NoError(t, err)
	assert.Len(t, merges, 512-256-18)
	tt, ok := f.Lookup(KeyTokenType)
	require.True(t, ok)
	assert.Equal(t, gguf.ValueInt32, tt.ElemType(), "llama.cpp reads token types as int32")
	assert.Equal(t, 512, tt.Len())
	for key, want := range map[string]int64{KeyBOS: 494, KeyEOS: 496, KeyPadding: 494} {
		v, err := f.Int(key)
		require.NoError(t, err)
		assert.Equal(t, want, v, key)
	}
	addBOS, err := f.Bool(KeyAddBOS)
	require.NoError(t, err)
	assert.False(t, addBOS)
}

func BenchmarkVocabulary27B(b *testing.B) {
	learnedMerges()
	for b.Loop() {
		if _, err := NewVocabulary(248320); err != nil {
			b.Fatal(err)
		}
	}
}

// encode tokenizes text with the vocabulary: special tokens first, then Qwen3.5's
// pre-tokenizer and textbook BPE.
func encode(t *testing.T, v *Vocabulary, text string) []int {
	t.Helper()
	rank := map[string]int{}
	for i, m := range v.Merges {
		rank[m] = i
	}
	specials := map[string]int{}
	for i := 256 + len(v.Merges); i < len(v.Tokens); i++ {
		specials[v.Tokens[i]] = i
	}
	var ids []int
	for text != "" {
		at, which := len(text), ""
		for s := range specials {
			if i := strings.Index(text, s); i >= 0 && (i < at || i == at && len(s) > len(which)) {
				at, which = i, s
			}
		}
		for _, w := range preTokenize(text[:at]) {
			for _, s := range bpeEncode(v, rank, w) {
				id := v.ID(s)
				require.GreaterOrEqual(t, id, 0, "%q", s)
				ids = append(ids, id)
			}
		}
		if which == "" {
			break
		}
		ids = append(ids, specials[which])
		text = text[at+len(which):]
	}
	return ids
}

func TestVocabularyMatchesLlamaCpp(t *testing.T) {
	// Token ids from upstream llama.cpp's llama-tokenize (commit bbeb89d76, special tokens
	// parsed) on the tiny preset's vocabulary: the vocabulary, the pre-tokenizer and
	// textbook BPE agree with llama.cpp's.
	v, err := NewVocabulary(512)
	require.NoError(t, err)
	for _, c := range []struct {
		text string
		ids  []int
	}{
		{"Hello world! <|im_start|>user\nThe quick brown fox<|im_end|> 日本語 😀",
			[]int{39, 284, 326, 465, 75, 67, 0, 220, 495, 312, 264, 198, 339, 220, 353, 72, 484, 266, 362, 77, 271, 78, 87, 496, 220, 162, 245, 98, 162, 250, 105, 164, 103, 252, 324, 246, 222}},
		{"It's 2024, we'll see:  x := y;\t\"ok\"\n\n  def f(a, b):\n    return a+b  ",
			[]int{40, 83, 6, 82, 220, 17, 15, 17, 19, 11, 272, 68, 6, 429, 263, 68, 68, 25, 220, 220, 87, 220, 25, 28, 453, 26, 197, 1, 78, 74, 1, 270, 220, 360, 69, 271, 7, 64, 11, 266, 477, 273, 416, 257, 10, 65, 256}},
		{"Größe über naïve café — ∑ᵢ aᵢ <think>hmm</think>",
			[]int{38, 81, 127, 114, 127, 253, 68, 220, 127, 120, 65, 264, 281, 424, 107, 394, 278, 64, 69, 436, 333, 242, 325, 239, 157, 113, 95, 257, 157, 113, 95, 220, 510, 71, 76, 76, 511}},
	} {
		assert.Equal(t, c.ids, encode(t, v, c.text), "%q", c.text)
	}
}
