package gguf

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValueTypeString(t *testing.T) {
	names := []string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}
	for i, n := range names {
		assert.Equal(t, n, ValueType(i).String())
	}
	assert.Equal(t, "valuetype(13)", ValueType(13).String())
}

func TestValueOfScalars(t *testing.T) {
	for _, c := range []struct {
		x   any
		typ ValueType
		str string
	}{
		{uint8(200), ValueUint8, "200"},
		{int8(-100), ValueInt8, "-100"},
		{uint16(60000), ValueUint16, "60000"},
		{int16(-30000), ValueInt16, "-30000"},
		{uint32(4e9), ValueUint32, "4000000000"},
		{int32(-2e9), ValueInt32, "-2000000000"},
		{float32(1.5), ValueFloat32, "1.5"},
		{true, ValueBool, "true"},
		{"a\"b\xff", ValueString, `"a\"b\xff"`},
		{uint64(math.MaxUint64), ValueUint64, "18446744073709551615"},
		{int64(math.MinInt64), ValueInt64, "-9223372036854775808"},
		{-0.1, ValueFloat64, "-0.1"},
	} {
		v, err := ValueOf(c.x)
		require.NoError(t, err)
		assert.Equal(t, c.typ, v.Type())
		assert.Equal(t, c.x, v.Interface())
		assert.Equal(t, c.str, v.String())
		assert.Zero(t, v.Len())
		v2, err := ValueOf(v)
		require.NoError(t, err)
		assert.Equal(t, v, v2)
	}
	var zero Value
	assert.Equal(t, ValueUint8, zero.Type())
	assert.Equal(t, uint8(0), zero.Interface())
}

func TestValueOfArrays(t *testing.T) {
	for _, c := range []struct {
		x    any
		elem ValueType
		n    int
		str  string
	}{
		{[]uint8{1, 2}, ValueUint8, 2, "[1 2]"},
		{[]int8{-1}, ValueInt8, 1, "[-1]"},
		{[]uint16{1}, ValueUint16, 1, "[1]"},
		{[]int16{-2}, ValueInt16, 1, "[-2]"},
		{[]uint32{}, ValueUint32, 0, "[]"},
		{[]int32{1, 2, 3, 4, 5, 6, 7, 8}, ValueInt32, 8, "[1 2 3 4 5 6 7 8]"},
		{[]float32{0.5}, ValueFloat32, 1, "[0.5]"},
		{[]bool{true, false}, ValueBool, 2, "[true false]"},
		{[]string{"a", ""}, ValueString, 2, `["a" ""]`},
		{[]uint64{math.MaxUint64}, ValueUint64, 1, "[18446744073709551615]"},
		{[]int64{-5}, ValueInt64, 1, "[-5]"},
		{[]float64{1e100}, ValueFloat64, 1, "[1e+100]"},
	} {
		v, err := ValueOf(c.x)
		require.NoError(t, err)
		assert.Equal(t, ValueArray, v.Type())
		assert.Equal(t, c.elem, v.ElemType())
		assert.Equal(t, c.n, v.Len())
		assert.Equal(t, c.x, v.Interface())
		assert.Equal(t, c.str, v.String())
	}

	long := make([]uint32, 28672)
	for i := range long {
		long[i] = uint32(i + 1)
	}
	assert.Equal(t, "[1 2 3 … (28672 items)]", MustValue(long).String())
	assert.Equal(t, `["a" "b" "c" … (9 items)]`, MustValue(strings.Split("abcdefghi", "")).String())
}

func TestValueCopies(t *testing.T) {
	in := []uint32{1, 2, 3}
	v := MustValue(in)
	in[0] = 100
	out := v.Interface().([]uint32)
	assert.Equal(t, []uint32{1, 2, 3}, out)
	out[1] = 200
	assert.Equal(t, []uint32{1, 2, 3}, v.Interface())
}

func TestValueOfNested(t *testing.T) {
	inner1 := MustValue([]int32{1, 2})
	inner2 := MustValue([]string{"x"})
	v, err := ValueOf([]Value{inner1, inner2, MustValue([]Value{})})
	require.NoError(t, err)
	assert.Equal(t, ValueArray, v.Type())
	assert.Equal(t, ValueArray, v.ElemType())
	assert.Equal(t, 3, v.Len())
	assert.Equal(t, `[[1 2] ["x"] []]`, v.String())
	got := v.Interface().([]Value)
	require.Len(t, got, 3)
	assert.Equal(t, []int32{1, 2}, got[0].Interface())

	_, err = ValueOf([]Value{inner1, MustValue(uint8(1))})
	require.ErrorIs(t, err, ErrWrongType)
	assert.EqualError(t, err, "gguf: element 1 of an array of arrays is a uint8")

	deep := MustValue([]uint8{1})
	for range maxArrayDepth - 1 {
		deep = MustValue([]Value{deep})
	}
	_, err = ValueOf([]Value{deep})
	require.ErrorIs(t, err, ErrFormat)
	assert.EqualError(t, err, "gguf: arrays nested deeper than 8")
}

func TestValueOfUnsupported(t *testing.T) {
	for _, x := range []any{1, uint(1), []int{1}, nil, struct{}{}, [][]uint8{{1}}} {
		_, err := ValueOf(x)
		assert.ErrorIs(t, err, ErrWrongType, "%T", x)
	}
	_, err := ValueOf(7)
	assert.EqualError(t, err, "gguf: cannot make a Value of int")
	assert.Panics(t, func() { MustValue(7) })
}
