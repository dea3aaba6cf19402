package hugemem

import "syscall"

func alloc(size int) ([]byte, func() error, bool) {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, nil, false
	}
	const madvHugepage = 14 // MADV_HUGEPAGE; a hint, ignored where THP is off
	_ = syscall.Madvise(b, madvHugepage)
	return b, func() error { return syscall.Munmap(b) }, true
}
