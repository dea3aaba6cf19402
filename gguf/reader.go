package gguf

import (
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
	"strconv"
	"sync"
	"unsafe"
)

// Minimum encoded sizes, used to bound counts by the bytes that remain
// before anything is allocated for them.
const (
	minKVSize     = 8 + 4 + 1     // empty key, type, one-byte value
	minTensorSize = 8 + 4 + 4 + 8 // empty name, n_dims 0, type, offset
)

// preallocMax caps the capacity allocated from a count read from the file
// before the items it counts have been read.
const preallocMax = 1 << 12

// Versions read and written. Version 1 had 32-bit counts; 2 made them
// 64-bit; 3 added big-endian files, which this package refuses, and is
// otherwise the same as 2.
const (
	minVersion = 2
	maxVersion = 3
)

// A File is a parsed GGUF file: its metadata, its tensor infos and a view
// of its tensor data.
//
// The exported fields describe the file as read; changing them does not
// change what TensorData returns. A File is safe for concurrent use.
type File struct {
	Version    uint32       // the format version: 2 or 3
	KV         []KV         // in file order
	Tensors    []TensorInfo // in file order
	Alignment  int          // of the data section and of every tensor's offset
	DataOffset int64        // absolute offset of the data section

	name    string // for error messages; "" for Parse
	size    int64
	keys    map[string]int // index into KV
	tensors map[string]int // index into Tensors and spans
	spans   []span         // private copy of where each tensor's data lies

	mu     sync.RWMutex
	data   []byte
	closed bool
	unmap  func([]byte) error
	drop   func([]byte) error // gives the whole pages of a part of data back (Release); nil: cannot
	fh     *os.File           // the file read into data, kept for drop; nil for a mapping or Parse
	mapped bool               // data is a read-only shared mapping of the file
}

// A span locates a tensor's bytes in the file; size is -1 for an unknown
// type.
type span struct {
	off  int64 // absolute
	size int64
}

// Parse parses a GGUF image held in memory. Tensor data returned by
// TensorData are views into data, which must not change while the File is
// in use. Strings in the metadata are copies.
func Parse(data []byte) (*File, error) {
	return parse(data, "")
}

// decoder reads the header. Errors name the item being read: kind and idx
// ("key", 3) and, once read, its name.
type decoder struct {
	data []byte
	pos  int
	file string

	kind string
	idx  uint64
	name string
	has  bool // name has been read
}

func (d *decoder) item() string {
	if d.kind == "" {
		return "header"
	}
	s := d.kind + " " + strconv.FormatUint(d.idx, 10)
	if d.has {
		s += " " + strconv.Quote(d.name)
	}
	return s
}

func (d *decoder) errAt(off int, format string, args ...any) error {
	return &formatError{file: d.file, off: int64(off), item: d.item(), msg: fmt.Sprintf(format, args...), base: ErrFormat}
}

func (d *decoder) rem() int { return len(d.data) - d.pos }

// need checks that n bytes remain for the field what.
func (d *decoder) need(n int, what string) error {
	if d.rem() < n {
		return d.errAt(d.pos, "%s: unexpected end of data (need %d bytes, have %d)", what, n, d.rem())
	}
	return nil
}

func (d *decoder) u32(what string) (uint32, error) {
	if err := d.need(4, what); err != nil {
		return 0, err
	}
	v := le.Uint32(d.data[d.pos:])
	d.pos += 4
	return v, nil
}

func (d *decoder) u64(what string) (uint64, error) {
	if err := d.need(8, what); err != nil {
		return 0, err
	}
	v := le.Uint64(d.data[d.pos:])
	d.pos += 8
	return v, nil
}

// bytes reads a GGUF string's bytes without copying them; what names the
// string in errors.
func (d *decoder) bytes(what string) ([]byte, error) {
	start := d.pos
	if d.rem() < 8 {
		return nil, d.errAt(d.pos, "%s length: unexpected end of data (need 8 bytes, have %d)", what, d.rem())
	}
	n := le.Uint64(d.data[d.pos:])
	d.pos += 8
	if n > uint64(d.rem()) {
		return nil, d.errAt(start, "%s length %d exceeds the %d bytes remaining", what, n, d.rem())
	}
	b := d.data[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return b, nil
}

func parse(data []byte, name string) (*File, error) {
	d := &decoder{data: data, file: name}
	f := &File{name: name, size: int64(len(data)), data: data}

	m, err := d.u32("magic")
	if err != nil {
		return nil, err
	}
	if m != magic {
		return nil, d.errAt(0, "not a GGUF file (magic %q)", data[:4])
	}
	if f.Version, err = d.u32("version"); err != nil {
		return nil, err
	}
	if err := checkVersion(d, f.Version); err != nil {
		return nil, err
	}
	countsAt := d.pos
	nTensors, err := d.u64("tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := d.u64("kv count")
	if err != nil {
		return nil, err
	}
	rem := uint64(d.rem())
	if nKV > rem/minKVSize || nTensors > (rem-nKV*minKVSize)/minTensorSize {
		return nil, d.errAt(countsAt, "%d tensors and %d keys cannot fit in the %d bytes remaining", nTensors, nKV, rem)
	}

	f.Alignment = defaultAlignment
	// Counts are only bounds until the items are read: allocate for what a
	// real file holds and let a larger (or lying) count grow the slices as
	// items actually arrive.
	f.KV = make([]KV, 0, min(nKV, preallocMax))
	f.keys = make(map[string]int, min(nKV, preallocMax))
	d.kind = "key"
	for i := range nKV {
		d.idx, d.has = i, false
		kvAt := d.pos
		kb, err := d.bytes("key")
		if err != nil {
			return nil, err
		}
		key := string(kb)
		d.name, d.has = key, true
		if j, dup := f.keys[key]; dup {
			return nil, d.errAt(kvAt, "duplicate key (first is key %d)", j)
		}
		typAt := d.pos
		t, err := d.u32("value type")
		if err != nil {
			return nil, err
		}
		v, err := d.value(ValueType(t), typAt, 0)
		if err != nil {
			return nil, err
		}
		if key == alignmentKey {
			if v.typ != ValueUint32 {
				return nil, d.errAt(typAt, "want uint32, have %s", describe(v))
			}
			a := uint32(v.bits)
			if a == 0 || a&(a-1) != 0 {
				return nil, d.errAt(typAt, "alignment %d is not a power of two", a)
			}
			if uint64(a) > math.MaxInt32 {
				return nil, d.errAt(typAt, "alignment %d is too large", a)
			}
			f.Alignment = int(a)
		}
		f.keys[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}

	align := uint64(f.Alignment)
	nPre := min(nTensors, preallocMax)
	infoAt := make([]int, 0, nPre)
	f.Tensors = make([]TensorInfo, 0, nPre)
	f.spans = make([]span, 0, nPre)
	f.tensors = make(map[string]int, nPre)
	d.kind = "tensor"
	for i := range nTensors {
		d.idx, d.has = i, false
		at := d.pos
		nb, err := d.bytes("name")
		if err != nil {
			return nil, err
		}
		tname := string(nb)
		d.name, d.has = tname, true
		if j, dup := f.tensors[tname]; dup {
			return nil, d.errAt(at, "duplicate tensor name (first is tensor %d)", j)
		}
		ndAt := d.pos
		nd, err := d.u32("n_dims")
		if err != nil {
			return nil, err
		}
		if nd > maxDims {
			return nil, d.errAt(ndAt, "%d dimensions, more than %d", nd, maxDims)
		}
		var shape []int64
		if nd > 0 {
			shape = make([]int64, nd)
		}
		for j := range shape {
			if d.rem() < 8 {
				return nil, d.errAt(d.pos, "dimension %d: unexpected end of data (need 8 bytes, have %d)", j, d.rem())
			}
			u := le.Uint64(d.data[d.pos:])
			if u > math.MaxInt64 {
				return nil, d.errAt(d.pos, "dimension %d is negative (%d)", j, int64(u))
			}
			shape[j] = int64(u)
			d.pos += 8
		}
		if _, err := shapeElements(shape); err != nil {
			return nil, d.errAt(ndAt, "%v", err)
		}
		typAt := d.pos
		t, err := d.u32("type")
		if err != nil {
			return nil, err
		}
		typ := TensorType(t)
		size := int64(-1)
		if typ.Known() {
			if size, err = tensorSize(typ, shape); err != nil {
				return nil, d.errAt(typAt, "%v", err)
			}
		}
		offAt := d.pos
		off, err := d.u64("offset")
		if err != nil {
			return nil, err
		}
		if off%align != 0 {
			return nil, d.errAt(offAt, "data offset %d is not a multiple of the alignment %d", off, align)
		}
		f.tensors[tname] = len(f.Tensors)
		f.Tensors = append(f.Tensors, TensorInfo{Name: tname, Type: typ, Shape: shape, Offset: off})
		f.spans = append(f.spans, span{off: -1, size: size})
		infoAt = append(infoAt, at)
	}
	d.kind = ""

	end := uint64(d.pos)
	dataOff, _ := alignUp(end, align) // end < 2^63, align ≤ 2^31
	f.DataOffset = int64(dataOff)
	if len(f.Tensors) == 0 {
		// A file without tensors needs no data section; writers pad the
		// header anyway, but a reader has nothing to check.
		return f, nil
	}
	if dataOff > uint64(len(data)) {
		return nil, d.errAt(int(end), "data section at %d beyond end of file (size %d)", dataOff, len(data))
	}
	dataSize := uint64(len(data)) - dataOff
	for i := range f.Tensors {
		t := &f.Tensors[i]
		s := &f.spans[i]
		d.kind, d.idx, d.name, d.has = "tensor", uint64(i), t.Name, true
		if t.Offset > dataSize || (s.size >= 0 && uint64(s.size) > dataSize-t.Offset) {
			return nil, d.errAt(infoAt[i], "%s beyond end of file (size %d)", extent(dataOff, t.Offset, s.size), len(data))
		}
		s.off = int64(dataOff + t.Offset)
	}
	if err := checkOverlap(d, f, infoAt); err != nil {
		return nil, err
	}
	return f, nil
}

// extent describes where a tensor's data lie for an error message:
// "data [x, y)" in absolute file offsets, or just the start for an unknown
// size, or the relative offset when the absolute one overflows.
func extent(dataOff, off uint64, size int64) string {
	x, c := bits.Add64(dataOff, off, 0)
	if c != 0 {
		return fmt.Sprintf("data offset %d (relative to the data section at %d)", off, dataOff)
	}
	if size < 0 {
		return fmt.Sprintf("data offset %d", x)
	}
	y, c := bits.Add64(x, uint64(size), 0)
	if c != 0 {
		return fmt.Sprintf("data offset %d", x)
	}
	return fmt.Sprintf("data [%d, %d)", x, y)
}

func checkVersion(d *decoder, v uint32) error {
	verr := func(format string, args ...any) error {
		return &formatError{file: d.file, off: 4, item: "header", msg: fmt.Sprintf(format, args...), base: ErrVersion}
	}
	switch {
	case v&0xFFFF == 0 && v != 0:
		return verr("version field 0x%08x looks byte-swapped: big-endian GGUF files are not supported", v)
	case v == 1:
		return verr("version 1 is not supported (it has 32-bit counts; convert the file to version 3)")
	case v < minVersion || v > maxVersion:
		return verr("version %d is not supported (want %d or %d)", v, minVersion, maxVersion)
	}
	return nil
}

// checkOverlap reports two tensors whose data share bytes. Tensors of
// unknown type have no known extent and empty tensors have none, so
// neither takes part.
func checkOverlap(d *decoder, f *File, infoAt []int) error {
	order := make([]int, 0, len(f.spans))
	sorted := true
	for i, s := range f.spans {
		if s.size <= 0 {
			continue
		}
		if len(order) > 0 && f.spans[order[len(order)-1]].off > s.off {
			sorted = false
		}
		order = append(order, i)
	}
	if !sorted {
		slices.SortStableFunc(order, func(a, b int) int {
			return cmpInt64(f.spans[a].off, f.spans[b].off)
		})
	}
	for k := 1; k < len(order); k++ {
		p, c := order[k-1], order[k]
		ps, cs := f.spans[p], f.spans[c]
		if cs.off < ps.off+ps.size {
			d.kind, d.idx, d.name, d.has = "tensor", uint64(c), f.Tensors[c].Name, true
			return d.errAt(infoAt[c], "data [%d, %d) overlaps tensor %d %q [%d, %d)",
				cs.off, cs.off+cs.size, p, f.Tensors[p].Name, ps.off, ps.off+ps.size)
		}
	}
	return nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// value reads a value of type t; at is the offset of its type id.
func (d *decoder) value(t ValueType, at int, depth int) (Value, error) {
	if !t.valid() {
		return Value{}, d.errAt(at, "invalid value type %d", uint32(t))
	}
	switch t {
	case ValueString:
		b, err := d.bytes("string")
		if err != nil {
			return Value{}, err
		}
		return Value{typ: ValueString, str: string(b)}, nil
	case ValueArray:
		return d.array(depth+1, false)
	}
	n := t.encodedSize()
	if err := d.need(n, t.String()); err != nil {
		return Value{}, err
	}
	p := d.data[d.pos:]
	v := Value{typ: t}
	switch n {
	case 1:
		v.bits = uint64(p[0])
		if t == ValueInt8 {
			v.bits = uint64(int64(int8(p[0])))
		}
		if t == ValueBool && p[0] > 1 {
			return Value{}, d.errAt(d.pos, "bool value %d is neither 0 nor 1", p[0])
		}
	case 2:
		v.bits = uint64(le.Uint16(p))
		if t == ValueInt16 {
			v.bits = uint64(int64(int16(v.bits)))
		}
	case 4:
		v.bits = uint64(le.Uint32(p))
		if t == ValueInt32 {
			v.bits = uint64(int64(int32(v.bits)))
		}
	case 8:
		v.bits = le.Uint64(p)
	}
	d.pos += n
	return v, nil
}

// arrayHeader reads an array's element type and count, and checks the
// count against the bytes remaining. depth is the array's own nesting
// level, 1 for a top-level array.
func (d *decoder) arrayHeader(depth int) (ValueType, int, error) {
	if depth > maxArrayDepth {
		return 0, 0, d.errAt(d.pos, "arrays nested deeper than %d", maxArrayDepth)
	}
	etAt := d.pos
	et32, err := d.u32("array element type")
	if err != nil {
		return 0, 0, err
	}
	et := ValueType(et32)
	if !et.valid() {
		return 0, 0, d.errAt(etAt, "invalid array element type %d", et32)
	}
	cAt := d.pos
	count, err := d.u64("array length")
	if err != nil {
		return 0, 0, err
	}
	if count > uint64(d.rem()/et.encodedSize()) {
		return 0, 0, d.errAt(cAt, "array of %d %s exceeds the %d bytes remaining", count, et, d.rem())
	}
	return et, int(count), nil
}

// skipArray checks the structure of an array (counts and lengths, at every
// level) without allocating, and moves past it.
func (d *decoder) skipArray(depth int) error {
	et, n, err := d.arrayHeader(depth)
	if err != nil {
		return err
	}
	switch et {
	case ValueString:
		end, err := d.scanStrings(n)
		if err != nil {
			return err
		}
		d.pos = end
	case ValueArray:
		for range n {
			if err := d.skipArray(depth + 1); err != nil {
				return err
			}
		}
	default:
		d.pos += n * et.encodedSize()
	}
	return nil
}

// array reads an array: element type, count and elements. depth is the
// array's own nesting level, 1 for a top-level array; checked reports that
// skipArray has already vouched for its structure.
func (d *decoder) array(depth int, checked bool) (Value, error) {
	start := d.pos
	et, n, err := d.arrayHeader(depth)
	if err != nil {
		return Value{}, err
	}
	esize := et.encodedSize()
	p := d.data[d.pos:]
	var arr any
	switch et {
	case ValueUint8:
		arr = slices.Clone(p[:n:n])
	case ValueInt8:
		a := make([]int8, n)
		for i := range a {
			a[i] = int8(p[i])
		}
		arr = a
	case ValueBool:
		a := make([]bool, n)
		for i := range a {
			switch p[i] {
			case 0:
			case 1:
				a[i] = true
			default:
				return Value{}, d.errAt(d.pos+i, "array element %d: bool value %d is neither 0 nor 1", i, p[i])
			}
		}
		arr = a
	case ValueUint16:
		a := make([]uint16, n)
		for i := range a {
			a[i] = le.Uint16(p[2*i:])
		}
		arr = a
	case ValueInt16:
		a := make([]int16, n)
		for i := range a {
			a[i] = int16(le.Uint16(p[2*i:]))
		}
		arr = a
	case ValueUint32:
		a := make([]uint32, n)
		for i := range a {
			a[i] = le.Uint32(p[4*i:])
		}
		arr = a
	case ValueInt32:
		a := make([]int32, n)
		for i := range a {
			a[i] = int32(le.Uint32(p[4*i:]))
		}
		arr = a
	case ValueFloat32:
		a := make([]float32, n)
		for i := range a {
			a[i] = math.Float32frombits(le.Uint32(p[4*i:]))
		}
		arr = a
	case ValueUint64:
		a := make([]uint64, n)
		for i := range a {
			a[i] = le.Uint64(p[8*i:])
		}
		arr = a
	case ValueInt64:
		a := make([]int64, n)
		for i := range a {
			a[i] = int64(le.Uint64(p[8*i:]))
		}
		arr = a
	case ValueFloat64:
		a := make([]float64, n)
		for i := range a {
			a[i] = math.Float64frombits(le.Uint64(p[8*i:]))
		}
		arr = a
	case ValueString:
		a, err := d.strings(n)
		if err != nil {
			return Value{}, err
		}
		return arrayOf(ValueString, a, n), nil
	case ValueArray:
		// A Value is several times larger than the 12 bytes of an empty
		// array, and every nesting level could claim the same remaining
		// bytes, so the counts alone do not bound the memory. Checking the
		// whole structure first makes every count below true.
		if !checked {
			end := d.pos
			d.pos = start
			if err := d.skipArray(depth); err != nil {
				return Value{}, err
			}
			d.pos = end
		}
		a := make([]Value, n)
		maxd := uint8(0)
		for i := range a {
			if a[i], err = d.array(depth+1, true); err != nil {
				return Value{}, err
			}
			maxd = max(maxd, a[i].depth)
		}
		return Value{typ: ValueArray, elem: ValueArray, depth: maxd + 1, n: n, arr: a}, nil
	}
	d.pos += n * esize
	return arrayOf(et, arr, n), nil
}

// scanStrings checks the lengths of n strings starting at the current
// position and returns the offset just past them.
func (d *decoder) scanStrings(n int) (int, error) {
	p := d.pos
	for i := range n {
		if len(d.data)-p < 8 {
			return 0, d.errAt(p, "array element %d: string length: unexpected end of data (need 8 bytes, have %d)", i, len(d.data)-p)
		}
		l := le.Uint64(d.data[p:])
		if l > uint64(len(d.data)-p-8) {
			return 0, d.errAt(p, "array element %d: string length %d exceeds the %d bytes remaining", i, l, len(d.data)-p-8)
		}
		p += 8 + int(l)
	}
	return p, nil
}

// strings reads n strings. A vocabulary holds a quarter of a million of
// them, so rather than allocate each one it copies the whole run, length
// prefixes included, into a single string and slices the elements out of
// it: one allocation for the bytes and one for the slice.
func (d *decoder) strings(n int) ([]string, error) {
	start := d.pos
	end, err := d.scanStrings(n)
	if err != nil {
		return nil, err
	}
	blob := string(d.data[start:end])
	out := make([]string, n)
	q := 0
	for i := range out {
		l := int(le.Uint64(d.data[start+q:]))
		q += 8
		if l > 0 {
			out[i] = blob[q : q+l]
		}
		q += l
	}
	d.pos = end
	return out, nil
}

// describe names a value's type for error messages: "string", "array of
// uint32".
func describe(v Value) string {
	if v.typ == ValueArray {
		return "array of " + v.elem.String()
	}
	return v.typ.String()
}

// Close releases the file's memory (unmaps it, for a mapped file). Slices
// returned by TensorData must not be used after Close, and later
// TensorData calls fail with ErrClosed; the metadata, being copies, stay
// usable. Closing twice is harmless.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	data := f.data
	f.data = nil
	var err error
	if f.unmap != nil {
		if e := f.unmap(data); e != nil {
			err = fmt.Errorf("gguf: %s: unmap: %w", f.name, e)
		}
	}
	if f.fh != nil {
		if e := f.fh.Close(); e != nil && err == nil {
			err = fmt.Errorf("gguf: %s: %w", f.name, e)
		}
		f.fh = nil
	}
	return err
}

// Mapped reports whether the tensor data are views of a read-only shared mapping of
// the file (Open's default where the platform has mmap), rather than of memory the file
// was read into (WithMmap(false), a platform without mmap, Parse). Only a mapping may
// be handed to a device page by page beyond the tensors' own bytes (Metal's
// newBufferWithBytesNoCopy takes whole pages): the pages around a tensor belong to the
// mapping, whereas around a Go allocation they belong to other objects.
func (f *File) Mapped() bool { return f.mapped }

// Release tells the File that its caller will not read b, a part of its tensor data, for
// a long while (a backend that keeps the weights in a layout of its own): the whole pages
// inside b leave the process's resident memory, and reading them again faults them back
// in from the file, so a Release can never change what b holds. For a mapped file the
// pages are dropped from the mapping; for a file Open read into memory (WithMmap(false),
// on Linux) they are replaced in place by a private read-only mapping of the same bytes
// of the file, which the OS fills only where they are read. For data Parse was given, data
// read into Go's heap (where no anonymous mapping could be made), or bytes outside the
// file's data, it does nothing: their memory is not the File's to give back page by page.
func (f *File) Release(b []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.drop == nil || f.closed || len(b) == 0 || len(f.data) == 0 {
		return nil
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(f.data)))
	if start < base || start-base > uintptr(len(f.data)) || uintptr(len(b)) > uintptr(len(f.data))-(start-base) {
		return nil
	}
	if err := f.drop(b); err != nil {
		return fmt.Errorf("gguf: %s: release %d bytes at offset %d: %w", f.name, len(b), start-base, err)
	}
	return nil
}

// Size returns the size of the file in bytes.
func (f *File) Size() int64 { return f.size }

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// TensorData returns the named tensor's bytes. The slice is a view of the
// file (of the mapping when the file is memory-mapped), with its capacity
// limited to its length; it must not be modified, and it is valid until
// Close.
func (f *File) TensorData(name string) ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, ErrClosed
	}
	i, ok := f.tensors[name]
	if !ok {
		return nil, newErr(ErrTensorNotFound, "gguf: tensor %q: not found", name)
	}
	s := f.spans[i]
	if s.size < 0 {
		return nil, newErr(ErrUnknownType, "gguf: tensor %q: unknown tensor type %v", name, f.Tensors[i].Type)
	}
	end := s.off + s.size
	return f.data[s.off:end:end], nil
}

// keyErr returns an accessor's error: it names the key and wraps a sentinel
// without repeating the sentinel's text.
func keyErr(base error, key, format string, args ...any) error {
	return &gerr{msg: "gguf: key " + strconv.Quote(key) + ": " + fmt.Sprintf(format, args...), base: base}
}

// Lookup returns the value of key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.keys[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Has reports whether the file has key.
func (f *File) Has(key string) bool {
	_, ok := f.keys[key]
	return ok
}

func (f *File) lookup(key string) (Value, error) {
	v, ok := f.Lookup(key)
	if !ok {
		return Value{}, keyErr(ErrKeyNotFound, key, "not found")
	}
	return v, nil
}

// scalar returns key's value, which must be of type want.
func (f *File) scalar(key string, want ValueType) (Value, error) {
	v, err := f.lookup(key)
	if err != nil {
		return Value{}, err
	}
	if v.typ != want {
		return Value{}, keyErr(ErrWrongType, key, "want %s, have %s", want, describe(v))
	}
	return v, nil
}

// Uint8 returns the value of key, which must be a uint8. The other typed
// accessors are alike: each requires the exact type.
func (f *File) Uint8(key string) (uint8, error) {
	v, err := f.scalar(key, ValueUint8)
	return uint8(v.bits), err
}

// Int8 returns the value of key, which must be an int8.
func (f *File) Int8(key string) (int8, error) {
	v, err := f.scalar(key, ValueInt8)
	return int8(v.bits), err
}

// Uint16 returns the value of key, which must be a uint16.
func (f *File) Uint16(key string) (uint16, error) {
	v, err := f.scalar(key, ValueUint16)
	return uint16(v.bits), err
}

// Int16 returns the value of key, which must be an int16.
func (f *File) Int16(key string) (int16, error) {
	v, err := f.scalar(key, ValueInt16)
	return int16(v.bits), err
}

// Uint32 returns the value of key, which must be a uint32.
func (f *File) Uint32(key string) (uint32, error) {
	v, err := f.scalar(key, ValueUint32)
	return uint32(v.bits), err
}

// Int32 returns the value of key, which must be an int32.
func (f *File) Int32(key string) (int32, error) {
	v, err := f.scalar(key, ValueInt32)
	return int32(v.bits), err
}

// Uint64 returns the value of key, which must be a uint64.
func (f *File) Uint64(key string) (uint64, error) {
	v, err := f.scalar(key, ValueUint64)
	return v.bits, err
}

// Int64 returns the value of key, which must be an int64.
func (f *File) Int64(key string) (int64, error) {
	v, err := f.scalar(key, ValueInt64)
	return int64(v.bits), err
}

// Float32 returns the value of key, which must be a float32.
func (f *File) Float32(key string) (float32, error) {
	v, err := f.scalar(key, ValueFloat32)
	return math.Float32frombits(uint32(v.bits)), err
}

// Float64 returns the value of key, which must be a float64.
func (f *File) Float64(key string) (float64, error) {
	v, err := f.scalar(key, ValueFloat64)
	return math.Float64frombits(v.bits), err
}

// Bool returns the value of key, which must be a bool.
func (f *File) Bool(key string) (bool, error) {
	v, err := f.scalar(key, ValueBool)
	return v.bits != 0, err
}

// String returns the value of key, which must be a string.
func (f *File) String(key string) (string, error) {
	v, err := f.scalar(key, ValueString)
	return v.str, err
}

// Int returns the value of key, which may be of any integer type: writers
// disagree on which they use for sizes and counts.
func (f *File) Int(key string) (int64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	if !v.typ.isInt() {
		return 0, keyErr(ErrWrongType, key, "want integer, have %s", describe(v))
	}
	n, ok := v.int64Value()
	if !ok {
		return 0, keyErr(ErrWrongType, key, "value %d overflows int64", v.bits)
	}
	return n, nil
}

// Float returns the value of key, which may be a float32, a float64 or of
// any integer type.
func (f *File) Float(key string) (float64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	switch {
	case v.typ == ValueFloat32:
		return float64(math.Float32frombits(uint32(v.bits))), nil
	case v.typ == ValueFloat64:
		return math.Float64frombits(v.bits), nil
	case v.typ == ValueUint64:
		return float64(v.bits), nil
	case v.typ.isInt():
		return float64(int64(v.bits)), nil
	}
	return 0, keyErr(ErrWrongType, key, "want number, have %s", describe(v))
}

// array returns key's value, which must be an array whose element type
// satisfies ok; want describes the acceptable types for the error.
func (f *File) array(key, want string, ok func(ValueType) bool) (Value, error) {
	v, err := f.lookup(key)
	if err != nil {
		return Value{}, err
	}
	if v.typ != ValueArray || !ok(v.elem) {
		return Value{}, keyErr(ErrWrongType, key, "want %s, have %s", want, describe(v))
	}
	return v, nil
}

// Strings returns the value of key, which must be an array of strings, as
// a fresh slice.
func (f *File) Strings(key string) ([]string, error) {
	v, err := f.array(key, "array of string", func(t ValueType) bool { return t == ValueString })
	if err != nil {
		return nil, err
	}
	return slices.Clone(v.arr.([]string)), nil
}

// Ints returns the value of key, which must be an array of any integer
// type, as a fresh slice.
func (f *File) Ints(key string) ([]int64, error) {
	v, err := f.array(key, "array of integer", ValueType.isInt)
	if err != nil {
		return nil, err
	}
	out := make([]int64, v.n)
	for i := range out {
		n, ok := intElem(v.arr, i)
		if !ok {
			return nil, keyErr(ErrWrongType, key, "element %d (%d) overflows int64", i, uint64(n))
		}
		out[i] = n
	}
	return out, nil
}

// Floats returns the value of key, which must be an array of any integer
// or float type, as a fresh slice.
func (f *File) Floats(key string) ([]float64, error) {
	v, err := f.array(key, "array of number", func(t ValueType) bool {
		return t.isInt() || t == ValueFloat32 || t == ValueFloat64
	})
	if err != nil {
		return nil, err
	}
	out := make([]float64, v.n)
	for i := range out {
		out[i] = floatElem(v.arr, i)
	}
	return out, nil
}

// Architecture returns the general.architecture key's value, or "" if it is
// absent or not a string.
func (f *File) Architecture() string {
	s, _ := f.String(architectureKey)
	return s
}
