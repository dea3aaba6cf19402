package synth

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func build(t *testing.T, preset string, seed uint64, format ternary.Format) []byte {
	t.Helper()
	cfg, err := Preset(preset)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, Write(context.Background(), &buf, Options{Config: cfg, Seed: seed, Format: format}, nil))
	return buf.Bytes()
}

func TestWriteReadsBack(t *testing.T) {
	for _, format := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		t.Run(format.String(), func(t *testing.T) {
			data := build(t, "tiny", 5, format)
			f, err := gguf.Parse(data)
			require.NoError(t, err)
			want, _ := Preset("tiny")
			cfg, err := qwen35.ReadConfig(f, 0+want.Vocab)
			require.NoError(t, err)
			// The file stores eps and the RoPE base as float32.
			want.RMSEpsilon = float64(float32(want.RMSEpsilon))
			want.RopeBase = float64(float32(want.RopeBase))
			assert.Equal(t, want, *cfg)

			contract, err := hadamard.ParseContract(f)
			require.NoError(t, err)
			assert.Equal(t, 64, contract.BlockSize)
			assert.Equal(t, []int{256, 384, 512}, contract.Widths)
			assert.True(t, contract.GDNVGrouped)

			specs := cfg.Tensors()
			require.Len(t, f.Tensors, len(specs))
			for i, s := range specs {
				ti := f.Tensors[i]
				assert.Equal(t, s.Name, ti.Name)
				assert.Equal(t, s.Shape, ti.Shape, s.Name)
				switch s.Kind {
				case qwen35.KindTernary:
					assert.Equal(t, format.TensorType(), ti.Type, s.Name)
					data, err := f.TensorData(s.Name)
					require.NoError(t, err)
					st, err := ternary.Scan(format, data)
					require.NoError(t, err)
					require.NoError(t, st.Check(), s.Name)
					assert.Zero(t, st.Codes[3])
					assert.InDelta(t, 1.0/3, st.ZeroFraction, 0.05, s.Name)
					d := ScaleFor(s)
					assert.GreaterOrEqual(t, float64(st.MinScale), 0.49*d, s.Name)
					assert.Less(t, float64(st.MaxScale), 1.51*d, s.Name)
					assert.Equal(t, s.Role == qwen35.RoleFolded, contract.IsFolded(s.Name), s.Name)
					assert.Equal(t, s.Role == qwen35.RoleInverse, contract.IsInverse(s.Name), s.Name)
				case qwen35.KindBF16:
					assert.Equal(t, gguf.TypeBF16, ti.Type, s.Name)
				default:
					assert.Equal(t, gguf.TypeF32, ti.Type, s.Name)
				}
			}
		})
	}
}

func TestValueConventions(t *testing.T) {
	cfg, _ := Preset("tiny")
	opt := Options{Config: cfg, Seed: 9}
	for _, s := range cfg.Tensors() {
		if s.Kind == qwen35.KindTernary {
			continue
		}
		v := FloatValues(opt, s)
		for i, x := range v {
			require.False(t, math.IsNaN(float64(x)) || math.IsInf(float64(x), 0), "%s[%d]", s.Name, i)
		}
		lo, hi := v[0], v[0]
		for _, x := range v {
			lo, hi = min(lo, x), max(hi, x)
		}
		switch {
		case s.Name == qwen35.LayerTensor(s.Layer, qwen35.SuffixSSMA):
			// −exp(A_log), A in [1, 16).
			assert.LessOrEqual(t, hi, float32(-1), s.Name)
			assert.Greater(t, lo, float32(-16), s.Name)
		case s.Name == qwen35.LayerTensor(s.Layer, qwen35.SuffixSSMDT):
			// softplus(dt_bias) = dt in [1e-3, 1e-1].
			for _, x := range v {
				dt := math.Log1p(math.Exp(float64(x)))
				assert.InDelta(t, 0.05, dt, 0.0501, s.Name)
			}
		case s.Name == qwen35.LayerTensor(s.Layer, qwen35.SuffixSSMNorm), len(s.Shape) == 1 && s.Kind == qwen35.KindF32:
			// Norm gains stored as w + 1 (ssm_norm raw): near one either way.
			assert.Greater(t, lo, float32(0.79), s.Name)
			assert.Less(t, hi, float32(1.21), s.Name)
		}
	}
}

func TestDeterministic(t *testing.T) {
	a := build(t, "tiny", 11, ternary.PQ2_0)
	b := build(t, "tiny", 11, ternary.PQ2_0)
	c := build(t, "tiny", 12, ternary.PQ2_0)
	assert.True(t, bytes.Equal(a, b), "same seed, different bytes")
	assert.False(t, bytes.Equal(a, c), "different seeds, same bytes")
}

func TestCancel(t *testing.T) {
	cfg, _ := Preset("tiny")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var buf bytes.Buffer
	err := Write(ctx, &buf, Options{Config: cfg}, nil)
	require.ErrorIs(t, err, context.Canceled)
}

func TestPresetsValid(t *testing.T) {
	for _, name := range Presets() {
		cfg, err := Preset(name)
		require.NoError(t, err, name)
		require.NoError(t, cfg.Validate(), name)
		opt := Options{Config: cfg}
		require.NoError(t, opt.normalize())
		// √n must be a power of two for the exact float reference.
		sq := math.Sqrt(float64(opt.HadamardBlock))
		assert.Equal(t, sq, math.Round(sq), name)
	}
	_, err := Preset("nope")
	require.ErrorContains(t, err, `unknown preset "nope"`)
}
