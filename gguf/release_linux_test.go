package gguf

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

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
	require.NoError(t, f.Close())
	require.NoError(t, f.Release(w), "Release after Close does nothing")
}

// TestReleaseReadIntoMemory checks that Release gives back the memory of a file read into
// memory (WithMmap(false)): the tensor's whole pages stop being the process's anonymous
// memory, as the kernel counts it, and read back the same bytes from the file; the bytes
// around them (the header, the tensor's partial pages) stay; data Parse was given are
// left alone.
func TestReleaseReadIntoMemory(t *testing.T) {
	const size = 16 << 20
	orig := make([]byte, size)
	for i := range orig {
		orig[i] = byte(i*13 + i>>11)
	}
	image := writeFile(t, []KV{{"general.name", MustValue("release")}}, []tensorBlob{
		{TensorInfo{Name: "w", Type: TypeI8, Shape: []int64{size}}, orig},
	})
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, os.WriteFile(path, image, 0o644))
	page := int64(os.Getpagesize())

	f, err := Open(path, WithMmap(false))
	require.NoError(t, err)
	defer f.Close()
	require.False(t, f.Mapped())
	w, err := f.TensorData("w")
	require.NoError(t, err)
	require.NotZero(t, uintptr(unsafe.Pointer(&w[0]))%uintptr(page), "the tensor starts inside a page, after the header")
	before, err := alloctest.Anonymous(w)
	require.NoError(t, err)
	require.GreaterOrEqual(t, before, int64(size)-page, "the file was read into anonymous memory (the tensor's whole pages)")

	require.NoError(t, f.Release(w[:size/2]))
	half, err := alloctest.Anonymous(w)
	require.NoError(t, err)
	assert.InDelta(t, before-size/2, half, float64(2*page), "Release gave back the first half's whole pages (anonymous %d → %d)", before, half)
	require.NoError(t, f.Release(w))
	after, err := alloctest.Anonymous(w)
	require.NoError(t, err)
	assert.Zero(t, after, "Release gave back the tensor's whole pages (anonymous %d → %d)", before, after)
	assert.Equal(t, orig, w, "released bytes read back from the file")
	reread, err := alloctest.Anonymous(w)
	require.NoError(t, err)
	assert.Zero(t, reread, "reading released bytes maps the file's pages, not new memory")
	require.NoError(t, f.Release(w), "a second Release of the same bytes")
	assert.Equal(t, orig, w)
	again, err := f.TensorData("w")
	require.NoError(t, err)
	assert.Equal(t, orig, again, "TensorData after a Release")

	// Bytes that are not the file's, and data Parse was given: nothing to do.
	require.NoError(t, f.Release(append([]byte(nil), w[:page]...)))
	pf, err := Parse(image)
	require.NoError(t, err)
	pw, err := pf.TensorData("w")
	require.NoError(t, err)
	require.NoError(t, pf.Release(pw))
	assert.Equal(t, orig, pw, "Release leaves data Parse was given alone")
	require.NoError(t, f.Close())
	require.NoError(t, f.Release(w), "Release after Close does nothing")
}
