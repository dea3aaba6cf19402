package gguf

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. The errors the package returns wrap one of these, so
// callers test for them with errors.Is.
var (
	// ErrFormat reports a malformed file or a malformed value or tensor
	// given to the Writer.
	ErrFormat = errors.New("gguf: malformed file")
	// ErrVersion reports a file of a GGUF version or byte order the
	// package does not read (version 1, big-endian files, future versions).
	ErrVersion = errors.New("gguf: unsupported version")
	// ErrKeyNotFound reports a metadata key that is not in the file.
	ErrKeyNotFound = errors.New("gguf: key not found")
	// ErrWrongType reports a metadata value of another type than asked
	// for, or out of the asked type's range.
	ErrWrongType = errors.New("gguf: wrong value type")
	// ErrTensorNotFound reports a tensor name that is not in the file.
	ErrTensorNotFound = errors.New("gguf: tensor not found")
	// ErrUnknownType reports a tensor type whose block layout the package
	// does not know, so the tensor's size is unknown.
	ErrUnknownType = errors.New("gguf: unknown tensor type")
	// ErrClosed reports use of a File after Close.
	ErrClosed = errors.New("gguf: file closed")
)

// A gerr is an error with its own text that wraps a sentinel, so the
// text reads naturally and errors.Is still finds the sentinel.
type gerr struct {
	msg  string
	base error
}

func (e *gerr) Error() string { return e.msg }
func (e *gerr) Unwrap() error { return e.base }

func newErr(base error, format string, args ...any) error {
	return &gerr{msg: fmt.Sprintf(format, args...), base: base}
}

// A formatError locates a problem in a file: the file's name (if it was
// opened by path), the byte offset of the field at fault and the item
// being read.
type formatError struct {
	file string
	off  int64
	item string // "key 3 \"general.name\"", "tensor 5 \"x\"", "header", ...
	msg  string
	base error // ErrFormat or ErrVersion
}

func (e *formatError) Error() string {
	b := make([]byte, 0, 64+len(e.file)+len(e.item)+len(e.msg))
	b = append(b, "gguf: "...)
	if e.file != "" {
		b = append(b, e.file...)
		b = append(b, ": "...)
	}
	b = append(b, "offset "...)
	b = strconv.AppendInt(b, e.off, 10)
	b = append(b, ": "...)
	if e.item != "" {
		b = append(b, e.item...)
		b = append(b, ": "...)
	}
	b = append(b, e.msg...)
	return string(b)
}

func (e *formatError) Unwrap() error { return e.base }
