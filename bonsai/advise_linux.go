package bonsai

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// adviseWillNeed tells the kernel that the pages of b will be read soon, so that it
// reads them ahead (madvise MADV_WILLNEED). It is a hint: errors are ignored.
func adviseWillNeed(b []byte) {
	if len(b) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	base := start &^ (page - 1)
	syscall.Syscall(syscall.SYS_MADVISE, base, start-base+uintptr(len(b)), syscall.MADV_WILLNEED)
	runtime.KeepAlive(b)
}
