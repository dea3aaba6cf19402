package grammar

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// numberTexts are decimal texts around the bounds the tests use: integers, fractions,
// zeros, negative zero, leading zeros and exponents.
func numberTexts(rng *rand.Rand) []string {
	var out []string
	for n := -12; n <= 12; n++ {
		for _, f := range []string{"", ".0", ".00", ".5", ".05", ".000001", ".9", ".99", ".25", ".250", ".75", ".001", ".0009", ".051", ".049", ".999", ".9991", ".0011", ".050"} {
			out = append(out, fmt.Sprintf("%d%s", n, f))
			if n == 0 {
				out = append(out, "-0"+f)
			}
		}
	}
	out = append(out, "00", "01", "1.", ".5", "1e1", "1E0", "-", "+1", "", "1.0e0", "100", "-100", "1000000")
	for range 300 {
		out = append(out, fmt.Sprintf("%d.%d", rng.IntN(30)-15, rng.IntN(1000)))
	}
	return out
}

// Numbers with bounds or multipleOf: the grammar accepts a text exactly when it is
// JSON without exponent and an independent validator accepts its value.
func TestNumberKeywords(t *testing.T) {
	for i, schema := range []string{
		`{"type":"number","minimum":0}`,
		`{"type":"number","minimum":-3,"maximum":5}`,
		`{"type":"number","exclusiveMinimum":-3,"exclusiveMaximum":5}`,
		`{"type":"number","exclusiveMinimum":0,"maximum":1}`,
		`{"type":"number","minimum":-1,"exclusiveMaximum":0}`,
		`{"type":"number","maximum":-2}`,
		`{"type":"number","exclusiveMaximum":-2}`,
		`{"type":"number","minimum":2,"maximum":2}`,
		`{"type":"number","exclusiveMinimum":0}`,
		`{"type":"number","minimum":1.0,"maximum":10,"exclusiveMaximum":10}`,
		`{"type":"number","minimum":-2.5,"maximum":3.75}`,
		`{"type":"number","exclusiveMinimum":0.05,"exclusiveMaximum":0.5}`,
		`{"type":"number","minimum":-0.5,"exclusiveMaximum":-0.25}`,
		`{"type":"number","exclusiveMinimum":1.5}`,
		`{"type":"number","maximum":-1.05}`,
		`{"type":"number","minimum":0.999,"maximum":1.001}`,
		`{"type":"number","exclusiveMinimum":-0.001,"exclusiveMaximum":0}`,
		`{"type":"number","minimum":2.5e-1,"maximum":0.25}`,
		`{"type":"number","multipleOf":3}`,
		`{"type":"number","multipleOf":0.01}`,
		`{"type":"integer","multipleOf":4}`,
		`{"type":"integer","multipleOf":1}`,
		`{"type":"integer","multipleOf":1000}`,
		`{"multipleOf":7}`,
	} {
		checkNumberSchema(t, schema, i)
	}
	// Random ranges: exact, and never a trap (walks always finish).
	ends := []string{"-3", "-2.5", "-1.05", "-1", "-0.5", "-0.25", "0", "0.05", "0.5", "0.999", "1", "1.001", "2", "3.75", "10"}
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 60 {
		var parts []string
		if rng.IntN(5) > 0 {
			parts = append(parts, fmt.Sprintf(`"%s":%s`, []string{"minimum", "exclusiveMinimum"}[rng.IntN(2)], ends[rng.IntN(len(ends))]))
		}
		if rng.IntN(5) > 0 {
			parts = append(parts, fmt.Sprintf(`"%s":%s`, []string{"maximum", "exclusiveMaximum"}[rng.IntN(2)], ends[rng.IntN(len(ends))]))
		}
		if len(parts) == 0 {
			continue // unbounded: exponents allowed, another test's matter
		}
		schema := `{"type":"number"` + strings.Join(append([]string{""}, parts...), ",") + `}`
		if _, err := CompileJSONSchema([]byte(schema), SchemaOptions{}); err != nil {
			// Only an empty range is refused: no text is valid.
			require.ErrorContains(t, err, "no number lies between the bounds", schema)
			v := validatorFormats(t, schema)
			for _, s := range numberTexts(rng) {
				if json.Valid([]byte(s)) {
					inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(s))
					require.Error(t, v.Validate(inst), "%s refused but %s is valid", schema, s)
				}
			}
			continue
		}
		checkNumberSchema(t, schema, 100+i)
	}
}

// checkNumberSchema compares the grammar of a number schema with jsonschema on many
// texts, and checks that random outputs finish and are valid.
func checkNumberSchema(t *testing.T, schema string, i int) {
	t.Helper()
	{
		g, err := CompileJSONSchema([]byte(schema), SchemaOptions{})
		require.NoError(t, err, schema)
		v := validatorFormats(t, schema)
		rng := rand.New(rand.NewPCG(uint64(i), 5))
		texts := numberTexts(rng)
		for n := -60; n <= 60; n++ {
			texts = append(texts, fmt.Sprint(n), fmt.Sprintf("%d.%02d", n, rng.IntN(100)))
		}
		accepted := 0
		for _, s := range texts {
			want := false
			if json.Valid([]byte(s)) && !strings.ContainsAny(s, "eE") {
				inst, err := jsonschema.UnmarshalJSON(strings.NewReader(s))
				require.NoError(t, err)
				want = v.Validate(inst) == nil
			}
			got := matches(g, s)
			if strings.Contains(schema, "multipleOf\":3") || strings.Contains(schema, "multipleOf\":7") || strings.Contains(schema, "integer") {
				// An integer multipleOf, or an integer: written without a fraction (a subset).
				want = want && !strings.Contains(s, ".")
			}
			if s == "-0" || strings.HasPrefix(s, "-0.") && strings.Trim(s[3:], "0") == "" {
				// Negative zero: the integer grammar writes it, the range grammar not.
				if got {
					require.True(t, want, "%s accepts %q", schema, s)
				}
				continue
			}
			require.Equal(t, want, got, "%s on %q", schema, s)
			if got {
				accepted++
			}
		}
		assert.Positive(t, accepted, schema)
		// Random outputs are valid.
		m0 := NewMatcher(g)
		for range 50 {
			out, ok := walkFrom(m0, rng, 40)
			require.True(t, ok, "%s: a walk did not finish: %q", schema, out)
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(out)))
			require.NoError(t, err, "%q", out)
			require.NoError(t, v.Validate(inst), "%s wrote %q", schema, out)
		}
	}
}

// Bounds near the ±10^15 limit and far apart compile and hold their ends.
func TestNumberRangeWide(t *testing.T) {
	g, err := CompileJSONSchema([]byte(`{"type":"number","minimum":-1000000000000000,"maximum":999999999999999}`), SchemaOptions{})
	require.NoError(t, err)
	assert.True(t, matches(g, "-1000000000000000"))
	assert.False(t, matches(g, "-1000000000000000.5"))
	assert.True(t, matches(g, "999999999999998.75"))
	assert.False(t, matches(g, "1000000000000000"))

	// A multiple has at most 16 digits.
	g, err = CompileJSONSchema([]byte(`{"type":"integer","multipleOf":4}`), SchemaOptions{})
	require.NoError(t, err)
	assert.True(t, matches(g, "-"+strings.Repeat("4", 16)))
	assert.False(t, matches(g, strings.Repeat("4", 17)))

	// A bounded number's fraction has at most 18 digits: no endless zeros.
	g, err = CompileJSONSchema([]byte(`{"type":"number","exclusiveMinimum":0,"maximum":1}`), SchemaOptions{})
	require.NoError(t, err)
	assert.True(t, matches(g, "0."+strings.Repeat("0", 17)+"1"))
	assert.False(t, matches(g, "0."+strings.Repeat("0", 18)+"1"))
	assert.True(t, matches(g, "0."+strings.Repeat("9", 18)))
	assert.False(t, matches(g, "0."+strings.Repeat("9", 19)))
	assert.True(t, matches(g, "1."+strings.Repeat("0", 18)))
	assert.False(t, matches(g, "1."+strings.Repeat("0", 19)))
}

func TestNumberKeywordErrors(t *testing.T) {
	for _, c := range []struct{ schema, keyword, path string }{
		{`{"type":"number","minimum":1e-20}`, "minimum", "/minimum"},
		{`{"type":"number","exclusiveMinimum":0.5,"maximum":0.5}`, "minimum", ""},
		{`{"type":"number","exclusiveMaximum":1e20}`, "exclusiveMaximum", "/exclusiveMaximum"},
		{`{"type":"number","minimum":3,"maximum":2}`, "minimum", ""},
		{`{"type":"number","exclusiveMinimum":2,"maximum":2}`, "minimum", ""},
		{`{"type":"number","multipleOf":0.3}`, "multipleOf", "/multipleOf"},
		{`{"type":"number","multipleOf":0}`, "multipleOf", "/multipleOf"},
		{`{"type":"integer","multipleOf":5000}`, "multipleOf", "/multipleOf"},
		{`{"type":"integer","multipleOf":2,"minimum":0}`, "multipleOf", "/multipleOf"},
		{`{"type":"number","multipleOf":"2"}`, "multipleOf", "/multipleOf"},
	} {
		_, err := CompileJSONSchema([]byte(c.schema), SchemaOptions{})
		require.Error(t, err, c.schema)
		var se *SchemaError
		require.ErrorAs(t, err, &se, c.schema)
		assert.Equal(t, c.keyword, se.Keyword, c.schema)
		assert.Equal(t, c.path, se.Path, c.schema)
	}
}
