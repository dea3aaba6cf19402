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
	lo, hi := wholePages(b)
	if hi <= lo {
		return nil
	}
	return unix.Madvise(b[lo:hi], unix.MADV_DONTNEED)
}

// remapPages returns how to give back the whole pages inside a part b of data, an
// anonymous mapping the whole of fh was read into (data[0] is the file's first byte, and
// page-aligned): they are replaced in place (MAP_FIXED) by a private read-only mapping of
// the same bytes of the file, so their memory leaves the process and a later read faults
// the same bytes in from the file.
func remapPages(fh *os.File, data []byte) func(b []byte) error {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	return func(b []byte) error {
		lo, hi := wholePages(b)
		if hi <= lo {
			return nil
		}
		at := unsafe.Pointer(&b[lo])
		_, err := unix.MmapPtr(int(fh.Fd()), int64(uintptr(at)-base), at, uintptr(hi-lo), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_FIXED)
		return err
	}
}

// wholePages returns the bounds b[lo:hi] of the whole pages inside b (hi ≤ lo: none).
func wholePages(b []byte) (lo, hi int) {
	page := os.Getpagesize()
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo = int((uintptr(page) - start%uintptr(page)) % uintptr(page))
	if len(b) <= lo {
		return 0, 0
	}
	return lo, lo + (len(b)-lo)/page*page
}
