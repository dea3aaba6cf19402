package gguf

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"

	"github.com/bonsai-go/sdk/internal/hugemem"
)

// An OpenOption configures Open.
type OpenOption func(*openConfig)

type openConfig struct {
	mmap bool
}

// WithMmap chooses whether Open memory-maps the file (the default, where
// the platform supports it) or reads it into memory. Mapping makes opening
// a multi-gigabyte model cost only the pages actually touched.
func WithMmap(on bool) OpenOption {
	return func(c *openConfig) { c.mmap = on }
}

// errNoMmap is returned by mmapFile on platforms without a mapping
// implementation; Open then reads the file instead.
var errNoMmap = errors.New("gguf: memory mapping not supported on this platform")

// dirError is Open's error for a directory: mapping one fails with a message that
// names the device ("mmap: no such device"), not the mistake.
type dirError struct{ path string }

func (e *dirError) Error() string { return "gguf: " + e.path + " is a directory, not a GGUF file" }

// Unwrap makes the error syscall.EISDIR, as os.ReadFile's on a directory.
func (e *dirError) Unwrap() error { return syscall.EISDIR }

// Open opens and parses the GGUF file at path. On Linux and Darwin the file
// is memory-mapped read-only, so tensor data are views of the mapping;
// elsewhere, or with WithMmap(false), it is read into memory. Errors about
// the file's contents name path; a directory is refused as one (syscall.EISDIR).
//
// The File must be closed to release the mapping.
func Open(path string, opts ...OpenOption) (*File, error) {
	cfg := openConfig{mmap: true}
	for _, o := range opts {
		o(&cfg)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	keep := false // whether the File keeps fh, to map released pages from
	defer func() {
		if !keep {
			fh.Close()
		}
	}()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if st.IsDir() {
		return nil, &dirError{path}
	}
	size := st.Size()
	if size < 0 || uint64(size) > math.MaxInt {
		return nil, fmt.Errorf("gguf: %s: file of %d bytes too large for this platform", path, size)
	}

	var (
		data   []byte
		unmap  func([]byte) error
		drop   func([]byte) error
		mapped bool
	)
	if cfg.mmap && size > 0 {
		data, err = mmapFile(fh, int(size))
		switch {
		case err == nil:
			unmap, drop, mapped = munmap, dropPages, true
		case !errors.Is(err, errNoMmap):
			return nil, fmt.Errorf("gguf: %s: mmap: %w", path, err)
		}
	}
	if unmap == nil {
		// Read into an anonymous mapping where there is one: its released pages can be
		// mapped from the file in place (remapPages), so that a backend keeping the
		// weights in a layout of its own gives their memory back here too.
		buf, free, ok := hugemem.Mapping(int(size))
		if !ok {
			buf, free = hugemem.Alloc(int(size))
		}
		data, unmap = buf, func([]byte) error { return free() }
		if _, err := io.ReadFull(fh, data); err != nil {
			free()
			return nil, fmt.Errorf("gguf: %s: read: %w", path, err)
		}
		if ok {
			drop = remapPages(fh, data)
			keep = drop != nil
		}
	}

	f, err := parse(data, path)
	if err != nil {
		if unmap != nil {
			unmap(data)
		}
		keep = false
		return nil, err
	}
	f.unmap, f.drop, f.mapped = unmap, drop, mapped
	if keep {
		f.fh = fh
	}
	return f, nil
}
