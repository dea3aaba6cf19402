package bonsai_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// Verify's rows are the logits Step gives token by token, and after Rewind to any
// position of the pass the session continues as one that stepped only to there: the
// same tokens, the same logits for the next token.
func TestVerifyRewind(t *testing.T) {
	m := open(t, synthtest.Path(t, "tiny", 2, ternary.PQ2_0))
	ctx := context.Background()
	prompt, pass, next := tokens(12, 512, 1), tokens(6, 512, 2), int32(77)
	stepped := func(j int) (*bonsai.Session, [][]float32) {
		s, err := m.NewSession()
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		require.NoError(t, s.Prefill(ctx, prompt))
		var rows [][]float32
		for _, tok := range pass[:j] {
			require.NoError(t, s.Step(ctx, tok))
			rows = append(rows, slices.Clone(s.Logits()))
		}
		return s, rows
	}
	_, wantRows := stepped(len(pass))
	for j := 0; j <= len(pass); j++ {
		ref, _ := stepped(j)
		require.NoError(t, ref.Step(ctx, next))
		s, err := m.NewSession()
		require.NoError(t, err)
		defer s.Close()
		require.NoError(t, s.Prefill(ctx, prompt))
		rows, err := s.Verify(ctx, pass)
		require.NoError(t, err)
		require.Equal(t, wantRows, rows)
		require.Equal(t, wantRows[len(pass)-1], s.Logits())
		require.NoError(t, s.Rewind(len(prompt)+j))
		assert.Equal(t, len(prompt)+j, s.Len())
		if j < len(pass) {
			assert.Nil(t, s.Logits(), "a rewind that drops tokens leaves no logits")
		}
		require.NoError(t, s.Step(ctx, next))
		require.Equal(t, ref.Tokens(), s.Tokens(), "rewound to %d", j)
		require.Equal(t, ref.Logits(), s.Logits(), "the next token's logits after rewinding to %d", j)
	}
}

// Rewind is refused with ErrNotKept outside the last Verify and after a Step.
func TestRewindRefused(t *testing.T) {
	m := open(t, synthtest.Path(t, "tiny", 2, ternary.PQ2_0))
	ctx := context.Background()
	s, err := m.NewSession()
	require.NoError(t, err)
	defer s.Close()
	require.ErrorIs(t, s.Rewind(0), bonsai.ErrNotKept)
	require.NoError(t, s.Prefill(ctx, tokens(5, 512, 3)))
	_, err = s.Verify(ctx, tokens(3, 512, 4))
	require.NoError(t, err)
	require.ErrorIs(t, s.Rewind(4), bonsai.ErrNotKept)
	require.ErrorIs(t, s.Rewind(9), bonsai.ErrNotKept)
	assert.Equal(t, 8, s.Len())
	require.NoError(t, s.Step(ctx, 1))
	require.ErrorIs(t, s.Rewind(8), bonsai.ErrNotKept)
	assert.Equal(t, 9, s.Len())
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Rewind(9), bonsai.ErrClosed)
	_, err = s.Verify(ctx, tokens(1, 512, 5))
	require.ErrorIs(t, err, bonsai.ErrClosed)
}

// Verifications of several sessions at once share the batcher's passes with each other
// and with a long prompt, which the batcher cuts into parts: each gets what it gets alone.
func TestVerifyBatched(t *testing.T) {
	m := open(t, synthtest.Path(t, "tiny", 2, ternary.PQ2_0))
	ctx := context.Background()
	run := func(i int) ([]int32, []float32, error) {
		s, err := m.NewSession()
		if err != nil {
			return nil, nil, err
		}
		defer s.Close()
		if err := s.Prefill(ctx, tokens(10+i, 512, 10+i)); err != nil {
			return nil, nil, err
		}
		for round := range 4 {
			if _, err := s.Verify(ctx, tokens(9, 512, 20+10*i+round)); err != nil {
				return nil, nil, err
			}
			if err := s.Rewind(s.Len() - 9 + (i+round)%10); err != nil {
				return nil, nil, err
			}
		}
		if err := s.Step(ctx, 5); err != nil {
			return nil, nil, err
		}
		return s.Tokens(), slices.Clone(s.Logits()), nil
	}
	const n = 4
	wantTok, wantLog := make([][]int32, n), make([][]float32, n)
	for i := range n {
		var err error
		wantTok[i], wantLog[i], err = run(i)
		require.NoError(t, err)
	}
	gotTok, gotLog, errs := make([][]int32, n), make([][]float32, n), make([]error, n+1)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gotTok[i], gotLog[i], errs[i] = run(i)
		}()
	}
	wg.Add(1)
	go func() { // a long prompt beside them
		defer wg.Done()
		s, err := m.NewSession()
		if err == nil {
			defer s.Close()
			err = s.Prefill(ctx, tokens(300, 512, 99))
		}
		errs[n] = err
	}()
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	for i := range n {
		require.Equal(t, wantTok[i], gotTok[i], "session %d", i)
		require.Equal(t, wantLog[i], gotLog[i], "session %d", i)
	}
}
