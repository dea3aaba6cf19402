package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Type is a token's type, the tokenizer.ggml.token_type of the GGUF file (llama.cpp's
// llama_token_type).
type Type int32

// The token types.
const (
	Normal      Type = 1 // an ordinary token, spelled in the byte-level alphabet
	Unknown     Type = 2 // the token for text the vocabulary cannot spell (none in byte-level BPE)
	Control     Type = 3 // a special token: <|im_start|>, <|endoftext|>
	UserDefined Type = 4 // an added token that is not special: <think>, <tool_call>
	Unused      Type = 5 // padding: never produced, renders as nothing
	Byte        Type = 6 // <0xNN>: one byte
)

// String returns the type's name: "normal", "unknown", "control", "user-defined",
// "unused" or "byte".
func (t Type) String() string {
	switch t {
	case Normal:
		return "normal"
	case Unknown:
		return "unknown"
	case Control:
		return "control"
	case UserDefined:
		return "user-defined"
	case Unused:
		return "unused"
	case Byte:
		return "byte"
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Metadata is the part of a GGUF file's metadata that FromGGUF reads. *gguf.File
// implements it.
type Metadata interface {
	// Has reports whether the file has key; the getters fail for a key it lacks or of
	// another type, and Int and Ints accept any integer type.
	Has(key string) bool
	String(key string) (string, error)
	Strings(key string) ([]string, error)
	Ints(key string) ([]int64, error)
	Int(key string) (int64, error)
	Bool(key string) (bool, error)
}

// The GGUF keys of the tokenizer.
const (
	keyModel     = "tokenizer.ggml.model"
	keyPre       = "tokenizer.ggml.pre"
	keyTokens    = "tokenizer.ggml.tokens"
	keyTokenType = "tokenizer.ggml.token_type"
	keyMerges    = "tokenizer.ggml.merges"
	keyAddBOS    = "tokenizer.ggml.add_bos_token"
	keyAddEOS    = "tokenizer.ggml.add_eos_token"
)

// attr is llama.cpp's llama_token_attr: the token type as flags, which loading may
// combine (a user-defined token that looks like an end-of-turn marker also becomes
// control).
type attr uint16

const (
	attrUndefined attr = 0
	attrUnknown   attr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
)

// A Tokenizer is a byte-level BPE tokenizer (llama.cpp's "gpt2" tokenizer model) read
// from a GGUF file. It is immutable and safe for concurrent use.
type Tokenizer struct {
	pre      string
	split    preTokenizer
	tokens   []string // the vocabulary strings, by id
	types    []Type
	attrs    []attr
	pieces   []string // the bytes each token stands for, by id
	ids      map[string]int32
	merges   mergeTable
	symText  []string   // the text of the symbols beyond the vocabulary (merge parts that are not tokens)
	byteSym  [256]int32 // the symbol of each byte's byte-level character
	specials []int32    // control, user-defined and unknown tokens, longest first
	// specialFirst groups the specials by their first byte, each group's ranks
	// (indexes into specials) in increasing order.
	specialFirst []firstByte
	eog          map[int32]bool
	bos, eos     int32
	addBOS       bool
	addEOS       bool
	cache        *wordCache
}

type firstByte struct {
	b     byte
	ranks []int32
}

// FromGGUF reads the tokenizer of a GGUF file: a model file or a vocabulary-only one.
// The tokenizer model must be "gpt2" (byte-level BPE) and the pre-tokenizer one of
// "qwen35", "qwen2", "gpt-2" (also spelled "gpt2") and "default"; any other is an error.
func FromGGUF(md Metadata) (*Tokenizer, error) {
	model, err := md.String(keyModel)
	if err != nil {
		return nil, keyError(keyModel, err)
	}
	if model != "gpt2" {
		return nil, fmt.Errorf("tokenizer: unsupported tokenizer model %q (only \"gpt2\", byte-level BPE, is supported)", model)
	}
	pre, err := md.String(keyPre)
	if err != nil {
		return nil, keyError(keyPre, err)
	}
	t := &Tokenizer{pre: pre, cache: newWordCache()}
	planeClass() // build the Unicode class table now rather than in the first Encode
	switch pre {
	case "qwen35":
		t.split = splitQwen35
	case "qwen2":
		t.split = splitQwen2
	case "gpt-2", "gpt2":
		t.split = splitGPT2
	case "default":
		t.split = splitDefault
	default:
		return nil, fmt.Errorf("tokenizer: unsupported pre-tokenizer %q (supported: qwen35, qwen2, gpt-2, default)", pre)
	}

	if t.tokens, err = md.Strings(keyTokens); err != nil {
		return nil, keyError(keyTokens, err)
	}
	n := len(t.tokens)
	if n == 0 {
		return nil, errors.New("tokenizer: " + keyTokens + " is empty")
	}
	if n > 1<<31-1 {
		return nil, fmt.Errorf("tokenizer: %d tokens are too many", n)
	}
	t.types = make([]Type, n)
	if md.Has(keyTokenType) {
		types, err := md.Ints(keyTokenType)
		if err != nil {
			return nil, keyError(keyTokenType, err)
		}
		if len(types) != n {
			return nil, fmt.Errorf("tokenizer: %s has %d entries for %d tokens", keyTokenType, len(types), n)
		}
		for i, v := range types {
			t.types[i] = Type(v)
		}
	} else {
		for i := range t.types {
			t.types[i] = Normal
		}
	}

	t.ids = make(map[string]int32, n)
	t.attrs = make([]attr, n)
	for i, s := range t.tokens {
		if s == "" { // as llama.cpp names an empty token
			s = "[EMPTY_" + strconv.Itoa(i) + "]"
			t.tokens[i] = s
		}
		if j, dup := t.ids[s]; dup {
			return nil, fmt.Errorf("tokenizer: tokens %d and %d are both %q", j, i, s)
		}
		t.ids[s] = int32(i)
		t.attrs[i] = attrOf(t.types[i])
	}

	merges, err := md.Strings(keyMerges)
	if err != nil {
		return nil, keyError(keyMerges, err)
	}
	t.buildMerges(merges)

	if err := t.readSpecialIDs(md); err != nil {
		return nil, err
	}
	if md.Has(keyAddBOS) {
		if t.addBOS, err = md.Bool(keyAddBOS); err != nil {
			return nil, keyError(keyAddBOS, err)
		}
	}
	if md.Has(keyAddEOS) {
		if t.addEOS, err = md.Bool(keyAddEOS); err != nil {
			return nil, keyError(keyAddEOS, err)
		}
	}

	t.pieces = make([]string, n)
	for i := range t.pieces {
		t.pieces[i] = t.piece(int32(i))
	}
	for i, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.specials = append(t.specials, int32(i))
		}
	}
	slices.SortStableFunc(t.specials, func(a, b int32) int { return len(t.tokens[b]) - len(t.tokens[a]) })
	for rank, id := range t.specials {
		b := t.tokens[id][0]
		i := slices.IndexFunc(t.specialFirst, func(f firstByte) bool { return f.b == b })
		if i < 0 {
			i = len(t.specialFirst)
			t.specialFirst = append(t.specialFirst, firstByte{b: b})
		}
		t.specialFirst[i].ranks = append(t.specialFirst[i].ranks, int32(rank))
	}
	return t, nil
}

func keyError(key string, err error) error {
	if strings.HasPrefix(err.Error(), "gguf: ") {
		return fmt.Errorf("tokenizer: %w", err)
	}
	return fmt.Errorf("tokenizer: key %q: %w", key, err)
}

func attrOf(t Type) attr {
	switch t {
	case Normal:
		return attrNormal
	case Unknown:
		return attrUnknown
	case Control:
		return attrControl
	case UserDefined:
		return attrUserDefined
	case Unused:
		return attrUnused
	case Byte:
		return attrByte
	}
	return attrUndefined
}

// buildMerges reads the merges, "a b" each, into the merge table. Merges are applied
// to symbols: tokens, and the parts and results of merges that are not tokens, which get
// ids past the vocabulary. As in llama.cpp, the first of two merges of the same pair
// wins, and a merge is split at its first space after the first byte.
func (t *Tokenizer) buildMerges(merges []string) {
	extra := map[string]int32{}
	sym := func(s string) int32 {
		if id, ok := t.ids[s]; ok {
			return id
		}
		if id, ok := extra[s]; ok {
			return id
		}
		id := int32(len(t.tokens) + len(t.symText))
		extra[s] = id
		t.symText = append(t.symText, s)
		return id
	}
	t.merges = newMergeTable(len(merges))
	for rank, m := range merges {
		if len(m) < 2 {
			continue
		}
		i := strings.IndexByte(m[1:], ' ')
		if i < 0 {
			continue // llama.cpp ranks an empty pair, which never applies
		}
		a, b := m[:i+1], m[i+2:]
		key := pairKey(sym(a), sym(b))
		if _, dup := t.merges.get(key); dup {
			continue
		}
		t.merges.add(key, merge{rank: int32(rank), result: sym(a + b)})
	}
	for c := range 256 {
		t.byteSym[c] = sym(byteChars[c])
	}
}

// symbolText returns the text of symbol id.
func (t *Tokenizer) symbolText(id int32) string {
	if int(id) < len(t.tokens) {
		return t.tokens[id]
	}
	return t.symText[int(id)-len(t.tokens)]
}

// Len returns the number of tokens in the vocabulary.
func (t *Tokenizer) Len() int { return len(t.tokens) }

// Pre returns the name of the pre-tokenizer, tokenizer.ggml.pre.
func (t *Tokenizer) Pre() string { return t.pre }

// Text returns the vocabulary string of token id as stored (in the byte-level
// alphabet for normal tokens), or "" for an id out of range.
func (t *Tokenizer) Text(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// Type returns the type of token id as stored, or 0 for an id out of range.
func (t *Tokenizer) Type(id int32) Type {
	if id < 0 || int(id) >= len(t.types) {
		return 0
	}
	return t.types[id]
}

// Lookup returns the id of the vocabulary string text (spelled as Text returns it).
func (t *Tokenizer) Lookup(text string) (int32, bool) {
	id, ok := t.ids[text]
	return id, ok
}

// ByteToken returns the token of the single byte b: its byte-level character, or a
// <0xNN> byte token.
func (t *Tokenizer) ByteToken(b byte) (int32, bool) {
	if id, ok := t.ids[byteChars[b]]; ok {
		return id, true
	}
	id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]
	return id, ok
}

// IsSpecial reports whether token id is a control or user-defined token: one that Encode
// matches in the text before BPE (a control token only when parse-special is on). Like
// llama.cpp, it counts tokens that look like end-of-turn or fill-in-the-middle markers
// (<|im_end|>, </s>, <|fim_pad|>) as control whatever their stored type.
func (t *Tokenizer) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(t.attrs) && t.attrs[id]&(attrControl|attrUserDefined) != 0
}

// IsEndOfGeneration reports whether token id ends generation: the EOS and EOT tokens and,
// as llama.cpp decides by their text, <|im_end|>, <|endoftext|>, <|eot_id|>, <|end|>,
// <end_of_turn>, </s> and the like, and the fill-in-the-middle pad, repository and file
// separator tokens.
func (t *Tokenizer) IsEndOfGeneration(id int32) bool { return t.eog[id] }

// BOS returns the beginning-of-sequence token, if the file names one.
func (t *Tokenizer) BOS() (int32, bool) { return t.bos, t.bos >= 0 }

// EOS returns the end-of-sequence token, if the file names one.
func (t *Tokenizer) EOS() (int32, bool) { return t.eos, t.eos >= 0 }

// AddBOS reports whether a prompt should start with the BOS token
// (tokenizer.ggml.add_bos_token; false when absent). Encode never adds it.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether a prompt should end with the EOS token
// (tokenizer.ggml.add_eos_token; false when absent, as in the Qwen vocabularies).
// Encode never adds it.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }
