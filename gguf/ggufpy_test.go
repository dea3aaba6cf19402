package gguf

import (
	"bytes"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGGUFPy reads a file written by llama.cpp's gguf-py (see
// testdata/README.md) and checks it against values written out here by
// hand from the script that produced it, not from our own writer.
func TestGGUFPy(t *testing.T) {
	image, err := os.ReadFile("testdata/gguf-py.gguf")
	require.NoError(t, err)
	f, err := Open("testdata/gguf-py.gguf")
	require.NoError(t, err)
	defer f.Close()

	assert.Equal(t, uint32(3), f.Version)
	assert.Equal(t, 64, f.Alignment)
	assert.Equal(t, int64(1280), f.DataOffset)
	assert.Equal(t, int64(1792), f.Size())

	wantKV := []struct {
		key string
		typ ValueType
		val any
	}{
		{"general.architecture", ValueString, "qwen35"},
		{"general.alignment", ValueUint32, uint32(64)},
		{"test.u8", ValueUint8, uint8(200)},
		{"test.i8", ValueInt8, int8(-100)},
		{"test.u16", ValueUint16, uint16(60000)},
		{"test.i16", ValueInt16, int16(-30000)},
		{"test.u32", ValueUint32, uint32(4000000000)},
		{"test.i32", ValueInt32, int32(-2000000000)},
		{"test.f32", ValueFloat32, float32(1.5)},
		{"test.bool", ValueBool, true},
		{"test.str", ValueString, "héllo, wörld"},
		{"test.u64", ValueUint64, uint64(18000000000000000000)},
		{"test.i64", ValueInt64, int64(-9000000000000000000)},
		{"test.f64", ValueFloat64, -0.1},
		{"test.str_raw", ValueString, "\xff\xfeok"},
		{"test.str_empty", ValueString, ""},
		{"test.arr_i32", ValueArray, []int32{1, -2, 3}},
		{"test.arr_u8", ValueArray, []uint8{0, 1, 255}},
		{"test.arr_i16", ValueArray, []int16{-1, 2}},
		{"test.arr_u64", ValueArray, []uint64{1, math.MaxUint64}},
		{"test.arr_f64", ValueArray, []float64{0.25, -2.0}},
		{"test.arr_f32", ValueArray, []float32{0.5, -1.25, 3.0}},
		{"test.arr_str", ValueArray, []string{"a", "", "ünï"}},
		{"test.arr_bool", ValueArray, []bool{true, false, true}},
		{"test.arr_nested", ValueArray, nil}, // checked below
		{"qwen35.block_count", ValueUint32, uint32(2)},
	}
	require.Len(t, f.KV, len(wantKV))
	for i, w := range wantKV {
		kv := f.KV[i]
		assert.Equal(t, w.key, kv.Key)
		assert.Equal(t, w.typ, kv.Value.Type(), w.key)
		if w.val != nil {
			assert.Equal(t, w.val, kv.Value.Interface(), w.key)
		}
	}
	nested, ok := f.Lookup("test.arr_nested")
	require.True(t, ok)
	assert.Equal(t, ValueArray, nested.ElemType())
	inner := nested.Interface().([]Value)
	require.Len(t, inner, 3)
	assert.Equal(t, []int32{1, 2}, inner[0].Interface())
	assert.Equal(t, []int32{3}, inner[1].Interface())
	assert.Equal(t, []string{"x", "y"}, inner[2].Interface())
	assert.Equal(t, `[[1 2] [3] ["x" "y"]]`, nested.String())

	assert.Equal(t, "qwen35", f.Architecture())
	n, err := f.Int("qwen35.block_count")
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)

	f32 := make([]byte, 0, 48)
	for i := range 12 {
		f32 = le.AppendUint32(f32, math.Float32bits(float32(i)/4))
	}
	wantTensors := []struct {
		name  string
		typ   TensorType
		shape []int64
		off   uint64
		data  []byte
	}{
		{"t.f32", TypeF32, []int64{4, 3}, 0, f32},
		{"t.f16", TypeF16, []int64{3, 1}, 64, []byte{0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38}},
		{"t.bf16", TypeBF16, []int64{2, 1}, 128, []byte{0x80, 0x3f, 0x00, 0xc0}},
		{"t.i8", TypeI8, []int64{5}, 192, []byte{0x80, 0x00, 0x7f, 0x05, 0x06}},
		{"t.q8_0", TypeQ8_0, []int64{64, 1}, 256, seqFrom0(68)},
		{"t.pq2_0", TypePQ2_0, []int64{128, 2}, 384, seqFrom0(68)},
	}
	require.Len(t, f.Tensors, len(wantTensors))
	for i, w := range wantTensors {
		ti := f.Tensors[i]
		assert.Equal(t, w.name, ti.Name)
		assert.Equal(t, w.typ, ti.Type, w.name)
		assert.Equal(t, w.shape, ti.Shape, w.name)
		assert.Equal(t, w.off, ti.Offset, w.name)
		data, err := f.TensorData(w.name)
		require.NoError(t, err)
		assert.Equal(t, w.data, data, w.name)
	}

	again, err := rewrite(f)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(image, again), "our Writer reproduces gguf-py's bytes")
}

func seqFrom0(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}
