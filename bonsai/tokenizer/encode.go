package tokenizer

import (
	"slices"
)

// Encode returns the token ids of text. It adds no BOS or EOS token.
//
// As llama.cpp's tokenizer does, it first cuts out of the text the special tokens'
// strings: user-defined tokens (<think>, <tool_call>) always, control tokens
// (<|im_start|>, <|endoftext|>) only when parseSpecial is true; otherwise the text of a
// control token is encoded as ordinary text. What is left is split into words by the
// pre-tokenizer and each word, as bytes, is encoded by byte-level BPE. Invalid UTF-8 is
// encoded as U+FFFD, one for each byte that does not start a valid sequence.
func (t *Tokenizer) Encode(text string, parseSpecial bool) []int32 {
	return t.AppendEncode(nil, text, parseSpecial)
}

// AppendEncode appends the token ids of text to dst and returns the extended slice, as
// Encode.
func (t *Tokenizer) AppendEncode(dst []int32, text string, parseSpecial bool) []int32 {
	if text == "" {
		return dst
	}
	if dst == nil {
		dst = make([]int32, 0, len(text)/4+4) // English runs at about four bytes a token
	}
	sc := scratchPool.Get().(*bpeScratch)
	defer scratchPool.Put(sc)
	for _, f := range t.partition(text, parseSpecial, sc) {
		if f.tok >= 0 {
			dst = append(dst, f.tok)
			continue
		}
		s := sanitize(text[f.start:f.end])
		sc.ends = t.split(s, sc.ends[:0])
		start := 0
		for _, end := range sc.ends {
			dst = t.encodeWord(dst, s[start:end], sc)
			start = end
		}
	}
	return dst
}

// encodeWord appends the tokens of one word.
func (t *Tokenizer) encodeWord(dst []int32, w string, sc *bpeScratch) []int32 {
	switch len(w) {
	case 1: // one byte: its token
		if s := t.byteSym[w[0]]; int(s) < len(t.tokens) {
			return append(dst, s)
		}
	case 2: // two bytes: one merge or none, cheaper than the cache
		a, b := t.byteSym[w[0]], t.byteSym[w[1]]
		if m, ok := t.merges.get(pairKey(a, b)); ok && int(m.result) < len(t.tokens) {
			return append(dst, m.result)
		} else if !ok && int(a) < len(t.tokens) && int(b) < len(t.tokens) {
			return append(dst, a, b)
		}
	}
	cacheable := len(w) <= cacheMaxWordSize
	if cacheable {
		if ids, ok := t.cache.get(w); ok {
			return append(dst, ids...)
		}
	}
	syms := sc.syms[:0]
	for i := 0; i < len(w); i++ {
		syms = append(syms, t.byteSym[w[i]])
	}
	merged := t.bpe(syms, sc)
	start := len(dst)
	for _, s := range merged {
		if int(s) < len(t.tokens) {
			dst = append(dst, s)
			continue
		}
		// A symbol that is no token (a merge whose result the vocabulary lacks): llama.cpp
		// emits the tokens of its single bytes, those that are tokens.
		txt := t.symbolText(s)
		for j := range len(txt) {
			if id, ok := t.ids[txt[j:j+1]]; ok {
				dst = append(dst, id)
			}
		}
	}
	sc.syms = syms[:0]
	if cacheable {
		t.cache.put(w, slices.Clone(dst[start:]))
	}
	return dst
}
