package gguf

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allKinds holds one key of every value type, arrays of every element type
// (empty ones included) and nested arrays.
func allKinds() []KV {
	nested := MustValue([]Value{
		MustValue([]int32{1, 2}),
		MustValue([]string{"x", "yz"}),
		MustValue([]Value{MustValue([]bool{true}), MustValue([]float64{})}),
		MustValue([]Value{}),
	})
	return []KV{
		{"general.architecture", MustValue("qwen35")},
		{"u8", MustValue(uint8(255))},
		{"i8", MustValue(int8(-128))},
		{"u16", MustValue(uint16(65535))},
		{"i16", MustValue(int16(-32768))},
		{"u32", MustValue(uint32(math.MaxUint32))},
		{"i32", MustValue(int32(math.MinInt32))},
		{"f32", MustValue(float32(-1.25))},
		{"f32nan", MustValue(math.Float32frombits(0x7fc00001))},
		{"bool.t", MustValue(true)},
		{"bool.f", MustValue(false)},
		{"str", MustValue("héllo")},
		{"str.empty", MustValue("")},
		{"str.bad", MustValue("\xff\xfe")},
		{"u64", MustValue(uint64(math.MaxUint64))},
		{"i64", MustValue(int64(math.MinInt64))},
		{"f64", MustValue(math.Copysign(0, -1))},
		{"a.u8", MustValue([]uint8{0, 1, 255})},
		{"a.i8", MustValue([]int8{-128, 127})},
		{"a.u16", MustValue([]uint16{1, 65535})},
		{"a.i16", MustValue([]int16{-32768, 32767})},
		{"a.u32", MustValue([]uint32{0, math.MaxUint32})},
		{"a.i32", MustValue([]int32{math.MinInt32, math.MaxInt32})},
		{"a.f32", MustValue([]float32{0.5, float32(math.Inf(-1))})},
		{"a.bool", MustValue([]bool{true, false, true})},
		{"a.str", MustValue([]string{"a", "", "\x00b", "\xff"})},
		{"a.u64", MustValue([]uint64{math.MaxUint64})},
		{"a.i64", MustValue([]int64{math.MinInt64, 7})},
		{"a.f64", MustValue([]float64{math.Pi})},
		{"a.empty", MustValue([]string{})},
		{"a.nested", nested},
	}
}

func sampleTensors() []tensorBlob {
	return []tensorBlob{
		{TensorInfo{Name: "norm.weight", Type: TypeF32, Shape: []int64{3}}, f32bytes(1, 2, 3)},
		{TensorInfo{Name: "blk.0.w", Type: TypePQ2_0, Shape: []int64{256, 3}}, seq(2 * 3 * 34)},
		{TensorInfo{Name: "empty", Type: TypeF16, Shape: []int64{8, 0}}, nil},
		{TensorInfo{Name: "q8", Type: TypeQ8_0, Shape: []int64{32}}, seq(34)},
		{TensorInfo{Name: "scalar", Type: TypeI32}, []byte{1, 2, 3, 4}},
	}
}

func TestRoundTripAllValueTypes(t *testing.T) {
	kv := allKinds()
	img := writeFile(t, kv, sampleTensors())
	f, err := Parse(img)
	require.NoError(t, err)
	require.Len(t, f.KV, len(kv))
	for i, want := range kv {
		got := f.KV[i]
		assert.Equal(t, want.Key, got.Key)
		assert.Equal(t, want.Value.Type(), got.Value.Type(), want.Key)
		assert.Equal(t, want.Value.ElemType(), got.Value.ElemType(), want.Key)
		assert.Equal(t, want.Value.Len(), got.Value.Len(), want.Key)
		assert.Equal(t, appendKV(nil, want), appendKV(nil, got), want.Key)
		v, ok := f.Lookup(want.Key)
		require.True(t, ok)
		assert.Equal(t, want.Value.String(), v.String())
	}
	// Spot checks through Interface, independent of the encoder.
	v, _ := f.Lookup("a.str")
	assert.Equal(t, []string{"a", "", "\x00b", "\xff"}, v.Interface())
	v, _ = f.Lookup("str.bad")
	assert.Equal(t, "\xff\xfe", v.Interface())
	v, _ = f.Lookup("f32nan")
	assert.Equal(t, uint32(0x7fc00001), math.Float32bits(v.Interface().(float32)))
	v, _ = f.Lookup("f64")
	assert.True(t, math.Signbit(v.Interface().(float64)))
	v, _ = f.Lookup("a.nested")
	assert.Equal(t, `[[1 2] ["x" "yz"] [[true] []] []]`, v.String())
	inner := v.Interface().([]Value)
	assert.Equal(t, []string{"x", "yz"}, inner[1].Interface())
	assert.Equal(t, []float64{}, inner[2].Interface().([]Value)[1].Interface())
	assert.Equal(t, "qwen35", f.Architecture())
}

func TestTypedAccessors(t *testing.T) {
	f, err := Parse(writeFile(t, allKinds(), nil))
	require.NoError(t, err)

	u8, err := f.Uint8("u8")
	require.NoError(t, err)
	assert.Equal(t, uint8(255), u8)
	i8, err := f.Int8("i8")
	require.NoError(t, err)
	assert.Equal(t, int8(-128), i8)
	u16, err := f.Uint16("u16")
	require.NoError(t, err)
	assert.Equal(t, uint16(65535), u16)
	i16, err := f.Int16("i16")
	require.NoError(t, err)
	assert.Equal(t, int16(-32768), i16)
	u32, err := f.Uint32("u32")
	require.NoError(t, err)
	assert.Equal(t, uint32(math.MaxUint32), u32)
	i32, err := f.Int32("i32")
	require.NoError(t, err)
	assert.Equal(t, int32(math.MinInt32), i32)
	u64, err := f.Uint64("u64")
	require.NoError(t, err)
	assert.Equal(t, uint64(math.MaxUint64), u64)
	i64, err := f.Int64("i64")
	require.NoError(t, err)
	assert.Equal(t, int64(math.MinInt64), i64)
	f32, err := f.Float32("f32")
	require.NoError(t, err)
	assert.Equal(t, float32(-1.25), f32)
	f64, err := f.Float64("f64")
	require.NoError(t, err)
	assert.Equal(t, 0.0, f64)
	b, err := f.Bool("bool.t")
	require.NoError(t, err)
	assert.True(t, b)
	s, err := f.String("str")
	require.NoError(t, err)
	assert.Equal(t, "héllo", s)
	assert.True(t, f.Has("str"))
	assert.False(t, f.Has("nope"))

	for key, want := range map[string]int64{"u8": 255, "i8": -128, "u16": 65535, "i16": -32768, "u32": math.MaxUint32, "i32": math.MinInt32, "i64": math.MinInt64} {
		n, err := f.Int(key)
		require.NoError(t, err, key)
		assert.Equal(t, want, n, key)
		x, err := f.Float(key)
		require.NoError(t, err, key)
		assert.Equal(t, float64(want), x, key)
	}
	x, err := f.Float("f32")
	require.NoError(t, err)
	assert.Equal(t, -1.25, x)
	x, err = f.Float("u64")
	require.NoError(t, err)
	assert.Equal(t, float64(math.MaxUint64), x)

	ss, err := f.Strings("a.str")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "", "\x00b", "\xff"}, ss)
	ss[0] = "changed"
	ss, _ = f.Strings("a.str")
	assert.Equal(t, "a", ss[0])
	ns, err := f.Ints("a.i16")
	require.NoError(t, err)
	assert.Equal(t, []int64{-32768, 32767}, ns)
	ns, err = f.Ints("a.u32")
	require.NoError(t, err)
	assert.Equal(t, []int64{0, math.MaxUint32}, ns)
	fs, err := f.Floats("a.f32")
	require.NoError(t, err)
	assert.Equal(t, []float64{0.5, math.Inf(-1)}, fs)
	fs, err = f.Floats("a.i8")
	require.NoError(t, err)
	assert.Equal(t, []float64{-128, 127}, fs)
	fs, err = f.Floats("a.u64")
	require.NoError(t, err)
	assert.Equal(t, []float64{math.MaxUint64}, fs)
}

func TestTypedAccessorErrors(t *testing.T) {
	kv := append(allKinds(), KV{"qwen35.block_count", MustValue("64")})
	f, err := Parse(writeFile(t, kv, nil))
	require.NoError(t, err)

	for _, c := range []struct {
		call func() error
		base error
		msg  string
	}{
		{func() error { _, err := f.Uint32("qwen35.block_count"); return err }, ErrWrongType, `gguf: key "qwen35.block_count": want uint32, have string`},
		{func() error { _, err := f.Uint32("x.y"); return err }, ErrKeyNotFound, `gguf: key "x.y": not found`},
		{func() error { _, err := f.Uint8("i8"); return err }, ErrWrongType, `gguf: key "i8": want uint8, have int8`},
		{func() error { _, err := f.Int8("u8"); return err }, ErrWrongType, `gguf: key "u8": want int8, have uint8`},
		{func() error { _, err := f.Uint16("u32"); return err }, ErrWrongType, `gguf: key "u32": want uint16, have uint32`},
		{func() error { _, err := f.Int16("i32"); return err }, ErrWrongType, `gguf: key "i32": want int16, have int32`},
		{func() error { _, err := f.Int32("u32"); return err }, ErrWrongType, `gguf: key "u32": want int32, have uint32`},
		{func() error { _, err := f.Uint64("i64"); return err }, ErrWrongType, `gguf: key "i64": want uint64, have int64`},
		{func() error { _, err := f.Int64("u64"); return err }, ErrWrongType, `gguf: key "u64": want int64, have uint64`},
		{func() error { _, err := f.Float32("f64"); return err }, ErrWrongType, `gguf: key "f64": want float32, have float64`},
		{func() error { _, err := f.Float64("f32"); return err }, ErrWrongType, `gguf: key "f32": want float64, have float32`},
		{func() error { _, err := f.Bool("u8"); return err }, ErrWrongType, `gguf: key "u8": want bool, have uint8`},
		{func() error { _, err := f.String("a.str"); return err }, ErrWrongType, `gguf: key "a.str": want string, have array of string`},
		{func() error { _, err := f.Int("f32"); return err }, ErrWrongType, `gguf: key "f32": want integer, have float32`},
		{func() error { _, err := f.Int("u64"); return err }, ErrWrongType, `gguf: key "u64": value 18446744073709551615 overflows int64`},
		{func() error { _, err := f.Int("nope"); return err }, ErrKeyNotFound, `gguf: key "nope": not found`},
		{func() error { _, err := f.Float("bool.t"); return err }, ErrWrongType, `gguf: key "bool.t": want number, have bool`},
		{func() error { _, err := f.Strings("a.u32"); return err }, ErrWrongType, `gguf: key "a.u32": want array of string, have array of uint32`},
		{func() error { _, err := f.Strings("str"); return err }, ErrWrongType, `gguf: key "str": want array of string, have string`},
		{func() error { _, err := f.Ints("a.f32"); return err }, ErrWrongType, `gguf: key "a.f32": want array of integer, have array of float32`},
		{func() error { _, err := f.Ints("a.u64"); return err }, ErrWrongType, `gguf: key "a.u64": element 0 (18446744073709551615) overflows int64`},
		{func() error { _, err := f.Floats("a.str"); return err }, ErrWrongType, `gguf: key "a.str": want array of number, have array of string`},
		{func() error { _, err := f.Floats("a.nested"); return err }, ErrWrongType, `gguf: key "a.nested": want array of number, have array of array`},
		{func() error { _, err := f.Floats("missing"); return err }, ErrKeyNotFound, `gguf: key "missing": not found`},
	} {
		err := c.call()
		require.Error(t, err, c.msg)
		assert.True(t, errors.Is(err, c.base), "%v", err)
		assert.EqualError(t, err, c.msg)
	}

	g, err := Parse(writeFile(t, nil, nil))
	require.NoError(t, err)
	assert.Equal(t, "", g.Architecture())
}

func TestVersions(t *testing.T) {
	for _, v := range []uint32{2, 3} {
		img := writeFile(t, allKinds(), sampleTensors(), WithVersion(v))
		assert.Equal(t, v, le.Uint32(img[4:]))
		f, err := Parse(img)
		require.NoError(t, err)
		assert.Equal(t, v, f.Version)
		g, err := Parse(writeFile(t, allKinds(), sampleTensors()))
		require.NoError(t, err)
		g.Version = v // the encodings differ only in the version field
		requireSameContent(t, f, g)
	}
	_, err := NewWriter(&bytes.Buffer{}, nil, nil, WithVersion(1))
	assert.ErrorIs(t, err, ErrVersion)
	_, err = NewWriter(&bytes.Buffer{}, nil, nil, WithVersion(4))
	assert.ErrorIs(t, err, ErrVersion)
}

func TestTensorData(t *testing.T) {
	blobs := sampleTensors()
	image := writeFile(t, []KV{{"general.alignment", MustValue(uint32(64))}}, blobs)
	f, err := Parse(image)
	require.NoError(t, err)
	assert.Equal(t, 64, f.Alignment)
	assert.Zero(t, f.DataOffset%64)
	assert.Equal(t, int64(len(image)), f.Size())
	require.Len(t, f.Tensors, len(blobs))
	base := uintptr(unsafe.Pointer(&image[0]))
	for i, b := range blobs {
		ti, ok := f.Tensor(b.info.Name)
		require.True(t, ok)
		assert.Equal(t, f.Tensors[i], ti)
		assert.Equal(t, b.info.Type, ti.Type)
		assert.Equal(t, b.info.Shape, ti.Shape)
		assert.Zero(t, ti.Offset%64)
		data, err := f.TensorData(b.info.Name)
		require.NoError(t, err)
		assert.Equal(t, len(b.data), len(data), b.info.Name)
		assert.Equal(t, len(data), cap(data), "capacity limited to the tensor")
		if len(b.data) > 0 {
			assert.Equal(t, b.data, data)
			// Zero-copy: the view points into the image at its offset.
			assert.Equal(t, base+uintptr(f.DataOffset)+uintptr(ti.Offset), uintptr(unsafe.Pointer(&data[0])))
		}
	}
	_, ok := f.Tensor("nope")
	assert.False(t, ok)
	_, err = f.TensorData("nope")
	require.ErrorIs(t, err, ErrTensorNotFound)
	assert.EqualError(t, err, `gguf: tensor "nope": not found`)

	// Changing the exported fields does not move the views.
	f.Tensors[0].Offset = 1 << 40
	data, err := f.TensorData(blobs[0].info.Name)
	require.NoError(t, err)
	assert.Equal(t, blobs[0].data, data)

	require.NoError(t, f.Close())
	_, err = f.TensorData(blobs[0].info.Name)
	assert.ErrorIs(t, err, ErrClosed)
	require.NoError(t, f.Close(), "second Close")
	// Metadata stay readable after Close: they are copies.
	assert.Equal(t, int64(len(image)), f.Size())
	assert.Equal(t, uint32(64), f.KV[0].Value.Interface())
}

func TestUnknownTensorType(t *testing.T) {
	// Tensor "u" has type 99: its infos are readable, its data are not,
	// and it takes no part in overlap checks.
	m := (&img{}).header(2, 0).
		tensor("u", 99, 0, 1000).
		tensor("f", TypeF32, 0, 4).
		data(32, 16)
	f, err := Parse(m.b)
	require.NoError(t, err)
	require.Len(t, f.Tensors, 2)
	assert.Equal(t, TensorType(99), f.Tensors[0].Type)
	assert.Equal(t, "type(99)", f.Tensors[0].Type.String())
	assert.Equal(t, []int64{1000}, f.Tensors[0].Shape)
	_, err = f.TensorData("u")
	require.ErrorIs(t, err, ErrUnknownType)
	assert.EqualError(t, err, `gguf: tensor "u": unknown tensor type type(99)`)
	d, err := f.TensorData("f")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, d)

	// The Writer needs every size, so it refuses the file.
	_, err = rewrite(f)
	require.ErrorIs(t, err, ErrUnknownType)
	assert.EqualError(t, err, `gguf: tensor 0 "u": unknown tensor type type(99)`)
}

func TestWriterReaderWriterIdentical(t *testing.T) {
	for _, opts := range [][]WriterOption{nil, {WithVersion(2)}} {
		kv := append(allKinds(), KV{"general.alignment", MustValue(uint32(128))})
		img := writeFile(t, kv, sampleTensors(), opts...)
		f, err := Parse(img)
		require.NoError(t, err)
		again, err := rewrite(f)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(img, again), "rewrite differs")
	}
}

func TestOpenMmapAndInMemory(t *testing.T) {
	img := writeFile(t, allKinds(), sampleTensors())
	path := filepath.Join(t.TempDir(), "model.gguf")
	require.NoError(t, os.WriteFile(path, img, 0o644))

	mapped, err := Open(path)
	require.NoError(t, err)
	defer mapped.Close()
	explicit, err := Open(path, WithMmap(true))
	require.NoError(t, err)
	defer explicit.Close()
	read, err := Open(path, WithMmap(false))
	require.NoError(t, err)
	defer read.Close()
	parsed, err := Parse(img)
	require.NoError(t, err)

	for _, f := range []*File{mapped, explicit, read} {
		requireSameContent(t, parsed, f)
		assert.Equal(t, parsed.Tensors, f.Tensors)
		assert.Equal(t, parsed.DataOffset, f.DataOffset)
		assert.Equal(t, int64(len(img)), f.Size())
	}
	require.NoError(t, mapped.Close())
	_, err = mapped.TensorData("q8")
	assert.ErrorIs(t, err, ErrClosed)
	require.NoError(t, read.Close())
	_, err = read.TensorData("q8")
	assert.ErrorIs(t, err, ErrClosed)
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(filepath.Join(dir, "missing.gguf"))
	require.ErrorIs(t, err, os.ErrNotExist)

	path := filepath.Join(dir, "model.gguf")
	img := writeFile(t, nil, sampleTensors())
	require.NoError(t, os.WriteFile(path, img[:len(img)-40], 0o644))
	for _, mm := range []bool{true, false} {
		_, err = Open(path, WithMmap(mm))
		require.ErrorIs(t, err, ErrFormat)
		assert.Contains(t, err.Error(), "gguf: "+path+": offset ")
		assert.Contains(t, err.Error(), `tensor 4 "scalar": data [`)
		assert.Contains(t, err.Error(), "beyond end of file")
	}

	empty := filepath.Join(dir, "empty.gguf")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err = Open(empty)
	require.ErrorIs(t, err, ErrFormat)
	assert.EqualError(t, err, "gguf: "+empty+": offset 0: header: magic: unexpected end of data (need 4 bytes, have 0)")
}

func TestNoTensors(t *testing.T) {
	image := writeFile(t, []KV{{"a", MustValue(uint8(1))}}, nil)
	assert.Zero(t, len(image)%32, "header padded")
	f, err := Parse(image)
	require.NoError(t, err)
	assert.Empty(t, f.Tensors)
	assert.Equal(t, int64(len(image)), f.DataOffset)

	// Without the padding the file is still whole: there is no data.
	m := (&img{}).header(0, 1).kvU32("a", 1)
	f, err = Parse(m.b)
	require.NoError(t, err)
	assert.Len(t, f.KV, 1)
}

func TestConcurrentUse(t *testing.T) {
	f, err := Parse(writeFile(t, allKinds(), sampleTensors()))
	require.NoError(t, err)
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				if _, err := f.TensorData("q8"); err != nil && !errors.Is(err, ErrClosed) {
					t.Error(err)
				}
				if _, err := f.Strings("a.str"); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	require.NoError(t, f.Close())
	for range 4 {
		<-done
	}
}
