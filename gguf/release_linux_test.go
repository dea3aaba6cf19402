package gguf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bonsai-go/sdk/internal/alloctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mappingRss(t *testing.T, b []byte) int64 {
	t.Helper()
	n, err := alloctest.MappingResident(b)
	require.NoError(t, err)
	return n
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
