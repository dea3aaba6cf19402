package cpu_test

import (
	"context"
	"math"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tiledBytes returns the bytes of m's ternary products wide enough for tiles (what a
// tiling load reports as its work).
func tiledBytes(m backend.Model) int64 {
	return productBytesWhere(m, func(mat *qwen35.Matrix) bool { return ternary.Tiled(mat.K) })
}

// A model of 1024-wide rows loaded with its batch tiles gives bit for bit the logits of
// the plain load, in both formats and transcoded (the prompt's chunk runs the batched
// kernels over the tiles, the decode steps the matrix-vector kernels over the weights),
// and the load reports tiling every matrix the kernels take; with float32 activations
// no tiles are made.
func TestBatchTilesSameLogits(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the tiled loads' logits against the plain load's (small model, both formats and precisions) run in the full go test; TestBatchTilesConformance checks the tiles under -short")
	}
	tokens := []int32{1, 7, 42, 3, 99, 5, 17, 250, 8, 11, 400, 2, 9, 31}
	for _, f := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		m := synthtest.Weights(t, "small", 6, f)
		work := tiledBytes(m)
		require.NotZero(t, work, "%s: bytes that can be tiled", f)
		require.Equal(t, productBytes(m), work, "%s: the products' bytes that can be tiled; the test wants them all", f)
		for _, acts := range []backend.Activations{backend.ActivationsInt8, backend.ActivationsFloat32} {
			want, _, _ := logitsOf(t, cpu.New(), m, acts, tokens)
			// The load's last report: the tiling's (the PQ2_0 copy's bytes when a PTQ1_0
			// model is transcoded first), or the transcoding's, or none.
			asPQ2 := work
			if f == ternary.PTQ1_0 {
				asPQ2 = work / int64(ternary.PTQ1_0.RowBytes(1024)) * int64(ternary.PQ2_0.RowBytes(1024))
			}
			transcoded := int64(0)
			if f == ternary.PTQ1_0 {
				transcoded = work
			}
			int8 := acts == backend.ActivationsInt8
			for _, c := range []struct {
				name string
				b    backend.Backend
				work int64
			}{
				{"tiles", cpu.New(cpu.WithBatchTiles()), map[bool]int64{true: work, false: 0}[int8]},
				{"transcoded, tiles", cpu.New(cpu.WithBatchTiles(), cpu.WithWeightFormat(ternary.PQ2_0)), map[bool]int64{true: asPQ2, false: transcoded}[int8]},
			} {
				got, done, total := logitsOf(t, c.b, m, acts, tokens)
				assert.Equal(t, [2]int64{c.work, c.work}, [2]int64{done, total}, "%s %s %v: the load's last report (done, total bytes)", f, c.name, acts)
				require.Len(t, got, len(want))
				for i := range got {
					require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s %s %v: logit %d is %v, without tiles %v", f, c.name, acts, i, got[i], want[i])
				}
			}
		}
	}
}

// A load cancelled while it tiles (at its first report) stops with the context's error.
func TestBatchTilesCancelledLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := cpu.New(cpu.WithBatchTiles()).Load(ctx, synthtest.Weights(t, "small", 4, ternary.PQ2_0), backend.LoadOptions{Threads: 2,
		Progress: func(done, total int64) { cancel() }})
	require.ErrorIs(t, err, context.Canceled, "cancelled load")
}
