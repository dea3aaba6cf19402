package hugemem

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAlloc(t *testing.T) {
	for _, size := range []int{1, 4095, 4 << 20, 5<<20 + 3} {
		b, free := Alloc(size)
		require.Len(t, b, size)
		for i, v := range b {
			if v != 0 {
				t.Fatalf("size %d: byte %d is %d, want zeroed memory", size, i, v)
			}
		}
		for i := range b {
			b[i] = byte(i)
		}
		assert.Equal(t, byte((size-1)%256), b[size-1])
		assert.Zero(t, uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64, "size %d: 64-byte aligned", size)
		require.NoError(t, free())
	}
	b, free := Alloc(0)
	assert.Empty(t, b)
	assert.NoError(t, free())
}
