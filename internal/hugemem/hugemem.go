// Package hugemem allocates large, long-lived byte buffers outside the Go heap: weights
// read into memory, or kept in a layout of a backend's own. On Linux they are anonymous
// mappings with transparent huge pages requested, so that the bytes a model streams on
// every token sit in 2 MiB pages (fewer TLB misses, and the hardware prefetchers run on
// across 4 KiB boundaries); elsewhere, or when the mapping fails, they come from the Go
// heap.
package hugemem

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
