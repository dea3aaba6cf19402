package grammar

import (
	"errors"
	"testing"

	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func smallVocab(t testing.TB, size int) *Vocab {
	t.Helper()
	sv, err := synth.NewVocabulary(size)
	require.NoError(t, err)
	pieces := make([][]byte, len(sv.Tokens))
	for i, s := range sv.Tokens {
		if sv.Types[i] == synth.TokenNormal {
			pieces[i] = byteLevel(s)
		}
	}
	return NewVocab(len(pieces), func(id int32) ([]byte, bool) { return pieces[id], pieces[id] != nil })
}

// Along random outputs of many grammars, a mask never forbids every token while the
// output is incomplete, and every token it allows is accepted.
func TestMaskNeverEmpty(t *testing.T) {
	v := smallVocab(t, 2048)
	var gs []*Grammar
	for _, s := range []string{typicalSchema, `{"type":"object"}`, `{"type":"array","items":{"type":"number"},"minItems":3}`,
		`{"anyOf":[{"type":"string","minLength":5,"maxLength":5},{"enum":[1,2]}]}`} {
		g, err := CompileJSONSchema([]byte(s), SchemaOptions{})
		require.NoError(t, err)
		gs = append(gs, g)
	}
	g, err := ToolCalls([]Function{{Name: "f", Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"},"n":{"type":"integer"}},"required":["q"]}`)}, {Name: "g"}}, true)
	require.NoError(t, err)
	gs = append(gs, g)
	mask := make([]uint64, (v.Size()+63)/64)
	for i, g := range gs {
		for seed := range uint64(5) {
			ids := trajectory(t, g, v, seed, 150)
			m := NewMatcher(g)
			for _, id := range ids {
				n := m.Mask(v, mask)
				require.True(t, n > 0 || m.Accepting(), "grammar %d seed %d", i, seed)
				require.NotZero(t, mask[id>>6]&(1<<(id&63)), "grammar %d: token %d drawn but not in the mask", i, id)
				// The mask is exact: a token outside it is refused.
				for other := int32(0); other < int32(v.Size()); other += 97 {
					in := mask[other>>6]&(1<<(other&63)) != 0
					probe := NewMatcher(g)
					_ = probe.Accept(nil)
					probe.cur = m.cur
					probe.a = m.a
					ok := v.bytesOf[other] != nil && probe.Accept(v.bytesOf[other]) == nil
					require.Equal(t, ok, in, "grammar %d token %d %q", i, other, v.bytesOf[other])
				}
				require.NoError(t, m.AcceptToken(v, id))
			}
		}
	}
}

// A vocabulary that cannot spell what the grammar needs gives an empty mask, which the
// caller turns into ErrDeadEnd instead of sampling forever.
func TestDeadEnd(t *testing.T) {
	letters := []string{"a", "b", "ab", "{", "\""}
	v := NewVocab(len(letters), func(id int32) ([]byte, bool) { return []byte(letters[id]), true })
	g, err := CompileJSONSchema([]byte(`{"type":"integer"}`), SchemaOptions{})
	require.NoError(t, err)
	m := NewMatcher(g)
	mask := make([]uint64, 1)
	assert.Equal(t, 0, m.Mask(v, mask))
	assert.False(t, m.Accepting())
	assert.Equal(t, uint64(0), mask[0])
	assert.True(t, errors.Is(ErrDeadEnd, ErrDeadEnd))

	// A string of letters can be written and closed.
	g, err = CompileJSONSchema([]byte(`{"type":"string","maxLength":2}`), SchemaOptions{})
	require.NoError(t, err)
	m = NewMatcher(g)
	assert.Equal(t, 1, m.Mask(v, mask)) // only `"`
	require.NoError(t, m.Accept([]byte(`"`)))
	assert.Equal(t, 5, m.Mask(v, mask)) // a, b, ab, { (text) and "
	require.NoError(t, m.Accept([]byte(`ab`)))
	assert.Equal(t, 1, m.Mask(v, mask)) // only the closing quote
	require.NoError(t, m.Accept([]byte(`"`)))
	assert.True(t, m.Done())
}

func FuzzCompileJSONSchema(f *testing.F) {
	for _, s := range []string{typicalSchema, `{"type":"object"}`, `{"$ref":"#"}`, `{"anyOf":[{"$ref":"#/$defs/a"}],"$defs":{"a":{"type":"array","items":{"$ref":"#"}}}}`,
		`{"type":"string","minLength":3,"maxLength":2}`, `{"enum":[]}`, `{"type":["integer","string"],"maxLength":2}`,
		`{"type":"string","pattern":"^(a|b)*c{2,3}$"}`, `{"type":"string","format":"date-time"}`, `{"type":"number","minimum":-1,"exclusiveMaximum":1}`,
		`{"type":"integer","multipleOf":7}`, `{"type":"string","enum":["a","bb"],"maxLength":1}`} {
		f.Add([]byte(s), []byte(`{"a": [1, "x"]}`))
	}
	f.Fuzz(func(t *testing.T, schema, input []byte) {
		g, err := CompileJSONSchema(schema, SchemaOptions{})
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
		for i := range input {
			if m.Accept(input[i:i+1]) != nil {
				break
			}
		}
	})
}
