package synthetic_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/synthetic"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tiny preset is the documented shape: the real model's architecture and tensor
// names at widths of 256 (embedding) and 512 (feed-forward, vocabulary), four layers,
// with the linear layers in the chosen ternary format.
func TestTinyLayout(t *testing.T) {
	for _, format := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		t.Run(format.String(), func(t *testing.T) {
			f, err := gguf.Open(synthetic.Path(t, synthetic.WithFormat(format)))
			require.NoError(t, err)
			defer f.Close()
			assert.Equal(t, "qwen35", f.Architecture())
			for key, want := range map[string]int64{
				"qwen35.block_count": 4, "qwen35.embedding_length": 256, "qwen35.feed_forward_length": 512,
			} {
				got, err := f.Int(key)
				require.NoError(t, err, key)
				assert.Equal(t, want, got, key)
			}
			tokens, err := f.Strings("tokenizer.ggml.tokens")
			require.NoError(t, err)
			assert.Len(t, tokens, 512)
			down, ok := f.Tensor("blk.0.ffn_down.weight")
			require.True(t, ok)
			assert.Equal(t, format.TensorType(), down.Type)
			assert.Equal(t, []int64{512, 256}, down.Shape)
		})
	}
}

// Write, WriteFile and Path give the same bytes for the same options, a seed changes
// them, and progress ends at the total.
func TestDeterministic(t *testing.T) {
	ctx := context.Background()
	var a, b bytes.Buffer
	require.NoError(t, synthetic.Write(ctx, &a, synthetic.WithSeed(7)))
	var done, total int64
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, synthetic.WriteFile(ctx, path, synthetic.WithSeed(7),
		synthetic.WithProgress(func(d, n int64) { done, total = d, n })))
	assert.Positive(t, total)
	assert.Equal(t, total, done)
	file, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(a.Bytes(), file), "Write and WriteFile differ")
	cached, err := os.ReadFile(synthetic.Path(t, synthetic.WithSeed(7)))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(a.Bytes(), cached), "Path differs from Write")
	require.NoError(t, synthetic.Write(ctx, &b, synthetic.WithSeed(8)))
	assert.Equal(t, a.Len(), b.Len())
	assert.False(t, bytes.Equal(a.Bytes(), b.Bytes()), "seeds 7 and 8 gave the same model")
}

// Each call of Path gives a test its own file, so that one test cannot change another's.
func TestPathFresh(t *testing.T) {
	p1, p2 := synthetic.Path(t), synthetic.Path(t)
	assert.NotEqual(t, p1, p2)
	assert.Equal(t, "tiny.gguf", filepath.Base(p1))
	require.NoError(t, os.WriteFile(p1, []byte("scribbled"), 0o644))
	again, err := os.ReadFile(synthetic.Path(t))
	require.NoError(t, err)
	theirs, err := os.ReadFile(p2)
	require.NoError(t, err)
	assert.Equal(t, theirs, again)
}

// Bad options are refused with the package's sentinel errors, and a cancelled write
// leaves no file.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, []string{"tiny", "small", "real-widths", "27b"}, synthetic.Presets())
	err := synthetic.Write(ctx, &bytes.Buffer{}, synthetic.WithPreset("huge"))
	assert.ErrorIs(t, err, synthetic.ErrUnknownPreset)
	err = synthetic.Write(ctx, &bytes.Buffer{}, synthetic.WithFormat(ternary.Format(99)))
	assert.ErrorIs(t, err, synthetic.ErrUnsupportedFormat)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	path := filepath.Join(t.TempDir(), "m.gguf")
	assert.ErrorIs(t, synthetic.WriteFile(cancelled, path), context.Canceled)
	assert.NoFileExists(t, path)
}

// fatalTB records a Fatal and stops the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg []any
}

func (f *fatalTB) Helper()           {}
func (f *fatalTB) Fatal(args ...any) { f.msg = args; runtime.Goexit() }

// Path fails its test on an unknown preset rather than returning a path.
func TestPathFails(t *testing.T) {
	tb := &fatalTB{TB: t}
	done := make(chan string)
	go func() {
		defer close(done)
		done <- synthetic.Path(tb, synthetic.WithPreset("huge"))
	}()
	_, returned := <-done
	assert.False(t, returned, "Path returned")
	require.Len(t, tb.msg, 1)
	err, _ := tb.msg[0].(error)
	assert.True(t, errors.Is(err, synthetic.ErrUnknownPreset), "Fatal(%v)", tb.msg[0])
}

// Tests running in parallel share one generation of a model and each get a whole copy
// (run with -race).
func TestPathParallel(t *testing.T) {
	var want bytes.Buffer
	require.NoError(t, synthetic.Write(context.Background(), &want, synthetic.WithSeed(3), synthetic.WithFormat(ternary.PTQ1_0)))
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			got, err := os.ReadFile(synthetic.Path(t, synthetic.WithSeed(3), synthetic.WithFormat(ternary.PTQ1_0)))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want.Bytes(), got), "copy %d differs from Write", i)
		})
	}
}
