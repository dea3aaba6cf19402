//go:build linux

package ternary

import "syscall"

// benchAlloc returns n bytes for benchmark weights as the model loader holds them
// (gguf's allocData): an anonymous mapping with transparent huge pages requested, so
// that the prefill benchmarks see the TLB behaviour of a loaded model. It falls back to
// the Go heap.
func benchAlloc(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, n)
	}
	const madvHugepage = 14
	_ = syscall.Madvise(b, madvHugepage)
	return b
}
