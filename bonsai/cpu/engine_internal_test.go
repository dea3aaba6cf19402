package cpu

import (
	"context"
	"math"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/require"
)

// The engine's prefill with the chunked GDN form agrees with its step walk.
func TestChunkedGDNPrefill(t *testing.T) {
	w := synthtest.Weights(t, "tiny", 8, ternary.PQ2_0)
	cfg := w.Config
	eng, err := New().Load(context.Background(), w, backend.LoadOptions{Threads: 2, Activations: backend.ActivationsFloat32})
	require.NoError(t, err)
	defer eng.Close()
	e := eng.(*cpuEngine)

	ids := make([]int32, 150) // two full chunks and a tail
	for i := range ids {
		ids[i] = int32((i*37 + 11) % cfg.Vocab)
	}
	run := func(chunked bool) []float32 {
		e.chunkedGDN = chunked
		st, err := e.NewState(backend.StateOptions{ContextSize: 256, KVCache: backend.KVFloat32})
		require.NoError(t, err)
		out := make([]float32, len(ids)*cfg.Vocab)
		require.NoError(t, e.Forward(context.Background(), []backend.Sequence{{State: st, Tokens: ids, Logits: backend.LogitsAll, Out: out}}))
		return out
	}
	step, chunked := run(false), run(true)
	var worst float64
	for i := range step {
		worst = max(worst, math.Abs(float64(step[i]-chunked[i])))
	}
	t.Logf("tiny, 150 tokens: chunked GDN prefill vs step walk: max |Δlogit| %.3g", worst)
	require.Less(t, worst, 1e-3)
}
