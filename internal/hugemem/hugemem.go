// Package hugemem allocates large, long-lived buffers in transparent huge pages: byte
// buffers outside the Go heap for weights read into memory or kept in a layout of a
// backend's own (Alloc, Mapping), and float32 state on the Go heap (Float32s). On Linux
// they are mappings or heap ranges with huge pages requested, so that the bytes a model
// streams on every token sit in 2 MiB pages (fewer TLB misses, and the hardware
// prefetchers run on across 4 KiB boundaries), and memory first written by a hot loop
// faults in once per 2 MiB instead of once per 4 KiB; elsewhere, or when the mapping
// fails, they are plain Go heap memory.
package hugemem

import "unsafe"

// Alloc returns size bytes of zeroed memory, page-aligned when mapped, and the function
// that gives them back. Nothing may touch b after free; calling free twice is an error
// only for a mapping.
func Alloc(size int) (b []byte, free func() error) {
	if size <= 0 {
		return nil, func() error { return nil }
	}
	if b, free, ok := alloc(size); ok {
		return b, free
	}
	return make([]byte, size), func() error { return nil }
}

// Mapping is Alloc without the Go heap's fallback: ok is false where no anonymous
// mapping could be made. Unlike heap memory, a mapping's whole pages may be replaced in
// place by another mapping (mmap with MAP_FIXED), which free then unmaps with the rest.
func Mapping(size int) (b []byte, free func() error, ok bool) {
	if size <= 0 {
		return nil, nil, false
	}
	return alloc(size)
}

// HugePage is the size of a transparent huge page on the platforms this package asks
// them of (x86-64 and arm64 with 4 KiB base pages).
const HugePage = 2 << 20

// Float32s returns n zeroed float32s from the Go heap, which the garbage collector frees
// as any other slice, with transparent huge pages requested for the whole huge pages
// inside them. It is for large state that the first step of a sequence writes, such as
// a GDN layer's recurrent state: a fresh 4 KiB page is a fault, tens of microseconds on
// a virtual machine whose memory is busy with a model's pages, and a 27B model's states
// are 37,000 of them, most of a second added to a new sequence's first token, where a
// 2 MiB page faults once. Below a huge page it is make.
func Float32s(n int) []float32 {
	b := make([]float32, n)
	if 4*n >= HugePage {
		base := unsafe.Pointer(unsafe.SliceData(b))
		p := uintptr(base)
		lo := (p + HugePage - 1) &^ (HugePage - 1)
		if hi := (p + uintptr(4*n)) &^ (HugePage - 1); hi > lo {
			// A hint: b is usable whatever it answers.
			_ = adviseHuge(unsafe.Slice((*byte)(unsafe.Add(base, lo-p)), hi-lo))
		}
	}
	return b
}
