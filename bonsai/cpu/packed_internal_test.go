package cpu

import (
	"context"
	"testing"

	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPackReleases checks, on a CPU made up to have a batched interleaved kernel for
// PQ2_0 only, that each layout copies the matrices it should and hands the file's rows
// back exactly where batches read the copy too: every byte of a PQ2_0 model's products
// (some twice: the pages chunks share), none of a PTQ1_0 model's.
func TestPackReleases(t *testing.T) {
	save := packNative
	defer func() { packNative = save }()
	packNative = func(f ternary.Format) (decode, batch bool) { return true, f == ternary.PQ2_0 }
	for _, c := range []struct {
		f       ternary.Format
		layout  Layout
		copies  bool
		release bool
	}{
		{ternary.PQ2_0, LayoutAuto, true, true},
		{ternary.PQ2_0, LayoutInterleaved, true, true},
		{ternary.PTQ1_0, LayoutAuto, false, false},
		{ternary.PTQ1_0, LayoutInterleaved, true, false},
	} {
		w := synthtest.Weights(t, "tiny", 2, c.f)
		sites := w.Plan().Sites()
		var products int64
		seen := map[*qwen35.Matrix]bool{}
		for _, s := range sites {
			for _, m := range s.Products {
				if !seen[m] {
					seen[m] = true
					products += int64(len(m.Data))
				}
			}
		}
		var released int64
		release := func(b []byte) error { released += int64(len(b)); return nil }
		pk, free, err := packMatrices(context.Background(), sites, func(m *qwen35.Matrix) *qwen35.Matrix { return m }, c.layout, release, 1, nil, nil)
		require.NoError(t, err)
		if free != nil {
			require.NoError(t, free())
		}
		assert.Equal(t, c.copies, len(pk) == len(seen), "%s, %s: %d of %d products copied", c.f, c.layout, len(pk), len(seen))
		if c.release {
			assert.GreaterOrEqual(t, released, products, "%s, %s: released bytes", c.f, c.layout)
		} else {
			assert.Zero(t, released, "%s, %s: released bytes", c.f, c.layout)
		}
	}
}
