package gpu

import (
	"errors"
	"fmt"
)

// Metal's limits on a dispatch's arguments and sizes, which a Device checks before
// anything reaches Metal: a misused Metal call does not return an error, it aborts the
// process or computes garbage. The devices check them with the functions below, and so
// do the test doubles of the backend's host logic, so that the host logic is held to
// what a Mac accepts.
const (
	MaxArgs                = 31        // argument table entries: [[buffer(0..30)]], [[threadgroup(0..30)]]
	ThreadgroupMemoryAlign = 16        // setThreadgroupMemoryLength: lengths are multiples of 16
	maxSetBytes            = 4096      // setBytes:length:atIndex: is for at most 4 KiB
	maxGridDim             = 1<<32 - 1 // threadgroups per grid dimension
)

// CheckNoCopy checks memory for newBufferWithBytesNoCopy: its start address and
// length must be multiples of the VM page size (16 KiB on Apple silicon, not 4 KiB),
// and the length must fit the device's largest buffer.
func CheckNoCopy(addr uintptr, n, pageSize, maxLen int) error {
	switch {
	case n == 0:
		return errors.New("WrapNoCopy: empty memory")
	case addr%uintptr(pageSize) != 0:
		return fmt.Errorf("WrapNoCopy: memory at %#x is not aligned to the %d-byte page size (off by %d bytes); map it with mmap or round the start down to a page", addr, pageSize, addr%uintptr(pageSize))
	case n%pageSize != 0:
		return fmt.Errorf("WrapNoCopy: length %d is not a multiple of the %d-byte page size; round it up to %d", n, pageSize, (n+pageSize-1)/pageSize*pageSize)
	case n > maxLen:
		return fmt.Errorf("WrapNoCopy: length %d exceeds the device's maximum buffer length %d; wrap it in parts", n, maxLen)
	}
	return nil
}

// CheckSizes checks a dispatch's threadgroup grid and threadgroup size against the
// pipeline's limit on threads per threadgroup.
func CheckSizes(name string, grid, threads Size, maxThreads int) error {
	for i := range 3 {
		if grid[i] < 1 || int64(grid[i]) > maxGridDim {
			return fmt.Errorf("dispatch %s: grid %v: every dimension must be in [1, 2^32-1]", name, grid)
		}
		if threads[i] < 1 {
			return fmt.Errorf("dispatch %s: threadgroup %v: every dimension must be at least 1", name, threads)
		}
	}
	if n := threads[0] * threads[1] * threads[2]; n > maxThreads {
		return fmt.Errorf("dispatch %s: threadgroup %v has %d threads, more than the pipeline's %d", name, threads, n, maxThreads)
	}
	return nil
}

// CheckArg checks one kernel argument: exactly one of a buffer, inline bytes (1 to
// 4096 of them) and a threadgroup memory length; an index below MaxArgs; a buffer offset
// within the buffer. It returns the threadgroup memory length rounded up to Metal's
// 16-byte granularity (0 for other arguments). Whether the buffer belongs to the
// device is the device's own check.
func CheckArg(name string, a Arg) (tg int, err error) {
	if a.Index < 0 || a.Index >= MaxArgs {
		return 0, fmt.Errorf("dispatch %s: argument index %d out of range [0, %d)", name, a.Index, MaxArgs)
	}
	kinds := 0
	if a.Buf != nil {
		kinds++
	}
	if a.Bytes != nil {
		kinds++
	}
	if a.Threadgroup != 0 {
		kinds++
	}
	if kinds != 1 {
		return 0, fmt.Errorf("dispatch %s: argument %d must set exactly one of Buf, Bytes and Threadgroup", name, a.Index)
	}
	switch {
	case a.Buf != nil:
		if a.Offset < 0 || a.Offset > a.Buf.Len() {
			return 0, fmt.Errorf("dispatch %s: argument %d: offset %d outside the %d-byte buffer", name, a.Index, a.Offset, a.Buf.Len())
		}
	case a.Bytes != nil:
		if a.Offset != 0 {
			return 0, fmt.Errorf("dispatch %s: argument %d: Offset is for buffers, not Bytes", name, a.Index)
		}
		if len(a.Bytes) == 0 || len(a.Bytes) > maxSetBytes {
			return 0, fmt.Errorf("dispatch %s: argument %d: %d inline bytes; setBytes takes 1 to %d", name, a.Index, len(a.Bytes), maxSetBytes)
		}
	default:
		if a.Offset != 0 || a.Threadgroup < 0 {
			return 0, fmt.Errorf("dispatch %s: argument %d: threadgroup memory length %d (offset %d)", name, a.Index, a.Threadgroup, a.Offset)
		}
		return (a.Threadgroup + ThreadgroupMemoryAlign - 1) &^ (ThreadgroupMemoryAlign - 1), nil
	}
	return 0, nil
}
