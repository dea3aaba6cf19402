package gguf

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTensorTypeTraits checks every type against the block layouts of
// ggml's ggml-common.h (block structs, checked with sizeof in a C build of
// the mirror's header) and the PrismML formats as package ternary documents
// them (its package doc, § Formats).
func TestTensorTypeTraits(t *testing.T) {
	want := []struct {
		typ         TensorType
		id          uint32
		name        string
		block, size int
	}{
		{TypeF32, 0, "F32", 1, 4},
		{TypeF16, 1, "F16", 1, 2},
		{TypeQ4_0, 2, "Q4_0", 32, 2 + 16},
		{TypeQ4_1, 3, "Q4_1", 32, 2 + 2 + 16},
		{TypeQ5_0, 6, "Q5_0", 32, 2 + 4 + 16},
		{TypeQ5_1, 7, "Q5_1", 32, 2 + 2 + 4 + 16},
		{TypeQ8_0, 8, "Q8_0", 32, 2 + 32},
		{TypeQ8_1, 9, "Q8_1", 32, 2 + 2 + 32},
		{TypeQ2_K, 10, "Q2_K", 256, 2 + 2 + 256/16 + 256/4},
		{TypeQ3_K, 11, "Q3_K", 256, 2 + 256/4 + 256/8 + 12},
		{TypeQ4_K, 12, "Q4_K", 256, 2 + 2 + 12 + 256/2},
		{TypeQ5_K, 13, "Q5_K", 256, 2 + 2 + 12 + 256/2 + 256/8},
		{TypeQ6_K, 14, "Q6_K", 256, 2 + 256/16 + 3*256/4},
		{TypeQ8_K, 15, "Q8_K", 256, 4 + 256 + 256/16*2},
		{TypeIQ2_XXS, 16, "IQ2_XXS", 256, 2 + 256/8*2},
		{TypeIQ2_XS, 17, "IQ2_XS", 256, 2 + 256/8*2 + 256/32},
		{TypeIQ3_XXS, 18, "IQ3_XXS", 256, 2 + 3*(256/8)},
		{TypeIQ1_S, 19, "IQ1_S", 256, 2 + 256/8 + 256/16},
		{TypeIQ4_NL, 20, "IQ4_NL", 32, 2 + 16},
		{TypeIQ3_S, 21, "IQ3_S", 256, 2 + 13*(256/32) + 256/64},
		{TypeIQ2_S, 22, "IQ2_S", 256, 2 + 256/4 + 256/16},
		{TypeIQ4_XS, 23, "IQ4_XS", 256, 2 + 2 + 256/64 + 256/2},
		{TypeI8, 24, "I8", 1, 1},
		{TypeI16, 25, "I16", 1, 2},
		{TypeI32, 26, "I32", 1, 4},
		{TypeI64, 27, "I64", 1, 8},
		{TypeF64, 28, "F64", 1, 8},
		{TypeIQ1_M, 29, "IQ1_M", 256, 256/8 + 256/16 + 256/32},
		{TypeBF16, 30, "BF16", 1, 2},
		{TypeTQ1_0, 34, "TQ1_0", 256, 54},
		{TypeTQ2_0, 35, "TQ2_0", 256, 66},
		{TypeMXFP4, 39, "MXFP4", 32, 17},
		{TypePQ2_0, 142, "PQ2_0", 128, 34},
		{TypePTQ1_0, 143, "PTQ1_0", 128, 28},
	}
	require.Len(t, typeTable, len(want))
	for _, w := range want {
		assert.Equal(t, w.id, uint32(w.typ), w.name)
		assert.Equal(t, w.name, w.typ.String())
		assert.True(t, w.typ.Known(), w.name)
		assert.Equal(t, w.block, w.typ.BlockSize(), w.name)
		assert.Equal(t, w.size, w.typ.BlockBytes(), w.name)
		n, err := w.typ.RowBytes(int64(3 * w.block))
		require.NoError(t, err)
		assert.Equal(t, int64(3*w.size), n, w.name)
	}
}

func TestTensorTypeUnknown(t *testing.T) {
	for _, id := range []uint32{4, 5, 31, 32, 33, 36, 37, 38, 40, 41, 42, 99, 141, 144, math.MaxUint32} {
		typ := TensorType(id)
		assert.False(t, typ.Known(), id)
		assert.Equal(t, 0, typ.BlockSize())
		assert.Equal(t, 0, typ.BlockBytes())
		_, err := typ.RowBytes(128)
		assert.ErrorIs(t, err, ErrUnknownType)
	}
	assert.Equal(t, "type(99)", TensorType(99).String())
}

func TestRowBytes(t *testing.T) {
	n, err := TypePQ2_0.RowBytes(5120)
	require.NoError(t, err)
	assert.Equal(t, int64(40*34), n)

	n, err = TypeF32.RowBytes(0)
	require.NoError(t, err)
	assert.Zero(t, n)

	_, err = TypeQ8_0.RowBytes(100)
	require.ErrorIs(t, err, ErrFormat)
	assert.EqualError(t, err, "gguf: row length 100 is not a multiple of the Q8_0 block size 32")

	_, err = TypeF32.RowBytes(-1)
	assert.ErrorIs(t, err, ErrFormat)

	_, err = TypeF64.RowBytes(math.MaxInt64 / 4)
	assert.ErrorIs(t, err, ErrFormat)
}

func TestTensorInfoSize(t *testing.T) {
	ti := TensorInfo{Name: "w", Type: TypePQ2_0, Shape: []int64{5120, 248320}}
	assert.Equal(t, int64(5120*248320), ti.Elements())
	n, err := ti.Size()
	require.NoError(t, err)
	assert.Equal(t, int64(5120/128*34*248320), n)

	assert.Equal(t, int64(1), TensorInfo{}.Elements())
	n, err = TensorInfo{Type: TypeF32}.Size() // a scalar
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)

	n, err = TensorInfo{Type: TypeQ8_0, Shape: []int64{32, 0, 7}}.Size()
	require.NoError(t, err)
	assert.Zero(t, n)

	for _, c := range []struct {
		ti   TensorInfo
		base error
		msg  string
	}{
		{TensorInfo{Name: "u", Type: 99, Shape: []int64{4}}, ErrUnknownType, `gguf: tensor "u": unknown tensor type type(99)`},
		{TensorInfo{Name: "b", Type: TypeQ4_K, Shape: []int64{100}}, ErrFormat, `gguf: tensor "b": row length 100 is not a multiple of the Q4_K block size 256`},
		{TensorInfo{Name: "n", Type: TypeF32, Shape: []int64{4, -1}}, ErrFormat, `gguf: tensor "n": dimension 1 is negative (-1)`},
		{TensorInfo{Name: "d", Type: TypeF32, Shape: []int64{1, 1, 1, 1, 1}}, ErrFormat, `gguf: tensor "d": 5 dimensions, more than 4`},
		{TensorInfo{Name: "o", Type: TypeF32, Shape: []int64{1 << 32, 1 << 32}}, ErrFormat, `gguf: tensor "o": shape [4294967296 4294967296]: element count overflows int64`},
		{TensorInfo{Name: "s", Type: TypeF32, Shape: []int64{1 << 31, 1 << 31}}, ErrFormat, `gguf: tensor "s": shape [2147483648 2147483648]: F32 size in bytes overflows int64`},
	} {
		_, err := c.ti.Size()
		require.Error(t, err, c.ti.Name)
		assert.True(t, errors.Is(err, c.base), "%v", err)
		assert.EqualError(t, err, c.msg)
	}
}
