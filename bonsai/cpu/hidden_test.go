package cpu_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// The kept hidden states are the float64 reference's (Reference.Hidden, the residual
// stream before output_norm) within float32 rounding; a Rewind drops those beyond the
// length, KeepHidden(from) those before from, and KeepHidden(-1) all.
func TestHiddenStates(t *testing.T) {
	f := synthtest.File(t, "tiny", 2, ternary.PQ2_0)
	w, err := qwen35.Bind(f)
	require.NoError(t, err)
	ref, err := qwen35.NewReference(f)
	require.NoError(t, err)
	eng, err := cpu.New().Load(context.Background(), w, backend.LoadOptions{Threads: 2, Activations: backend.ActivationsFloat32})
	require.NoError(t, err)
	defer eng.Close()
	st, err := eng.NewState(backend.StateOptions{ContextSize: 64, KVCache: backend.KVFloat32})
	require.NoError(t, err)
	hs, ok := st.(backend.HiddenStates)
	require.True(t, ok, "the CPU state keeps hidden states")

	ids := []int32{5, 77, 300, 12, 9, 401, 33, 2}
	want, err := ref.Hidden([]int{5, 77, 300, 12, 9, 401, 33, 2})
	require.NoError(t, err)
	E := w.Config.Embedding
	h := make([]float32, E)
	feed := func(tokens []int32, keep bool) {
		require.NoError(t, eng.Forward(context.Background(), []backend.Sequence{{State: st, Tokens: tokens, Keep: keep}}))
	}
	feed(ids[:3], false)
	assert.False(t, hs.Hidden(0, h), "nothing is kept before KeepHidden")
	hs.KeepHidden(3)
	feed(ids[3:4], false)
	feed(ids[4:], true)
	for pos := 0; pos < len(ids); pos++ {
		if !assert.Equal(t, pos >= 3, hs.Hidden(pos, h), "position %d", pos) || pos < 3 {
			continue
		}
		worst := 0.0
		for i := range h {
			worst = max(worst, math.Abs(float64(h[i])-want[pos][i]))
		}
		assert.Less(t, worst, 1e-4, "position %d", pos)
	}
	require.NoError(t, st.(backend.Rewinder).Rewind(6))
	assert.True(t, hs.Hidden(5, h))
	assert.False(t, hs.Hidden(6, h), "rewound away")
	hs.KeepHidden(5)
	assert.False(t, hs.Hidden(4, h), "dropped below from")
	assert.True(t, hs.Hidden(5, h))
	hs.KeepHidden(-1)
	assert.False(t, hs.Hidden(5, h))

	// Keeping from the middle of a pass keeps the rows from there on.
	st.Reset()
	hs.KeepHidden(6)
	feed(ids, false)
	for pos := 0; pos < len(ids); pos++ {
		assert.Equal(t, pos >= 6, hs.Hidden(pos, h), "position %d", pos)
	}
	require.True(t, hs.Hidden(7, h))
	assert.InDelta(t, want[7][0], h[0], 1e-4)
}
