package tokenizer

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The special tokens' ids are read from their keys, then, as llama.cpp does for files
// whose converter did not write the keys, found by their text. A token found by its text
// becomes a control token whatever its stored type.
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepTexts = []string{"<|file_sep|>"}

	// eogTexts are the texts of the tokens that end generation.
	eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>",
		"<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
		"[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
		"<｜end▁of▁sentence｜>"}
)

// readSpecialIDs reads the special tokens' ids, finds the end-of-generation tokens and
// adjusts the token attributes as llama.cpp's vocabulary loader does.
func (t *Tokenizer) readSpecialIDs(md Metadata) error {
	n := int64(len(t.tokens))
	id := func(keys ...string) (int32, error) {
		found := int32(-1)
		for _, key := range keys { // a later key wins, as llama.cpp reads the deprecated ones last
			if !md.Has(key) {
				continue
			}
			v, err := md.Int(key)
			if err != nil {
				return -1, keyError(key, err)
			}
			if v < 0 || v >= n {
				return -1, fmt.Errorf("tokenizer: %s is %d, outside the vocabulary of %d tokens", key, v, n)
			}
			found = int32(v)
		}
		return found, nil
	}
	var err error
	ids := make([]int32, 8)
	for i, keys := range [][]string{
		{"tokenizer.ggml.bos_token_id"},
		{"tokenizer.ggml.eos_token_id"},
		{"tokenizer.ggml.eot_token_id"},
		{"tokenizer.ggml.eom_token_id"},
		{"tokenizer.ggml.fim_pre_token_id", "tokenizer.ggml.prefix_token_id"},
		{"tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.suffix_token_id"},
		{"tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.middle_token_id"},
		{"tokenizer.ggml.fim_pad_token_id"},
	} {
		if ids[i], err = id(keys...); err != nil {
			return err
		}
	}
	fimRep, err := id("tokenizer.ggml.fim_rep_token_id")
	if err != nil {
		return err
	}
	fimSep, err := id("tokenizer.ggml.fim_sep_token_id")
	if err != nil {
		return err
	}
	for _, key := range []string{"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.seperator_token_id",
		"tokenizer.ggml.padding_token_id", "tokenizer.ggml.mask_token_id"} {
		if _, err := id(key); err != nil {
			return err
		}
	}
	t.bos, t.eos = ids[0], ids[1]
	eot, eom, fimPad := ids[2], ids[3], ids[7]

	detect := func(id *int32, texts []string) {
		if *id >= 0 {
			return
		}
		for _, s := range texts {
			if i, ok := t.ids[s]; ok {
				*id = i
				t.attrs[i] |= attrControl
				return
			}
		}
	}
	detect(&eot, eotTexts)
	detect(&eom, eomTexts)
	detect(&ids[4], fimPreTexts)
	detect(&ids[5], fimSufTexts)
	detect(&ids[6], fimMidTexts)
	detect(&fimPad, fimPadTexts)
	detect(&fimRep, fimRepTexts)
	detect(&fimSep, fimSepTexts)

	t.eog = map[int32]bool{}
	for _, id := range []int32{fimPad, fimRep, fimSep} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	for _, s := range eogTexts {
		if i, ok := t.ids[s]; ok {
			t.eog[i] = true
			t.attrs[i] |= attrControl
		}
	}
	// gpt-oss's channel tokens always render, as user-defined tokens.
	for _, s := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if i, ok := t.ids[s]; ok {
			t.attrs[i] = attrUserDefined
		}
	}
	for _, id := range []int32{t.eos, eot, eom} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	// With o200k_harmony's <|return|> and <|call|> (or solar-open's <|calls|> and
	// <|flush|>), <|end|> does not end generation.
	has := func(s string) (int32, bool) {
		i, ok := t.ids[s]
		return i, ok && t.eog[i]
	}
	_, ret := has("<|return|>")
	_, call := has("<|call|>")
	_, calls := has("<|calls|>")
	_, flush := has("<|flush|>")
	if end, ok := has("<|end|>"); ok && (ret && (call || calls) || (call || calls) && flush) {
		delete(t.eog, end)
		t.attrs[end] = attrUserDefined
	}
	// With gemma4's <|tool_response>, </s> does not end generation.
	if _, ok := has("<|tool_response>"); ok {
		if s, ok := has("</s>"); ok {
			delete(t.eog, s)
			t.attrs[s] = attrNormal
		}
	}
	return nil
}

// A fragment of the text being encoded: text[start:end] still to be pre-tokenized, or
// the special token tok when tok ≥ 0.
type fragment struct {
	start, end int
	tok        int32
}

// An occurrence of special token t.specials[rank] at byte pos of the text.
type occurrence struct {
	rank int32
	pos  int
}

// partition cuts the special tokens out of text, with the result of llama.cpp's
// tokenizer_st_partition: each special token in turn, longest first, is cut out of
// every fragment of text left, at each of its occurrences from left to right. Control
// (and unknown) tokens are cut out only when parseSpecial is true, user-defined ones
// always.
//
// Rather than rescanning the fragments once per special token, it finds every
// occurrence of every special token in one pass, then takes them in that order: an
// occurrence is cut out unless it overlaps one cut out before.
func (t *Tokenizer) partition(text string, parseSpecial bool, sc *bpeScratch) []fragment {
	occs := sc.occs[:0]
	for _, first := range t.specialFirst {
		for i := 0; i < len(text); i++ {
			j := strings.IndexByte(text[i:], first.b)
			if j < 0 {
				break
			}
			i += j
			for _, rank := range first.ranks {
				id := t.specials[rank]
				if !parseSpecial && t.attrs[id]&(attrControl|attrUnknown) != 0 {
					continue
				}
				if strings.HasPrefix(text[i:], t.tokens[id]) {
					occs = append(occs, occurrence{rank, i})
				}
			}
		}
	}
	sc.occs = occs
	frags := sc.frags[:0]
	if len(occs) == 0 {
		sc.frags = append(frags, fragment{0, len(text), -1})
		return sc.frags
	}

	slices.SortFunc(occs, func(a, b occurrence) int {
		if a.rank != b.rank {
			return int(a.rank - b.rank)
		}
		return a.pos - b.pos
	})
	// cut holds the occurrences cut out, as fragments, in text order; added those of the
	// current token, merged into cut when the next token starts.
	cut, added, merged := sc.cut[:0], sc.added[:0], sc.merged[:0]
	next := 0 // where the current token's next occurrence may start
	for k, o := range occs {
		if k > 0 && o.rank != occs[k-1].rank {
			merged = mergeCuts(merged[:0], cut, added)
			cut, merged, added, next = merged, cut, added[:0], 0
		}
		end := o.pos + len(t.tokens[t.specials[o.rank]])
		if o.pos < next {
			continue
		}
		// The first earlier cut that ends after o.pos must start at or after end.
		i, _ := slices.BinarySearchFunc(cut, o.pos, func(c fragment, pos int) int { return cmp.Compare(c.end, pos+1) })
		if i < len(cut) && cut[i].start < end {
			continue
		}
		added = append(added, fragment{o.pos, end, t.specials[o.rank]})
		next = end
	}
	merged = mergeCuts(merged[:0], cut, added)
	cut, merged = merged, cut
	sc.added, sc.merged = added, merged
	sc.cut = cut
	start := 0
	for _, c := range cut {
		if c.start > start {
			frags = append(frags, fragment{start, c.start, -1})
		}
		frags = append(frags, c)
		start = c.end
	}
	if start < len(text) {
		frags = append(frags, fragment{start, len(text), -1})
	}
	sc.frags = frags
	return frags
}

// mergeCuts appends to dst the cuts of a and b, two lists of disjoint fragments in text
// order, in text order.
func mergeCuts(dst, a, b []fragment) []fragment {
	for len(a) > 0 && len(b) > 0 {
		if a[0].start < b[0].start {
			dst, a = append(dst, a[0]), a[1:]
		} else {
			dst, b = append(dst, b[0]), b[1:]
		}
	}
	dst = append(dst, a...)
	return append(dst, b...)
}
