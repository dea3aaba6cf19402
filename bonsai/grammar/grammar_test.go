package grammar

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// matches reports whether the grammar accepts s whole.
func matches(g *Grammar, s string) bool {
	m := NewMatcher(g)
	return m.Accept([]byte(s)) == nil && m.Accepting()
}

func TestSchemaMatches(t *testing.T) {
	cases := []struct {
		schema string
		accept []string
		reject []string
	}{
		{`{"type":"integer"}`, []string{"0", "-12", "7"}, []string{"01", "1.5", "", "+1", "1 ", "\n7", " 7"}},
		{`{"type":"number"}`, []string{"1.5", "-0.25e-3", "3E2", "7"}, []string{".5", "1.", "1e"}},
		{`{"type":"string","minLength":1,"maxLength":3}`, []string{`"a"`, `"é\n"`, `"\u00e9ab"`, `"abc"`}, []string{`""`, `"abcd"`, `"a`, "\"\x01\"", "\"\xff\""}},
		{`{"type":"boolean"}`, []string{"true", "false"}, []string{"True", "tru"}},
		{`{"enum":["a",1,null,{"k":[true]}]}`, []string{`"a"`, "1", "null", `{"k":[true]}`}, []string{`"b"`, "2"}},
		{`{"const":"x y"}`, []string{`"x y"`}, []string{`"x"`}},
		// The rest of the schema filters an enum.
		{`{"type":"string","enum":["a",1,"bb"],"maxLength":1}`, []string{`"a"`}, []string{`1`, `"bb"`}},
		{`{"type":"string","format":"date","enum":["2024-02-29","2023-02-29"]}`, []string{`"2024-02-29"`}, []string{`"2023-02-29"`}},
		{`{"type":"integer","minimum":2,"const":3}`, []string{`3`}, []string{`2`}},
		{`{"type":["string","null"]}`, []string{`"s"`, "null"}, []string{"1"}},
		{`{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":2}`, []string{"[1]", "[1,2]", "[1, 2]"}, []string{"[]", "[1,2,3]", "[1,]", "[ 1,\n  2 ]", "[1,  2]", "[1 ,2]", "[1,2 ]"}},
		{`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["b"],"additionalProperties":false}`,
			[]string{`{"b":"x"}`, `{"a":1,"b":"x"}`, `{"a": 1, "b": "x"}`}, []string{`{ "a": 1, "b": "x" }`, `{"a" :1,"b":"x"}`, "{\"a\":\n1,\"b\":\"x\"}", `{}`, `{"a":1}`, `{"b":"x","a":1}`, `{"b":"x","c":1}`, `{"a":1,,"b":"x"}`}},
		{`{"type":"object"}`, []string{`{}`, `{"x":[1,{"y":null}]}`}, []string{`[]`, `{"x"}`}},
		{`{"anyOf":[{"type":"integer"},{"type":"array","items":{"$ref":"#"}}]}`, []string{"1", "[1,[2,[]]]"}, []string{`"s"`}},
		{`{"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"required":["v","next"],"additionalProperties":false}},"$ref":"#/$defs/n"}`,
			[]string{`{"v":1,"next":null}`, `{"v":1,"next":{"v":2,"next":null}}`}, []string{`{"v":1}`}},
	}
	for _, c := range cases {
		g, err := CompileJSONSchema([]byte(c.schema), SchemaOptions{})
		require.NoError(t, err, c.schema)
		for _, s := range c.accept {
			assert.True(t, matches(g, s), "%s should accept %q", c.schema, s)
		}
		for _, s := range c.reject {
			assert.False(t, matches(g, s), "%s should reject %q", c.schema, s)
		}
	}
}

func TestSchemaErrors(t *testing.T) {
	cases := []struct{ schema, keyword, path string }{
		{`{"type":"number","minimum":1e-20}`, "minimum", "/minimum"},
		{`{"minimum":1e-20}`, "minimum", "/minimum"},
		{`{"type":"array","uniqueItems":true}`, "uniqueItems", "/uniqueItems"},
		{`{"type":"integer","minimum":3,"maximum":2}`, "minimum", ""},
		{`{"type":"integer","maximum":1e20}`, "maximum", "/maximum"},
		{`{"type":"object","properties":{"a":{"type":"string","pattern":"(x)\\1"}}}`, "pattern", "/properties/a/pattern"},
		{`{"type":"string","format":"date","maxLength":3}`, "format", "/format"},
		{`{"type":"number","not":{"type":"integer"}}`, "not", "/not"},
		{`{"type":"strin"}`, "type", "/type"},
		{`{"$ref":"http://example.com/s"}`, "$ref", "/$ref"},
		{`{"$ref":"#/$defs/missing"}`, "$ref", "/$ref"},
		{`{"type":"string","maxLength":100000}`, "maxLength", "/maxLength"},
		{`{"type":"object","required":["x"]}`, "required", "/required"},
		{`{"type":"integer","minimum":2,"const":1}`, "const", "/const"},
		{`{"type":"string","enum":["a"],"pattern":"(?=a)"}`, "pattern", "/pattern"},
		{`[1]`, "schema", ""},
		{`{"type":`, "schema", ""},
	}
	for _, c := range cases {
		_, err := CompileJSONSchema([]byte(c.schema), SchemaOptions{})
		require.Error(t, err, c.schema)
		assert.True(t, errors.Is(err, ErrInvalidSchema), c.schema)
		var se *SchemaError
		require.True(t, errors.As(err, &se), c.schema)
		assert.Equal(t, c.keyword, se.Keyword, c.schema)
		assert.Equal(t, c.path, se.Path, c.schema)
	}
}

// objectOf is an object schema of n properties p0, p1, …, property i's schema prop(i).
func objectOf(n int, prop func(i int) string) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":%s`, i, prop(i))
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// Bounds are counted, not unrolled: a thousand strings of up to 10,000 characters
// make a grammar a few rules each, and its outputs are checked to the character.
func TestLargeBoundsAreCounted(t *testing.T) {
	g, err := CompileJSONSchema(objectOf(1000, func(int) string {
		return `{"type":"string","minLength":9000,"maxLength":10000}`
	}), SchemaOptions{})
	require.NoError(t, err)
	assert.Less(t, g.Rules(), 40*1000, "rules per bounded property")

	g, err = CompileJSONSchema([]byte(`{"type":"string","minLength":9000,"maxLength":10000}`), SchemaOptions{})
	require.NoError(t, err)
	for _, c := range []struct {
		n  int
		ok bool
	}{{8999, false}, {9000, true}, {10000, true}, {10001, false}} {
		m := NewMatcher(g)
		err := m.Accept([]byte(`"` + strings.Repeat("é", c.n) + `"`))
		assert.Equal(t, c.ok, err == nil && m.Accepting(), "%d characters", c.n)
	}
}

// A schema that would make a huge grammar is refused quickly, without building it.
func TestSchemaTooLarge(t *testing.T) {
	longEnum := func(int) string {
		var b strings.Builder
		b.WriteString(`{"enum":[`)
		for j := range 100 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"%030d"`, j)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	_, err := CompileJSONSchema(objectOf(1000, longEnum), SchemaOptions{})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalidSchema)
	assert.Contains(t, err.Error(), "too large")

	deep := strings.Repeat(`{"type":"array","items":`, 40) + `{}` + strings.Repeat(`}`, 40)
	_, err = CompileJSONSchema([]byte(deep), SchemaOptions{})
	assert.ErrorContains(t, err, "nested deeper than 32")
	var enum strings.Builder
	enum.WriteString(`{"enum":[`)
	for i := range 2000 {
		if i > 0 {
			enum.WriteString(",")
		}
		fmt.Fprintf(&enum, "%d", i)
	}
	enum.WriteString(`]}`)
	_, err = CompileJSONSchema([]byte(enum.String()), SchemaOptions{})
	assert.ErrorContains(t, err, "enum at /enum: 2000 values, more than the 1024 supported")
}

// Integer bounds: every integer in a window matches exactly when it is in range.
func TestSchemaIntegerRange(t *testing.T) {
	for _, c := range []struct {
		schema string
		in     func(n int) bool
	}{
		{`{"type":"integer","minimum":0}`, func(n int) bool { return n >= 0 }},
		{`{"type":"integer","minimum":1,"maximum":100}`, func(n int) bool { return n >= 1 && n <= 100 }},
		{`{"type":"integer","minimum":-37,"maximum":1234}`, func(n int) bool { return n >= -37 && n <= 1234 }},
		{`{"type":"integer","exclusiveMinimum":-5,"exclusiveMaximum":7}`, func(n int) bool { return n > -5 && n < 7 }},
		{`{"type":"integer","maximum":-20}`, func(n int) bool { return n <= -20 }},
		{`{"type":"integer","minimum":2.5,"maximum":99.5}`, func(n int) bool { return n >= 3 && n <= 99 }},
		{`{"type":"integer","minimum":190,"maximum":2001}`, func(n int) bool { return n >= 190 && n <= 2001 }},
	} {
		g, err := CompileJSONSchema([]byte(c.schema), SchemaOptions{})
		require.NoError(t, err, c.schema)
		for n := -3000; n <= 3000; n++ {
			require.Equal(t, c.in(n), matches(g, strconv.Itoa(n)), "%s: %d", c.schema, n)
		}
		assert.False(t, matches(g, "007"), c.schema)
		assert.False(t, matches(g, "-0"), c.schema)
	}
}
