package bonsai_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrefilled: within the token loop a generation reports its prompt's usage as
// prefilled — what its Result reports in the end — and nothing before it runs.
func TestPrefilled(t *testing.T) {
	m := tiny(t)
	s := session(t, m)
	prompt := tokens(16, 512, 2)
	for round, in := range [][]int32{prompt, append(prompt[:16:16], tokens(4, 512, 5)...)} {
		g := start(t, context.Background(), s, bonsai.TokenIDs(in...), bonsai.GenerateOptions{MaxTokens: 3})
		assert.Equal(t, bonsai.Usage{}, g.Prefilled(), "round %d: before it runs", round)
		var seen []bonsai.Usage
		for _, err := range g.Tokens() {
			require.NoError(t, err)
			seen = append(seen, g.Prefilled())
		}
		res, err := g.Result()
		require.NoError(t, err)
		require.NotEmpty(t, seen)
		want := bonsai.Usage{PromptTokens: len(in), CachedTokens: res.Usage.CachedTokens}
		for _, u := range seen {
			assert.Equal(t, want, u, "round %d", round)
		}
		if round == 0 {
			assert.Zero(t, res.Usage.CachedTokens)
		}
	}
}

// TestPromptTooLongError: a prompt longer than the context is a *PromptTooLongError
// that says by how much, and ErrContextFull.
func TestPromptTooLongError(t *testing.T) {
	m := tiny(t, bonsai.WithContextSize(24))
	_, err := m.Prepare(bonsai.TokenIDs(tokens(30, 512, 3)...), bonsai.GenerateOptions{})
	require.ErrorIs(t, err, bonsai.ErrContextFull)
	var tl *bonsai.PromptTooLongError
	require.True(t, errors.As(err, &tl), "%v", err)
	assert.Equal(t, bonsai.PromptTooLongError{Tokens: 30, ContextSize: 24}, *tl)
	assert.Equal(t, "bonsai: context full: the prompt has 30 tokens, the context holds 24", err.Error())
	_, err = m.Prepare(bonsai.TokenIDs(tokens(24, 512, 3)...), bonsai.GenerateOptions{})
	assert.NoError(t, err)
}
