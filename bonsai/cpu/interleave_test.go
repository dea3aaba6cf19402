package cpu_test

import (
	"context"
	"math"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// packedBytes returns the bytes of m's products that layout l interleaves on this CPU
// (the work its load reports).
func packedBytes(m backend.Model, f ternary.Format, l cpu.Layout) int64 {
	decode, batch := nativeOf(f)
	if l == cpu.LayoutFile || !decode || (l == cpu.LayoutAuto && !batch) {
		return 0
	}
	return productBytes(m)
}

// A model loaded in each layout gives bit for bit the logits of the file's layout (a
// prompt's chunk, then decode steps), a PQ2_0 model and a PTQ1_0 one; the load reports
// interleaving the products the layout asks for where the CPU has their kernels.
func TestLayoutsSameLogits(t *testing.T) {
	tokens := []int32{1, 7, 42, 3, 99, 5, 17, 250, 8, 11}
	for _, f := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		m := synthtest.Weights(t, "small", 6, f)
		want, _, _ := logitsOf(t, cpu.New(cpu.WithLayout(cpu.LayoutFile)), m, backend.ActivationsInt8, tokens)
		for _, l := range []cpu.Layout{cpu.LayoutAuto, cpu.LayoutInterleaved} {
			work := packedBytes(m, f, l)
			t.Logf("%s, %s: %d bytes interleaved", f, l, work)
			got, done, total := logitsOf(t, cpu.New(cpu.WithLayout(l)), m, backend.ActivationsInt8, tokens)
			assert.Equal(t, [2]int64{work, work}, [2]int64{done, total}, "%s, %s: the load's last report (done, total bytes)", f, l)
			require.Len(t, got, len(want))
			for i := range got {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s, %s: logit %d is %v, in the file's layout %v", f, l, i, got[i], want[i])
			}
		}
	}
}

// A load cancelled while it interleaves (at its first report) stops with the context's
// error.
func TestInterleavedWeightsCancelledLoad(t *testing.T) {
	if !ternary.InterleavedNative() {
		t.Skip("no interleaved kernel on this CPU: the layout makes no copy")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := cpu.New(cpu.WithLayout(cpu.LayoutInterleaved)).Load(ctx, synthtest.Weights(t, "small", 4, ternary.PQ2_0), backend.LoadOptions{Threads: 2,
		Activations: backend.ActivationsInt8, Progress: func(done, total int64) { cancel() }})
	require.ErrorIs(t, err, context.Canceled, "cancelled load")
}

// batchLogits runs, on a fresh load of m by b, prompts of three sequences together (70,
// 9 and 1 tokens: a chunk of 64 rows and a mixed one), every logit asked for, then six
// batched decode steps of the three, each feeding back its greedy token; it returns
// every logit in order.
func batchLogits(t *testing.T, b backend.Backend, m backend.Model) []float32 {
	t.Helper()
	e, err := b.Load(context.Background(), m, backend.LoadOptions{Threads: 2, Activations: backend.ActivationsInt8})
	require.NoError(t, err)
	defer e.Close()
	sts := newStates(t, e, 3, 128)
	var out []float32
	prompt := make([]backend.Sequence, len(sts))
	for i, st := range sts {
		toks := ids([]int{70, 9, 1}[i], m.Vocab(), i)
		prompt[i] = backend.Sequence{State: st, Tokens: toks, Logits: backend.LogitsAll, Out: make([]float32, len(toks)*m.Vocab())}
	}
	require.NoError(t, e.Forward(context.Background(), prompt))
	for _, q := range prompt {
		out = append(out, q.Out...)
	}
	d := newDecodeBatch(e, sts, m.Vocab())
	for range 6 {
		require.NoError(t, d.step(context.Background()))
		for _, q := range d.batch {
			out = append(out, q.Out...)
		}
	}
	return out
}

// Prompts and batched decode steps over the interleaved copy of a PQ2_0 model and of a
// PTQ1_0 one (each where its batched kernels are native) give bit for bit the logits of
// the plain load's tiled kernels over the file's rows.
func TestInterleavedWeightsBatchSameLogits(t *testing.T) {
	ran := false
	for _, f := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		if _, batch := nativeOf(f); !batch {
			continue
		}
		ran = true
		m := synthtest.Weights(t, "small", 6, f)
		want := batchLogits(t, cpu.New(cpu.WithLayout(cpu.LayoutFile)), m)
		for _, c := range []struct {
			name string
			opts []cpu.Option
		}{
			{"auto", nil},
			{"interleaved and tiles", []cpu.Option{cpu.WithLayout(cpu.LayoutInterleaved), cpu.WithBatchTiles()}},
		} {
			got := batchLogits(t, cpu.New(c.opts...), m)
			require.Len(t, got, len(want))
			for i := range got {
				require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s, %s: logit %d is %v, without interleaving %v", f, c.name, i, got[i], want[i])
			}
		}
	}
	if !ran {
		t.Skip("no native batched interleaved kernel here: batches read the file's rows")
	}
}

// nativeOf reports whether format f's interleaved kernels run natively here, for decode
// and for batches.
func nativeOf(f ternary.Format) (decode, batch bool) {
	if f == ternary.PTQ1_0 {
		return ternary.Interleaved3Native(), ternary.Interleaved3BatchNative()
	}
	return ternary.InterleavedNative(), ternary.InterleavedBatchNative()
}

// With batch tiles asked for too, a load whose batches read the interleaved copy makes
// no tiles of the matrices that have one: one pass over the products (its reports end
// once at all of their bytes), not two.
func TestInterleavedWeightsNoTiles(t *testing.T) {
	if !ternary.InterleavedBatchNative() {
		t.Skip("no native batched interleaved kernel here: batches read the tiles")
	}
	m := synthtest.Weights(t, "small", 4, ternary.PQ2_0)
	var ends []int64
	e, err := cpu.New(cpu.WithLayout(cpu.LayoutInterleaved), cpu.WithBatchTiles()).Load(context.Background(), m, backend.LoadOptions{Threads: 2,
		Activations: backend.ActivationsInt8, Progress: func(done, total int64) {
			if done == total {
				ends = append(ends, total)
			}
		}})
	require.NoError(t, err)
	defer e.Close()
	assert.Equal(t, []int64{productBytes(m)}, ends, "the passes of the load (their bytes)")
}
