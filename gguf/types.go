package gguf

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// A TensorType is a ggml tensor element type as stored in a tensor info.
// Quantised types pack a fixed number of elements into a fixed number of
// bytes (a block); a row of a tensor is always a whole number of blocks.
type TensorType uint32

// Tensor types. The ids are ggml's (ggml/include/ggml.h), except PQ2_0 and
// PTQ1_0, which are PrismML's ternary formats. Ids that ggml has retired
// (4, 5, 31–33, 36–38) and ids that differ between ggml forks are absent:
// they are reported as unknown rather than guessed.
const (
	TypeF32     TensorType = 0
	TypeF16     TensorType = 1
	TypeQ4_0    TensorType = 2
	TypeQ4_1    TensorType = 3
	TypeQ5_0    TensorType = 6
	TypeQ5_1    TensorType = 7
	TypeQ8_0    TensorType = 8
	TypeQ8_1    TensorType = 9
	TypeQ2_K    TensorType = 10
	TypeQ3_K    TensorType = 11
	TypeQ4_K    TensorType = 12
	TypeQ5_K    TensorType = 13
	TypeQ6_K    TensorType = 14
	TypeQ8_K    TensorType = 15
	TypeIQ2_XXS TensorType = 16
	TypeIQ2_XS  TensorType = 17
	TypeIQ3_XXS TensorType = 18
	TypeIQ1_S   TensorType = 19
	TypeIQ4_NL  TensorType = 20
	TypeIQ3_S   TensorType = 21
	TypeIQ2_S   TensorType = 22
	TypeIQ4_XS  TensorType = 23
	TypeI8      TensorType = 24
	TypeI16     TensorType = 25
	TypeI32     TensorType = 26
	TypeI64     TensorType = 27
	TypeF64     TensorType = 28
	TypeIQ1_M   TensorType = 29
	TypeBF16    TensorType = 30
	TypeTQ1_0   TensorType = 34
	TypeTQ2_0   TensorType = 35
	TypeMXFP4   TensorType = 39
	TypePQ2_0   TensorType = 142 // ternary: 128 elements per block, 34 bytes (fp16 scale first)
	TypePTQ1_0  TensorType = 143 // ternary: 128 elements per block, 28 bytes (fp16 scale last)
)

type typeTraits struct {
	name       string
	blockSize  int // elements per block
	blockBytes int // bytes per block
}

// typeTable follows ggml.c's type_traits (block size, sizeof the block
// struct). Note Q8_1 is 36 bytes there although gguf-py's table says 40;
// ggml's struct is what a file's bytes follow.
var typeTable = map[TensorType]typeTraits{
	TypeF32:     {"F32", 1, 4},
	TypeF16:     {"F16", 1, 2},
	TypeQ4_0:    {"Q4_0", 32, 18},
	TypeQ4_1:    {"Q4_1", 32, 20},
	TypeQ5_0:    {"Q5_0", 32, 22},
	TypeQ5_1:    {"Q5_1", 32, 24},
	TypeQ8_0:    {"Q8_0", 32, 34},
	TypeQ8_1:    {"Q8_1", 32, 36},
	TypeQ2_K:    {"Q2_K", 256, 84},
	TypeQ3_K:    {"Q3_K", 256, 110},
	TypeQ4_K:    {"Q4_K", 256, 144},
	TypeQ5_K:    {"Q5_K", 256, 176},
	TypeQ6_K:    {"Q6_K", 256, 210},
	TypeQ8_K:    {"Q8_K", 256, 292},
	TypeIQ2_XXS: {"IQ2_XXS", 256, 66},
	TypeIQ2_XS:  {"IQ2_XS", 256, 74},
	TypeIQ3_XXS: {"IQ3_XXS", 256, 98},
	TypeIQ1_S:   {"IQ1_S", 256, 50},
	TypeIQ4_NL:  {"IQ4_NL", 32, 18},
	TypeIQ3_S:   {"IQ3_S", 256, 110},
	TypeIQ2_S:   {"IQ2_S", 256, 82},
	TypeIQ4_XS:  {"IQ4_XS", 256, 136},
	TypeI8:      {"I8", 1, 1},
	TypeI16:     {"I16", 1, 2},
	TypeI32:     {"I32", 1, 4},
	TypeI64:     {"I64", 1, 8},
	TypeF64:     {"F64", 1, 8},
	TypeIQ1_M:   {"IQ1_M", 256, 56},
	TypeBF16:    {"BF16", 1, 2},
	TypeTQ1_0:   {"TQ1_0", 256, 54},
	TypeTQ2_0:   {"TQ2_0", 256, 66},
	TypeMXFP4:   {"MXFP4", 32, 17},
	TypePQ2_0:   {"PQ2_0", 128, 34},
	TypePTQ1_0:  {"PTQ1_0", 128, 28},
}

// String returns the type's ggml name in upper case, such as "F32" or
// "PQ2_0", or "type(N)" for an unknown id.
func (t TensorType) String() string {
	if tr, ok := typeTable[t]; ok {
		return tr.name
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Known reports whether the package knows the type's block layout.
func (t TensorType) Known() bool {
	_, ok := typeTable[t]
	return ok
}

// BlockSize returns the number of elements in one block, or 0 if the type
// is unknown.
func (t TensorType) BlockSize() int { return typeTable[t].blockSize }

// BlockBytes returns the number of bytes in one block, or 0 if the type is
// unknown.
func (t TensorType) BlockBytes() int { return typeTable[t].blockBytes }

// RowBytes returns the number of bytes of a row of ne0 elements. It fails
// with ErrUnknownType for an unknown type, and with ErrFormat for a negative
// ne0 or one that is not a whole number of blocks.
func (t TensorType) RowBytes(ne0 int64) (int64, error) {
	if !t.Known() {
		return 0, newErr(ErrUnknownType, "gguf: unknown tensor type %v", t)
	}
	if ne0 < 0 {
		return 0, newErr(ErrFormat, "gguf: negative row length %d", ne0)
	}
	n, err := tensorSize(t, []int64{ne0})
	if err != nil {
		return 0, newErr(ErrFormat, "gguf: %v", err)
	}
	return n, nil
}

// maxDims is ggml's GGML_MAX_DIMS: readers allocate ne[4].
const maxDims = 4

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name   string     // the tensor's name, e.g. "blk.0.attn_q.weight"
	Type   TensorType // how its elements are stored
	Shape  []int64    // ne order: Shape[0] is the row length (K), the fastest-varying dimension
	Offset uint64     // relative to the data section
}

// Elements returns the number of elements, the product of Shape (1 for an
// empty Shape). The result is meaningful only for a valid shape: Size and
// Parse check that the product does not overflow.
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Size returns the tensor's size in bytes. It fails with ErrUnknownType for
// an unknown type and with ErrFormat for a shape that is invalid for the
// type.
func (t TensorInfo) Size() (int64, error) {
	n, err := tensorSize(t.Type, t.Shape)
	if err != nil {
		return 0, &gerr{msg: fmt.Sprintf("gguf: tensor %q: %v", t.Name, err), base: errors.Unwrap(err)}
	}
	return n, nil
}

// shapeElements checks a shape and returns its element count. Its errors
// are fragments to be placed after the item they describe, and wrap
// ErrFormat.
func shapeElements(shape []int64) (int64, error) {
	if len(shape) > maxDims {
		return 0, newErr(ErrFormat, "%d dimensions, more than %d", len(shape), maxDims)
	}
	for i, d := range shape {
		if d < 0 {
			return 0, newErr(ErrFormat, "dimension %d is negative (%d)", i, d)
		}
	}
	n := int64(1)
	for _, d := range shape {
		if d != 0 && n > math.MaxInt64/d {
			return 0, newErr(ErrFormat, "shape %v: element count overflows int64", shape)
		}
		n *= d
	}
	return n, nil
}

// tensorSize is Size without the item prefix, shared with Parse and the
// Writer so the three agree on what a valid tensor is. Its errors are
// fragments wrapping ErrFormat or ErrUnknownType.
func tensorSize(t TensorType, shape []int64) (int64, error) {
	n, err := shapeElements(shape)
	if err != nil {
		return 0, err
	}
	tr, ok := typeTable[t]
	if !ok {
		return 0, newErr(ErrUnknownType, "unknown tensor type %v", t)
	}
	ne0 := int64(1)
	if len(shape) > 0 {
		ne0 = shape[0]
	}
	if ne0%int64(tr.blockSize) != 0 {
		return 0, newErr(ErrFormat, "row length %d is not a multiple of the %s block size %d", ne0, tr.name, tr.blockSize)
	}
	blocks := n / int64(tr.blockSize)
	if blocks > math.MaxInt64/int64(tr.blockBytes) {
		return 0, newErr(ErrFormat, "shape %v: %s size in bytes overflows int64", shape, tr.name)
	}
	return blocks * int64(tr.blockBytes), nil
}
