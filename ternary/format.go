package ternary

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bonsai-go/sdk/gguf"
)

// BlockSize is the number of elements that share one scale in both formats.
const BlockSize = 128

// Block sizes in bytes.
const (
	pq2BlockBytes  = 2 + BlockSize/4 // fp16 d, qs[32]
	ptq1BlockBytes = 24 + 2 + 2      // qs[24], qh[2], fp16 d
)

// Format names one of the ternary block formats. The zero Format is invalid.
type Format uint8

// The ternary block formats.
const (
	PQ2_0  Format = 1 // 2 bits per code, 34 bytes per block, GGUF type 142
	PTQ1_0 Format = 2 // base-3 trits, 28 bytes per block, GGUF type 143
)

// Errors reported by this package. They are wrapped with details, so test
// for them with [errors.Is].
var (
	// ErrSize reports a buffer whose length does not fit the operation: not
	// a whole number of blocks, or not the length its counterpart implies.
	ErrSize = errors.New("ternary: size mismatch")
	// ErrCode3 reports code 3 (+2d) where it does not belong: PQ2_0 can
	// hold it, but PTQ1_0 cannot, and a ternary checkpoint never does.
	ErrCode3 = errors.New("ternary: code 3 is not a ternary value")
	// ErrCodeRange reports a code above 3, which no format can hold.
	ErrCodeRange = errors.New("ternary: code out of range")
	// ErrFormat reports a Format value that is neither PQ2_0 nor PTQ1_0.
	ErrFormat = errors.New("ternary: invalid format")
	// ErrNonFinite reports a NaN or infinite input to the quantiser.
	ErrNonFinite = errors.New("ternary: non-finite input")
	// ErrOverflow reports a block whose max|w| overflows fp16, which would
	// otherwise be stored as an infinite scale.
	ErrOverflow = errors.New("ternary: scale overflows fp16")
)

// FormatOf returns the Format stored under GGUF tensor type t, and false if t
// is not a ternary type.
func FormatOf(t gguf.TensorType) (Format, bool) {
	switch t {
	case gguf.TypePQ2_0:
		return PQ2_0, true
	case gguf.TypePTQ1_0:
		return PTQ1_0, true
	}
	return 0, false
}

// valid reports whether f is one of the defined formats.
func (f Format) valid() bool { return f == PQ2_0 || f == PTQ1_0 }

// TensorType returns the GGUF tensor type id of f. It panics if f is not a
// valid Format: returning a placeholder id would silently name another type.
func (f Format) TensorType() gguf.TensorType {
	switch f {
	case PQ2_0:
		return gguf.TypePQ2_0
	case PTQ1_0:
		return gguf.TypePTQ1_0
	}
	panic(fmt.Sprintf("ternary: TensorType of invalid %v", f))
}

// ParseFormat returns the format named name, "PQ2_0" or "PTQ1_0" in any case (as
// String writes them, or as command lines type them).
func ParseFormat(name string) (Format, error) {
	for _, f := range []Format{PQ2_0, PTQ1_0} {
		if strings.EqualFold(name, f.String()) {
			return f, nil
		}
	}
	return 0, fmt.Errorf("%w %q: want pq2_0 or ptq1_0", ErrFormat, name)
}

// String returns "PQ2_0" or "PTQ1_0", or "Format(n)" for an invalid value.
func (f Format) String() string {
	switch f {
	case PQ2_0:
		return "PQ2_0"
	case PTQ1_0:
		return "PTQ1_0"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// BlockBytes returns the size in bytes of one block of f: 34 for PQ2_0 and
// 28 for PTQ1_0. It panics if f is not a valid Format.
func (f Format) BlockBytes() int {
	switch f {
	case PQ2_0:
		return pq2BlockBytes
	case PTQ1_0:
		return ptq1BlockBytes
	}
	panic(fmt.Sprintf("ternary: BlockBytes of invalid %v", f))
}

// RowBytes returns the size in bytes of k elements stored in f. It panics if
// k is negative or not a multiple of BlockSize, or if f is invalid: a row
// length is a property of a tensor's shape, and a shape that does not fit
// the format is a bug in the caller rather than a condition to handle.
func (f Format) RowBytes(k int) int {
	if k < 0 || k%BlockSize != 0 {
		panic(fmt.Sprintf("ternary: RowBytes(%d): row length is not a multiple of %d", k, BlockSize))
	}
	return k / BlockSize * f.BlockBytes()
}

// blocks checks that src holds a whole number of blocks of f and returns how
// many. what names src in the error.
func (f Format) blocks(what string, src []byte) (int, error) {
	if !f.valid() {
		return 0, fmt.Errorf("%w %d", ErrFormat, uint8(f))
	}
	bb := f.BlockBytes()
	if len(src)%bb != 0 {
		return 0, fmt.Errorf("%w: %s %s is %d bytes, not a multiple of the %d-byte block", ErrSize, f, what, len(src), bb)
	}
	return len(src) / bb, nil
}

// pair checks that a float or code buffer of n elements matches blocks of f
// held in a byte buffer of m bytes, and returns the block count.
func (f Format) pair(op string, n, m int) (int, error) {
	if !f.valid() {
		return 0, fmt.Errorf("%w %d", ErrFormat, uint8(f))
	}
	if n%BlockSize != 0 {
		return 0, fmt.Errorf("%w: %s %s: %d elements is not a multiple of %d", ErrSize, f, op, n, BlockSize)
	}
	nb := n / BlockSize
	if want := nb * f.BlockBytes(); m != want {
		return 0, fmt.Errorf("%w: %s %s: %d elements need %d bytes, have %d", ErrSize, f, op, n, want, m)
	}
	return nb, nil
}
