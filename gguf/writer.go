package gguf

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// A WriterOption configures NewWriter.
type WriterOption func(*writerConfig)

type writerConfig struct {
	version uint32
}

// WithVersion sets the GGUF version written, 2 or 3 (the default). The two
// encode a little-endian file identically; only the version field differs.
func WithVersion(v uint32) WriterOption {
	return func(c *writerConfig) { c.version = v }
}

// A Writer writes a GGUF file as a stream: the header first, then each
// tensor's data in declaration order, so a file of any size is written
// without holding it in memory.
//
// The layout is the canonical one llama.cpp writes and requires: tensors
// in declaration order, each starting at a multiple of the alignment, each
// followed by zero padding to the alignment (the last one included).
type Writer struct {
	w       io.Writer
	tensors []TensorInfo
	sizes   []int64
	align   int64

	next   int           // index of the next tensor to begin
	cur    *tensorWriter // the tensor being streamed, if any
	err    error         // sticky error from w
	closed bool
}

// NewWriter validates kv and tensors, computes the tensors' offsets and
// writes the header to w. The offsets in tensors are ignored: each tensor
// is placed after the previous one, padded to the alignment, which is the
// value of a "general.alignment" key in kv (a uint32 power of two) or 32.
// The tensors' data must then be written, in the same order, with
// WriteTensor or BeginTensor, and the Writer closed.
//
// A tensor whose type this package does not know is refused with an error
// wrapping ErrUnknownType, even though Open and Parse accept one: without
// the type's block size the Writer cannot know the tensor's size in bytes,
// so it can neither place the tensors after it nor check the data written.
func NewWriter(w io.Writer, kv []KV, tensors []TensorInfo, opts ...WriterOption) (*Writer, error) {
	cfg := writerConfig{version: maxVersion}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.version < minVersion || cfg.version > maxVersion {
		return nil, newErr(ErrVersion, "gguf: cannot write version %d (want %d or %d)", cfg.version, minVersion, maxVersion)
	}

	align := uint64(defaultAlignment)
	hdrLen := 4 + 4 + 8 + 8
	seen := make(map[string]int, len(kv))
	for i, e := range kv {
		if j, dup := seen[e.Key]; dup {
			return nil, newErr(ErrFormat, "gguf: key %d %q: duplicate key (first is key %d)", i, e.Key, j)
		}
		seen[e.Key] = i
		if e.Key == alignmentKey {
			v := e.Value
			if v.typ != ValueUint32 {
				return nil, newErr(ErrFormat, "gguf: key %q: want uint32, have %s", e.Key, describe(v))
			}
			a := v.bits
			if a == 0 || a&(a-1) != 0 || a > math.MaxInt32 {
				return nil, newErr(ErrFormat, "gguf: key %q: alignment %d is not a power of two below 2^31", e.Key, a)
			}
			align = a
		}
		hdrLen += 8 + len(e.Key) + 4 + encodedLen(e.Value)
	}

	wr := &Writer{
		w:       w,
		tensors: make([]TensorInfo, len(tensors)),
		sizes:   make([]int64, len(tensors)),
		align:   int64(align),
	}
	names := make(map[string]int, len(tensors))
	var off uint64
	for i, t := range tensors {
		if j, dup := names[t.Name]; dup {
			return nil, newErr(ErrFormat, "gguf: tensor %d %q: duplicate tensor name (first is tensor %d)", i, t.Name, j)
		}
		names[t.Name] = i
		size, err := tensorSize(t.Type, t.Shape)
		if err != nil {
			return nil, &gerr{msg: fmt.Sprintf("gguf: tensor %d %q: %v", i, t.Name, err), base: errors.Unwrap(err)}
		}
		t.Shape = slices.Clone(t.Shape)
		t.Offset = off
		wr.tensors[i] = t
		wr.sizes[i] = size
		padded, ok := alignUp(uint64(size), align)
		if !ok || padded > math.MaxInt64-off {
			return nil, newErr(ErrFormat, "gguf: tensor %d %q: data section size overflows int64", i, t.Name)
		}
		off += padded
		hdrLen += 8 + len(t.Name) + 4 + 8*len(t.Shape) + 4 + 8
	}

	buf := make([]byte, 0, hdrLen)
	buf = le.AppendUint32(buf, magic)
	buf = le.AppendUint32(buf, cfg.version)
	buf = le.AppendUint64(buf, uint64(len(tensors)))
	buf = le.AppendUint64(buf, uint64(len(kv)))
	for _, e := range kv {
		buf = appendKV(buf, e)
	}
	for _, t := range wr.tensors {
		buf = appendTensorInfo(buf, t)
	}
	if err := wr.write(buf); err != nil {
		return nil, err
	}
	if err := wr.pad(int64(len(buf))); err != nil {
		return nil, err
	}
	return wr, nil
}

// Tensors returns the tensor infos with the offsets the Writer computed.
func (w *Writer) Tensors() []TensorInfo {
	out := slices.Clone(w.tensors)
	for i := range out {
		out[i].Shape = slices.Clone(out[i].Shape)
	}
	return out
}

func (w *Writer) write(p []byte) error {
	if w.err != nil {
		return w.err
	}
	if _, err := w.w.Write(p); err != nil {
		w.err = fmt.Errorf("gguf: write: %w", err)
		return w.err
	}
	return nil
}

var zeros [4096]byte

// pad writes the zero padding that follows a tensor of size bytes.
func (w *Writer) pad(size int64) error {
	n := (w.align - size%w.align) % w.align
	for n > 0 {
		k := min(n, int64(len(zeros)))
		if err := w.write(zeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// finish completes the tensor being streamed, if any: it must have
// received all its bytes, and gets its padding.
func (w *Writer) finish() error {
	c := w.cur
	if c == nil {
		return nil
	}
	if c.left > 0 {
		size := w.sizes[c.idx]
		return newErr(ErrFormat, "gguf: tensor %q incomplete: %d of %d bytes written", w.tensors[c.idx].Name, size-c.left, size)
	}
	if err := w.pad(w.sizes[c.idx]); err != nil {
		return err
	}
	w.cur = nil
	w.next++
	return nil
}

// begin checks that name is the next tensor and returns its index.
func (w *Writer) begin(name string) (int, error) {
	if w.closed {
		return 0, newErr(ErrClosed, "gguf: tensor %q: writer closed", name)
	}
	if w.err != nil {
		return 0, w.err
	}
	if err := w.finish(); err != nil {
		return 0, err
	}
	if w.next >= len(w.tensors) {
		return 0, newErr(ErrTensorNotFound, "gguf: tensor %q: all %d declared tensors are written", name, len(w.tensors))
	}
	if want := w.tensors[w.next].Name; name != want {
		return 0, newErr(ErrTensorNotFound, "gguf: tensor %q: out of order, next is tensor %d %q", name, w.next, want)
	}
	return w.next, nil
}

// WriteTensor writes the whole data of the named tensor, which must be the
// next one in declaration order, and its padding. len(data) must be the
// tensor's size.
func (w *Writer) WriteTensor(name string, data []byte) error {
	i, err := w.begin(name)
	if err != nil {
		return err
	}
	if int64(len(data)) != w.sizes[i] {
		return newErr(ErrFormat, "gguf: tensor %q: %d bytes of data, want %d", name, len(data), w.sizes[i])
	}
	if err := w.write(data); err != nil {
		return err
	}
	if err := w.pad(w.sizes[i]); err != nil {
		return err
	}
	w.next++
	return nil
}

// BeginTensor starts streaming the data of the named tensor, which must be
// the next one in declaration order. The returned writer accepts exactly
// the tensor's size in bytes, in as many writes as convenient; a write
// beyond it fails and writes nothing. The next BeginTensor, WriteTensor or
// Close checks that the tensor is complete.
func (w *Writer) BeginTensor(name string) (io.Writer, error) {
	i, err := w.begin(name)
	if err != nil {
		return nil, err
	}
	w.cur = &tensorWriter{w: w, idx: i, left: w.sizes[i]}
	return w.cur, nil
}

// Close checks that every tensor was written and completes the file. It
// does not close the underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	if w.err != nil {
		return w.err
	}
	if err := w.finish(); err != nil {
		return err
	}
	if w.next < len(w.tensors) {
		return newErr(ErrFormat, "gguf: close: %d of %d tensors unwritten, next is %q",
			len(w.tensors)-w.next, len(w.tensors), w.tensors[w.next].Name)
	}
	w.closed = true
	return nil
}

type tensorWriter struct {
	w    *Writer
	idx  int
	left int64
}

func (t *tensorWriter) Write(p []byte) (int, error) {
	w := t.w
	name := w.tensors[t.idx].Name
	if w.cur != t {
		return 0, newErr(ErrFormat, "gguf: tensor %q: write after the tensor was finished", name)
	}
	if int64(len(p)) > t.left {
		return 0, newErr(ErrFormat, "gguf: tensor %q: write of %d bytes exceeds the %d bytes left of its %d",
			name, len(p), t.left, w.sizes[t.idx])
	}
	if err := w.write(p); err != nil {
		return 0, err
	}
	t.left -= int64(len(p))
	return len(p), nil
}
