package cpu

import (
	"context"
	"math"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
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

// The memory ReadWeights streams is the decode kernels' own: the pieces tile each
// interleaved copy where the layout made one, and the file's rows of the others, in
// order and without gaps.
func TestDecodeMemoryIsTheKernels(t *testing.T) {
	w := synthtest.Weights(t, "tiny", 3, ternary.PQ2_0)
	for _, layout := range []Layout{LayoutFile, LayoutInterleaved} {
		eng, err := New(WithLayout(layout)).Load(context.Background(), w, backend.LoadOptions{Threads: 2, Activations: backend.ActivationsInt8})
		require.NoError(t, err)
		e := eng.(*cpuEngine)
		var whole [][]byte // what the pieces must tile, in order
		seen := map[*qwen35.Matrix]bool{}
		for _, s := range e.plan.Sites() {
			for _, m := range s.Products {
				if seen[m] {
					continue
				}
				seen[m] = true
				if pk := e.packed[m]; pk != nil {
					whole = append(whole, pk.mem)
				} else {
					whole = append(whole, m.Data)
				}
			}
		}
		if layout.Resolve(ternary.PQ2_0) == LayoutInterleaved {
			require.NotEmpty(t, e.packed, "the interleaved layout made copies")
		}
		pieces := e.decodeMem
		for i, mem := range whole {
			for len(mem) > 0 {
				require.NotEmpty(t, pieces, "matrix %d: pieces end early", i)
				p := pieces[0]
				require.LessOrEqual(t, len(p), readPiece)
				require.Same(t, &mem[0], &p[0], "matrix %d: a piece starts elsewhere", i)
				mem, pieces = mem[len(p):], pieces[1:]
			}
		}
		require.Empty(t, pieces, "pieces beyond the matrices")
		require.NoError(t, eng.Close())
	}
}

// A new state reuses a closed one's GDN states, zeroed: its logits are a fresh state's
// bit for bit; no more than maxSpareGDN sets are kept, and none once the engine is closed.
func TestSpareGDNStates(t *testing.T) {
	w := synthtest.Weights(t, "tiny", 9, ternary.PQ2_0)
	cfg := w.Config
	eng, err := New().Load(context.Background(), w, backend.LoadOptions{Threads: 2, Activations: backend.ActivationsInt8})
	require.NoError(t, err)
	e := eng.(*cpuEngine)
	opt := backend.StateOptions{ContextSize: 64, KVCache: backend.KVFloat32}
	ids := []int32{3, 1, 4, 1, 5, 9, 2, 6}
	run := func(st backend.State) []float32 {
		out := make([]float32, cfg.Vocab)
		require.NoError(t, e.Forward(context.Background(), []backend.Sequence{{State: st, Tokens: ids, Logits: backend.LogitsLast, Out: out}}))
		return out
	}
	a, err := e.NewState(opt)
	require.NoError(t, err)
	want := run(a)
	mem := &a.(*cpuState).gdnSet[0].S[0]
	require.NoError(t, a.Close())
	require.NoError(t, a.Close()) // twice: nothing kept twice
	require.Len(t, e.spareGDN, 1)

	b, err := e.NewState(opt)
	require.NoError(t, err)
	require.Same(t, mem, &b.(*cpuState).gdnSet[0].S[0], "the closed state's memory is reused")
	require.Empty(t, e.spareGDN)
	require.Equal(t, want, run(b), "a reused state starts from zero")

	var sts []backend.State
	for range maxSpareGDN + 2 {
		st, err := e.NewState(opt)
		require.NoError(t, err)
		sts = append(sts, st)
	}
	for _, st := range sts {
		require.NoError(t, st.Close())
	}
	require.Len(t, e.spareGDN, maxSpareGDN)
	require.NoError(t, eng.Close())
	require.Empty(t, e.spareGDN)
	require.NoError(t, b.Close())
	require.Empty(t, e.spareGDN, "a closed engine keeps nothing")
}
