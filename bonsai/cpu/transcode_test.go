package cpu_test

import (
	"context"
	"math"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logitsOf runs tokens through a fresh state of b's engine on m, then decode steps of
// the first four tokens again, and returns every logit; and the last load progress
// the engine reported (done, total).
func logitsOf(t *testing.T, b backend.Backend, m backend.Model, acts backend.Activations, tokens []int32) (logits []float32, done, total int64) {
	t.Helper()
	e, err := b.Load(context.Background(), m, backend.LoadOptions{Threads: 2, Activations: acts,
		Progress: func(d, n int64) { done, total = d, n }})
	require.NoError(t, err)
	defer e.Close()
	st, err := e.NewState(backend.StateOptions{ContextSize: 128})
	require.NoError(t, err)
	defer st.Close()
	out := make([]float32, len(tokens)*m.Vocab())
	require.NoError(t, e.Forward(context.Background(), []backend.Sequence{{State: st, Tokens: tokens, Logits: backend.LogitsAll, Out: out}}))
	for _, tok := range tokens[:4] {
		one := make([]float32, m.Vocab())
		require.NoError(t, e.Forward(context.Background(), []backend.Sequence{{State: st, Tokens: []int32{tok}, Logits: backend.LogitsLast, Out: one}}))
		out = append(out, one...)
	}
	return out, done, total
}

// productBytes returns the bytes of m's ternary products (what a transcoding load
// reports as its work).
func productBytes(m backend.Model) int64 {
	return productBytesWhere(m, func(*qwen35.Matrix) bool { return true })
}

// productBytesWhere returns the bytes of m's ternary products that keep.
func productBytesWhere(m backend.Model, keep func(*qwen35.Matrix) bool) int64 {
	p := m.(*qwen35.Weights).Plan()
	seen := map[*qwen35.Matrix]bool{}
	var n int64
	for _, s := range p.Sites() {
		for _, mat := range s.Products {
			if !seen[mat] && keep(mat) {
				seen[mat] = true
				n += int64(len(mat.Data))
			}
		}
	}
	return n
}

// A PTQ1_0 model transcoded to PQ2_0 at load gives bit for bit the logits of the same
// model run natively and of its PQ2_0 twin, prefill and steps, int8 and float32; and a
// PQ2_0 model transcoded to PTQ1_0 does too.
func TestWeightFormatSameLogits(t *testing.T) {
	tq := synthtest.Weights(t, "tiny", 9, ternary.PTQ1_0)
	pq := synthtest.Weights(t, "tiny", 9, ternary.PQ2_0)
	tokens := []int32{1, 7, 42, 3, 99, 5, 17, 250, 8, 11}
	// The file's layout: the loads report the transcoding alone (TestLayoutsSameLogits
	// checks the interleaved copies give the same bits).
	file := cpu.WithLayout(cpu.LayoutFile)
	for _, acts := range []backend.Activations{backend.ActivationsInt8, backend.ActivationsFloat32} {
		want, _, native := logitsOf(t, cpu.New(file), tq, acts, tokens)
		assert.Zero(t, native, "bytes of transcoding the native load reported")
		for _, c := range []struct {
			name string
			b    backend.Backend
			m    backend.Model
			work int64 // the source bytes the load must report transcoded
		}{
			{"PTQ1_0 as PQ2_0", cpu.New(file, cpu.WithWeightFormat(ternary.PQ2_0)), tq, productBytes(tq)},
			{"PQ2_0 twin", cpu.New(file), pq, 0},
			{"PQ2_0 as PTQ1_0", cpu.New(file, cpu.WithWeightFormat(ternary.PTQ1_0)), pq, productBytes(pq)},
			{"PTQ1_0 as PTQ1_0", cpu.New(file, cpu.WithWeightFormat(ternary.PTQ1_0)), tq, 0},
		} {
			got, done, total := logitsOf(t, c.b, c.m, acts, tokens)
			assert.Equal(t, [2]int64{c.work, c.work}, [2]int64{done, total}, "%s: the load's report of the bytes transcoded (done, total)", c.name)
			require.Len(t, got, len(want), c.name)
			for i := range got {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s (activations %v): logit %d is %v, natively %v", c.name, acts, i, got[i], want[i])
			}
		}
	}
}

// The transcoded backend passes the conformance suite too.
func TestWeightFormatConformance(t *testing.T) {
	backendtest.Run(t, cpu.New(cpu.WithWeightFormat(ternary.PQ2_0)), synthtest.Weights(t, "tiny", 3, ternary.PTQ1_0), backendtest.Options{})
}

// A cancelled load stops with the context's error.
func TestWeightFormatCancelledLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := cpu.New(cpu.WithWeightFormat(ternary.PQ2_0)).Load(ctx, synthtest.Weights(t, "tiny", 3, ternary.PTQ1_0), backend.LoadOptions{Threads: 2})
	require.ErrorIs(t, err, context.Canceled, "Load with a cancelled context")
}
