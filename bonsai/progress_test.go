package bonsai_test

import (
	"context"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenProgress checks the stages Open reports, in order, each from 0 to its total
// without going back, with verification and warm-up on.
func TestOpenProgress(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	f, err := gguf.Open(path)
	require.NoError(t, err)
	var tensorBytes int64
	for _, ti := range f.Tensors {
		n, err := ti.Size()
		require.NoError(t, err)
		tensorBytes += n
	}
	size := f.Size()
	f.Close()

	var reports []bonsai.Progress
	m := open(t, path, bonsai.WithVerify(true), bonsai.WithWarmup(true), bonsai.WithThreads(2),
		bonsai.WithProgress(func(p bonsai.Progress) { reports = append(reports, p) }))
	require.NotNil(t, m)

	var stages []string
	last := map[string]bonsai.Progress{}
	for _, p := range reports {
		prev, seen := last[p.Stage]
		if !seen {
			stages = append(stages, p.Stage)
			assert.Zero(t, p.Done, "%s starts at 0", p.Stage)
		} else {
			assert.GreaterOrEqual(t, p.Done, prev.Done, "%s goes back", p.Stage)
			assert.Equal(t, prev.Total, p.Total, "%s changes its total", p.Stage)
		}
		assert.LessOrEqual(t, p.Done, p.Total, "%s", p.Stage)
		last[p.Stage] = p
	}
	require.Equal(t, append([]string{"map", "bind", "tokenizer", "verify", "warmup"}, loadStages(false)...), stages)
	for stage, p := range last {
		assert.Equal(t, p.Total, p.Done, "%s ends at its total", stage)
	}
	assert.Equal(t, size, last["map"].Total)
	assert.Equal(t, tensorBytes, last["warmup"].Total)
	assert.Greater(t, last["bind"].Total, int64(10), "bind counts tensors")
	assert.True(t, last["warmup"].InBytes())
	assert.False(t, last["bind"].InBytes())

	// The model runs after a warm-up like after any Open.
	s, err := m.NewSession()
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.Prefill(context.Background(), []int32{1, 2, 3}))
}

// TestWarmupCancel: cancelling the load context during the warm-up stops Open.
func TestWarmupCancel(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := bonsai.Open(path, bonsai.WithWarmup(true), bonsai.WithLoadContext(ctx),
		bonsai.WithProgress(func(p bonsai.Progress) {
			if p.Stage == "warmup" {
				cancel()
			}
		}))
	require.ErrorIs(t, err, context.Canceled)
}
