package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A PQ2_0 file goes to PTQ1_0 and back to the very same bytes, and the PTQ1_0 file holds
// what the synthetic builder writes when asked for PTQ1_0 directly.
func TestTranscodeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	pq := synthtest.Path(t, "tiny", 3, ternary.PQ2_0)

	ptq := filepath.Join(dir, "ptq.gguf")
	var calls int
	var last, total int64
	n, err := transcodeFile(ctx, pq, ptq, ternary.PTQ1_0, func(d, t int64) { calls++; last, total = d, t })
	require.NoError(t, err)
	assert.Equal(t, 27, n)
	assert.Equal(t, total, last, "progress ends at the total")
	assert.Greater(t, calls, 1)

	back := filepath.Join(dir, "back.gguf")
	n, err = transcodeFile(ctx, ptq, back, ternary.PQ2_0, nil)
	require.NoError(t, err)
	assert.Equal(t, 27, n)
	a, err := os.ReadFile(pq)
	require.NoError(t, err)
	b, err := os.ReadFile(back)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(a, b), "PQ2_0 → PTQ1_0 → PQ2_0 is not byte-identical")

	fa, err := gguf.Open(ptq)
	require.NoError(t, err)
	defer fa.Close()
	fb := synthtest.File(t, "tiny", 3, ternary.PTQ1_0)
	require.Equal(t, len(fb.Tensors), len(fa.Tensors))
	for _, ti := range fb.Tensors {
		got, ok := fa.Tensor(ti.Name)
		require.True(t, ok, ti.Name)
		assert.Equal(t, ti.Type, got.Type, ti.Name)
		da, err := fa.TensorData(ti.Name)
		require.NoError(t, err)
		db, err := fb.TensorData(ti.Name)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(da, db), "tensor %s differs", ti.Name)
	}
}

func TestTranscodeErrors(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	_, err := transcodeFile(ctx, filepath.Join(dir, "missing.gguf"), filepath.Join(dir, "out.gguf"), ternary.PQ2_0, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.gguf")

	in := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	_, err = transcodeFile(ctx, in, in, ternary.PTQ1_0, nil)
	require.ErrorContains(t, err, "same file")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	out := filepath.Join(dir, "cancelled.gguf")
	_, err = transcodeFile(cancelled, in, out, ternary.PTQ1_0, nil)
	require.ErrorIs(t, err, context.Canceled)
	_, statErr := os.Stat(out)
	assert.True(t, os.IsNotExist(statErr), "a failed transcode leaves no partial file")
}

// The metadata are copied as they are: the PTQ1_0 file made from a PQ2_0 one keeps the
// PQ2_0 general.file_type and the input's general.name, and its header up to the tensor
// infos (magic, version, counts, every key and value) is the input's, byte for byte.
func TestTranscodeKeepsMetadata(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	pq := synthtest.Path(t, "tiny", 5, ternary.PQ2_0)
	ptq := filepath.Join(dir, "ptq.gguf")
	_, err := transcodeFile(ctx, pq, ptq, ternary.PTQ1_0, nil)
	require.NoError(t, err)

	in, err := gguf.Open(pq)
	require.NoError(t, err)
	defer in.Close()
	out, err := gguf.Open(ptq)
	require.NoError(t, err)
	defer out.Close()

	ft, err := out.Uint32("general.file_type")
	require.NoError(t, err)
	assert.Equal(t, uint32(synth.FileTypePQ2_0), ft, "general.file_type still says PQ2_0")
	inName, err := in.String("general.name")
	require.NoError(t, err)
	outName, err := out.String("general.name")
	require.NoError(t, err)
	assert.Equal(t, inName, outName)
	assert.Contains(t, outName, "PQ2_0", "the name still says PQ2_0")
	for _, ti := range out.Tensors {
		assert.NotEqual(t, gguf.TypePQ2_0, ti.Type, "tensor %s converted", ti.Name)
	}

	// The key-value section ends where the first tensor info begins: its name's length,
	// the name, the number of dimensions and the dimensions (the name alone also occurs
	// in the metadata, in the Hadamard contract's lists). Everything before is the same
	// in both files.
	a, err := os.ReadFile(pq)
	require.NoError(t, err)
	b, err := os.ReadFile(ptq)
	require.NoError(t, err)
	first := in.Tensors[0]
	info := binary.LittleEndian.AppendUint64(nil, uint64(len(first.Name)))
	info = append(info, first.Name...)
	info = binary.LittleEndian.AppendUint32(info, uint32(len(first.Shape)))
	for _, d := range first.Shape {
		info = binary.LittleEndian.AppendUint64(info, uint64(d))
	}
	require.Equal(t, 1, bytes.Count(a[:in.DataOffset], info), "the first tensor info occurs once in the header")
	end := bytes.Index(a, info)
	require.Greater(t, end, 24)
	assert.True(t, bytes.Equal(a[:end], b[:end]), "header and metadata copied byte for byte")
	assert.Equal(t, in.Version, out.Version)
	assert.Equal(t, in.Alignment, out.Alignment)
	assert.Equal(t, len(in.KV), len(out.KV))
}

// The flags are checked before any file is opened (-in does not exist): a bad -to is
// one line naming it.
func TestFlags(t *testing.T) {
	parse := func(args ...string) (config, string, error) {
		fs := flag.NewFlagSet("transcode", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		cfg, err := parseFlags(fs, args)
		return cfg, out.String(), err
	}
	missing := filepath.Join(t.TempDir(), "missing.gguf")
	_, out, err := parse("-in", missing, "-out", "b.gguf", "-to", "q4_0")
	require.Error(t, err)
	assert.Equal(t, "transcode: -to \"q4_0\": must be pq2_0 or ptq1_0\n", out)
	_, out, err = parse("-in", missing, "-out", "b.gguf")
	require.Error(t, err)
	assert.Contains(t, out, "-in, -out and -to are required")
	assert.Contains(t, out, "usage: transcode")
	cfg, out, err := parse("-in", missing, "-out", "b.gguf", "-to", "PTQ1_0", "-q")
	require.NoError(t, err, out)
	assert.Equal(t, config{in: missing, out: "b.gguf", to: ternary.PTQ1_0, quiet: true}, cfg)
}
