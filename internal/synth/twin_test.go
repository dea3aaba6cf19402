package synth

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/floatconv"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func buildTwin(t *testing.T, preset string, seed uint64, format ternary.Format) []byte {
	t.Helper()
	cfg, err := Preset(preset)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, WriteTwin(context.Background(), &buf, Options{Config: cfg, Seed: seed, Format: format}, nil))
	return buf.Bytes()
}

// f32Row returns row i of an F32 tensor of the file, widened.
func f32Row(t *testing.T, f *gguf.File, name string, i int) []float64 {
	t.Helper()
	ti, ok := f.Tensor(name)
	require.True(t, ok, name)
	require.Equal(t, gguf.TypeF32, ti.Type, name)
	data, err := f.TensorData(name)
	require.NoError(t, err)
	k := int(ti.Shape[0])
	row := make([]float64, k)
	for j := range row {
		row[j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*(i*k+j):])))
	}
	return row
}

// denseUnfold unfolds row i of a ternary tensor of the packed file without the
// hadamard package's transform: an explicit Sylvester matrix, H[r][c] = (−1)^popcount(r&c),
// applied per block, scaled by 1/√n, then the signs — row = signs ⊙ H·row′/√n.
func denseUnfold(t *testing.T, f *gguf.File, c *hadamard.Contract, name string, i int) []float64 {
	t.Helper()
	ti, ok := f.Tensor(name)
	require.True(t, ok, name)
	format, ok := ternary.FormatOf(ti.Type)
	require.True(t, ok, name)
	data, err := f.TensorData(name)
	require.NoError(t, err)
	k := int(ti.Shape[0])
	rb := format.RowBytes(k)
	dec := make([]float32, k)
	require.NoError(t, format.Decode(dec, data[i*rb:(i+1)*rb]))
	var signs []int8
	for w, width := range c.Widths {
		if width == k {
			signs = c.Signs[w]
		}
	}
	require.Len(t, signs, k, "no signs of width %d", k)
	n := c.BlockSize
	out := make([]float64, k)
	for b := 0; b < k; b += n {
		for r := range n {
			var s float64
			for col := range n {
				h := 1.0
				if bits.OnesCount(uint(r&col))%2 == 1 {
					h = -1
				}
				s += h * float64(dec[b+col])
			}
			out[b+r] = float64(signs[b+r]) * s / math.Sqrt(float64(n))
		}
	}
	return out
}

func TestTwinUnfoldsExactly(t *testing.T) {
	for _, format := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		t.Run(format.String(), func(t *testing.T) {
			packed, err := gguf.Parse(build(t, "tiny", 3, format))
			require.NoError(t, err)
			twin, err := gguf.Parse(buildTwin(t, "tiny", 3, format))
			require.NoError(t, err)
			contract, err := hadamard.ParseContract(packed)
			require.NoError(t, err)
			cfg, _ := Preset("tiny")
			for _, s := range cfg.Tensors() {
				if s.Kind != qwen35.KindTernary || s.Name == qwen35.LayerTensor(s.Layer, qwen35.SuffixSSMOut) {
					continue
				}
				rows := int(s.Shape[1])
				for _, i := range []int{0, 1, rows / 2, rows - 1} {
					want := denseUnfold(t, packed, contract, s.Name, i)
					got := f32Row(t, twin, s.Name, i)
					for j := range want {
						// The unfolded weights of the synthetic models are exact in float32
						// (see Options.HadamardBlock), so the twin must hold them exactly.
						require.Equal(t, want[j], float64(float32(want[j])), "%s row %d col %d: not exact in float32", s.Name, i, j)
						require.Equal(t, want[j], got[j], "%s row %d col %d", s.Name, i, j)
					}
				}
			}
		})
	}
}

func TestTwinSSMOutColumnsTiled(t *testing.T) {
	packed, err := gguf.Parse(build(t, "tiny", 4, ternary.PQ2_0))
	require.NoError(t, err)
	twin, err := gguf.Parse(buildTwin(t, "tiny", 4, ternary.PQ2_0))
	require.NoError(t, err)
	contract, err := hadamard.ParseContract(packed)
	require.NoError(t, err)
	cfg, _ := Preset("tiny")
	d := cfg.StateSize
	name := qwen35.LayerTensor(0, qwen35.SuffixSSMOut)
	for _, i := range []int{0, 7, cfg.Embedding - 1} {
		grouped := denseUnfold(t, packed, contract, name, i)
		got := f32Row(t, twin, name, i)
		for tiled := range cfg.VHeads {
			g := cfg.GroupedHead(tiled)
			for j := range d {
				require.Equal(t, grouped[g*d+j], got[tiled*d+j], "row %d: tiled head %d dim %d should be grouped head %d", i, tiled, j, g)
			}
		}
		// The permutation is not the identity at these sizes (12 V heads over 4 K heads).
		assert.NotEqual(t, grouped, got)
	}
}

func TestTwinDenseTensors(t *testing.T) {
	packed, err := gguf.Parse(build(t, "tiny", 5, ternary.PQ2_0))
	require.NoError(t, err)
	twin, err := gguf.Parse(buildTwin(t, "tiny", 5, ternary.PQ2_0))
	require.NoError(t, err)
	cfg, _ := Preset("tiny")
	for _, s := range cfg.Tensors() {
		src, err := packed.TensorData(s.Name)
		require.NoError(t, err)
		dst, err := twin.TensorData(s.Name)
		require.NoError(t, err)
		switch s.Kind {
		case qwen35.KindF32:
			assert.Equal(t, src, dst, s.Name)
		case qwen35.KindBF16:
			// Widened exactly: the top half of each float32 is the bfloat16.
			require.Len(t, dst, 2*len(src), s.Name)
			for i := 0; i < len(src)/2; i++ {
				b := binary.LittleEndian.Uint16(src[2*i:])
				got := math.Float32frombits(binary.LittleEndian.Uint32(dst[4*i:]))
				require.Equal(t, floatconv.BF16ToFloat32(b), got, "%s[%d]", s.Name, i)
			}
		}
	}
}

func TestTwinMetadata(t *testing.T) {
	packed, err := gguf.Parse(build(t, "tiny", 1, ternary.PQ2_0))
	require.NoError(t, err)
	twin, err := gguf.Parse(buildTwin(t, "tiny", 1, ternary.PQ2_0))
	require.NoError(t, err)
	ft, err := twin.Int("general.file_type")
	require.NoError(t, err)
	assert.EqualValues(t, FileTypeF32, ft)
	assert.False(t, twin.Has(hadamard.KeyVersion))
	var kept int
	for _, kv := range packed.KV {
		if strings.HasPrefix(kv.Key, "prism.hadamard.") {
			assert.False(t, twin.Has(kv.Key), kv.Key)
			continue
		}
		if kv.Key == "general.file_type" {
			continue
		}
		v, ok := twin.Lookup(kv.Key)
		require.True(t, ok, kv.Key)
		assert.Equal(t, kv.Value.Interface(), v.Interface(), kv.Key)
		kept++
	}
	assert.Equal(t, kept+1, len(twin.KV), "the twin has only the packed keys and file_type")
	require.Len(t, twin.Tensors, len(packed.Tensors))
	for i, ti := range twin.Tensors {
		assert.Equal(t, packed.Tensors[i].Name, ti.Name)
		assert.Equal(t, packed.Tensors[i].Shape, ti.Shape)
		assert.Equal(t, gguf.TypeF32, ti.Type, ti.Name)
	}
	cfg, err := qwen35.ReadConfig(twin, 512)
	require.NoError(t, err)
	assert.Equal(t, 4, cfg.Layers)
}

func TestTwinFormatIndependent(t *testing.T) {
	// PQ2_0 and PTQ1_0 hold the same values, so the twins' tensors are identical.
	a, err := gguf.Parse(buildTwin(t, "tiny", 6, ternary.PQ2_0))
	require.NoError(t, err)
	b, err := gguf.Parse(buildTwin(t, "tiny", 6, ternary.PTQ1_0))
	require.NoError(t, err)
	for _, ti := range a.Tensors {
		da, _ := a.TensorData(ti.Name)
		db, _ := b.TensorData(ti.Name)
		require.True(t, bytes.Equal(da, db), ti.Name)
	}
}

func TestTwinFileCancel(t *testing.T) {
	cfg, _ := Preset("tiny")
	path := filepath.Join(t.TempDir(), "twin.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := WriteTwinFile(ctx, path, Options{Config: cfg}, func(done, total int64) {
		if calls++; calls == 3 {
			cancel()
		}
	})
	require.ErrorIs(t, err, context.Canceled)
	_, statErr := os.Stat(path)
	assert.ErrorIs(t, statErr, os.ErrNotExist, "the partial file is removed")

	require.NoError(t, WriteTwinFile(context.Background(), path, Options{Config: cfg}, nil))
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	assert.Len(t, f.Tensors, len(cfg.Tensors()))
}
