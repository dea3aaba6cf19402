//go:build linux || darwin

package gguf

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func mmapFile(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
}

func munmap(b []byte) error { return syscall.Munmap(b) }

// dropPages unmaps the whole pages inside b from the process (madvise MADV_DONTNEED): for
// a read-only file mapping the data stay in the file, and a later read faults them back
// in from it. (Linux drops them at once; Darwin takes it as a hint and reclaims them
// first when memory is short.)
func dropPages(b []byte) error {
	page := os.Getpagesize()
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := int((uintptr(page) - start%uintptr(page)) % uintptr(page))
	hi := lo + (len(b)-lo)/page*page
	if len(b) <= lo || hi <= lo {
		return nil
	}
	return unix.Madvise(b[lo:hi], unix.MADV_DONTNEED)
}
