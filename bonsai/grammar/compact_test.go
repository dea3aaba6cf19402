package grammar

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// walk writes a random output of the grammar: a byte at a time, each drawn among those
// the automaton allows, stopping at an accepting state with probability 1/8 or when
// nothing may follow. Past half the bound it follows a shortest way to an accepting
// state. It returns false when the output reached limit bytes unfinished.
func walk(g *Grammar, rng *rand.Rand, limit int) ([]byte, bool) {
	return walkFrom(NewMatcher(g), rng, limit)
}

// walkFrom walks from the start of m's automaton, which it shares: the states built
// serve the next walks.
func walkFrom(m0 *Matcher, rng *rand.Rand, limit int) ([]byte, bool) {
	m := &Matcher{a: m0.a, cur: 0}
	var out []byte
	for len(out) < limit {
		if m.Accepting() && (m.Done() || rng.IntN(8) == 0 || len(out) > limit/2) {
			return out, true
		}
		var allowed []byte
		for c := range 256 {
			if m.a.step(m.cur, byte(c)) != dead {
				allowed = append(allowed, byte(c))
			}
		}
		if len(allowed) == 0 {
			return out, m.Accepting()
		}
		pick := allowed[rng.IntN(len(allowed))]
		if len(out) > limit/2 {
			if c, ok := towardAccept(m.a, m.cur); ok {
				pick = c
			}
		}
		if err := m.Accept([]byte{pick}); err != nil {
			panic(err)
		}
		out = append(out, pick)
	}
	return out, false
}

// towardAccept returns the first byte of a shortest way from state s to an accepting
// state (breadth first over byte classes).
func towardAccept(a *automaton, s int32) (byte, bool) {
	first := map[int32]byte{}
	queue := []int32{s}
	seen := map[int32]bool{s: true}
	for len(queue) > 0 && len(seen) < 100000 {
		x := queue[0]
		queue = queue[1:]
		for cl := range a.g.classes {
			c := a.g.classRep[cl]
			y := a.step(x, c)
			if y == dead || seen[y] {
				continue
			}
			seen[y] = true
			f, ok := first[x]
			if !ok {
				f = c
			}
			first[y] = f
			if a.states[y].accept {
				return f, true
			}
			queue = append(queue, y)
		}
	}
	return 0, false
}

// matcher returns a function that reports whether the grammar accepts a text whole,
// all calls sharing one automaton.
func matcher(g *Grammar) (func(s string) bool, *Matcher) {
	m0 := NewMatcher(g)
	return func(s string) bool {
		m := &Matcher{a: m0.a, cur: 0}
		return m.Accept([]byte(s)) == nil && m.Accepting()
	}, m0
}

// wsOK reports whether the whitespace of a JSON text is within the bound: outside
// strings, only single spaces right after ',' or ':'.
func wsOK(s string) bool {
	inStr, esc := false, false
	for i := range len(s) {
		c := s[i]
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == ' ':
			if i == 0 || (s[i-1] != ',' && s[i-1] != ':') {
				return false
			}
		case c == '\n' || c == '\t' || c == '\r':
			return false
		}
	}
	return true
}

func TestWSOK(t *testing.T) {
	assert.True(t, wsOK(`{"a": [1, 2],"b":" \n"}`))
	for _, s := range []string{" {}", "{} ", `{ "a":1}`, `{"a" :1}`, `[1,  2]`, "[1,\n2]", "{\"a\":\t1}"} {
		assert.False(t, wsOK(s), s)
	}
}

// compactSchemas are schemas of every kind the compiler reads.
var compactSchemas = []string{
	`{"type":"object"}`,
	`{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"enum":["a","b c"]},"maxItems":3},"ok":{"type":"boolean"},"x":{"type":["number","null"]}},"required":["name","age","tags"],"additionalProperties":false}`,
	`{"type":"array","items":{"type":"object","properties":{"k":{"const":{"z":[1,2]}}},"additionalProperties":{"type":"integer"}},"minItems":1,"maxItems":3}`,
	`{"anyOf":[{"type":"string","format":"date"},{"type":"integer"}]}`,
	`{"type":"object","properties":{"id":{"type":"string","format":"uuid"},"code":{"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"},"when":{"type":"string","format":"date-time"},"ip":{"type":"string","format":"ipv4"}},"required":["id","code","when","ip"],"additionalProperties":false}`,
	`{"$defs":{"n":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}},"required":["v","next"],"additionalProperties":false}},"$ref":"#/$defs/n"}`,
}

// Random outputs of every schema are valid JSON that an independent validator accepts
// (formats asserted), with no more whitespace than the bound.
func TestWalksValidAndCompact(t *testing.T) {
	for i, schema := range compactSchemas {
		g, err := CompileJSONSchema([]byte(schema), SchemaOptions{})
		require.NoError(t, err, schema)
		v := validatorFormats(t, schema)
		m0 := NewMatcher(g)
		rng := rand.New(rand.NewPCG(uint64(i), 7))
		done := 0
		for range 200 {
			out, ok := walkFrom(m0, rng, 400)
			if !ok {
				continue
			}
			done++
			s := string(out)
			require.True(t, json.Valid(out), "%s: %q", schema, s)
			require.True(t, wsOK(s), "%s: %q", schema, s)
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
			require.NoError(t, err)
			require.NoError(t, v.Validate(inst), "%s: %q", schema, s)
		}
		assert.Greater(t, done, 100, schema)
	}
}

func validatorFormats(t testing.TB, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource("schema.json", doc))
	s, err := c.Compile("schema.json")
	require.NoError(t, err)
	return s
}

// Whitespace anywhere in a compact value is refused, except one space after a ',' or
// ':' outside strings.
func TestCompactWhitespace(t *testing.T) {
	// free: whether spaces may be inserted in the strings: values (keys are fixed) or
	// all, or none (dates).
	cases := []struct {
		schema, compact string
		free            string
	}{
		{`{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"array","items":{"type":"integer"}}},"required":["name","n"],"additionalProperties":false}`, `{"name":"a, b: c","n":[1,2,3]}`, "values"},
		{`{"type":"object"}`, `{"a":{"b":[true,null,"x y"]},"c":-1.5e3}`, "all"},
		{`{"type":"array","items":{"type":"string","format":"date"}}`, `["2024-02-29","1999-12-31"]`, "none"},
	}
	for _, c := range cases {
		g, err := CompileJSONSchema([]byte(c.schema), SchemaOptions{})
		require.NoError(t, err)
		require.True(t, matches(g, c.compact), c.compact)
		for i := 0; i <= len(c.compact); i++ {
			for _, ws := range []string{" ", "  ", "\n", "\t", "\r", " \n"} {
				s := c.compact[:i] + ws + c.compact[i:]
				// Inside a string the whitespace is content; count the quotes before i.
				inStr := strings.Count(strings.ReplaceAll(c.compact[:i], `\"`, ""), `"`)%2 == 1
				want := inStr && (ws == " " || ws == "  ") ||
					!inStr && ws == " " && i > 0 && (c.compact[i-1] == ',' || c.compact[i-1] == ':')
				if inStr {
					isKey := c.compact[i+strings.IndexByte(c.compact[i:], '"')+1] == ':'
					want = want && (c.free == "all" || c.free == "values" && !isKey)
				}
				assert.Equal(t, want, matches(g, s), "%q", s)
			}
		}
	}
	// The outputs of issue 27.
	g, err := CompileJSONSchema([]byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`), SchemaOptions{})
	require.NoError(t, err)
	assert.False(t, matches(g, "\n {\n  \"name\"\n:\n\"x\"}"))
	assert.True(t, matches(g, `{"name": "x"}`))
	g, err = CompileJSONSchema([]byte(`{"type":"object"}`), SchemaOptions{})
	require.NoError(t, err)
	assert.False(t, matches(g, " \n{}"))
	assert.True(t, matches(g, "{}"))
}
