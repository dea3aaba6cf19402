package gguf

import (
	"encoding/binary"
	"math"
)

// magic is "GGUF" read as a little-endian uint32.
const magic = 0x46554747

const (
	defaultAlignment = 32
	alignmentKey     = "general.alignment"
	architectureKey  = "general.architecture"
)

var le = binary.LittleEndian

func appendString(b []byte, s string) []byte {
	b = le.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// appendKV appends the encoding of one key-value pair: key, value type,
// payload.
func appendKV(b []byte, kv KV) []byte {
	b = appendString(b, kv.Key)
	b = le.AppendUint32(b, uint32(kv.Value.typ))
	return appendPayload(b, kv.Value)
}

// appendPayload appends a value without its type id. An array's payload
// carries its element type and count; an array nested in an array is
// written the same way, with no type id of its own.
func appendPayload(b []byte, v Value) []byte {
	switch v.typ {
	case ValueUint8, ValueInt8, ValueBool:
		return append(b, byte(v.bits))
	case ValueUint16, ValueInt16:
		return le.AppendUint16(b, uint16(v.bits))
	case ValueUint32, ValueInt32, ValueFloat32:
		return le.AppendUint32(b, uint32(v.bits))
	case ValueUint64, ValueInt64, ValueFloat64:
		return le.AppendUint64(b, v.bits)
	case ValueString:
		return appendString(b, v.str)
	}
	b = le.AppendUint32(b, uint32(v.elem))
	b = le.AppendUint64(b, uint64(v.n))
	switch a := v.arr.(type) {
	case []uint8:
		b = append(b, a...)
	case []int8:
		for _, x := range a {
			b = append(b, byte(x))
		}
	case []bool:
		for _, x := range a {
			if x {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
	case []uint16:
		for _, x := range a {
			b = le.AppendUint16(b, x)
		}
	case []int16:
		for _, x := range a {
			b = le.AppendUint16(b, uint16(x))
		}
	case []uint32:
		for _, x := range a {
			b = le.AppendUint32(b, x)
		}
	case []int32:
		for _, x := range a {
			b = le.AppendUint32(b, uint32(x))
		}
	case []float32:
		for _, x := range a {
			b = le.AppendUint32(b, math.Float32bits(x))
		}
	case []uint64:
		for _, x := range a {
			b = le.AppendUint64(b, x)
		}
	case []int64:
		for _, x := range a {
			b = le.AppendUint64(b, uint64(x))
		}
	case []float64:
		for _, x := range a {
			b = le.AppendUint64(b, math.Float64bits(x))
		}
	case []string:
		for _, s := range a {
			b = appendString(b, s)
		}
	case []Value:
		for _, e := range a {
			b = appendPayload(b, e)
		}
	}
	return b
}

// encodedLen returns the length appendPayload would append, so the Writer
// can size its header buffer once.
func encodedLen(v Value) int {
	switch v.typ {
	case ValueString:
		return 8 + len(v.str)
	case ValueArray:
		n := 12
		switch a := v.arr.(type) {
		case []string:
			for _, s := range a {
				n += 8 + len(s)
			}
		case []Value:
			for _, e := range a {
				n += encodedLen(e)
			}
		default:
			n += v.n * v.elem.encodedSize()
		}
		return n
	}
	return v.typ.encodedSize()
}

func appendTensorInfo(b []byte, t TensorInfo) []byte {
	b = appendString(b, t.Name)
	b = le.AppendUint32(b, uint32(len(t.Shape)))
	for _, d := range t.Shape {
		b = le.AppendUint64(b, uint64(d))
	}
	b = le.AppendUint32(b, uint32(t.Type))
	return le.AppendUint64(b, t.Offset)
}

// alignUp rounds n up to a multiple of align, a power of two. ok is false
// if the result overflows.
func alignUp(n, align uint64) (r uint64, ok bool) {
	r = (n + align - 1) &^ (align - 1)
	return r, r >= n
}
