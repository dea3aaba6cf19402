package bonsai_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/require"
)

// A Session's methods may be called from several goroutines at once: each runs whole
// under the session's lock, so the steps of four goroutines all land, in some order, and
// the readers never see a state torn between two steps (run under -race in CI).
func TestSessionConcurrentCalls(t *testing.T) {
	path := synthtest.Path(t, "tiny", 5, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2))
	s, err := m.NewSession()
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	require.NoError(t, s.Prefill(ctx, []int32{1, 2, 3}))

	const writers, steps = 4, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range steps {
				if err := s.Step(ctx, int32(10*w+i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 10 {
				n := s.Len()
				toks := s.Tokens()
				if len(toks) < 3 || n < 3 {
					t.Errorf("a reader saw %d tokens (Len %d), fewer than the prompt's 3", len(toks), n)
				}
				_ = s.Logits()
				_ = s.MemoryBytes()
				var b bytes.Buffer
				if err := s.Save(&b); err != nil {
					t.Error(err)
				}
				c, err := s.Clone()
				if err != nil {
					t.Error(err)
					continue
				}
				// A clone is one consistent snapshot: its tokens and its state agree.
				if got, want := len(c.Tokens()), c.Len(); got != want {
					t.Errorf("a clone lists %d tokens, its state holds %d", got, want)
				}
				c.Close()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 3+writers*steps, s.Len())
	toks := s.Tokens()
	require.Len(t, toks, 3+writers*steps)
	// Each writer's tokens appear in its own order.
	for w := range writers {
		next := 0
		for _, tok := range toks[3:] {
			if tok == int32(10*w+next) {
				next++
			}
		}
		require.Equal(t, steps, next, "writer %d's steps in order", w)
	}
}
