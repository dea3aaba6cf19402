package gguf

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mappingRss returns the resident bytes of the mapping holding b, read from
// /proc/self/smaps (the kernel's own account of the process's pages).
func mappingRss(t *testing.T, b []byte) int64 {
	t.Helper()
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			var kb int64
			_, err := fmt.Sscanf(line, "Rss: %d kB", &kb)
			require.NoError(t, err)
			return kb << 10
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("no mapping holds %#x in /proc/self/smaps", addr)
	return 0
}

// TestReleaseDropsPages checks that Release takes a mapped tensor's pages out of the
// process's resident memory, as the kernel counts it, and that the bytes read back the
// same afterwards (faulted in again from the file); and that on a file read into memory
// it leaves the bytes alone.
func TestReleaseDropsPages(t *testing.T) {
	const size = 4 << 20
	orig := make([]byte, size)
	for i := range orig {
		orig[i] = byte(i*7 + i>>9)
	}
	image := writeFile(t, []KV{{"general.name", MustValue("release")}}, []tensorBlob{
		{TensorInfo{Name: "w", Type: TypeI8, Shape: []int64{size}}, orig},
	})
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, os.WriteFile(path, image, 0o644))

	f, err := Open(path)
	require.NoError(t, err)
	defer f.Close()
	require.True(t, f.Mapped())
	w, err := f.TensorData("w")
	require.NoError(t, err)
	require.Equal(t, orig, w, "every page touched")
	before := mappingRss(t, w)
	require.GreaterOrEqual(t, before, int64(size), "the tensor's pages are resident once read")

	require.NoError(t, f.Release(w))
	after := mappingRss(t, w)
	page := int64(os.Getpagesize())
	assert.LessOrEqual(t, after, before-size+2*page, "Release dropped the tensor's whole pages (Rss %d → %d)", before, after)
	assert.Equal(t, orig, w, "released bytes read back from the file")

	// Bytes that are not the file's (a copy) and a closed file: nothing to do.
	require.NoError(t, f.Release(append([]byte(nil), w[:page]...)))
	copied, err := Open(path, WithMmap(false))
	require.NoError(t, err)
	cw, err := copied.TensorData("w")
	require.NoError(t, err)
	require.NoError(t, copied.Release(cw))
	assert.Equal(t, orig, cw, "Release leaves data read into memory alone")
	require.NoError(t, copied.Close())
	require.NoError(t, f.Close())
	require.NoError(t, f.Release(w), "Release after Close does nothing")
}
