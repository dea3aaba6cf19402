package grammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonString writes s as JSON's shortest escapes do (the form the pattern grammar
// accepts), checked against encoding/json's reading of it.
func jsonString(t testing.TB, s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	var back string
	require.NoError(t, json.Unmarshal([]byte(b.String()), &back))
	require.Equal(t, s, back)
	return b.String()
}

// patternCases pair an ECMA-262 pattern with the Go regexp of the same language (""
// when the same text): Go's "." and \s differ from ECMA's.
var patternCases = []struct{ ecma, goRE string }{
	{`^[a-z]+$`, ""},
	{`abc`, ""},
	{`^a|b$`, ""},
	{`^(ab|cd)*e?$`, ""},
	{`^\d{3}-\d{2,4}$`, ""},
	{`^[^0-9"\\]{1,3}$`, ""},
	{`^x{2,}y*$`, ""},
	{`^(a?)*b$`, ""},
	{`^(a*|b)+$`, ""},
	{`^(?:[A-Z][a-z]*\s?){1,3}$`, `^(?:[A-Z][a-z]*[\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]?){1,3}$`},
	{`^.+$`, `^[^\n\r\x{2028}\x{2029}]+$`},
	{`^[\w.-]+@[\w-]+\.\w{2,}$`, ""},
	{`^[é-ü€😀-😂]+$`, ""},
	{`^\u00e9\x41[\u4e00-\u9fff]?$`, `^\x{e9}\x41[\x{4e00}-\x{9fff}]?$`},
	{`^[\n\t"\\/]*$`, ""},
	{`^\W\D\S$`, `^[^0-9A-Za-z_][^0-9][^\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}]$`},
	{`^a{0}b{1}c{0,1}$`, ""},
	{`^(?<year>\d{4})-(?<m>\d\d)$`, `^(?P<year>\d{4})-(?P<m>\d\d)$`},
	{`^[+*?]{1,2}\.\(\)\[\]\{\}\|\^\$$`, ""},
	{`^a{,3}$`, `^a\{,3\}$`}, // not a quantifier: literal text, in both
	{`^\x00-\x1f*$`, ""},
	{``, ""},
	{`^$`, ""},
	{`[]|x`, `x`},
	{`^(a[]|b)c?$`, `^bc?$`},
	{`^a(b[]){0,2}$`, `^a$`},
	{`^[^]$`, `^(?s:.)$`},
	{`^a+?b*?$`, ""},
}

// alphabet gives random strings the characters a pattern is about, and others.
func alphabet(p string) []rune {
	rs := []rune("aAbz09-_ .\n\t\"\\/é€😀😁\u2028\x01\x7fxyeZ@")
	for _, r := range p {
		if r != '\\' {
			rs = append(rs, r)
		}
	}
	return rs
}

func mutate(rng *rand.Rand, s string, al []rune) string {
	rs := []rune(s)
	i := rng.IntN(len(rs) + 1)
	switch rng.IntN(3) {
	case 0:
		rs = append(rs[:i], append([]rune{al[rng.IntN(len(al))]}, rs[i:]...)...)
	case 1:
		if i < len(rs) {
			rs = append(rs[:i], rs[i+1:]...)
		}
	default:
		if i < len(rs) {
			rs[i] = al[rng.IntN(len(al))]
		}
	}
	return string(rs)
}

// The grammar of a pattern accepts the JSON string of a text exactly when Go's regexp
// of the same language finds a match in it: on random texts, texts the grammar writes,
// and their mutations.
func TestPatternAgreesWithRegexp(t *testing.T) {
	for i, c := range patternCases {
		goRE := c.goRE
		if goRE == "" {
			goRE = c.ecma
		}
		re := regexp.MustCompile(goRE)
		schema, _ := json.Marshal(map[string]any{"type": "string", "pattern": c.ecma})
		g, err := CompileJSONSchema(schema, SchemaOptions{})
		require.NoError(t, err, c.ecma)
		matches, m0 := matcher(g)
		rng := rand.New(rand.NewPCG(uint64(i), 3))
		al := alphabet(c.ecma)
		var texts []string
		for range 400 {
			rs := make([]rune, rng.IntN(8))
			for j := range rs {
				rs[j] = al[rng.IntN(len(al))]
			}
			texts = append(texts, string(rs))
		}
		walked := 0
		for range 150 {
			out, ok := walkFrom(m0, rng, 80)
			if !ok {
				continue
			}
			var s string
			require.NoError(t, json.Unmarshal(out, &s), "%s: %q", c.ecma, out)
			require.True(t, re.MatchString(s), "%s: the grammar wrote %q", c.ecma, out)
			walked++
			texts = append(texts, s, mutate(rng, s, al), mutate(rng, mutate(rng, s, al), al))
		}
		assert.Greater(t, walked, 50, c.ecma)
		in, out := 0, 0
		for _, s := range texts {
			want := re.MatchString(s)
			require.Equal(t, want, matches(jsonString(t, s)), "%s on %q", c.ecma, s)
			if want {
				in++
			} else {
				out++
			}
		}
		if c.ecma != `` {
			assert.Positive(t, out, "%s: no text rejected", c.ecma)
		}
		assert.Positive(t, in, "%s: no text accepted", c.ecma)
	}
}

// A pattern outside the subset is refused naming the keyword and where.
func TestPatternErrors(t *testing.T) {
	for _, p := range []string{`(a)\1`, `\k<x>`, `(?=a)`, `(?!a)`, `(?<=a)b`, `(?<!a)b`, `\bword`, `a\B`,
		`\p{L}`, `\cA`, `a(^b)`, `a$b`, `(a$)`, `^*`, `a**`, `*a`, `a{2,1}`, `a{1001}`, `(a{100}){11}`,
		`((a{10}){10}){11}`, `[b-a]`, `(a`, `a)`, `[a`, `\`, `\x4`, `\u12`, `\ud800`, `\01`,
		`(?i)a`, `\q`, strings.Repeat("a", 5000), `[]`, `^a[]$`, "^[^\\x00-\\uD7FF\\uE000-\\uFFFF\U00010000-\U0010FFFF]$"} {
		schema, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{"p": map[string]any{"type": "string", "pattern": p}}})
		_, err := CompileJSONSchema(schema, SchemaOptions{})
		require.Error(t, err, "%q", p)
		var se *SchemaError
		require.True(t, errors.As(err, &se), "%q", p)
		assert.Equal(t, "pattern", se.Keyword, "%q", p)
		assert.Equal(t, "/properties/p/pattern", se.Path, "%q", p)
		assert.ErrorIs(t, err, ErrInvalidSchema)
	}
	for _, s := range []string{`{"type":"string","pattern":3}`, `{"type":"string","pattern":"a","minLength":1}`, `{"type":"string","pattern":"a","format":"date"}`} {
		_, err := CompileJSONSchema([]byte(s), SchemaOptions{})
		assert.ErrorIs(t, err, ErrInvalidSchema, s)
	}
	_, err := CompileJSONSchema([]byte(`{"type":"string","pattern":"a","maxLength":3}`), SchemaOptions{})
	assert.EqualError(t, err, "invalid schema: pattern at /pattern: pattern beside maxLength is not supported")
}

// A pattern without a type constrains strings, and a pattern inside a tool call's
// string parameter constrains its raw text.
func TestPatternPlaces(t *testing.T) {
	g, err := CompileJSONSchema([]byte(`{"pattern":"^[A-Z]{3}$"}`), SchemaOptions{})
	require.NoError(t, err)
	assert.True(t, matches(g, `"ABC"`))
	assert.False(t, matches(g, `"ABCD"`))
	assert.False(t, matches(g, `1`))

	g, err = ToolCalls([]Function{{Name: "f", Parameters: []byte(`{"type":"object","properties":{"code":{"type":"string","pattern":"^[A-Z]{3}$"},"day":{"type":"string","format":"date"},"any":{"type":"string","pattern":"<|x"}},"required":["code"]}`)}}, false)
	require.NoError(t, err)
	call := func(params string) string {
		return "<tool_call>\n<function=f>\n" + params + "</function>\n</tool_call>"
	}
	assert.True(t, matches(g, call("<parameter=code>\nABC\n</parameter>\n")))
	assert.True(t, matches(g, call("<parameter=code>\nABC\n</parameter>\n<parameter=day>\n2024-02-29\n</parameter>\n")))
	assert.False(t, matches(g, call("<parameter=code>\nABC\n</parameter>\n<parameter=day>\n2023-02-29\n</parameter>\n")))
	assert.False(t, matches(g, call("<parameter=code>\nABCD\n</parameter>\n")))
	assert.False(t, matches(g, call("<parameter=code>\n\"ABC\"\n</parameter>\n")))
	assert.True(t, matches(g, call("<parameter=code>\nABC\n</parameter>\n<parameter=any>\n\"x\"\n</parameter>\n")))
	// A pattern of only "<" cannot be written as raw text.
	_, err = ToolCalls([]Function{{Name: "f", Parameters: []byte(`{"type":"object","properties":{"p":{"type":"string","pattern":"^<+$"}}}`)}}, false)
	assert.ErrorContains(t, err, "pattern at /properties/p/pattern: the pattern matches no string")
	// "<" is left out of raw text: the value could close its markup.
	assert.False(t, matches(g, call("<parameter=code>\nABC\n</parameter>\n<parameter=any>\n<\n</parameter>\n")))

	// A string enum written raw keeps the values its pattern accepts.
	g, err = ToolCalls([]Function{{Name: "f", Parameters: []byte(`{"type":"object","properties":{"code":{"type":"string","enum":["ABC","abcd","A\"B"],"pattern":"^[A-Z\"]+$"}}}`)}}, false)
	require.NoError(t, err)
	assert.True(t, matches(g, call("<parameter=code>\nABC\n</parameter>\n")))
	assert.True(t, matches(g, call("<parameter=code>\nA\"B\n</parameter>\n")))
	assert.False(t, matches(g, call("<parameter=code>\nabcd\n</parameter>\n")))
}

// utf8Sequences covers exactly the code points of its range, surrogates aside.
func TestUTF8Ranges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		lo := rune(rng.IntN(0x110000))
		hi := lo + rune(rng.IntN(0x110000-int(lo)))
		if rng.IntN(2) == 0 {
			hi = min(lo+rune(rng.IntN(300)), 0x10ffff)
		}
		seqs := utf8Sequences(lo, hi)
		in := func(b []byte) bool {
			for _, s := range seqs {
				if len(s) != len(b) {
					continue
				}
				ok := true
				for i := range b {
					ok = ok && b[i] >= s[i][0] && b[i] <= s[i][1]
				}
				if ok {
					return true
				}
			}
			return false
		}
		for range 200 {
			r := rune(rng.IntN(0x110000))
			if rng.IntN(2) == 0 {
				r = lo + rune(rng.IntN(int(hi-lo)+1))
			}
			if r >= 0xd800 && r <= 0xdfff {
				continue
			}
			b := utf8.AppendRune(nil, r)
			require.Equal(t, r >= lo && r <= hi, in(b), "%x in [%x,%x]", r, lo, hi)
		}
	}
}

func FuzzPattern(f *testing.F) {
	for _, c := range patternCases {
		f.Add(c.ecma, "abc")
	}
	for _, p := range formats {
		f.Add(p, "2024-01-01")
	}
	f.Add(`(a|b?)*(c{2,3}){0,}`, "ccc")
	f.Fuzz(func(t *testing.T, pattern, text string) {
		schema, err := json.Marshal(map[string]any{"type": "string", "pattern": pattern})
		if err != nil {
			return
		}
		g, err := CompileJSONSchema(schema, SchemaOptions{})
		if err != nil {
			if !errors.Is(err, ErrInvalidSchema) {
				t.Fatalf("%q: error %v does not wrap ErrInvalidSchema", pattern, err)
			}
			return
		}
		m := NewMatcher(g)
		if m.Err() != nil {
			return
		}
		enc, _ := json.Marshal(text)
		_ = m.Accept(enc)
	})
}
