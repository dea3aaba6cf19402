package gguf

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// A ValueType is the type of a metadata value. The constants' values are
// the ids GGUF stores.
type ValueType uint32

// Metadata value types.
const (
	ValueUint8 ValueType = iota
	ValueInt8
	ValueUint16
	ValueInt16
	ValueUint32
	ValueInt32
	ValueFloat32
	ValueBool
	ValueString
	ValueArray
	ValueUint64
	ValueInt64
	ValueFloat64
)

var valueTypeNames = [...]string{
	ValueUint8:   "uint8",
	ValueInt8:    "int8",
	ValueUint16:  "uint16",
	ValueInt16:   "int16",
	ValueUint32:  "uint32",
	ValueInt32:   "int32",
	ValueFloat32: "float32",
	ValueBool:    "bool",
	ValueString:  "string",
	ValueArray:   "array",
	ValueUint64:  "uint64",
	ValueInt64:   "int64",
	ValueFloat64: "float64",
}

// String returns the type's name as in Go ("uint8", "float32", "string"),
// "array", or "valuetype(N)" for an invalid id.
func (v ValueType) String() string {
	if v.valid() {
		return valueTypeNames[v]
	}
	return "valuetype(" + strconv.FormatUint(uint64(v), 10) + ")"
}

func (v ValueType) valid() bool { return v <= ValueFloat64 }

func (v ValueType) isInt() bool {
	switch v {
	case ValueUint8, ValueInt8, ValueUint16, ValueInt16, ValueUint32, ValueInt32, ValueUint64, ValueInt64:
		return true
	}
	return false
}

// encodedSize returns the size of one encoded scalar of type v, and for
// strings and arrays the smallest encoding (an empty string or array).
// Readers use it to bound counts before allocating.
func (v ValueType) encodedSize() int {
	switch v {
	case ValueUint8, ValueInt8, ValueBool:
		return 1
	case ValueUint16, ValueInt16:
		return 2
	case ValueUint32, ValueInt32, ValueFloat32:
		return 4
	case ValueUint64, ValueInt64, ValueFloat64, ValueString:
		return 8
	case ValueArray:
		return 4 + 8
	}
	return 0
}

// maxArrayDepth bounds the nesting of arrays. GGUF allows arrays of arrays
// but no writer in use nests deeply; the bound keeps hostile files from
// recursing without end.
const maxArrayDepth = 8

// A Value is a metadata value: a scalar, a string, or an array of values of
// one type (arrays may hold arrays). Values are immutable; the zero Value is
// a uint8 zero.
type Value struct {
	typ   ValueType
	elem  ValueType // element type, for arrays
	depth uint8     // array nesting: 1 for an array of scalars or strings
	n     int       // array length
	bits  uint64    // integer (sign-extended), float bits or bool
	str   string
	arr   any // []uint8 … []float64, []bool, []string or []Value
}

// ValueOf returns the Value of x, which must be one of uint8, int8, uint16,
// int16, uint32, int32, float32, bool, string, uint64, int64, float64, a
// slice of one of those (an array), a []Value whose elements are all arrays
// (an array of arrays), or a Value. Slices are copied.
func ValueOf(x any) (Value, error) {
	switch x := x.(type) {
	case Value:
		return x, nil
	case uint8:
		return Value{typ: ValueUint8, bits: uint64(x)}, nil
	case int8:
		return Value{typ: ValueInt8, bits: uint64(int64(x))}, nil
	case uint16:
		return Value{typ: ValueUint16, bits: uint64(x)}, nil
	case int16:
		return Value{typ: ValueInt16, bits: uint64(int64(x))}, nil
	case uint32:
		return Value{typ: ValueUint32, bits: uint64(x)}, nil
	case int32:
		return Value{typ: ValueInt32, bits: uint64(int64(x))}, nil
	case uint64:
		return Value{typ: ValueUint64, bits: x}, nil
	case int64:
		return Value{typ: ValueInt64, bits: uint64(x)}, nil
	case float32:
		return Value{typ: ValueFloat32, bits: uint64(math.Float32bits(x))}, nil
	case float64:
		return Value{typ: ValueFloat64, bits: math.Float64bits(x)}, nil
	case bool:
		v := Value{typ: ValueBool}
		if x {
			v.bits = 1
		}
		return v, nil
	case string:
		return Value{typ: ValueString, str: x}, nil
	case []uint8:
		return arrayOf(ValueUint8, slices.Clone(x), len(x)), nil
	case []int8:
		return arrayOf(ValueInt8, slices.Clone(x), len(x)), nil
	case []uint16:
		return arrayOf(ValueUint16, slices.Clone(x), len(x)), nil
	case []int16:
		return arrayOf(ValueInt16, slices.Clone(x), len(x)), nil
	case []uint32:
		return arrayOf(ValueUint32, slices.Clone(x), len(x)), nil
	case []int32:
		return arrayOf(ValueInt32, slices.Clone(x), len(x)), nil
	case []uint64:
		return arrayOf(ValueUint64, slices.Clone(x), len(x)), nil
	case []int64:
		return arrayOf(ValueInt64, slices.Clone(x), len(x)), nil
	case []float32:
		return arrayOf(ValueFloat32, slices.Clone(x), len(x)), nil
	case []float64:
		return arrayOf(ValueFloat64, slices.Clone(x), len(x)), nil
	case []bool:
		return arrayOf(ValueBool, slices.Clone(x), len(x)), nil
	case []string:
		return arrayOf(ValueString, slices.Clone(x), len(x)), nil
	case []Value:
		return arrayOfArrays(slices.Clone(x))
	}
	return Value{}, newErr(ErrWrongType, "gguf: cannot make a Value of %T", x)
}

// MustValue is like ValueOf but panics on error. It is meant for literals.
func MustValue(x any) Value {
	v, err := ValueOf(x)
	if err != nil {
		panic(err)
	}
	return v
}

func arrayOf(elem ValueType, arr any, n int) Value {
	return Value{typ: ValueArray, elem: elem, depth: 1, n: n, arr: arr}
}

// arrayOfArrays takes ownership of vs.
func arrayOfArrays(vs []Value) (Value, error) {
	depth := uint8(1)
	for i, e := range vs {
		if e.typ != ValueArray {
			return Value{}, newErr(ErrWrongType, "gguf: element %d of an array of arrays is a %v", i, e.typ)
		}
		depth = max(depth, e.depth+1)
	}
	if depth > maxArrayDepth {
		return Value{}, newErr(ErrFormat, "gguf: arrays nested deeper than %d", maxArrayDepth)
	}
	return Value{typ: ValueArray, elem: ValueArray, depth: depth, n: len(vs), arr: vs}, nil
}

// Type returns the value's type.
func (v Value) Type() ValueType { return v.typ }

// ElemType returns the type of an array's elements. It returns 0 (uint8)
// for a value that is not an array.
func (v Value) ElemType() ValueType { return v.elem }

// Len returns the length of an array, or 0 for a value that is not an
// array.
func (v Value) Len() int { return v.n }

// Interface returns the value as a Go value: a scalar as its Go type
// (uint8, …, float64, bool, string), an array of scalars or strings as a
// fresh slice ([]uint32, []string, []bool, …), and an array of arrays as a
// fresh []Value.
func (v Value) Interface() any {
	switch v.typ {
	case ValueUint8:
		return uint8(v.bits)
	case ValueInt8:
		return int8(v.bits)
	case ValueUint16:
		return uint16(v.bits)
	case ValueInt16:
		return int16(v.bits)
	case ValueUint32:
		return uint32(v.bits)
	case ValueInt32:
		return int32(v.bits)
	case ValueUint64:
		return v.bits
	case ValueInt64:
		return int64(v.bits)
	case ValueFloat32:
		return math.Float32frombits(uint32(v.bits))
	case ValueFloat64:
		return math.Float64frombits(v.bits)
	case ValueBool:
		return v.bits != 0
	case ValueString:
		return v.str
	case ValueArray:
		return cloneArray(v.arr)
	}
	return nil
}

func cloneArray(a any) any {
	switch a := a.(type) {
	case []uint8:
		return slices.Clone(a)
	case []int8:
		return slices.Clone(a)
	case []uint16:
		return slices.Clone(a)
	case []int16:
		return slices.Clone(a)
	case []uint32:
		return slices.Clone(a)
	case []int32:
		return slices.Clone(a)
	case []uint64:
		return slices.Clone(a)
	case []int64:
		return slices.Clone(a)
	case []float32:
		return slices.Clone(a)
	case []float64:
		return slices.Clone(a)
	case []bool:
		return slices.Clone(a)
	case []string:
		return slices.Clone(a)
	case []Value:
		return slices.Clone(a)
	}
	return nil
}

// int64Value returns an integer value's value and whether it fits int64.
func (v Value) int64Value() (int64, bool) {
	if v.typ == ValueUint64 && v.bits > math.MaxInt64 {
		return 0, false
	}
	return int64(v.bits), true
}

// Array element i of an integer array as int64; ok is false for a uint64
// beyond the int64 range.
func intElem(arr any, i int) (int64, bool) {
	switch a := arr.(type) {
	case []uint8:
		return int64(a[i]), true
	case []int8:
		return int64(a[i]), true
	case []uint16:
		return int64(a[i]), true
	case []int16:
		return int64(a[i]), true
	case []uint32:
		return int64(a[i]), true
	case []int32:
		return int64(a[i]), true
	case []uint64:
		return int64(a[i]), a[i] <= math.MaxInt64
	case []int64:
		return a[i], true
	}
	return 0, false
}

func floatElem(arr any, i int) float64 {
	switch a := arr.(type) {
	case []float32:
		return float64(a[i])
	case []float64:
		return a[i]
	case []uint64:
		return float64(a[i])
	}
	n, _ := intElem(arr, i)
	return float64(n)
}

// maxShown is the longest array String prints in full; longer ones show
// their first elements and their length, so that a 250k-entry vocabulary
// stays one short line.
const (
	maxShown  = 8
	headShown = 3
)

// String returns a readable form of the value: numbers as Go prints them,
// strings quoted, arrays in brackets with long arrays abbreviated as
// "[1 2 3 … (28672 items)]".
func (v Value) String() string {
	var b strings.Builder
	v.format(&b)
	return b.String()
}

func (v Value) format(b *strings.Builder) {
	switch v.typ {
	case ValueUint8, ValueUint16, ValueUint32, ValueUint64:
		b.WriteString(strconv.FormatUint(v.bits, 10))
	case ValueInt8, ValueInt16, ValueInt32, ValueInt64:
		b.WriteString(strconv.FormatInt(int64(v.bits), 10))
	case ValueFloat32:
		b.WriteString(strconv.FormatFloat(float64(math.Float32frombits(uint32(v.bits))), 'g', -1, 32))
	case ValueFloat64:
		b.WriteString(strconv.FormatFloat(math.Float64frombits(v.bits), 'g', -1, 64))
	case ValueBool:
		b.WriteString(strconv.FormatBool(v.bits != 0))
	case ValueString:
		b.WriteString(strconv.Quote(v.str))
	case ValueArray:
		shown := v.n
		if shown > maxShown {
			shown = headShown
		}
		b.WriteByte('[')
		for i := range shown {
			if i > 0 {
				b.WriteByte(' ')
			}
			v.index(i).format(b)
		}
		if shown < v.n {
			fmt.Fprintf(b, " … (%d items)", v.n)
		}
		b.WriteByte(']')
	default:
		b.WriteString(v.typ.String())
	}
}

// index returns element i of an array as a Value.
func (v Value) index(i int) Value {
	switch a := v.arr.(type) {
	case []uint8:
		return Value{typ: ValueUint8, bits: uint64(a[i])}
	case []int8:
		return Value{typ: ValueInt8, bits: uint64(int64(a[i]))}
	case []uint16:
		return Value{typ: ValueUint16, bits: uint64(a[i])}
	case []int16:
		return Value{typ: ValueInt16, bits: uint64(int64(a[i]))}
	case []uint32:
		return Value{typ: ValueUint32, bits: uint64(a[i])}
	case []int32:
		return Value{typ: ValueInt32, bits: uint64(int64(a[i]))}
	case []uint64:
		return Value{typ: ValueUint64, bits: a[i]}
	case []int64:
		return Value{typ: ValueInt64, bits: uint64(a[i])}
	case []float32:
		return Value{typ: ValueFloat32, bits: uint64(math.Float32bits(a[i]))}
	case []float64:
		return Value{typ: ValueFloat64, bits: math.Float64bits(a[i])}
	case []bool:
		return MustValue(a[i])
	case []string:
		return Value{typ: ValueString, str: a[i]}
	case []Value:
		return a[i]
	}
	return Value{}
}

// A KV is one metadata key and its value.
type KV struct {
	Key   string // a dotted name, e.g. "general.architecture"
	Value Value  // its typed value
}
