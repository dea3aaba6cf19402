package hfvocab

import (
	"bytes"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testTokenizer = `{
  "added_tokens": [
    {"id": 6, "content": "<|endoftext|>", "special": true},
    {"id": 7, "content": "<|fim_prefix|>", "special": false},
    {"id": 9, "content": "<think>", "special": false}
  ],
  "model": {
    "type": "BPE",
    "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4, "Ġ": 5},
    "merges": [["a", "b"], ["ab", "c"]]
  }
}`

const testConfig = `{
  "add_bos_token": false,
  "bos_token": null,
  "eos_token": {"content": "<|endoftext|>", "lstrip": false},
  "pad_token": "<|endoftext|>",
  "chat_template": "{{ messages }}"
}`

func parse(t *testing.T, kv []gguf.KV) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, kv))
	f, err := gguf.Parse(buf.Bytes())
	require.NoError(t, err)
	assert.Empty(t, f.Tensors)
	return f
}

func TestConvert(t *testing.T) {
	kv, err := Convert([]byte(testTokenizer), []byte(testConfig), Options{Pre: "qwen2", VocabSize: 12, BOS: "<|endoftext|>", Name: "test"})
	require.NoError(t, err)
	f := parse(t, kv)

	assert.Equal(t, "qwen3", f.Architecture())
	name, _ := f.String("general.name")
	assert.Equal(t, "test", name)
	model, _ := f.String("tokenizer.ggml.model")
	assert.Equal(t, "gpt2", model)
	pre, _ := f.String("tokenizer.ggml.pre")
	assert.Equal(t, "qwen2", pre)
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "ab", "abc", "Ġ", "<|endoftext|>", "<|fim_prefix|>", "[PAD8]", "<think>", "[PAD10]", "[PAD11]"}, tokens)
	types, err := f.Ints("tokenizer.ggml.token_type")
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 1, 1, 1, 1, 1, 3, 3, 5, 4, 5, 5}, types)
	v, _ := f.Lookup("tokenizer.ggml.token_type")
	assert.Equal(t, gguf.ValueInt32, v.ElemType())
	merges, err := f.Strings("tokenizer.ggml.merges")
	require.NoError(t, err)
	assert.Equal(t, []string{"a b", "ab c"}, merges)
	for key, want := range map[string]uint32{
		"tokenizer.ggml.bos_token_id": 6, "tokenizer.ggml.eos_token_id": 6, "tokenizer.ggml.padding_token_id": 6,
	} {
		got, err := f.Uint32(key)
		require.NoError(t, err, key)
		assert.Equal(t, want, got, key)
	}
	addBOS, err := f.Bool("tokenizer.ggml.add_bos_token")
	require.NoError(t, err)
	assert.False(t, addBOS)
	assert.False(t, f.Has("tokenizer.ggml.add_eos_token"))
	tmpl, _ := f.String("tokenizer.chat_template")
	assert.Equal(t, "{{ messages }}", tmpl)

	f = parse(t, SetPre(kv, "qwen35"))
	pre, _ = f.String("tokenizer.ggml.pre")
	assert.Equal(t, "qwen35", pre)
	again, _ := f.Strings("tokenizer.ggml.tokens")
	assert.Equal(t, tokens, again)
}

func TestConvertStringMergesNoPadding(t *testing.T) {
	tj := `{"added_tokens": [], "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}}`
	kv, err := Convert([]byte(tj), []byte(`{}`), Options{Pre: "gpt-2"})
	require.NoError(t, err)
	f := parse(t, kv)
	merges, _ := f.Strings("tokenizer.ggml.merges")
	assert.Equal(t, []string{"a b"}, merges)
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	assert.Equal(t, []string{"a", "b", "ab"}, tokens)
	assert.False(t, f.Has("tokenizer.ggml.bos_token_id"))
	assert.False(t, f.Has("tokenizer.ggml.add_bos_token"))
	assert.False(t, f.Has("tokenizer.chat_template"))
}

func TestConvertErrors(t *testing.T) {
	for _, c := range []struct {
		name, tj, cj string
		opt          Options
		want         string
	}{
		{"no pre", testTokenizer, testConfig, Options{}, "no pre-tokenizer name"},
		{"bad json", `{`, testConfig, Options{Pre: "x"}, "tokenizer.json"},
		{"not BPE", `{"model": {"type": "WordPiece"}}`, testConfig, Options{Pre: "x"}, `model type "WordPiece"`},
		{"no merges", `{"model": {"type": "BPE", "vocab": {"a": 0}}}`, `{}`, Options{Pre: "x"}, "no merges"},
		{"bad merge", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a"]]}}`, `{}`, Options{Pre: "x"}, "merge 0 has 1 parts"},
		{"id clash", `{"added_tokens": [{"id": 0, "content": "x"}], "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`, `{}`, Options{Pre: "x"}, `id 0 is both`},
		{"too small", testTokenizer, testConfig, Options{Pre: "x", VocabSize: 5}, "vocabulary size 5 is below the 10 tokens"},
		{"unknown eos", testTokenizer, `{"eos_token": "<|im_end|>"}`, Options{Pre: "x"}, `token "<|im_end|>" is not in the vocabulary`},
		{"bad eos", testTokenizer, `{"eos_token": 3}`, Options{Pre: "x"}, "eos_token_id"},
		{"bad template", testTokenizer, `{"chat_template": [1]}`, Options{Pre: "x"}, "chat_template is not a string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Convert([]byte(c.tj), []byte(c.cj), c.opt)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "hfvocab: ")
		})
	}
}

func TestLooksSpecial(t *testing.T) {
	for s, want := range map[string]bool{
		"<|im_start|>": true, "<｜fim▁begin｜>": true, "<unused12>": true, "<pad>": true,
		"<think>": false, "</tool_call>": false, "<|x": false, "abc": false,
	} {
		assert.Equal(t, want, looksSpecial(s), s)
	}
}
