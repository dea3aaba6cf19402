package alloctest

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"unsafe"
)

// MappingResident returns the resident bytes of the memory mapping that holds b, as the
// kernel counts them (the Rss line of its entry in /proc/self/smaps): the test of a
// release of memory pages is the kernel's own account.
func MappingResident(b []byte) (int64, error) {
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) > 0 && !strings.HasSuffix(fields[0], ":") {
			// A mapping's header: "lo-hi perms offset dev inode [path]".
			var lo, hi uintptr
			if _, err := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi); err == nil {
				in = lo <= addr && addr < hi
			}
			continue
		}
		if in && fields[0] == "Rss:" {
			var kb int64
			if _, err := fmt.Sscanf(line, "Rss: %d kB", &kb); err != nil {
				return 0, fmt.Errorf("/proc/self/smaps: %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no mapping holds %#x in /proc/self/smaps", addr)
}

// Anonymous returns the bytes of the whole pages inside b that are resident and the
// process's own (anonymous, not a file's page), as the kernel's page table has them
// (/proc/self/pagemap: present, and neither a file page nor shared): page by page, where
// /proc/self/smaps counts whole mappings, and the kernel merges neighbouring anonymous
// mappings into one.
func Anonymous(b []byte) (int64, error) {
	page := uintptr(os.Getpagesize())
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	hi := (lo + uintptr(len(b))) / page
	lo = (lo + page - 1) / page
	if hi <= lo {
		return 0, nil
	}
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 8*(hi-lo))
	if _, err := f.ReadAt(buf, int64(8*lo)); err != nil {
		return 0, fmt.Errorf("/proc/self/pagemap: %w", err)
	}
	const present, fileOrShared = 1 << 63, 1 << 61
	var n int64
	for i := 0; i < len(buf); i += 8 {
		if e := binary.LittleEndian.Uint64(buf[i:]); e&present != 0 && e&fileOrShared == 0 {
			n += int64(page)
		}
	}
	return n, nil
}
