package ternary

import (
	"encoding/binary"
	"unsafe"
)

// memReader is a streaming-read kernel: the xor of the 64-bit words of p[:n], n a
// multiple of align. It exists to measure the machine's read bandwidth
// (BenchmarkMemoryRead) with the same vector width the matrix kernels use, and as the
// loads-only twin a matrix kernel is compared against.
type memReader struct {
	name  string
	read  func(p *byte, n int) uint64
	align int
}

// memReaders lists the readers this machine can run, the generic one first.
var memReaders = append([]memReader{{"generic", memReadGeneric, 64}}, archMemReaders()...)

func memReadGeneric(p *byte, n int) uint64 {
	b := unsafe.Slice(p, n)
	var a0, a1, a2, a3 uint64
	for ; len(b) >= 32; b = b[32:] {
		a0 ^= binary.LittleEndian.Uint64(b)
		a1 ^= binary.LittleEndian.Uint64(b[8:])
		a2 ^= binary.LittleEndian.Uint64(b[16:])
		a3 ^= binary.LittleEndian.Uint64(b[24:])
	}
	return a0 ^ a1 ^ a2 ^ a3
}
