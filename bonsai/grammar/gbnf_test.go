package grammar

import (
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGBNF(t *testing.T) {
	g, err := ParseGBNF(`
# answers, one per line
root   ::= answer ("\n" answer){0,2}
answer ::= "yes" | "no" | num | word
num    ::= "-"? [1-9] [0-9]*
word   ::= [a-zA-Zé\u4e00-\u9fff]+ "!"?
`)
	require.NoError(t, err)
	for _, s := range []string{"yes", "no\n12", "-7\nyes\nnoé!", "中文!"} {
		assert.True(t, matches(g, s), s)
	}
	for _, s := range []string{"", "yes\n", "01", "a\nb\nc\nd", "ü", "a!!"} {
		assert.False(t, matches(g, s), s)
	}

	g, err = ParseGBNF(`root ::= "\"" [^"\\\x00-\x1f]* "\"" . "\x41" "\u00e9"`)
	require.NoError(t, err)
	assert.True(t, matches(g, `"a ü 中"`+"\nAé"))
	assert.True(t, matches(g, `""😀Aé`))
	assert.False(t, matches(g, `"a"b"`+"Aé"[:1]))
	assert.False(t, matches(g, "\"\x01\"xAé"))
}

// Every code point's encoding, and nothing else, matches a class of all code points.
func TestUTF8Sequences(t *testing.T) {
	g, err := ParseGBNF(`root ::= [\x00-\U0010FFFF]`)
	require.NoError(t, err)
	for _, r := range []rune{0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF, 0x1F600} {
		assert.True(t, matches(g, string(r)), "%U", r)
	}
	for _, s := range []string{"\xed\xa0\x80", "\xc0\x80", "\xf4\x90\x80\x80", "\x80", "ab"} {
		assert.False(t, matches(g, s), "%q", s)
	}
	g, err = ParseGBNF(`root ::= [^a-z\u0100-\U0001F000]`)
	require.NoError(t, err)
	for r := rune(0); r < 0x20000; r += 7 {
		if !utf8.ValidRune(r) {
			continue
		}
		want := !(r >= 'a' && r <= 'z' || r >= 0x100 && r <= 0x1F000)
		require.Equal(t, want, matches(g, string(r)), "%U", r)
	}
}

func TestGBNFErrors(t *testing.T) {
	for src, want := range map[string]string{
		``:                          "no root rule",
		`root ::= a`:                "rule a: used but not defined",
		`root ::= root "x"`:         "left-recursive",
		`root ::= "x`:               "unterminated literal",
		`root ::= [a-`:              "unterminated character class",
		`root ::= ( "x"`:            "( without )",
		`root ::= "x"{3,1}`:         "bad repetition",
		`root ::= "x"{99999}`:       "above",
		`root ::= "\q"`:             "unknown escape",
		`root ::= "x" root ::= "y"`: "defined twice",
		`root ::= [z-a]`:            "backwards",
		`root = "x"`:                "expected ::=",
	} {
		_, err := ParseGBNF(src)
		require.Error(t, err, src)
		assert.True(t, errors.Is(err, ErrInvalidSchema), src)
		assert.Contains(t, err.Error(), want, src)
	}
}

func FuzzParseGBNF(f *testing.F) {
	f.Add(`root ::= ("a" | [b-d]+ | x){1,3} x ::= "\u00e9"? . [^\n]`, "abcd")
	f.Add(`root ::= "x" # c`+"\n"+`y ::= root`, "x")
	f.Fuzz(func(t *testing.T, src, input string) {
		g, err := ParseGBNF(src)
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("error %v does not wrap ErrInvalidSchema", err)
			}
			return
		}
		m := NewMatcher(g)
		if m.Err() != nil {
			return
		}
		for i := range len(input) {
			if m.Accept([]byte{input[i]}) != nil {
				break
			}
		}
	})
}
