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

// A model transcoded at Load (WithWeightFormat) and interleaved keeps one copy of its
// weights where batches read the interleaved copy: the transcoded rows are given back
// (before, a PTQ1_0 27B run as interleaved PQ2_0 on AVX2 held 19.3 GB, 3.2× its file).
// Where batches still read the rows, they stay. Either way the logits are the native
// model's, bit for bit, prefill and steps.
func TestTranscodedInterleavedKeepsOneCopy(t *testing.T) {
	w := synthtest.Weights(t, "tiny", 9, ternary.PTQ1_0)
	tokens := []int32{1, 7, 42, 3, 99, 5, 17, 250, 8, 11}
	logits := func(eng backend.Engine) []float32 {
		st, err := eng.NewState(backend.StateOptions{ContextSize: 64})
		require.NoError(t, err)
		defer st.Close()
		out := make([]float32, (len(tokens)+2)*w.Vocab())
		ctx := context.Background()
		require.NoError(t, eng.Forward(ctx, []backend.Sequence{{State: st, Tokens: tokens, Logits: backend.LogitsAll, Out: out[:len(tokens)*w.Vocab()]}}))
		for i, tok := range tokens[:2] {
			one := out[(len(tokens)+i)*w.Vocab() : (len(tokens)+i+1)*w.Vocab()]
			require.NoError(t, eng.Forward(ctx, []backend.Sequence{{State: st, Tokens: []int32{tok}, Logits: backend.LogitsLast, Out: one}}))
		}
		return out
	}
	opts := backend.LoadOptions{Threads: 2, Activations: backend.ActivationsInt8}
	native, err := New(WithLayout(LayoutFile)).Load(context.Background(), w, opts)
	require.NoError(t, err)
	want := logits(native)
	require.NoError(t, native.Close())

	defer func(f func(ternary.Format) (bool, bool)) { packNative = f }(packNative)
	for _, batch := range []bool{true, false} {
		packNative = func(ternary.Format) (bool, bool) { return true, batch }
		eng, err := New(WithWeightFormat(ternary.PQ2_0), WithLayout(LayoutInterleaved)).Load(context.Background(), w, opts)
		require.NoError(t, err)
		e := eng.(*cpuEngine)
		require.NotEmpty(t, e.subst)
		for _, tr := range e.subst {
			require.NotNil(t, e.packed[tr], "%s: no interleaved copy", tr.Name)
			if batch {
				require.Nil(t, tr.Data, "%s: transcoded rows kept beside the interleaved copy that batches read", tr.Name)
				require.NotContains(t, e.freeSubst, tr, tr.Name)
			} else {
				require.Len(t, tr.Data, tr.N*ternary.PQ2_0.RowBytes(tr.K), "%s: the transcoded rows batches read", tr.Name)
				require.Contains(t, e.freeSubst, tr, tr.Name)
			}
		}
		got := logits(eng)
		require.NoError(t, eng.Close())
		require.Empty(t, e.freeSubst, "batch %v: transcoded copies left after Close", batch)
		for i := range want {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "batch %v: logit %d is %v, natively %v", batch, i, got[i], want[i])
		}
	}
}
