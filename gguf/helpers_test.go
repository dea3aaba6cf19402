package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// tensorBlob is a tensor to write: its info and its bytes.
type tensorBlob struct {
	info TensorInfo
	data []byte
}

// writeFile writes a file with the Writer and returns its bytes.
func writeFile(t testing.TB, kv []KV, tensors []tensorBlob, opts ...WriterOption) []byte {
	t.Helper()
	infos := make([]TensorInfo, len(tensors))
	for i, tb := range tensors {
		infos[i] = tb.info
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, kv, infos, opts...)
	require.NoError(t, err)
	for _, tb := range tensors {
		require.NoError(t, w.WriteTensor(tb.info.Name, tb.data))
	}
	require.NoError(t, w.Close())
	return buf.Bytes()
}

// rewrite writes f again with the Writer, at f's version.
func rewrite(f *File) ([]byte, error) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, f.KV, f.Tensors, WithVersion(f.Version))
	if err != nil {
		return nil, err
	}
	for _, ti := range f.Tensors {
		data, err := f.TensorData(ti.Name)
		if err != nil {
			return nil, err
		}
		if err := w.WriteTensor(ti.Name, data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// requireSameContent checks that two files hold the same metadata (compared
// by encoding, so NaNs and -0 compare exactly), the same tensor infos up to
// offsets, and the same tensor bytes.
func requireSameContent(t testing.TB, a, b *File) {
	t.Helper()
	require.Equal(t, a.Version, b.Version)
	require.Equal(t, a.Alignment, b.Alignment)
	require.Equal(t, len(a.KV), len(b.KV))
	for i := range a.KV {
		require.Equal(t, appendKV(nil, a.KV[i]), appendKV(nil, b.KV[i]), "key %d %q", i, a.KV[i].Key)
	}
	require.Equal(t, len(a.Tensors), len(b.Tensors))
	for i := range a.Tensors {
		x, y := a.Tensors[i], b.Tensors[i]
		require.Equal(t, x.Name, y.Name)
		require.Equal(t, x.Type, y.Type)
		require.Equal(t, x.Shape, y.Shape)
		dx, errx := a.TensorData(x.Name)
		dy, erry := b.TensorData(y.Name)
		require.Equal(t, errx == nil, erry == nil)
		require.True(t, bytes.Equal(dx, dy), "tensor %q data", x.Name)
	}
}

// img builds GGUF byte images by hand, for inputs the Writer refuses to
// produce.
type img struct{ b []byte }

func (m *img) u8(v uint8) *img   { m.b = append(m.b, v); return m }
func (m *img) u32(v uint32) *img { m.b = binary.LittleEndian.AppendUint32(m.b, v); return m }
func (m *img) u64(v uint64) *img { m.b = binary.LittleEndian.AppendUint64(m.b, v); return m }
func (m *img) raw(p ...byte) *img {
	m.b = append(m.b, p...)
	return m
}
func (m *img) str(s string) *img { return m.u64(uint64(len(s))).raw([]byte(s)...) }

// header writes magic, version 3 and the counts.
func (m *img) header(nTensors, nKV uint64) *img {
	return m.raw('G', 'G', 'U', 'F').u32(3).u64(nTensors).u64(nKV)
}

// kvU32 writes a uint32 key-value pair.
func (m *img) kvU32(key string, v uint32) *img {
	return m.str(key).u32(uint32(ValueUint32)).u32(v)
}

// tensor writes a tensor info.
func (m *img) tensor(name string, typ TensorType, off uint64, shape ...uint64) *img {
	m.str(name).u32(uint32(len(shape)))
	for _, d := range shape {
		m.u64(d)
	}
	return m.u32(uint32(typ)).u64(off)
}

// pad pads to a multiple of align, then appends n data bytes.
func (m *img) data(align, n int) *img {
	for len(m.b)%align != 0 {
		m.b = append(m.b, 0)
	}
	for i := range n {
		m.b = append(m.b, byte(i))
	}
	return m
}

func f32bytes(xs ...float32) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 3)
	}
	return b
}
