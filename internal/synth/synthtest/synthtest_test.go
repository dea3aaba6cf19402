package synthtest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var formats = []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0}

// direct is what synth writes for the model, without synthtest.
func direct(t *testing.T, write func(context.Context, *bytes.Buffer, synth.Options) error, preset string, seed uint64, format ternary.Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, write(context.Background(), &buf, synth.Options{Config: Config(t, preset), Seed: seed, Format: format}))
	return buf.Bytes()
}

func writeModel(ctx context.Context, b *bytes.Buffer, opt synth.Options) error {
	return synth.Write(ctx, b, opt, nil)
}

func writeTwin(ctx context.Context, b *bytes.Buffer, opt synth.Options) error {
	return synth.WriteTwin(ctx, b, opt, nil)
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// Path writes synth's bytes for the model, the same for every call (the second from the
// cache), each call into a file of its own named for the preset.
func TestPathIsSynths(t *testing.T) {
	for _, format := range formats {
		want := direct(t, writeModel, "tiny", 3, format)
		a, b := Path(t, "tiny", 3, format), Path(t, "tiny", 3, format)
		assert.Equal(t, "tiny.gguf", filepath.Base(a))
		assert.NotEqual(t, a, b, "each call writes its own file")
		assert.True(t, bytes.Equal(want, read(t, a)), "%v: first call", format)
		require.NoError(t, os.WriteFile(a, []byte("overwritten"), 0o644))
		assert.True(t, bytes.Equal(want, read(t, b)), "%v: second call, after the first file was overwritten", format)
		assert.True(t, bytes.Equal(want, read(t, Path(t, "tiny", 3, format))), "%v: third call", format)
	}
	assert.False(t, bytes.Equal(read(t, Path(t, "tiny", 3, ternary.PQ2_0)), read(t, Path(t, "tiny", 4, ternary.PQ2_0))),
		"another seed, other bytes")
}

// Parallel tests asking for one model get its one generation, each in a file of its own.
func TestPathParallel(t *testing.T) {
	want := direct(t, writeModel, "tiny", 31, ternary.PQ2_0)
	for i := range 4 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			assert.True(t, bytes.Equal(want, read(t, Path(t, "tiny", 31, ternary.PQ2_0))))
		})
	}
}

// A model over the cache's limit is written straight to its file, with the same bytes.
func TestPathUncached(t *testing.T) {
	defer func(n int64) { cacheBytes = n }(cacheBytes)
	cacheBytes = 0
	for _, twin := range []bool{false, true} {
		m := model{options(t, "tiny", 21, ternary.PTQ1_0), twin}
		want, path := direct(t, writeModel, "tiny", 21, ternary.PTQ1_0), Path(t, "tiny", 21, ternary.PTQ1_0)
		if twin {
			want, path = direct(t, writeTwin, "tiny", 21, ternary.PTQ1_0), TwinPath(t, "tiny", 21, ternary.PTQ1_0)
		}
		assert.True(t, bytes.Equal(want, read(t, path)), "twin %v", twin)
		_, cached := generated.Load(m)
		assert.False(t, cached, "twin %v", twin)
	}
}

// The file of each format parses, maps and binds to the preset's configuration, with the
// preset's tensors in that format's types.
func TestWeightsBindPreset(t *testing.T) {
	for _, preset := range []string{"tiny", "small"} {
		for _, format := range formats {
			t.Run(preset+"/"+format.String(), func(t *testing.T) {
				f := File(t, preset, 1, format)
				assert.True(t, f.Mapped())
				cfg := Config(t, preset)
				specs := cfg.Tensors()
				require.Len(t, f.Tensors, len(specs))
				for i, s := range specs {
					ti := f.Tensors[i]
					assert.Equal(t, s.Name, ti.Name)
					assert.Equal(t, s.Shape, ti.Shape, s.Name)
					switch s.Kind {
					case qwen35.KindTernary:
						assert.Equal(t, format.TensorType(), ti.Type, s.Name)
					case qwen35.KindBF16:
						assert.Equal(t, gguf.TypeBF16, ti.Type, s.Name)
					default:
						assert.Equal(t, gguf.TypeF32, ti.Type, s.Name)
					}
				}

				w := Weights(t, preset, 1, format)
				// The file stores eps and the RoPE base as float32.
				cfg.RMSEpsilon = float64(float32(cfg.RMSEpsilon))
				cfg.RopeBase = float64(float32(cfg.RopeBase))
				assert.Equal(t, cfg, w.Config)
				assert.True(t, w.Mapped())
				require.Len(t, w.Layers, cfg.Layers)
				assert.Equal(t, format, w.Output.Format)
				assert.Equal(t, cfg.Vocab, w.TokenEmbedding.N)
				assert.Equal(t, cfg.Embedding, w.TokenEmbedding.K)
				for i, l := range w.Layers {
					assert.Equal(t, (i+1)%cfg.FullAttentionInterval == 0, l.Attention, "layer %d", i)
					assert.Equal(t, format, l.FFNDown.Format, "layer %d", i)
					assert.Equal(t, cfg.FeedForward, l.FFNDown.K, "layer %d", i)
				}
			})
		}
	}
}

// A configuration of no preset: the file is synth's for it, and binds to it.
func TestFileOf(t *testing.T) {
	cfg := Config(t, "tiny")
	cfg.Layers, cfg.FullAttentionInterval = 1, 1
	opt := synth.Options{Config: cfg, Seed: 9, Format: ternary.PTQ1_0}
	var want bytes.Buffer
	require.NoError(t, synth.Write(context.Background(), &want, opt, nil))
	path := PathOf(t, opt)
	assert.Equal(t, "model.gguf", filepath.Base(path))
	assert.True(t, bytes.Equal(want.Bytes(), read(t, path)))
	w, err := qwen35.Bind(FileOf(t, opt))
	require.NoError(t, err)
	require.Len(t, w.Layers, 1)
	assert.True(t, w.Layers[0].Attention)
	assert.Equal(t, ternary.PTQ1_0, w.Output.Format)
}

// The twin holds the model's tensors, every one F32, and no rotation contract.
func TestTwin(t *testing.T) {
	f := Twin(t, "tiny", 2, ternary.PQ2_0)
	assert.Equal(t, "tiny-f32.gguf", filepath.Base(TwinPath(t, "tiny", 2, ternary.PQ2_0)))
	cfg := Config(t, "tiny")
	specs := cfg.Tensors()
	require.Len(t, f.Tensors, len(specs))
	for i, s := range specs {
		assert.Equal(t, s.Name, f.Tensors[i].Name)
		assert.Equal(t, s.Shape, f.Tensors[i].Shape, s.Name)
		assert.Equal(t, gguf.TypeF32, f.Tensors[i].Type, s.Name)
	}
	for _, kv := range f.KV {
		assert.False(t, strings.HasPrefix(kv.Key, "prism.hadamard."), kv.Key)
	}
	assert.True(t, bytes.Equal(direct(t, writeTwin, "tiny", 2, ternary.PQ2_0), read(t, TwinPath(t, "tiny", 2, ternary.PQ2_0))))
}

// The files live in the test's temporary directory and go with it.
func TestCleanup(t *testing.T) {
	var path string
	t.Run("inner", func(t *testing.T) {
		path = Path(t, "tiny", 1, ternary.PQ2_0)
		File(t, "tiny", 1, ternary.PQ2_0)
		Weights(t, "tiny", 1, ternary.PTQ1_0)
		Twin(t, "tiny", 1, ternary.PQ2_0)
	})
	_, err := os.Stat(path)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// MainPath writes synth's bytes, as Path does, and its cleanup removes them; a preset
// synth does not know is an error, not a file.
func TestMainPath(t *testing.T) {
	for _, format := range formats {
		path, cleanup, err := MainPath("tiny", 3, format)
		require.NoError(t, err)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, direct(t, writeModel, "tiny", 3, format), got, "%v", format)
		cleanup()
		_, err = os.Stat(filepath.Dir(path))
		assert.True(t, os.IsNotExist(err), "the directory is left after cleanup: %v", err)
	}
	_, _, err := MainPath("no-such-preset", 1, ternary.PQ2_0)
	assert.Error(t, err)
}
