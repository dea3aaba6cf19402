package cpu_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// ReadWeights reads each matrix a decode step multiplies by once, in the form the
// decode kernels stream: the file's rows (N × RowBytes(K)) with LayoutFile, the
// interleaved copy (ternary.InterleavedSize, Interleaved3Size) where the layout makes
// one. A done context stops it before it reads, and a closed engine says so.
func TestReadWeights(t *testing.T) {
	for _, f := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		w := synthtest.Weights(t, "tiny", 3, f)
		sites := w.Plan().Sites()
		for _, layout := range []cpu.Layout{cpu.LayoutFile, cpu.LayoutInterleaved} {
			t.Run(f.String()+"/"+layout.String(), func(t *testing.T) {
				var want int64
				seen := map[*qwen35.Matrix]bool{}
				for _, s := range sites {
					for _, m := range s.Products {
						if seen[m] {
							continue
						}
						seen[m] = true
						n := m.N * f.RowBytes(m.K)
						if layout.Resolve(f) == cpu.LayoutInterleaved {
							var err error
							if f == ternary.PTQ1_0 {
								n, err = ternary.Interleaved3Size(m.K, m.N)
							} else {
								n, err = ternary.InterleavedSize(m.K, m.N)
							}
							require.NoError(t, err)
						}
						want += int64(n)
					}
				}
				e, err := cpu.New(cpu.WithLayout(layout)).Load(context.Background(), w, backend.LoadOptions{Threads: 2, Activations: backend.ActivationsInt8})
				require.NoError(t, err)
				r, ok := e.(backend.WeightReader)
				require.True(t, ok, "the cpu engine is a backend.WeightReader")
				got, err := r.ReadWeights(context.Background())
				require.NoError(t, err)
				require.Equal(t, want, got, "bytes read")

				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				got, err = r.ReadWeights(ctx)
				require.ErrorIs(t, err, context.Canceled)
				require.Zero(t, got)

				require.NoError(t, e.Close())
				_, err = r.ReadWeights(context.Background())
				require.ErrorIs(t, err, backend.ErrClosed)
			})
		}
	}
}
