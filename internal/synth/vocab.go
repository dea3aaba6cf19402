package synth

import (
	"container/heap"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/bonsai-go/sdk/gguf"
)

// The token types of tokenizer.ggml.token_type, as llama.cpp's llama_token_type numbers
// them. A GPT-2-style byte-level vocabulary stores its 256 byte tokens as ordinary
// (normal) tokens spelled with the bytes_to_unicode characters, not as type 6 (byte),
// which llama.cpp reserves for SentencePiece's <0xNN> tokens.
const (
	TokenNormal      int32 = 1
	TokenControl     int32 = 3
	TokenUserDefined int32 = 4
)

// The special tokens every synthetic vocabulary holds, however small.
const (
	EndOfText  = "<|endoftext|>" // BOS and padding, as in Qwen
	IMStart    = "<|im_start|>"
	IMEnd      = "<|im_end|>" // EOS: the end of a chat turn
	ThinkStart = "<think>"
	ThinkEnd   = "</think>"
)

// specialTokens are Qwen's added tokens in Qwen's order, with their types. A vocabulary
// too small for all of them keeps the required ones (see NewVocabulary).
var specialTokens = []struct {
	text     string
	typ      int32
	required bool
}{
	{EndOfText, TokenControl, true},
	{IMStart, TokenControl, true},
	{IMEnd, TokenControl, true},
	{"<|object_ref_start|>", TokenControl, false},
	{"<|object_ref_end|>", TokenControl, false},
	{"<|box_start|>", TokenControl, false},
	{"<|box_end|>", TokenControl, false},
	{"<|quad_start|>", TokenControl, false},
	{"<|quad_end|>", TokenControl, false},
	{"<|vision_start|>", TokenControl, false},
	{"<|vision_end|>", TokenControl, false},
	{"<|vision_pad|>", TokenControl, false},
	{"<|image_pad|>", TokenControl, false},
	{"<|video_pad|>", TokenControl, false},
	{"<tool_call>", TokenUserDefined, false},
	{"</tool_call>", TokenUserDefined, false},
	{ThinkStart, TokenUserDefined, true},
	{ThinkEnd, TokenUserDefined, true},
}

// ChatTemplate is the tokenizer.chat_template of every synthetic model: ChatML, as Qwen
// uses, with Qwen3's empty think block when thinking is switched off. llama.cpp
// recognises it as ChatML by its <|im_start|> marker.
const ChatTemplate = `{%- for message in messages -%}
{{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}
{{- '<think>\n\n</think>\n\n' -}}
{%- endif -%}
{%- endif -%}
`

// The GGUF keys of the tokenizer.
const (
	KeyTokenizerModel  = "tokenizer.ggml.model"
	KeyTokenizerPre    = "tokenizer.ggml.pre"
	KeyTokens          = "tokenizer.ggml.tokens"
	KeyTokenType       = "tokenizer.ggml.token_type"
	KeyMerges          = "tokenizer.ggml.merges"
	KeyBOS             = "tokenizer.ggml.bos_token_id"
	KeyEOS             = "tokenizer.ggml.eos_token_id"
	KeyPadding         = "tokenizer.ggml.padding_token_id"
	KeyAddBOS          = "tokenizer.ggml.add_bos_token"
	KeyChatTemplate    = "tokenizer.chat_template"
	TokenizerModel     = "gpt2"   // llama.cpp's name for byte-level BPE
	TokenizerPreQwen35 = "qwen35" // the pre-tokenizer regex Qwen3.5 uses
)

// MinVocabulary is the smallest vocabulary NewVocabulary can build: the 256 byte tokens
// and the five required special tokens.
const MinVocabulary = 256 + 5

// A Vocabulary is a GPT-2-style byte-level BPE tokenizer: the 256 byte tokens first (in
// GPT-2's bytes_to_unicode order, as Qwen's vocabulary has them), then one token per
// merge in merge order, then Qwen's special tokens at the end. Every merge "a b" joins two
// earlier tokens into the token ab, so the vocabulary is valid for any BPE tokenizer.
type Vocabulary struct {
	Tokens []string // byte-level spelling: each byte is one bytes_to_unicode character
	Types  []int32  // TokenNormal, TokenControl or TokenUserDefined per token
	Merges []string // "a b", highest priority first
	BOS    int      // <|endoftext|>
	EOS    int      // <|im_end|>
	Pad    int      // <|endoftext|>
}

// ID returns the id of the token spelled text (byte-level spelling), or −1.
func (v *Vocabulary) ID(text string) int {
	// Special tokens sit at the end, so search from there.
	for i := len(v.Tokens) - 1; i >= 0; i-- {
		if v.Tokens[i] == text {
			return i
		}
	}
	return -1
}

// NewVocabulary returns the vocabulary of size tokens. Its merges are first the ones
// plain BPE training learns from the package's small built-in corpus (English, code and
// a range of scripts, pre-tokenized with Qwen3.5's regex), then, when a vocabulary needs
// more than the corpus can teach (the 27B model's 248320 tokens), deterministic filler
// merges that append a lowercase letter to an existing token. A smaller vocabulary is a
// prefix of a larger one up to its special tokens, which take the last ids: all eighteen
// of Qwen's when they fit beside at least one merge, otherwise the five required ones
// (EndOfText, IMStart, IMEnd, ThinkStart, ThinkEnd) and as many others as fit.
func NewVocabulary(size int) (*Vocabulary, error) {
	if size < MinVocabulary {
		return nil, fmt.Errorf("synth: a vocabulary of %d tokens cannot hold the 256 byte tokens and 5 special tokens (need %d)", size, MinVocabulary)
	}
	specials := chooseSpecials(size - 256)
	nMerges := size - 256 - len(specials)

	bpe := learnedMerges()
	v := &Vocabulary{
		Tokens: make([]string, 0, size),
		Types:  make([]int32, 0, size),
		Merges: make([]string, 0, nMerges),
	}
	v.Tokens = append(v.Tokens, byteTokens[:]...)
	for _, m := range bpe[:min(nMerges, len(bpe))] {
		v.Tokens = append(v.Tokens, v.Tokens[m.a]+v.Tokens[m.b])
		v.Merges = append(v.Merges, v.Tokens[m.a]+" "+v.Tokens[m.b])
	}
	if len(v.Merges) < nMerges {
		v.fill(nMerges)
	}
	for range len(v.Tokens) {
		v.Types = append(v.Types, TokenNormal)
	}
	for _, s := range specials {
		switch s.text {
		case EndOfText:
			v.BOS, v.Pad = len(v.Tokens), len(v.Tokens)
		case IMEnd:
			v.EOS = len(v.Tokens)
		}
		v.Tokens = append(v.Tokens, s.text)
		v.Types = append(v.Types, s.typ)
	}
	return v, nil
}

// chooseSpecials returns the special tokens for room ids, in Qwen's order.
func chooseSpecials(room int) []struct {
	text     string
	typ      int32
	required bool
} {
	if room > len(specialTokens) {
		return specialTokens
	}
	keep := 0
	for _, s := range specialTokens {
		if s.required {
			keep++
		}
	}
	optional := room - keep
	var out []struct {
		text     string
		typ      int32
		required bool
	}
	for _, s := range specialTokens {
		if !s.required {
			if optional <= 0 {
				continue
			}
			optional--
		}
		out = append(out, s)
	}
	return out
}

// fill adds filler merges until there are n: in rounds, each existing token (in id
// order, as the round starts) followed by each lowercase letter, skipping spellings the
// vocabulary already has. Tokens ending in special-token syntax cannot arise: the
// corpus holds no special tokens and the filler appends letters only.
func (v *Vocabulary) fill(n int) {
	seen := make(map[string]struct{}, n+256)
	for _, t := range v.Tokens {
		seen[t] = struct{}{}
	}
	for len(v.Merges) < n {
		round := len(v.Tokens)
		for a := 0; a < round && len(v.Merges) < n; a++ {
			for c := byte('a'); c <= 'z' && len(v.Merges) < n; c++ {
				b := byteSpelling[c]
				t := v.Tokens[a] + b
				if _, dup := seen[t]; dup {
					continue
				}
				seen[t] = struct{}{}
				v.Tokens = append(v.Tokens, t)
				v.Merges = append(v.Merges, v.Tokens[a]+" "+b)
			}
		}
	}
}

// metadata returns the tokenizer's GGUF keys.
func (v *Vocabulary) metadata() []gguf.KV {
	kv := func(key string, x any) gguf.KV { return gguf.KV{Key: key, Value: gguf.MustValue(x)} }
	return []gguf.KV{
		kv(KeyTokenizerModel, TokenizerModel),
		kv(KeyTokenizerPre, TokenizerPreQwen35),
		kv(KeyTokens, v.Tokens),
		kv(KeyTokenType, v.Types), // int32: llama.cpp reads the array as int
		kv(KeyMerges, v.Merges),
		kv(KeyBOS, uint32(v.BOS)),
		kv(KeyEOS, uint32(v.EOS)),
		kv(KeyPadding, uint32(v.Pad)),
		kv(KeyAddBOS, false),
		kv(KeyChatTemplate, ChatTemplate),
	}
}

// byteTokens[id] is the spelling of byte token id, byteSpelling[b] the byte-level spelling
// of byte b and byteIDs[b] its token id. GPT-2's
// bytes_to_unicode maps the printable Latin-1 bytes to themselves and the others, in
// order, to U+0100 onwards; the byte tokens take ids in that order (the printable ones
// first: "!" is 0, "Ġ", the space, is 220), as in GPT-2's and Qwen's vocabularies.
var byteTokens, byteSpelling, byteIDs = bytesToUnicode()

func bytesToUnicode() (byID, tokens [256]string, ids [256]int) {
	printable := func(b int) bool {
		return b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF
	}
	var order []int
	for b := range 256 {
		if printable(b) {
			order = append(order, b)
		}
	}
	for b := range 256 {
		if !printable(b) {
			order = append(order, b)
		}
	}
	extra := 0
	for b := range 256 {
		if printable(b) {
			tokens[b] = string(rune(b))
		} else {
			tokens[b] = string(rune(256 + extra))
			extra++
		}
	}
	for id, b := range order {
		ids[b] = id
		byID[id] = tokens[b]
	}
	return byID, tokens, ids
}

//go:embed corpus.txt
var corpus string

// merge is one learned merge of token ids a and b (ids into the vocabulary that starts
// with the 256 byte tokens).
type merge struct{ a, b int32 }

// learnedMerges trains byte-level BPE on the corpus once per process: the same merges
// serve every vocabulary size, a smaller one taking a prefix.
var learnedMerges = sync.OnceValue(func() []merge { return trainBPE(corpus) })

// trainBPE is plain BPE training: the text, split around the special tokens and
// pre-tokenized, is counted as words of byte tokens; the most frequent adjacent pair
// (ties to the smaller ids) is merged into a new token until every word is one token.
// Pair counts are kept up to date incrementally, with a lazy max-heap.
func trainBPE(text string) []merge {
	counts := map[string]int{}
	for _, piece := range splitSpecials(text) {
		for _, w := range preTokenize(piece) {
			counts[w]++
		}
	}
	keys := make([]string, 0, len(counts))
	for w := range counts {
		keys = append(keys, w)
	}
	slices.Sort(keys)

	type word struct {
		syms  []int32
		count int
	}
	words := make([]word, len(keys))
	pairs := map[uint64]int{}
	where := map[uint64][]int32{}
	key := func(a, b int32) uint64 { return uint64(a)<<32 | uint64(uint32(b)) }
	for i, w := range keys {
		syms := make([]int32, len(w))
		for j := range len(w) {
			syms[j] = int32(byteIDs[w[j]])
		}
		words[i] = word{syms, counts[w]}
		for j := 1; j < len(syms); j++ {
			k := key(syms[j-1], syms[j])
			pairs[k] += counts[w]
			where[k] = append(where[k], int32(i))
		}
	}
	h := &pairHeap{}
	for k, c := range pairs {
		*h = append(*h, pairCount{k, c})
	}
	heap.Init(h)

	var out []merge
	stamp := make([]int, len(words)) // the last merge that rewrote each word, to skip repeats in where
	changed := map[uint64]struct{}{}
	for h.Len() > 0 {
		top := heap.Pop(h).(pairCount)
		if pairs[top.key] != top.count || top.count == 0 {
			continue // stale entry
		}
		a, b := int32(top.key>>32), int32(uint32(top.key))
		id := int32(256 + len(out))
		out = append(out, merge{a, b})
		clear(changed)
		for _, wi := range where[top.key] {
			if stamp[wi] == len(out) {
				continue
			}
			stamp[wi] = len(out)
			w := &words[wi]
			for j := 1; j < len(w.syms); j++ {
				k := key(w.syms[j-1], w.syms[j])
				pairs[k] -= w.count
				changed[k] = struct{}{}
			}
			syms := w.syms[:0]
			for j := 0; j < len(w.syms); j++ {
				if j+1 < len(w.syms) && w.syms[j] == a && w.syms[j+1] == b {
					syms = append(syms, id)
					j++
				} else {
					syms = append(syms, w.syms[j])
				}
			}
			w.syms = syms
			for j := 1; j < len(w.syms); j++ {
				k := key(w.syms[j-1], w.syms[j])
				pairs[k] += w.count
				changed[k] = struct{}{}
				if w.syms[j-1] == id || w.syms[j] == id {
					where[k] = append(where[k], wi)
				}
			}
		}
		delete(where, top.key)
		ks := make([]uint64, 0, len(changed))
		for k := range changed {
			ks = append(ks, k)
		}
		slices.Sort(ks) // heap order must not depend on map iteration order
		for _, k := range ks {
			if c := pairs[k]; c > 0 {
				heap.Push(h, pairCount{k, c})
			} else {
				delete(pairs, k)
			}
		}
	}
	return out
}

type pairCount struct {
	key   uint64
	count int
}

// pairHeap orders pairs by count, most frequent first, then by key (left id, then right
// id), smallest first.
type pairHeap []pairCount

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	if h[i].count != h[j].count {
		return h[i].count > h[j].count
	}
	return h[i].key < h[j].key
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairCount)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// splitSpecials cuts the special tokens out of text, as a tokenizer does before
// pre-tokenizing, so that no merge spells one.
func splitSpecials(text string) []string {
	pieces := []string{text}
	for _, s := range specialTokens {
		var next []string
		for _, p := range pieces {
			for _, q := range strings.Split(p, s.text) {
				if q != "" {
					next = append(next, q)
				}
			}
		}
		pieces = next
	}
	return pieces
}

// preTokenize splits text as Qwen3.5's pre-tokenizer regex does (llama.cpp's
// LLAMA_VOCAB_PRE_TYPE_QWEN35):
//
//	(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|
//	 ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Go's regexp has no lookahead, so the alternatives are matched by hand, leftmost first,
// each as greedily as the regex's backtracking leaves it.
func preTokenize(text string) []string {
	rs := []rune(text)
	var out []string
	for i := 0; i < len(rs); {
		n := preTokenAt(rs, i)
		out = append(out, string(rs[i:i+n]))
		i += n
	}
	return out
}

func preTokenAt(rs []rune, i int) int {
	isLM := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsMark(r) }
	isN := unicode.IsNumber
	isNL := func(r rune) bool { return r == '\r' || r == '\n' }
	isS := unicode.IsSpace
	at := func(j int) rune {
		if j < len(rs) {
			return rs[j]
		}
		return -1
	}
	// Contractions, in the regex's order ('s before 're, and so on).
	if rs[i] == '\'' {
		c1, c2 := unicode.ToLower(at(i+1)), unicode.ToLower(at(i+2))
		switch {
		case c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd':
			return 2
		case c1 == 'r' && c2 == 'e', c1 == 'v' && c2 == 'e', c1 == 'l' && c2 == 'l':
			return 3
		}
	}
	// [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+
	j := i
	if r := rs[i]; !isNL(r) && !unicode.IsLetter(r) && !isN(r) && j+1 < len(rs) && isLM(rs[j+1]) {
		j++
	}
	if isLM(rs[j]) {
		for j < len(rs) && isLM(rs[j]) {
			j++
		}
		return j - i
	}
	// \p{N}
	if isN(rs[i]) {
		return 1
	}
	// ' ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*'
	j = i
	if rs[j] == ' ' {
		j++
	}
	k := j
	for k < len(rs) && !isS(rs[k]) && !isLM(rs[k]) && !isN(rs[k]) {
		k++
	}
	if k > j {
		for k < len(rs) && isNL(rs[k]) {
			k++
		}
		return k - i
	}
	// The whitespace alternatives.
	if isS(rs[i]) {
		end := i
		lastNL := -1
		for end < len(rs) && isS(rs[end]) {
			if isNL(rs[end]) {
				lastNL = end
			}
			end++
		}
		switch {
		case lastNL >= 0: // \s*[\r\n]+
			return lastNL + 1 - i
		case end == len(rs) || end-i == 1: // \s+(?!\S) at the end, or \s+
			return end - i
		default: // \s+(?!\S): leave the last space to the next word
			return end - 1 - i
		}
	}
	return 1
}
