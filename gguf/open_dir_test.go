package gguf_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
)

// A directory is refused as one, mapped or read, with its path in the message (mapping
// one used to fail with "mmap: no such device").
func TestOpenDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, mmap := range []bool{true, false} {
		f, err := gguf.Open(dir, gguf.WithMmap(mmap))
		if err == nil {
			f.Close()
			t.Fatalf("mmap %v: Open(%s) succeeded", mmap, dir)
		}
		if want := "gguf: " + dir + " is a directory, not a GGUF file"; err.Error() != want {
			t.Errorf("mmap %v: %q, want %q", mmap, err, want)
		}
		if !errors.Is(err, syscall.EISDIR) {
			t.Errorf("mmap %v: %v is not syscall.EISDIR", mmap, err)
		}
	}
}
