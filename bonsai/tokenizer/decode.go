package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// byteChars[b] is the byte-level character of byte b, GPT-2's bytes_to_unicode: the
// printable Latin-1 bytes stand for themselves, the others, in order, for U+0100
// onwards. charBytes is the inverse.
var byteChars, charBytes = func() (chars [256]string, bytes map[rune]byte) {
	bytes = make(map[rune]byte, 256)
	next := rune(256)
	for b := range 256 {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF) {
			r = next
			next++
		}
		chars[b] = string(r)
		bytes[r] = byte(b)
	}
	return chars, bytes
}()

// piece returns the bytes token id stands for, as llama.cpp's token_to_piece with
// special=true: control, user-defined and unknown tokens their text, normal tokens their
// byte-level characters' bytes, byte tokens (<0xNN>) their byte, others nothing.
func (t *Tokenizer) piece(id int32) string {
	a, s := t.attrs[id], t.tokens[id]
	switch {
	case a&(attrControl|attrUserDefined|attrUnknown) != 0:
		return s
	case a&attrNormal != 0:
		return decodeByteLevel(s)
	case a&attrByte != 0:
		if len(s) == 6 && strings.HasPrefix(s, "<0x") && s[5] == '>' {
			if b, err := strconv.ParseUint(s[3:5], 16, 8); err == nil {
				return string([]byte{byte(b)})
			}
		}
	}
	return ""
}

// decodeByteLevel returns the bytes a string of byte-level characters stands for. A
// character outside the byte-level alphabet stands for itself.
func decodeByteLevel(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if c, ok := charBytes[r]; ok {
			b = append(b, c)
		} else {
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b)
}

// Piece returns the bytes token id stands for (not necessarily valid UTF-8: a character
// may span tokens). Control and user-defined tokens render their text, unused tokens and
// ids out of range nothing.
func (t *Tokenizer) Piece(id int32) string {
	if id < 0 || int(id) >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

// Decode returns the bytes of the tokens, each as Piece. Unlike llama.cpp's detokenizer
// for some pre-tokenizers (gpt-2, default), it does not clean up spaces before
// punctuation: Decode(Encode(s)) is s for every valid UTF-8 s.
func (t *Tokenizer) Decode(ids []int32) string {
	n := 0
	for _, id := range ids {
		n += len(t.Piece(id))
	}
	var b strings.Builder
	b.Grow(n)
	for _, id := range ids {
		b.WriteString(t.Piece(id))
	}
	return b.String()
}

// A StreamDecoder turns tokens, one at a time, into text that is always valid UTF-8:
// it holds back the bytes of a character that the next token may complete. It is not
// safe for concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
}

// NewStreamDecoder returns a StreamDecoder for t's tokens.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Add adds token id and returns the text that became complete: its bytes and any held
// back before, except a trailing incomplete character. Bytes that no continuation can
// make valid come out as U+FFFD.
func (d *StreamDecoder) Add(id int32) string {
	d.pending = append(d.pending, d.t.Piece(id)...)
	keep := incompleteTail(d.pending)
	out := validString(d.pending[:len(d.pending)-keep])
	d.pending = append(d.pending[:0], d.pending[len(d.pending)-keep:]...)
	return out
}

// Flush returns whatever is held back, with U+FFFD for the incomplete character, and
// empties the decoder.
func (d *StreamDecoder) Flush() string {
	out := validString(d.pending)
	d.pending = d.pending[:0]
	return out
}

// incompleteTail returns the length of the incomplete character at the end of b: the
// start of a UTF-8 sequence that more bytes may complete.
func incompleteTail(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax+1; i-- {
		if b[i]&0xC0 != 0x80 { // the last byte that starts a character
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}

// validString returns b as a string, each byte that does not start a valid sequence
// replaced by U+FFFD.
func validString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	s.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			s.WriteRune(utf8.RuneError)
		} else {
			s.Write(b[:n])
		}
		b = b[n:]
	}
	return s.String()
}
