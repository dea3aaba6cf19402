package tokenizer

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseKV writes kv as a vocabulary-only GGUF and parses it.
func parseKV(t testing.TB, kv []gguf.KV) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, kv, nil)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	f, err := gguf.Parse(buf.Bytes())
	require.NoError(t, err)
	return f
}

// synthKV returns the tokenizer keys of the synthetic vocabulary of size tokens.
func synthKV(t testing.TB, size int) []gguf.KV {
	t.Helper()
	v, err := synth.NewVocabulary(size)
	require.NoError(t, err)
	kv := func(key string, x any) gguf.KV { return gguf.KV{Key: key, Value: gguf.MustValue(x)} }
	return []gguf.KV{
		kv("general.architecture", "qwen35"),
		kv(synth.KeyTokenizerModel, synth.TokenizerModel),
		kv(synth.KeyTokenizerPre, synth.TokenizerPreQwen35),
		kv(synth.KeyTokens, v.Tokens),
		kv(synth.KeyTokenType, v.Types),
		kv(synth.KeyMerges, v.Merges),
		kv(synth.KeyBOS, uint32(v.BOS)),
		kv(synth.KeyEOS, uint32(v.EOS)),
		kv(synth.KeyPadding, uint32(v.Pad)),
		kv(synth.KeyAddBOS, false),
	}
}

func TestSyntheticVocabulary(t *testing.T) {
	v, err := synth.NewVocabulary(512)
	require.NoError(t, err)
	tk, err := FromGGUF(parseKV(t, synthKV(t, 512)))
	require.NoError(t, err)

	assert.Equal(t, 512, tk.Len())
	assert.Equal(t, "qwen35", tk.Pre())
	bos, ok := tk.BOS()
	assert.True(t, ok)
	assert.EqualValues(t, v.BOS, bos)
	eos, ok := tk.EOS()
	assert.True(t, ok)
	assert.EqualValues(t, v.EOS, eos)
	assert.False(t, tk.AddBOS())
	assert.False(t, tk.AddEOS(), "no add_eos key: false")

	for _, s := range []string{
		"", "Hello, world!", "The quick brown fox jumps over the lazy dog.\n\n",
		"func main() {\n\tfmt.Println(\"hi\")\n}\n", "中文 日本語 한국어 🚀👨‍👩‍👧", "   spaces   ",
		"it's THEY'RE", "ca\u0301fe\u0301", "\x00\x01\x7f", "1234567890",
	} {
		ids := tk.Encode(s, false)
		assert.Equal(t, s, tk.Decode(ids), "%q", s)
		for _, id := range ids {
			assert.False(t, tk.IsSpecial(id), "%q: %d", s, id)
		}
	}

	// Special tokens: control ones only with parseSpecial, user-defined ones always.
	imStart, ok := tk.Lookup(synth.IMStart)
	require.True(t, ok)
	think, ok := tk.Lookup(synth.ThinkStart)
	require.True(t, ok)
	assert.Equal(t, Control, tk.Type(imStart))
	assert.Equal(t, UserDefined, tk.Type(think))
	text := synth.IMStart + "user\n" + synth.ThinkStart + "hmm"
	ids := tk.Encode(text, true)
	assert.Equal(t, imStart, ids[0])
	assert.Contains(t, ids, think)
	assert.Equal(t, text, tk.Decode(ids))
	ids = tk.Encode(text, false)
	assert.NotContains(t, ids, imStart)
	assert.Contains(t, ids, think)
	assert.Equal(t, text, tk.Decode(ids))

	imEnd, _ := tk.Lookup(synth.IMEnd)
	endOfText, _ := tk.Lookup(synth.EndOfText)
	assert.True(t, tk.IsEndOfGeneration(imEnd))
	assert.True(t, tk.IsEndOfGeneration(endOfText))
	assert.False(t, tk.IsEndOfGeneration(imStart))
	assert.False(t, tk.IsEndOfGeneration(think))

	// Every merge's result is a token, so every byte-level spelling decodes to its bytes.
	for id := range int32(256) {
		assert.Len(t, tk.Piece(id), 1)
	}
}

func TestQwen3Vocabulary(t *testing.T) {
	tk := qwen3(t, "qwen35")
	assert.Equal(t, 151936, tk.Len())
	bos, ok := tk.BOS()
	assert.True(t, ok)
	assert.Equal(t, "<|endoftext|>", tk.Text(bos))
	eos, _ := tk.EOS()
	assert.Equal(t, "<|im_end|>", tk.Text(eos))
	assert.False(t, tk.AddBOS())
	assert.False(t, tk.AddEOS())

	id := func(s string) int32 {
		i, ok := tk.Lookup(s)
		require.True(t, ok, s)
		return i
	}
	assert.Equal(t, "Ġworld", tk.Text(id("Ġworld")))
	assert.Equal(t, " world", tk.Piece(id("Ġworld")))
	assert.Equal(t, Normal, tk.Type(id("Ġworld")))
	assert.Equal(t, Control, tk.Type(id("<|im_start|>")))
	assert.Equal(t, Control, tk.Type(id("<|fim_prefix|>")))
	assert.Equal(t, UserDefined, tk.Type(id("<think>")))
	assert.Equal(t, Unused, tk.Type(id("[PAD151935]")))
	assert.Equal(t, "", tk.Piece(id("[PAD151935]")))
	assert.Equal(t, "<|im_start|>", tk.Piece(id("<|im_start|>")))
	assert.Equal(t, Type(0), tk.Type(-1))
	assert.Equal(t, "", tk.Text(151936))
	assert.Equal(t, "", tk.Piece(1<<30))
	assert.Equal(t, "user-defined", UserDefined.String())
	assert.Equal(t, "Type(9)", Type(9).String())

	for _, s := range []string{"<|im_end|>", "<|endoftext|>", "</s>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"} {
		assert.True(t, tk.IsEndOfGeneration(id(s)), s)
		assert.True(t, tk.IsSpecial(id(s)), s)
	}
	for _, s := range []string{"<|im_start|>", "<think>", "<|fim_prefix|>", "Ġworld", "[PAD151935]"} {
		assert.False(t, tk.IsEndOfGeneration(id(s)), s)
	}
	// </s> is an ordinary token of Qwen's vocabulary that llama.cpp treats as control:
	// matched only with parseSpecial.
	assert.Equal(t, Normal, tk.Type(id("</s>")))
	assert.Equal(t, []int32{id("</s>")}, tk.Encode("</s>", true))
	assert.NotEqual(t, []int32{id("</s>")}, tk.Encode("</s>", false))

	// AppendEncode appends.
	dst := []int32{-7}
	dst = tk.AppendEncode(dst, "Hello world", false)
	assert.Equal(t, []int32{-7, id("Hello"), id("Ġworld")}, dst)
	assert.Nil(t, tk.Encode("", true))
	assert.Equal(t, "Hello world", tk.Decode([]int32{-1, id("Hello"), 1 << 30, id("Ġworld")}))
}

// TestUserDefinedOverride: a user-defined token that looks like a fill-in-the-middle or
// end-of-turn marker is control too (as in llama.cpp), so it is matched only with
// parseSpecial; a plain user-defined token always.
func TestUserDefinedOverride(t *testing.T) {
	kv := synthKV(t, 512)
	for i := range kv {
		switch kv[i].Key {
		case synth.KeyTokens:
			toks := slices.Clone(kv[i].Value.Interface().([]string))
			toks[300], toks[301] = "<|fim_prefix|>", "<|eot_id|>"
			kv[i].Value = gguf.MustValue(toks)
		case synth.KeyTokenType:
			types := slices.Clone(kv[i].Value.Interface().([]int32))
			types[300], types[301] = int32(UserDefined), int32(Normal)
			kv[i].Value = gguf.MustValue(types)
		}
	}
	tk, err := FromGGUF(parseKV(t, kv))
	require.NoError(t, err)
	assert.Equal(t, UserDefined, tk.Type(300))
	assert.True(t, tk.IsSpecial(300))
	assert.True(t, tk.IsSpecial(301))
	assert.True(t, tk.IsEndOfGeneration(301))
	assert.False(t, tk.IsEndOfGeneration(300))
	assert.Equal(t, []int32{300, 301}, tk.Encode("<|fim_prefix|><|eot_id|>", true))
	assert.NotContains(t, tk.Encode("<|fim_prefix|><|eot_id|>", false), int32(300))
	assert.NotContains(t, tk.Encode("<|fim_prefix|><|eot_id|>", false), int32(301))
}

// add_bos_token and add_eos_token are read as the file sets them; Encode adds neither.
func TestAddBOSAndEOS(t *testing.T) {
	for _, c := range []struct{ bos, eos bool }{{false, true}, {true, true}, {true, false}, {false, false}} {
		kv := append(synthKV(t, 512), gguf.KV{Key: keyAddEOS, Value: gguf.MustValue(c.eos)})
		for i := range kv {
			if kv[i].Key == keyAddBOS {
				kv[i].Value = gguf.MustValue(c.bos)
			}
		}
		tk, err := FromGGUF(parseKV(t, kv))
		require.NoError(t, err)
		assert.Equal(t, c.bos, tk.AddBOS(), "%+v", c)
		assert.Equal(t, c.eos, tk.AddEOS(), "%+v", c)
		bos, _ := tk.BOS()
		eos, _ := tk.EOS()
		ids := tk.Encode("hello", true)
		assert.NotContains(t, ids, bos)
		assert.NotContains(t, ids, eos)
	}
}

func TestErrors(t *testing.T) {
	base := synthKV(t, 512)
	set := func(key string, v any) []gguf.KV {
		kv := slices.Clone(base)
		for i := range kv {
			if kv[i].Key == key {
				kv[i].Value = gguf.MustValue(v)
				return kv
			}
		}
		return append(kv, gguf.KV{Key: key, Value: gguf.MustValue(v)})
	}
	drop := func(key string) []gguf.KV {
		return slices.DeleteFunc(slices.Clone(base), func(e gguf.KV) bool { return e.Key == key })
	}
	types := func(n int) []int32 { return make([]int32, n) }
	for _, c := range []struct {
		name string
		kv   []gguf.KV
		want string
	}{
		{"unknown pre", set(keyPre, "llama-bpe"), `tokenizer: unsupported pre-tokenizer "llama-bpe"`},
		{"empty pre", set(keyPre, ""), `tokenizer: unsupported pre-tokenizer ""`},
		{"unknown model", set(keyModel, "llama"), `tokenizer: unsupported tokenizer model "llama"`},
		{"no model", drop(keyModel), `tokenizer: gguf: key "tokenizer.ggml.model": not found`},
		{"no pre", drop(keyPre), `tokenizer: gguf: key "tokenizer.ggml.pre": not found`},
		{"no tokens", drop(keyTokens), `tokenizer: gguf: key "tokenizer.ggml.tokens": not found`},
		{"no merges", drop(keyMerges), `tokenizer: gguf: key "tokenizer.ggml.merges": not found`},
		{"tokens of ints", set(keyTokens, []int32{1, 2}), `tokenizer: gguf: key "tokenizer.ggml.tokens": want array of string`},
		{"empty tokens", set(keyTokens, []string{}), "tokenizer: tokenizer.ggml.tokens is empty"},
		{"short types", set(keyTokenType, types(511)), "tokenizer: tokenizer.ggml.token_type has 511 entries for 512 tokens"},
		{"long types", set(keyTokenType, types(513)), "tokenizer: tokenizer.ggml.token_type has 513 entries for 512 tokens"},
		{"types of strings", set(keyTokenType, []string{"a"}), `tokenizer: gguf: key "tokenizer.ggml.token_type": want array of integer`},
		{"bos out of range", set("tokenizer.ggml.bos_token_id", uint32(512)), "tokenizer: tokenizer.ggml.bos_token_id is 512, outside the vocabulary of 512 tokens"},
		{"negative eos", set("tokenizer.ggml.eos_token_id", int32(-1)), "tokenizer: tokenizer.ggml.eos_token_id is -1, outside the vocabulary of 512 tokens"},
		{"bos a string", set("tokenizer.ggml.bos_token_id", "x"), `tokenizer: gguf: key "tokenizer.ggml.bos_token_id": want integer`},
		{"add_bos an int", set(keyAddBOS, uint32(1)), `tokenizer: gguf: key "tokenizer.ggml.add_bos_token": want bool`},
		{"add_eos an int", set(keyAddEOS, uint32(1)), `tokenizer: gguf: key "tokenizer.ggml.add_eos_token": want bool`},
		{"add_eos a string", set(keyAddEOS, "true"), `tokenizer: gguf: key "tokenizer.ggml.add_eos_token": want bool`},
		{"duplicate token", set(keyTokens, append(slices.Repeat([]string{"a"}, 2), make([]string, 510)...)), `tokenizer: tokens 0 and 1 are both "a"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromGGUF(parseKV(t, c.kv))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, strings.HasPrefix(err.Error(), "tokenizer: "), err.Error())
		})
	}

	// Accepted variants: no token types (all normal), the other pre-tokenizers.
	for _, kv := range [][]gguf.KV{drop(keyTokenType), set(keyPre, "qwen2"), set(keyPre, "gpt-2"), set(keyPre, "gpt2"), set(keyPre, "default")} {
		tk, err := FromGGUF(parseKV(t, kv))
		require.NoError(t, err)
		assert.Equal(t, "hello, world", tk.Decode(tk.Encode("hello, world", true)))
	}
}

// byteToken returns the id of the byte-level token of byte b in the Qwen vocabulary.
func byteToken(t *testing.T, tk *Tokenizer, b byte) int32 {
	id, ok := tk.ByteToken(b)
	require.True(t, ok)
	assert.Equal(t, string([]byte{b}), tk.Piece(id))
	return id
}

func TestStreamDecoder(t *testing.T) {
	tk := qwen3(t, "qwen35")
	bt := func(bs ...byte) []int32 {
		var ids []int32
		for _, b := range bs {
			ids = append(ids, byteToken(t, tk, b))
		}
		return ids
	}
	feed := func(d *StreamDecoder, ids []int32) []string {
		var out []string
		for _, id := range ids {
			out = append(out, d.Add(id))
		}
		return out
	}

	// 中 is E4 B8 AD: nothing until the last byte.
	d := tk.NewStreamDecoder()
	assert.Equal(t, []string{"a", "", "", "中"}, feed(d, bt('a', 0xE4, 0xB8, 0xAD)))
	assert.Equal(t, "", d.Flush())

	// An emoji in four byte tokens, then a word.
	d = tk.NewStreamDecoder()
	rocket := []byte("🚀")
	out := feed(d, append(bt(rocket...), tk.Encode(" go", false)...))
	assert.Equal(t, []string{"", "", "", "🚀", " go"}, out)

	// An emoji ZWJ sequence as the model would produce it: whatever the split, the pieces
	// are valid UTF-8 and add up to the text.
	for _, s := range []string{"👨‍👩‍👧‍👦 family", "🏳️‍🌈", "Tiếng Việt", "한국어 문장입니다", "e\u0301\u0301"} {
		d = tk.NewStreamDecoder()
		var got strings.Builder
		for _, id := range tk.Encode(s, false) {
			piece := d.Add(id)
			assert.True(t, utf8.ValidString(piece), "%q", piece)
			got.WriteString(piece)
		}
		got.WriteString(d.Flush())
		assert.Equal(t, s, got.String())
	}

	// Bytes that cannot become valid come out as U+FFFD at once.
	d = tk.NewStreamDecoder()
	assert.Equal(t, []string{"a", "\uFFFD", "\uFFFD", "b"}, feed(d, bt('a', 0xFF, 0x80, 'b')))
	// A lead byte followed by a byte that is no continuation.
	assert.Equal(t, []string{"", "\uFFFDz"}, feed(d, bt(0xE4, 'z')))
	// E0 80 can never be valid (overlong): not held.
	assert.Equal(t, []string{"", "\uFFFD\uFFFD"}, feed(d, bt(0xE0, 0x80)))
	// An incomplete character at the end: Flush.
	assert.Equal(t, []string{"x", "", ""}, feed(d, bt('x', 0xF0, 0x9F)))
	assert.Equal(t, "\uFFFD\uFFFD", d.Flush())
	assert.Equal(t, "", d.Flush())
	// Control tokens render their text.
	imEnd, _ := tk.Lookup("<|im_end|>")
	assert.Equal(t, "<|im_end|>", d.Add(imEnd))
}

// TestBPEPaths checks that the short-word and long-word BPE agree.
func TestBPEPaths(t *testing.T) {
	tk := qwen3(t, "qwen35")
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "e", "n", "s", "t", " ", "  ", "\n", "中", "é", "0", "ing", "the"}
	sc := new(bpeScratch)
	for range 2000 {
		var w strings.Builder
		for range 1 + rng.IntN(40) {
			w.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		word := w.String()
		syms := make([]int32, len(word))
		for i := range len(word) {
			syms[i] = tk.byteSym[word[i]]
		}
		short := slices.Clone(tk.bpe(slices.Clone(syms), sc))
		long := tk.bpeLong(slices.Clone(syms), sc)
		require.Equal(t, short, long, "%q", word)
	}
}

func TestConcurrentEncode(t *testing.T) {
	tk := qwen3(t, "qwen35")
	corpus := loadCorpus(t)
	want := make([][]int32, len(corpus))
	for i, e := range corpus {
		want[i] = tk.Encode(e.bytes(t), true)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := range len(corpus) {
				i := (k*7 + g*13) % len(corpus)
				assert.Equal(t, want[i], tk.Encode(corpus[i].bytes(t), true))
			}
		})
	}
	wg.Wait()
}

// TestSanitize: invalid UTF-8 is read as llama.cpp reads it.
func TestSanitize(t *testing.T) {
	for in, want := range map[string]string{
		"abc":              "abc",
		"a\xffb":           "a\uFFFDb",
		"\xe4\xb8":         "\uFFFD\uFFFD",
		"\xc0\x80":         "\x00",                     // overlong, to its shortest form
		"\xed\xa0\x80":     "\xed\xa0\x80",             // a surrogate stays
		"\xf4\x90\x80\x80": "\uFFFD\uFFFD\uFFFD\uFFFD", // above U+10FFFF
		"\xf8\x88\x80\x80": "\uFFFD\uFFFD\uFFFD\uFFFD",
	} {
		assert.Equal(t, want, sanitize(in), "%q", in)
	}
}

// benchText is the benchmarks' mixed text: the corpus's prose, code, numbers, CJK,
// other scripts, emoji, structured text and chat markup, without the pathological
// strings (hundreds of spaces in one word) that only tests need.
func benchText(b *testing.B) string {
	var text strings.Builder
	for _, e := range loadCorpus(b) {
		kind := e.Name[:strings.LastIndexByte(e.Name, '-')]
		switch kind {
		case "prose", "code", "numbers", "cjk", "script", "vietnamese-nfc", "emoji", "structured", "special":
			text.WriteString(e.bytes(b))
			text.WriteString("\n")
		}
	}
	return text.String()
}

func BenchmarkEncode(b *testing.B) {
	tk := qwen3(b, "qwen35")
	s := benchText(b)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		tk.Encode(s, true)
	}
}

// BenchmarkEncodeCold encodes with an empty word cache each time: every word's first
// occurrence goes through BPE.
func BenchmarkEncodeCold(b *testing.B) {
	f, err := qwen3GGUF()
	require.NoError(b, err)
	tk, err := FromGGUF(withPre{f, "qwen35"})
	require.NoError(b, err)
	s := benchText(b)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		b.StopTimer()
		tk.cache = newWordCache()
		b.StartTimer()
		tk.Encode(s, true)
	}
}

// BenchmarkEncodeParallel encodes on every core at once: the word cache is shared.
func BenchmarkEncodeParallel(b *testing.B) {
	tk := qwen3(b, "qwen35")
	s := benchText(b)
	b.SetBytes(int64(len(s)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tk.Encode(s, true)
		}
	})
}

// BenchmarkEncodeCorpus encodes the whole test corpus, pathological strings included.
func BenchmarkEncodeCorpus(b *testing.B) {
	tk := qwen3(b, "qwen35")
	var text strings.Builder
	for _, e := range loadCorpus(b) {
		text.WriteString(e.bytes(b))
		text.WriteString("\n")
	}
	s := text.String()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		tk.Encode(s, true)
	}
}

func BenchmarkDecode(b *testing.B) {
	tk := qwen3(b, "qwen35")
	var text strings.Builder
	for _, e := range loadCorpus(b) {
		text.WriteString(e.bytes(b))
	}
	ids := tk.Encode(text.String(), true)
	b.SetBytes(int64(len(tk.Decode(ids))))
	for b.Loop() {
		tk.Decode(ids)
	}
}

// TestPieceTypes: what each token type renders as.
func TestPieceTypes(t *testing.T) {
	kv := synthKV(t, 512)
	texts := map[int]string{300: "<0x41>", 301: "<0xZZ>", 302: "<unk>", 303: "[PAD303]", 304: "odd", 305: "Ġx"}
	ttypes := map[int]Type{300: Byte, 301: Byte, 302: Unknown, 303: Unused, 304: 0, 305: Normal}
	for i := range kv {
		switch kv[i].Key {
		case synth.KeyTokens:
			toks := slices.Clone(kv[i].Value.Interface().([]string))
			for id, s := range texts {
				toks[id] = s
			}
			kv[i].Value = gguf.MustValue(toks)
		case synth.KeyTokenType:
			types := slices.Clone(kv[i].Value.Interface().([]int32))
			for id, typ := range ttypes {
				types[id] = int32(typ)
			}
			kv[i].Value = gguf.MustValue(types)
		}
	}
	tk, err := FromGGUF(parseKV(t, kv))
	require.NoError(t, err)
	for id, want := range map[int32]string{300: "A", 301: "", 302: "<unk>", 303: "", 304: "", 305: " x"} {
		assert.Equal(t, want, tk.Piece(id), "%d", id)
	}
	assert.False(t, tk.IsSpecial(302)) // unknown: matched in text with parseSpecial, but not control or user-defined
	assert.Equal(t, []int32{302}, tk.Encode("<unk>", true))
	assert.NotEqual(t, []int32{302}, tk.Encode("<unk>", false))
}

func BenchmarkFromGGUF(b *testing.B) {
	f, err := qwen3GGUF()
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FromGGUF(f); err != nil {
			b.Fatal(err)
		}
	}
}
