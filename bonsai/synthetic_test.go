package bonsai_test

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fillSynthetic fills s with n positions of backendtest.FillSynthetic's state.
func fillSynthetic(s *bonsai.Session, m *bonsai.Model, n int) error {
	return m.Driver().Fill(s, func(st backend.State) error { return backendtest.FillSynthetic(st, n, 1) })
}

// Driver.Fill with backendtest.FillSynthetic puts a session at position n with a state
// of the model's shape, at every KV precision: it steps on from there with finite
// logits, its snapshot round-trips, a context too small is refused and leaves the
// session empty, and another model's session is refused.
func TestFillSynthetic(t *testing.T) {
	path := writeModel(t, "tiny", 11, ternary.PQ2_0)
	ctx := context.Background()
	for _, kv := range []bonsai.KVPrecision{bonsai.KVFloat16, bonsai.KVFloat32, bonsai.KVInt8, bonsai.KVQ4} {
		t.Run(kv.String(), func(t *testing.T) {
			m := open(t, path, bonsai.WithKVCache(kv), bonsai.WithThreads(2), bonsai.WithContextSize(600))
			s := session(t, m)
			require.NoError(t, fillSynthetic(s, m, 500))
			assert.Equal(t, 500, s.Len())
			empty := session(t, m)
			assert.Greater(t, s.MemoryBytes(), empty.MemoryBytes())
			require.NoError(t, s.Step(ctx, 3))
			assert.Equal(t, 501, s.Len())
			for i, x := range s.Logits() {
				require.False(t, math.IsNaN(float64(x)) || math.IsInf(float64(x), 0), "logit %d = %v", i, x)
			}
			var buf bytes.Buffer
			require.NoError(t, s.Save(&buf))
			l, err := m.LoadSession(&buf)
			require.NoError(t, err)
			defer l.Close()
			require.NoError(t, s.Step(ctx, 4))
			require.NoError(t, l.Step(ctx, 4))
			assert.Equal(t, s.Logits(), l.Logits())
			require.ErrorIs(t, fillSynthetic(s, m, 601), bonsai.ErrContextFull)
			assert.Zero(t, s.Len())
			require.Error(t, fillSynthetic(s, m, -1))
			other := open(t, path, bonsai.WithKVCache(kv), bonsai.WithThreads(1), bonsai.WithContextSize(600))
			require.Error(t, fillSynthetic(s, other, 3))
		})
	}
}

// FuzzSnapshotLoad feeds damaged snapshots, seeded with a q4 and an int8 session's, to
// Load: it returns a clear error or loads, never panics; a session that failed to load
// is empty.
func FuzzSnapshotLoad(f *testing.F) {
	path := writeModel(f, "tiny", 11, ternary.PQ2_0)
	m := open(f, path, bonsai.WithKVCache(bonsai.KVQ4), bonsai.WithThreads(1), bonsai.WithContextSize(64))
	for _, kv := range []bonsai.KVPrecision{bonsai.KVQ4, bonsai.KVInt8} {
		src := open(f, path, bonsai.WithKVCache(kv), bonsai.WithThreads(1), bonsai.WithContextSize(64))
		s := session(f, src)
		require.NoError(f, fillSynthetic(s, src, 3))
		var buf bytes.Buffer
		require.NoError(f, s.Save(&buf))
		f.Add(buf.Bytes())
	}
	s := session(f, m)
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := s.Load(bytes.NewReader(data)); err != nil {
			assert.Contains(t, err.Error(), "bonsai: ")
			assert.Zero(t, s.Len())
		}
	})
}
