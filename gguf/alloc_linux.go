package gguf

import "syscall"

// allocData returns memory for a file read into memory: an anonymous mapping, with
// transparent huge pages requested, so that the weights a model streams every token sit
// in 2 MiB pages (fewer TLB misses, and the hardware prefetchers run across 4 KiB
// boundaries). It falls back to the Go heap when the mapping fails.
func allocData(size int) ([]byte, func([]byte) error) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, size), nil
	}
	const madvHugepage = 14 // MADV_HUGEPAGE; a hint, ignored where THP is off
	_ = syscall.Madvise(b, madvHugepage)
	return b, syscall.Munmap
}
