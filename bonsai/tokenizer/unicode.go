package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Code point classes, as the pre-tokenizer regexes see them: \p{L}, \p{N}, \p{M}, \s,
// and \p{P} (which only the default pre-tokenizer uses).
const (
	classL  uint8 = 1 << iota // letter
	classN                    // number
	classM                    // mark
	classWS                   // white space
	classP                    // punctuation
	// classIn marks a position inside the text, so that a class of 0 means "past the
	// end" (llama.cpp's regex code treats the two differently).
	classIn
)

// asciiClass holds the class of every ASCII code point.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range utf8.RuneSelf {
		t[c] = classOf(rune(c))
	}
	return t
}()

// classOf returns the class of code point r. The categories are the standard
// library's (Unicode 15.0) plus CJK Unified Ideographs Extension I, the letters that
// Unicode 15.1 added and llama.cpp's tables (15.1) have. White space is the Unicode
// White_Space property, which is exactly llama.cpp's whitespace set. Surrogates (which
// llama.cpp's lenient decoder lets through) are in no class.
func classOf(r rune) uint8 {
	c := classIn
	switch {
	case unicode.Is(unicode.White_Space, r):
		c |= classWS
	case unicode.IsLetter(r) || 0x2EBF0 <= r && r <= 0x2EE5D:
		c |= classL
	case unicode.IsNumber(r):
		c |= classN
	case unicode.IsMark(r):
		c |= classM
	case unicode.IsPunct(r):
		c |= classP
	}
	return c
}

// decodeRune decodes the code point at the start of s as llama.cpp's
// unicode_cpt_from_utf8 does: it checks the lead byte and the number of continuation
// bytes, but not for overlong forms or surrogates. An invalid sequence is one byte
// decoding as U+FFFD, as is one decoding above U+10FFFF (on which llama.cpp aborts).
func decodeRune(s string) (rune, int) {
	c := s[0]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	cont := func(i int) bool { return i < len(s) && s[i]&0xC0 == 0x80 }
	switch {
	case c&0xE0 == 0xC0:
		if cont(1) {
			return rune(c&0x1F)<<6 | rune(s[1]&0x3F), 2
		}
	case c&0xF0 == 0xE0:
		if cont(1) && cont(2) {
			return rune(c&0x0F)<<12 | rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F), 3
		}
	case c&0xF8 == 0xF0:
		if cont(1) && cont(2) && cont(3) {
			r := rune(c&0x07)<<18 | rune(s[1]&0x3F)<<12 | rune(s[2]&0x3F)<<6 | rune(s[3]&0x3F)
			if r <= unicode.MaxRune {
				return r, 4
			}
		}
	}
	return utf8.RuneError, 1
}

// appendRune appends the UTF-8 form of r as llama.cpp's unicode_cpt_to_utf8 writes it:
// surrogates included.
func appendRune(b []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(b, byte(r))
	case r < 0x800:
		return append(b, 0xC0|byte(r>>6), 0x80|byte(r)&0x3F)
	case r < 0x10000:
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return append(b, 0xF0|byte(r>>18), 0x80|byte(r>>12)&0x3F, 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
}

// sanitize returns s as llama.cpp's tokenizer sees it once it has decoded the text into
// code points and encoded them back: invalid bytes become U+FFFD and overlong forms
// their shortest form. Valid UTF-8 (the common case) is returned as it is; so are
// surrogates, which llama.cpp keeps.
func sanitize(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := decodeRune(s[i:])
		b = appendRune(b, r)
		i += n
	}
	return string(b)
}

// planeClass returns the class of every code point of the Basic Multilingual Plane
// and the Supplementary Multilingual Plane (emoji, historic scripts), a table built on
// first use.
var planeClass = sync.OnceValue(func() *[0x20000]uint8 {
	t := new([0x20000]uint8)
	for r := range rune(len(t)) {
		t[r] = classOf(r)
	}
	return t
})

// class returns the class of the code point at the start of s, and its length.
func class(s string) (uint8, int) {
	if c := s[0]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, n := decodeRune(s)
	if r < 0x20000 {
		return planeClass()[r], n
	}
	return classOf(r), n
}
