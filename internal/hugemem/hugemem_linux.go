package hugemem

import "syscall"

func alloc(size int) ([]byte, func() error, bool) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, nil, false
	}
	_ = adviseHuge(b)
	return b, func() error { return syscall.Munmap(b) }, true
}

// adviseHuge asks for transparent huge pages for b (whole pages): a hint, which the
// kernel ignores where they are off.
func adviseHuge(b []byte) error {
	const madvHugepage = 14 // MADV_HUGEPAGE
	return syscall.Madvise(b, madvHugepage)
}
