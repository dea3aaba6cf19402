package grammar

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A clone starts where its matcher stands and moves on its own: advancing it leaves
// the original's state and mask as they were, and each one's mask is the mask of a
// fresh matcher fed the same text, and the set of tokens whose bytes Accept takes.
func TestMatcherClone(t *testing.T) {
	g, err := CompileJSONSchema([]byte(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"],"additionalProperties":false}`), SchemaOptions{})
	require.NoError(t, err)
	pieces := []string{"{", "}", `"`, "a", "b", `":`, ",", "1", "2", "x", `"a":`, `"b":"`, " ", "\n", `{"a`, "ab"}
	v := NewVocab(len(pieces), func(id int32) ([]byte, bool) { return []byte(pieces[id]), true })

	// fresh returns a new matcher that has read s.
	fresh := func(s string) *Matcher {
		m := NewMatcher(g)
		require.NoError(t, m.Accept([]byte(s)), s)
		return m
	}
	mask := func(m *Matcher) []uint64 {
		dst := make([]uint64, 1)
		m.Mask(v, dst)
		return dst
	}
	// byAccept is the mask that trying every token's bytes on a clone gives.
	byAccept := func(s string) []uint64 {
		dst := make([]uint64, 1)
		for id := range pieces {
			if fresh(s).Accept([]byte(pieces[id])) == nil {
				dst[0] |= 1 << id
			}
		}
		return dst
	}

	orig := fresh(`{"a":1`)
	want := mask(orig)
	require.Equal(t, byAccept(`{"a":1`), want)
	c := orig.Clone()
	assert.Equal(t, want, mask(c), "a clone masks as its matcher")
	require.NoError(t, c.Accept([]byte(`2,"b":"x`)))
	assert.Equal(t, mask(fresh(`{"a":12,"b":"x`)), mask(c))
	assert.Equal(t, byAccept(`{"a":12,"b":"x`), mask(c))
	assert.NotEqual(t, want, mask(c))
	assert.Equal(t, want, mask(orig), "the clone's steps leave the original")
	assert.False(t, orig.Accepting())

	require.NoError(t, c.Accept([]byte(`"}`)))
	assert.True(t, c.Accepting())
	assert.True(t, c.Done())
	assert.False(t, orig.Accepting(), "the original is not complete")
	// A refused byte leaves the clone where it was.
	require.Error(t, c.Accept([]byte(",")))
	assert.True(t, c.Done())

	// The original moves on its own as well.
	require.NoError(t, orig.Accept([]byte(`,"b":"`)))
	assert.Equal(t, byAccept(`{"a":1,"b":"`), mask(orig))
	assert.True(t, c.Done(), "the original's steps leave the clone")

	// Set moves a matcher back to another's position.
	c.Set(orig)
	assert.Equal(t, mask(orig), mask(c))
	assert.False(t, c.Accepting())
	require.NoError(t, c.Accept([]byte(`"}`)))
	assert.True(t, c.Done())
	assert.Equal(t, byAccept(`{"a":1,"b":"`), mask(orig))

	// A matcher that cannot go on clones as one that cannot go on.
	dead := &Matcher{a: orig.a, cur: dead, err: errDeadForTest}
	assert.ErrorIs(t, dead.Clone().Accept([]byte("1")), errDeadForTest)
}

var errDeadForTest = errors.New("dead for the test")
