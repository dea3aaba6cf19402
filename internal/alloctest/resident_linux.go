package alloctest

import (
	"bufio"
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
