package bonsai_test

import (
	"context"
	"os"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyRefusesDamage(t *testing.T) {
	path := writeModel(t, "tiny", 7, ternary.PQ2_0)
	m := open(t, path, bonsai.WithVerify(true))
	require.NoError(t, m.Close())

	// Overwrite the first scale of output.weight with an fp16 NaN.
	mm := open(t, path)
	f := mm.Driver().File()
	ti, ok := f.Tensor("output.weight")
	require.True(t, ok)
	off := f.DataOffset + int64(ti.Offset)
	require.NoError(t, mm.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[off], data[off+1] = 0x00, 0x7e
	require.NoError(t, os.WriteFile(path, data, 0o644))

	_, err = bonsai.Open(path, bonsai.WithVerify(true))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `tensor "output.weight"`)
	m2, err := bonsai.Open(path) // without verification the file still opens
	require.NoError(t, err)
	m2.Close()
}

func BenchmarkDecodeStep(b *testing.B) {
	for _, preset := range []string{"tiny", "real-widths"} {
		b.Run(preset, func(b *testing.B) {
			path := writeModel(b, preset, 1, ternary.PQ2_0)
			m, err := bonsai.Open(path)
			require.NoError(b, err)
			defer m.Close()
			s, err := m.NewSession()
			require.NoError(b, err)
			ctx := context.Background()
			require.NoError(b, s.Prefill(ctx, tokens(4, m.Vocab(), 1)))
			tok := int32(1)
			b.SetBytes(m.Driver().Weights().(*qwen35.Weights).TernaryBytes())
			for b.Loop() {
				if err := s.Step(ctx, tok); err != nil {
					b.Fatal(err)
				}
				if s.Len() >= m.ContextSize()-1 {
					s.Reset()
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
