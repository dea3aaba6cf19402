package tokenizer

import "unicode/utf8"

// A preTokenizer splits a text fragment (special tokens already cut out, invalid UTF-8
// already replaced) into words, appending the byte offset where each word ends.
type preTokenizer func(s string, ends []int) []int

// The pre-tokenizers are hand-written matchers of llama.cpp's regexes, with llama.cpp's
// semantics, for Go's regexp has no lookahead:
//
//	qwen2:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	qwen35: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//	gpt-2:  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// The case-insensitive contractions are ASCII only (llama.cpp's adaptation spells them
// '[sS] and so on). The default pre-tokenizer applies four regexes in turn.
//
// llama.cpp runs the qwen2 and gpt-2 regexes with hand-written code and the others with
// std::regex over a "collapsed" text, each code point replaced by one byte standing for
// its class. The semantics are the same: leftmost alternative first, greedy, with
// backtracking; \p{L}, \p{N}, \p{M} and \p{P} are the Unicode general categories; \s is
// the White_Space property (for ASCII, C's isspace); a code point in none of the classes
// (symbols, controls, unassigned code points, surrogates) counts as punctuation, [^\s\p{L}\p{N}].
// A "\s+(?!\S)" run at the end of a fragment keeps its last space.

// splitQwen2 is the qwen2 pre-tokenizer.
func splitQwen2(s string, ends []int) []int { return splitQwen(s, ends, classL) }

// splitQwen35 is the qwen35 pre-tokenizer: qwen2 with marks joined to letters.
func splitQwen35(s string, ends []int) []int { return splitQwen(s, ends, classL|classM) }

// splitQwen matches the Qwen regex with letters, the class of \p{L}+, being the classes
// in letter.
func splitQwen(s string, ends []int, letter uint8) []int {
	at := func(i int) (uint8, int) {
		if i >= len(s) {
			return 0, 0
		}
		if c := s[i]; c < utf8.RuneSelf {
			return asciiClass[c], 1
		}
		return class(s[i:])
	}
	for pos := 0; pos < len(s); {
		c := s[pos]
		cl, n := at(pos)

		// (?i:'s|'t|'re|'ve|'m|'ll|'d)
		if c == '\'' && pos+1 < len(s) {
			switch s[pos+1] | 0x20 {
			case 's', 't', 'm', 'd':
				pos += 2
				ends = append(ends, pos)
				continue
			}
			if pos+2 < len(s) {
				c1, c2 := s[pos+1]|0x20, s[pos+2]|0x20
				if c1 == 'r' && c2 == 'e' || c1 == 'v' && c2 == 'e' || c1 == 'l' && c2 == 'l' {
					pos += 3
					ends = append(ends, pos)
					continue
				}
			}
		}

		// [^\r\n\p{L}\p{N}]?\p{L}+ (with \p{M} in qwen35's letters)
		if c != '\r' && c != '\n' && cl&classN == 0 {
			next, _ := at(pos + n)
			if cl&letter != 0 || next&letter != 0 {
				pos += n
				for {
					k, m := at(pos)
					if k&letter == 0 {
						break
					}
					pos += m
				}
				ends = append(ends, pos)
				continue
			}
		}

		// \p{N}
		if cl&classN != 0 {
			pos += n
			ends = append(ends, pos)
			continue
		}

		// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
		cl2 := cl
		if c == ' ' {
			cl2, _ = at(pos + 1)
		}
		if cl2&(classWS|letter|classN) == 0 {
			if c == ' ' {
				pos++
			}
			for {
				k, m := at(pos)
				if k == 0 || k&(classWS|letter|classN) != 0 {
					break
				}
				pos += m
			}
			for pos < len(s) && (s[pos] == '\r' || s[pos] == '\n') {
				pos++
			}
			ends = append(ends, pos)
			continue
		}

		// \s*[\r\n]+, \s+(?!\S) and \s+
		end, lastNL := pos, -1
		for {
			k, m := at(end)
			if k&classWS == 0 {
				break
			}
			if s[end] == '\r' || s[end] == '\n' {
				lastNL = end
			}
			end += m
		}
		switch {
		case lastNL >= 0:
			pos = lastNL + 1
		case end == pos:
			pos += n // no alternative matches (cannot happen)
		case end < len(s) && end-pos > n:
			pos = end - lastWSLen(s[pos:end])
		default:
			pos = end
		}
		ends = append(ends, pos)
	}
	return ends
}

// lastWSLen returns the length of the last code point of the white space run s.
func lastWSLen(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return len(s) - i
		}
	}
	return len(s)
}

// splitGPT2 is the gpt-2 pre-tokenizer:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(s string, ends []int) []int {
	at := func(i int) (uint8, int) {
		if i >= len(s) {
			return 0, 0
		}
		if c := s[i]; c < utf8.RuneSelf {
			return asciiClass[c], 1
		}
		return class(s[i:])
	}
	for pos := 0; pos < len(s); {
		c := s[pos]
		cl, n := at(pos)

		if c == '\'' && pos+1 < len(s) {
			switch s[pos+1] {
			case 's', 't', 'm', 'd':
				pos += 2
				ends = append(ends, pos)
				continue
			}
			if pos+2 < len(s) {
				c1, c2 := s[pos+1], s[pos+2]
				if c1 == 'r' && c2 == 'e' || c1 == 'v' && c2 == 'e' || c1 == 'l' && c2 == 'l' {
					pos += 3
					ends = append(ends, pos)
					continue
				}
			}
		}

		cl2 := cl
		if c == ' ' {
			cl2, _ = at(pos + 1)
		}
		run := func(in func(uint8) bool) {
			if c == ' ' {
				pos++
			}
			for {
				k, m := at(pos)
				if !in(k) {
					break
				}
				pos += m
			}
			ends = append(ends, pos)
		}
		switch {
		case cl2&classL != 0: // ' ?\p{L}+'
			run(func(k uint8) bool { return k&classL != 0 })
			continue
		case cl2&classN != 0: // ' ?\p{N}+'
			run(func(k uint8) bool { return k&classN != 0 })
			continue
		case cl2 != 0 && cl2&(classWS|classL|classN) == 0: // ' ?[^\s\p{L}\p{N}]+'
			run(func(k uint8) bool { return k != 0 && k&(classWS|classL|classN) == 0 })
			continue
		}

		// \s+(?!\S) and \s+
		end := pos
		for {
			k, m := at(end)
			if k&classWS == 0 {
				break
			}
			end += m
		}
		switch {
		case end == pos:
			pos += n // no alternative matches (cannot happen)
		case end < len(s) && end-pos > n:
			pos = end - lastWSLen(s[pos:end])
		default:
			pos = end
		}
		ends = append(ends, pos)
	}
	return ends
}

// splitDefault is llama.cpp's default BPE pre-tokenizer: four regexes applied in turn,
// each splitting every piece the previous one left into its matches and the text
// between them:
//
//	[\p{P}\$\+<=>\^~\|]+
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
//	\p{N}+
//	[0-9][0-9][0-9]
func splitDefault(s string, ends []int) []int {
	punct := func(t string) (bool, int) {
		k, n := class(t)
		switch t[0] {
		case '$', '+', '<', '=', '>', '^', '~', '|':
			return true, n
		}
		return k&classP != 0, n
	}
	number := func(t string) (bool, int) {
		k, n := class(t)
		return k&classN != 0, n
	}
	pieces := splitRuns(s, 0, len(s), punct, nil)

	var words, local []int
	start := 0
	for _, end := range pieces {
		local = splitGPT2(s[start:end], local[:0])
		for _, e := range local {
			words = append(words, start+e)
		}
		start = end
	}

	pieces, start = pieces[:0], 0
	for _, end := range words {
		pieces = splitRuns(s, start, end, number, pieces)
		start = end
	}

	start = 0
	for _, end := range pieces {
		ends = splitDigitTriples(s, start, end, ends)
		start = end
	}
	return ends
}

// splitRuns splits s[start:end] into the maximal runs of code points that in accepts
// (the matches of the regex [class]+) and the text between them.
func splitRuns(s string, start, end int, in func(string) (bool, int), ends []int) []int {
	inRun := false
	for i := start; i < end; {
		ok, n := in(s[i:end])
		if ok != inRun && i > start {
			ends = append(ends, i)
		}
		inRun = ok
		i += n
	}
	if end > start {
		ends = append(ends, end)
	}
	return ends
}

// splitDigitTriples splits s[start:end] at the matches of [0-9][0-9][0-9].
func splitDigitTriples(s string, start, end int, ends []int) []int {
	digit := func(i int) bool { return i < end && '0' <= s[i] && s[i] <= '9' }
	prev := start
	for i := start; i < end; {
		if digit(i) && digit(i+1) && digit(i+2) {
			if i > prev {
				ends = append(ends, i)
			}
			i += 3
			ends = append(ends, i)
			prev = i
			continue
		}
		i++
	}
	if end > prev {
		ends = append(ends, end)
	}
	return ends
}
