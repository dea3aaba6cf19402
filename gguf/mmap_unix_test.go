//go:build linux || darwin

package gguf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenMapsFile checks that Open, by default, maps the file rather than
// copying it: a byte changed in the file after Open shows through a tensor
// view of the mapped File (a MAP_SHARED mapping sees writes made with
// write(2) to the same file), and not through a view of a File opened with
// WithMmap(false), which read the file into memory.
func TestOpenMapsFile(t *testing.T) {
	orig := seq(128)
	image := writeFile(t, []KV{{"general.name", MustValue("mapped")}}, []tensorBlob{
		{TensorInfo{Name: "a", Type: TypeF32, Shape: []int64{4}}, f32bytes(1, 2, 3, 4)},
		{TensorInfo{Name: "w", Type: TypeI8, Shape: []int64{128}}, orig},
	})
	path := filepath.Join(t.TempDir(), "m.gguf")
	require.NoError(t, os.WriteFile(path, image, 0o644))

	mapped, err := Open(path)
	require.NoError(t, err)
	defer mapped.Close()
	copied, err := Open(path, WithMmap(false))
	require.NoError(t, err)
	defer copied.Close()

	assert.True(t, mapped.Mapped(), "Open maps by default")
	assert.False(t, copied.Mapped(), "WithMmap(false) reads into memory")
	parsed, err := Parse(image)
	require.NoError(t, err)
	assert.False(t, parsed.Mapped(), "Parse's data are the caller's")

	mv, err := mapped.TensorData("w")
	require.NoError(t, err)
	cv, err := copied.TensorData("w")
	require.NoError(t, err)
	require.Equal(t, orig, mv)
	require.Equal(t, orig, cv)

	info, ok := mapped.Tensor("w")
	require.True(t, ok)
	const at = 17
	off := mapped.DataOffset + int64(info.Offset) + at
	require.Equal(t, orig[at], image[off], "offset computed from the File locates the tensor's byte")
	changed := ^orig[at]

	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fh.WriteAt([]byte{changed}, off)
	require.NoError(t, err)
	require.NoError(t, fh.Close())

	assert.Equal(t, changed, mv[at], "the mapped view sees the write to the file")
	assert.Equal(t, orig[at], cv[at], "the in-memory view keeps the bytes read at Open")
	for i := range orig {
		if i != at {
			require.Equal(t, orig[i], mv[i], "mapped byte %d", i)
		}
	}
	// TensorData called again returns the same mapping, not a copy.
	again, err := mapped.TensorData("w")
	require.NoError(t, err)
	assert.Equal(t, changed, again[at])
	assert.Same(t, &mv[0], &again[0], "TensorData returns a view, not a copy")
}
