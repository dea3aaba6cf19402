package gguf

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriterLayout(t *testing.T) {
	tensors := []TensorInfo{
		{Name: "a", Type: TypeF32, Shape: []int64{3}, Offset: 999}, // offsets are recomputed
		{Name: "b", Type: TypePQ2_0, Shape: []int64{128, 2}},
		{Name: "c", Type: TypeI8, Shape: []int64{64}},
		{Name: "d", Type: TypeF16, Shape: []int64{0}},
		{Name: "e", Type: TypeI8, Shape: []int64{1}},
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, []KV{{"general.alignment", MustValue(uint32(64))}}, tensors)
	require.NoError(t, err)
	assert.Zero(t, buf.Len()%64, "header written and padded at once")
	hdr := buf.Len()

	got := w.Tensors()
	offs := []uint64{0, 64, 192, 256, 256} // b is 68 bytes: two 64-byte strides
	for i := range got {
		assert.Equal(t, offs[i], got[i].Offset, got[i].Name)
	}
	assert.Equal(t, uint64(999), tensors[0].Offset, "caller's slice untouched")
	got[1].Shape[0] = 7
	assert.Equal(t, int64(128), w.Tensors()[1].Shape[0], "Tensors returns copies")

	require.NoError(t, w.WriteTensor("a", f32bytes(1, 2, 3)))
	assert.Equal(t, hdr+64, buf.Len(), "padded after the tensor")
	// Streamed in pieces.
	tw, err := w.BeginTensor("b")
	require.NoError(t, err)
	data := seq(68)
	for _, part := range [][]byte{data[:1], data[1:40], {}, data[40:]} {
		n, err := tw.Write(part)
		require.NoError(t, err)
		assert.Equal(t, len(part), n)
	}
	require.NoError(t, w.WriteTensor("c", seq(64)))
	assert.Equal(t, hdr+256, buf.Len())
	require.NoError(t, w.WriteTensor("d", nil))
	tw, err = w.BeginTensor("e")
	require.NoError(t, err)
	_, err = tw.Write([]byte{42})
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, hdr+320, buf.Len(), "last tensor padded too")
	require.NoError(t, w.Close(), "second Close")

	f, err := Parse(buf.Bytes())
	require.NoError(t, err)
	assert.Equal(t, w.Tensors(), f.Tensors)
	d, err := f.TensorData("b")
	require.NoError(t, err)
	assert.Equal(t, data, d)
	d, err = f.TensorData("e")
	require.NoError(t, err)
	assert.Equal(t, []byte{42}, d)
}

func TestWriterValidation(t *testing.T) {
	for _, c := range []struct {
		name    string
		kv      []KV
		tensors []TensorInfo
		base    error
		msg     string
	}{
		{"duplicate key", []KV{{"a", MustValue(uint8(1))}, {"b", MustValue(true)}, {"a", MustValue("x")}}, nil,
			ErrFormat, `gguf: key 2 "a": duplicate key (first is key 0)`},
		{"alignment type", []KV{{"general.alignment", MustValue(uint64(32))}}, nil,
			ErrFormat, `gguf: key "general.alignment": want uint32, have uint64`},
		{"alignment zero", []KV{{"general.alignment", MustValue(uint32(0))}}, nil,
			ErrFormat, `gguf: key "general.alignment": alignment 0 is not a power of two below 2^31`},
		{"alignment 24", []KV{{"general.alignment", MustValue(uint32(24))}}, nil,
			ErrFormat, `gguf: key "general.alignment": alignment 24 is not a power of two below 2^31`},
		{"duplicate tensor", nil, []TensorInfo{{Name: "w", Type: TypeF32, Shape: []int64{1}}, {Name: "w", Type: TypeF32, Shape: []int64{1}}},
			ErrFormat, `gguf: tensor 1 "w": duplicate tensor name (first is tensor 0)`},
		{"unknown type", nil, []TensorInfo{{Name: "w", Type: 77, Shape: []int64{1}}},
			ErrUnknownType, `gguf: tensor 0 "w": unknown tensor type type(77)`},
		{"block", nil, []TensorInfo{{Name: "w", Type: TypePTQ1_0, Shape: []int64{64}}},
			ErrFormat, `gguf: tensor 0 "w": row length 64 is not a multiple of the PTQ1_0 block size 128`},
		{"dims", nil, []TensorInfo{{Name: "w", Type: TypeF32, Shape: []int64{1, 1, 1, 1, 1}}},
			ErrFormat, `gguf: tensor 0 "w": 5 dimensions, more than 4`},
		{"negative", nil, []TensorInfo{{Name: "w", Type: TypeF32, Shape: []int64{-1}}},
			ErrFormat, `gguf: tensor 0 "w": dimension 0 is negative (-1)`},
		{"total overflow", nil, []TensorInfo{
			{Name: "a", Type: TypeI8, Shape: []int64{1 << 62}},
			{Name: "b", Type: TypeI8, Shape: []int64{1 << 62}},
		}, ErrFormat, `gguf: tensor 1 "b": data section size overflows int64`},
	} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, c.kv, c.tensors)
		require.Error(t, err, c.name)
		assert.Nil(t, w)
		assert.True(t, errors.Is(err, c.base), "%s: %v", c.name, err)
		assert.EqualError(t, err, c.msg, c.name)
		assert.Zero(t, buf.Len(), "%s: nothing written", c.name)
	}
}

func TestWriterSequenceErrors(t *testing.T) {
	tensors := []TensorInfo{
		{Name: "a", Type: TypeF32, Shape: []int64{2}},
		{Name: "b", Type: TypeF32, Shape: []int64{2}},
	}
	w, err := NewWriter(io.Discard, nil, tensors)
	require.NoError(t, err)

	err = w.WriteTensor("b", f32bytes(1, 2))
	assert.EqualError(t, err, `gguf: tensor "b": out of order, next is tensor 0 "a"`)
	err = w.WriteTensor("zz", f32bytes(1, 2))
	assert.EqualError(t, err, `gguf: tensor "zz": out of order, next is tensor 0 "a"`)
	err = w.WriteTensor("a", f32bytes(1))
	assert.EqualError(t, err, `gguf: tensor "a": 4 bytes of data, want 8`)

	tw, err := w.BeginTensor("a")
	require.NoError(t, err)
	_, err = tw.Write(make([]byte, 5))
	require.NoError(t, err)
	n, err := tw.Write(make([]byte, 4))
	assert.Zero(t, n)
	assert.EqualError(t, err, `gguf: tensor "a": write of 4 bytes exceeds the 3 bytes left of its 8`)
	err = w.Close()
	assert.EqualError(t, err, `gguf: tensor "a" incomplete: 5 of 8 bytes written`)
	_, err = w.BeginTensor("b")
	assert.EqualError(t, err, `gguf: tensor "a" incomplete: 5 of 8 bytes written`)
	_, err = tw.Write(make([]byte, 3))
	require.NoError(t, err)

	err = w.Close()
	assert.EqualError(t, err, `gguf: close: 1 of 2 tensors unwritten, next is "b"`)
	_, err = tw.Write([]byte{1})
	assert.EqualError(t, err, `gguf: tensor "a": write after the tensor was finished`)
	require.NoError(t, w.WriteTensor("b", f32bytes(1, 2)))
	err = w.WriteTensor("c", nil)
	assert.EqualError(t, err, `gguf: tensor "c": all 2 declared tensors are written`)
	require.NoError(t, w.Close())
	err = w.WriteTensor("a", nil)
	assert.ErrorIs(t, err, ErrClosed)
}

// failWriter fails every write after the first n bytes.
type failWriter struct{ n int }

var errDisk = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, errDisk
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriterStickyError(t *testing.T) {
	tensors := []TensorInfo{{Name: "a", Type: TypeF32, Shape: []int64{2}}, {Name: "b", Type: TypeF32, Shape: []int64{2}}}
	_, err := NewWriter(&failWriter{n: 10}, nil, tensors)
	require.ErrorIs(t, err, errDisk)
	assert.EqualError(t, err, "gguf: write: disk full")

	var hdr bytes.Buffer
	_, err = NewWriter(&hdr, nil, tensors)
	require.NoError(t, err)
	w, err := NewWriter(&failWriter{n: hdr.Len() + 3}, nil, tensors)
	require.NoError(t, err)
	tw, err := w.BeginTensor("a")
	require.NoError(t, err)
	_, err = tw.Write(make([]byte, 8))
	require.ErrorIs(t, err, errDisk)
	assert.ErrorIs(t, w.WriteTensor("b", make([]byte, 8)), errDisk)
	assert.ErrorIs(t, w.Close(), errDisk)
}

// countWriter counts the bytes written through it and keeps none.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// TestWriterStreamsLarge streams a 1 GiB tensor in 1 MiB pieces and checks
// that the Writer allocates a bounded amount, independent of the tensor's
// size: nothing of the data is buffered or copied.
func TestWriterStreamsLarge(t *testing.T) {
	const (
		size  = 1 << 30 // bytes: 2^28 F32 elements
		piece = 1 << 20
		bound = 1 << 20 // bytes the Writer may allocate in all
	)
	tensors := []TensorInfo{
		{Name: "small", Type: TypeF32, Shape: []int64{3}},
		{Name: "big", Type: TypeF32, Shape: []int64{1 << 14, 1 << 14}},
		{Name: "tail", Type: TypeI8, Shape: []int64{5}},
	}
	kv := []KV{{"general.alignment", MustValue(uint32(64))}}
	small, tail := f32bytes(1, 2, 3), seq(5)
	chunk := seq(piece)
	var out countWriter

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	w, err := NewWriter(&out, kv, tensors)
	require.NoError(t, err)
	hdr := out.n
	require.NoError(t, w.WriteTensor("small", small))
	tw, err := w.BeginTensor("big")
	require.NoError(t, err)
	for range size / piece {
		if _, err := tw.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	require.NoError(t, w.WriteTensor("tail", tail))
	require.NoError(t, w.Close())

	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	mallocs := after.Mallocs - before.Mallocs

	// header, small (12 bytes padded to 64), big, tail (5 padded to 64)
	assert.Equal(t, hdr+64+size+64, out.n, "bytes written")
	assert.Zero(t, hdr%64, "header padded to the alignment")
	assert.Less(t, alloc, uint64(bound), "bytes allocated while writing %d bytes", out.n)
	t.Logf("wrote %d bytes (%d MiB) in %d-byte pieces: %d bytes allocated in %d allocations",
		out.n, out.n>>20, piece, alloc, mallocs)
}
