// Package hfvocab converts the tokenizer of a Hugging Face byte-level BPE model
// (tokenizer.json and tokenizer_config.json) into the tokenizer keys of a GGUF file,
// the way llama.cpp's convert_hf_to_gguf.py writes them, and writes vocabulary-only
// GGUF files (metadata, no tensors).
//
// It exists to build the tokenizer package's test vocabulary from a published Qwen
// tokenizer; see cmd/hfvocab.
package hfvocab

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bonsai-go/sdk/gguf"
)

// The token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
const (
	TypeNormal      int32 = 1
	TypeControl     int32 = 3
	TypeUserDefined int32 = 4
	TypeUnused      int32 = 5
)

// Options control a conversion.
type Options struct {
	// Pre is tokenizer.ggml.pre, the name of the pre-tokenizer (required): "qwen2",
	// "qwen35" and so on. llama.cpp's converter derives it from a hash of a sample's
	// tokens; here it is given.
	Pre string
	// Architecture is general.architecture; "qwen3" when empty. llama.cpp refuses a
	// file whose architecture it does not know, even for its vocabulary alone.
	Architecture string
	// Name is general.name; omitted when empty.
	Name string
	// VocabSize pads the vocabulary to this many tokens with "[PADi]" tokens of type
	// unused, as the converter pads to config.json's vocab_size. Zero means one past the
	// largest id. Ids missing below the largest one are padded the same way.
	VocabSize int
	// BOS is the text of the beginning-of-sequence token, used when tokenizer_config.json
	// names none (Qwen's config.json has bos_token_id, tokenizer_config.json has null).
	BOS string
}

// tokenizerJSON is the part of tokenizer.json a byte-level BPE conversion reads.
type tokenizerJSON struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Model struct {
		Type   string          `json:"type"`
		Vocab  map[string]int  `json:"vocab"`
		Merges json.RawMessage `json:"merges"`
	} `json:"model"`
}

// configJSON is the part of tokenizer_config.json the conversion reads. The special
// tokens are either strings or AddedToken objects with a "content" field.
type configJSON struct {
	BOS          json.RawMessage `json:"bos_token"`
	EOS          json.RawMessage `json:"eos_token"`
	Pad          json.RawMessage `json:"pad_token"`
	AddBOS       *bool           `json:"add_bos_token"`
	AddEOS       *bool           `json:"add_eos_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

// Convert returns the GGUF metadata of the tokenizer: general.architecture and
// general.name, then tokenizer.ggml.model "gpt2", pre, tokens (in id order), token_type,
// merges, the bos/eos/padding ids that the config names, add_bos_token/add_eos_token when
// the config sets them, and tokenizer.chat_template when it has one.
//
// Token types follow convert_hf_to_gguf.py: an added token is control when it is marked
// special or looks special (<|...|>), user-defined otherwise; every other token is
// normal; padding tokens are unused.
func Convert(tokenizer, config []byte, opt Options) ([]gguf.KV, error) {
	if opt.Pre == "" {
		return nil, errors.New("hfvocab: no pre-tokenizer name given")
	}
	var tj tokenizerJSON
	if err := json.Unmarshal(tokenizer, &tj); err != nil {
		return nil, fmt.Errorf("hfvocab: tokenizer.json: %w", err)
	}
	if tj.Model.Type != "BPE" {
		return nil, fmt.Errorf("hfvocab: tokenizer.json: model type %q, want BPE", tj.Model.Type)
	}
	var cj configJSON
	if err := json.Unmarshal(config, &cj); err != nil {
		return nil, fmt.Errorf("hfvocab: tokenizer_config.json: %w", err)
	}

	byID := map[int]string{}
	types := map[int]int32{}
	maxID := -1
	put := func(id int, text string, typ int32) error {
		if id < 0 {
			return fmt.Errorf("hfvocab: token %q has negative id %d", text, id)
		}
		if old, ok := byID[id]; ok && old != text {
			return fmt.Errorf("hfvocab: id %d is both %q and %q", id, old, text)
		}
		byID[id], types[id] = text, typ
		maxID = max(maxID, id)
		return nil
	}
	for text, id := range tj.Model.Vocab {
		if err := put(id, text, TypeNormal); err != nil {
			return nil, err
		}
	}
	for _, a := range tj.AddedTokens {
		typ := TypeUserDefined
		if a.Special || looksSpecial(a.Content) {
			typ = TypeControl
		}
		if err := put(a.ID, a.Content, typ); err != nil {
			return nil, err
		}
	}
	n := maxID + 1
	if opt.VocabSize != 0 {
		if opt.VocabSize < n {
			return nil, fmt.Errorf("hfvocab: vocabulary size %d is below the %d tokens the tokenizer has", opt.VocabSize, n)
		}
		n = opt.VocabSize
	}
	tokens := make([]string, n)
	toktypes := make([]int32, n)
	ids := make(map[string]int, n)
	for id := range n {
		text, ok := byID[id]
		typ := types[id]
		if !ok {
			text, typ = fmt.Sprintf("[PAD%d]", id), TypeUnused
		}
		if prev, dup := ids[text]; dup {
			return nil, fmt.Errorf("hfvocab: token %q has ids %d and %d", text, prev, id)
		}
		ids[text] = id
		tokens[id], toktypes[id] = text, typ
	}

	merges, err := parseMerges(tj.Model.Merges)
	if err != nil {
		return nil, err
	}

	arch := opt.Architecture
	if arch == "" {
		arch = "qwen3"
	}
	kv := []gguf.KV{{Key: "general.architecture", Value: gguf.MustValue(arch)}}
	add := func(key string, v any) { kv = append(kv, gguf.KV{Key: key, Value: gguf.MustValue(v)}) }
	if opt.Name != "" {
		add("general.name", opt.Name)
	}
	add("tokenizer.ggml.model", "gpt2")
	add("tokenizer.ggml.pre", opt.Pre)
	add("tokenizer.ggml.tokens", tokens)
	add("tokenizer.ggml.token_type", toktypes)
	add("tokenizer.ggml.merges", merges)

	for _, s := range []struct {
		key  string
		raw  json.RawMessage
		dflt string
	}{
		{"tokenizer.ggml.bos_token_id", cj.BOS, opt.BOS},
		{"tokenizer.ggml.eos_token_id", cj.EOS, ""},
		{"tokenizer.ggml.padding_token_id", cj.Pad, ""},
	} {
		text, err := tokenText(s.raw)
		if err != nil {
			return nil, fmt.Errorf("hfvocab: tokenizer_config.json: %s: %w", s.key, err)
		}
		if text == "" {
			text = s.dflt
		}
		if text == "" {
			continue
		}
		id, ok := ids[text]
		if !ok {
			return nil, fmt.Errorf("hfvocab: %s: token %q is not in the vocabulary", s.key, text)
		}
		add(s.key, uint32(id))
	}
	if cj.AddBOS != nil {
		add("tokenizer.ggml.add_bos_token", *cj.AddBOS)
	}
	if cj.AddEOS != nil {
		add("tokenizer.ggml.add_eos_token", *cj.AddEOS)
	}
	if len(cj.ChatTemplate) > 0 && string(cj.ChatTemplate) != "null" {
		var tmpl string
		if err := json.Unmarshal(cj.ChatTemplate, &tmpl); err != nil {
			return nil, fmt.Errorf("hfvocab: tokenizer_config.json: chat_template is not a string: %w", err)
		}
		add("tokenizer.chat_template", tmpl)
	}
	return kv, nil
}

// looksSpecial is convert_hf_to_gguf.py's does_token_look_special.
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>") ||
		strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>") ||
		strings.HasPrefix(s, "<unused") && strings.HasSuffix(s, ">")
}

// parseMerges reads model.merges, either ["a b", ...] or [["a", "b"], ...], as "a b"
// strings.
func parseMerges(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("hfvocab: tokenizer.json has no merges")
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		return strs, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("hfvocab: tokenizer.json: merges are neither strings nor pairs: %w", err)
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("hfvocab: tokenizer.json: merge %d has %d parts", i, len(p))
		}
		out[i] = p[0] + " " + p[1]
	}
	return out, nil
}

// tokenText reads a special token of tokenizer_config.json: null, a string, or an
// object with "content".
func tokenText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", fmt.Errorf("not a string or an object with content: %s", raw)
	}
	return *obj.Content, nil
}

// Write writes a vocabulary-only GGUF file (the metadata, no tensors) to w.
func Write(w io.Writer, kv []gguf.KV) error {
	gw, err := gguf.NewWriter(w, kv, nil)
	if err != nil {
		return err
	}
	return gw.Close()
}

// SetPre returns a copy of kv with tokenizer.ggml.pre set to pre.
func SetPre(kv []gguf.KV, pre string) []gguf.KV {
	out := slices.Clone(kv)
	for i := range out {
		if out[i].Key == "tokenizer.ggml.pre" {
			out[i].Value = gguf.MustValue(pre)
			return out
		}
	}
	return append(out, gguf.KV{Key: "tokenizer.ggml.pre", Value: gguf.MustValue(pre)})
}
