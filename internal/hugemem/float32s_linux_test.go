package hugemem

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that holds address a.
func vmFlags(t *testing.T, a uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps to read mappings' flags from: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && strings.Contains(line[:strings.IndexByte(line, ' ')], "-") {
			in = lo <= a && a < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no mapping holds %#x", a)
	return nil
}

// TestFloat32sHugePages checks that Float32s's whole huge pages are advised (the "hg"
// flag of their mapping) and that a plain slice of the same size is not, and that the
// values are zeroed and usable.
func TestFloat32sHugePages(t *testing.T) {
	const n = 3 * HugePage / 4 // three huge pages of floats: at least two whole ones inside
	inside := func(b []float32) uintptr {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return (p+HugePage-1)&^(HugePage-1) + 4096
	}
	// Where advice leaves no mark (qemu-user takes madvise as a no-op; a kernel without
	// transparent huge pages), there is nothing to check.
	if m, free, ok := Mapping(2 * HugePage); ok {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
		marked := slices.Contains(vmFlags(t, (p+HugePage-1)&^(HugePage-1)), "hg")
		require.NoError(t, free())
		if !marked {
			t.Skip("MADV_HUGEPAGE leaves no mark in /proc/self/smaps here (qemu-user, or no transparent huge pages)")
		}
	}
	plain := make([]float32, n)
	require.NotContains(t, vmFlags(t, inside(plain)), "hg", "a plain slice must not be advised (the check would pass for anything)")
	b := Float32s(n)
	require.Len(t, b, n)
	for i, v := range b {
		if v != 0 {
			t.Fatalf("value %d is %v, want zeroed memory", i, v)
		}
	}
	require.Contains(t, vmFlags(t, inside(b)), "hg", "Float32s's whole huge pages are advised")
	for i := range b {
		b[i] = float32(i)
	}
	require.Equal(t, float32(n-1), b[n-1])
	require.Len(t, Float32s(10), 10)
	require.Empty(t, Float32s(0))
}
