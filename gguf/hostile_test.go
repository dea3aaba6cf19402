package gguf

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// at returns the current length of the image, the offset of whatever is
// appended next.
func (m *img) at(p *int) *img { *p = len(m.b); return m }

// hostile is a hand-built image and the exact error Parse must give.
type hostile struct {
	name string
	b    []byte
	msg  string
	base error // ErrFormat unless set
}

func hostileImages() []hostile {
	var cs []hostile
	add := func(name string, m *img, msg string, args ...any) {
		cs = append(cs, hostile{name: name, b: m.b, msg: fmt.Sprintf(msg, args...)})
	}
	var a, b, c int

	// Header.
	add("empty", &img{}, "gguf: offset 0: header: magic: unexpected end of data (need 4 bytes, have 0)")
	add("magic", (&img{}).raw('G', 'G', 'M', 'L').u32(3), `gguf: offset 0: header: not a GGUF file (magic "GGML")`)
	add("short version", (&img{}).raw('G', 'G', 'U', 'F', 3), "gguf: offset 4: header: version: unexpected end of data (need 4 bytes, have 1)")
	add("short tensor count", (&img{}).raw('G', 'G', 'U', 'F').u32(3).u32(0), "gguf: offset 8: header: tensor count: unexpected end of data (need 8 bytes, have 4)")
	add("short kv count", (&img{}).raw('G', 'G', 'U', 'F').u32(2).u64(0).raw(1, 2), "gguf: offset 16: header: kv count: unexpected end of data (need 8 bytes, have 2)")
	add("kv count", (&img{}).header(0, 1<<62).u64(0), "gguf: offset 8: header: 0 tensors and 4611686018427387904 keys cannot fit in the 8 bytes remaining")
	add("tensor count", (&img{}).header(math.MaxUint64, 0).u64(0).u64(0), "gguf: offset 8: header: 18446744073709551615 tensors and 0 keys cannot fit in the 16 bytes remaining")
	add("counts together", (&img{}).header(1, 2).raw(make([]byte, 13*2+23)...), "gguf: offset 8: header: 1 tensors and 2 keys cannot fit in the 49 bytes remaining")

	// Keys and values.
	add("key length", (&img{}).header(0, 1).u64(1<<40).u32(0).u8(0), `gguf: offset 24: key 0: key length 1099511627776 exceeds the 5 bytes remaining`)
	add("key truncated", (&img{}).header(0, 1).u64(20).raw([]byte("abcdefgh")...), `gguf: offset 24: key 0: key length 20 exceeds the 8 bytes remaining`)
	add("key length truncated", (&img{}).header(0, 2).kvU32("abcdefghij", 1).at(&a).raw(1, 2, 3), `gguf: offset %d: key 1: key length: unexpected end of data (need 8 bytes, have 3)`, a)
	add("duplicate key", (&img{}).header(0, 2).kvU32("a.b", 1).at(&a).kvU32("a.b", 2), `gguf: offset %d: key 1 "a.b": duplicate key (first is key 0)`, a)
	add("value type", (&img{}).header(0, 1).str("k").at(&a).u32(13).u32(0), `gguf: offset %d: key 0 "k": invalid value type 13`, a)
	add("value type truncated", (&img{}).header(0, 1).str("kkkkk").at(&a).raw(9), `gguf: offset %d: key 0 "kkkkk": value type: unexpected end of data (need 4 bytes, have 1)`, a)
	add("scalar truncated", (&img{}).header(0, 1).str("k").u32(uint32(ValueFloat64)).at(&a).raw(1, 2, 3), `gguf: offset %d: key 0 "k": float64: unexpected end of data (need 8 bytes, have 3)`, a)
	add("bool", (&img{}).header(0, 1).str("k").u32(uint32(ValueBool)).at(&a).u8(2), `gguf: offset %d: key 0 "k": bool value 2 is neither 0 nor 1`, a)
	add("string length", (&img{}).header(0, 1).str("k").u32(uint32(ValueString)).at(&a).u64(math.MaxUint64).raw('x'), `gguf: offset %d: key 0 "k": string length 18446744073709551615 exceeds the 1 bytes remaining`, a)
	add("array element type", (&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).at(&a).u32(99).u64(0), `gguf: offset %d: key 0 "k": invalid array element type 99`, a)
	add("array count", (&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).u32(uint32(ValueUint32)).at(&a).u64(1<<61).u32(7), `gguf: offset %d: key 0 "k": array of 2305843009213693952 uint32 exceeds the 4 bytes remaining`, a)
	add("array count odd bytes", (&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).u32(uint32(ValueUint16)).at(&a).u64(3).u32(7).u8(1), `gguf: offset %d: key 0 "k": array of 3 uint16 exceeds the 5 bytes remaining`, a)
	add("array count truncated", (&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).u32(uint32(ValueUint8)).at(&a).u32(1), `gguf: offset %d: key 0 "k": array length: unexpected end of data (need 8 bytes, have 4)`, a)
	add("string array count", (&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).u32(uint32(ValueString)).at(&a).u64(3).str("ab").u64(0), `gguf: offset %d: key 0 "k": array of 3 string exceeds the 18 bytes remaining`, a)
	add("string array element", (&img{}).header(0, 1).str("tokenizer.ggml.tokens").u32(uint32(ValueArray)).u32(uint32(ValueString)).u64(3).str("ab").at(&a).u64(1<<50).u64(0).u64(0), `gguf: offset %d: key 0 "tokenizer.ggml.tokens": array element 1: string length 1125899906842624 exceeds the 16 bytes remaining`, a)
	add("string array element truncated", (&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).u32(uint32(ValueString)).u64(2).str("abcdefgh").at(&a).raw(1, 2, 3, 4, 5, 6, 7), `gguf: offset %d: key 0 "k": array element 1: string length: unexpected end of data (need 8 bytes, have 7)`, a)
	add("bool array", (&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).u32(uint32(ValueBool)).u64(3).at(&a).raw(1, 0, 7), `gguf: offset %d: key 0 "k": array element 2: bool value 7 is neither 0 nor 1`, a+2)
	add("nested count", (&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).u32(uint32(ValueArray)).at(&a).u64(2).u32(uint32(ValueUint8)).u64(0), `gguf: offset %d: key 0 "k": array of 2 array exceeds the 12 bytes remaining`, a)
	add("nested inner", (&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).u32(uint32(ValueArray)).u64(1).u32(uint32(ValueInt64)).at(&a).u64(2).u64(1), `gguf: offset %d: key 0 "k": array of 2 int64 exceeds the 8 bytes remaining`, a)
	{
		m := (&img{}).header(0, 1).str("k").u32(uint32(ValueArray))
		for range maxArrayDepth {
			m.u32(uint32(ValueArray)).u64(1)
		}
		m.at(&a).u32(uint32(ValueUint8)).u64(0)
		add("nested depth", m, `gguf: offset %d: key 0 "k": arrays nested deeper than 8`, a)
	}
	add("alignment type", (&img{}).header(0, 1).str("general.alignment").at(&a).u32(uint32(ValueString)).str("32"), `gguf: offset %d: key 0 "general.alignment": want uint32, have string`, a)
	add("alignment uint64", (&img{}).header(0, 1).str("general.alignment").at(&a).u32(uint32(ValueUint64)).u64(32), `gguf: offset %d: key 0 "general.alignment": want uint32, have uint64`, a)
	add("alignment zero", (&img{}).header(0, 1).str("general.alignment").at(&a).u32(uint32(ValueUint32)).u32(0), `gguf: offset %d: key 0 "general.alignment": alignment 0 is not a power of two`, a)
	add("alignment 48", (&img{}).header(0, 1).str("general.alignment").at(&a).u32(uint32(ValueUint32)).u32(48), `gguf: offset %d: key 0 "general.alignment": alignment 48 is not a power of two`, a)
	add("alignment 2^31", (&img{}).header(0, 1).str("general.alignment").at(&a).u32(uint32(ValueUint32)).u32(1<<31), `gguf: offset %d: key 0 "general.alignment": alignment 2147483648 is too large`, a)

	// Tensor infos.
	add("name length", (&img{}).header(1, 0).u64(1<<40).raw(make([]byte, 24)...), `gguf: offset 24: tensor 0: name length 1099511627776 exceeds the 24 bytes remaining`)
	add("duplicate name", (&img{}).header(2, 0).tensor("w", TypeF32, 0, 8).at(&a).tensor("w", TypeF32, 32, 8).data(32, 64), `gguf: offset %d: tensor 1 "w": duplicate tensor name (first is tensor 0)`, a)
	add("n_dims", (&img{}).header(1, 0).str("w").at(&a).u32(5).raw(make([]byte, 60)...), `gguf: offset %d: tensor 0 "w": 5 dimensions, more than 4`, a)
	add("n_dims huge", (&img{}).header(1, 0).str("w").at(&a).u32(math.MaxUint32).raw(make([]byte, 60)...), `gguf: offset %d: tensor 0 "w": 4294967295 dimensions, more than 4`, a)
	add("dim truncated", (&img{}).header(1, 0).str("wwwww").u32(2).u64(4).at(&a).raw(1, 2), `gguf: offset %d: tensor 0 "wwwww": dimension 1: unexpected end of data (need 8 bytes, have 2)`, a)
	add("negative dim", (&img{}).header(1, 0).str("w").u32(2).u64(4).at(&a).u64(uint64(math.MaxUint64-4)).u32(0).u64(0), `gguf: offset %d: tensor 0 "w": dimension 1 is negative (-5)`, a)
	add("element overflow", (&img{}).header(1, 0).str("w").at(&a).u32(3).u64(1<<21).u64(1<<21).u64(1<<21).u32(0).u64(0), `gguf: offset %d: tensor 0 "w": shape [2097152 2097152 2097152]: element count overflows int64`, a)
	add("byte overflow", (&img{}).header(1, 0).str("w").u32(2).u64(1<<31).u64(1<<31).at(&a).u32(uint32(TypeF64)).u64(0), `gguf: offset %d: tensor 0 "w": shape [2147483648 2147483648]: F64 size in bytes overflows int64`, a)
	add("block multiple", (&img{}).header(1, 0).str("blk.0.ffn_down.weight").u32(2).u64(100).u64(2).at(&a).u32(uint32(TypePQ2_0)).u64(0), `gguf: offset %d: tensor 0 "blk.0.ffn_down.weight": row length 100 is not a multiple of the PQ2_0 block size 128`, a)
	add("type truncated", (&img{}).header(1, 0).str("wwwww").u32(1).u64(4).at(&a).raw(0, 0), `gguf: offset %d: tensor 0 "wwwww": type: unexpected end of data (need 4 bytes, have 2)`, a)
	add("offset truncated", (&img{}).header(1, 0).str("w").u32(1).u64(4).u32(0).at(&a).raw(0, 0, 0), `gguf: offset %d: tensor 0 "w": offset: unexpected end of data (need 8 bytes, have 3)`, a)
	add("misaligned", (&img{}).header(1, 0).str("w").u32(1).u64(4).u32(0).at(&a).u64(4).data(32, 64), `gguf: offset %d: tensor 0 "w": data offset 4 is not a multiple of the alignment 32`, a)
	add("misaligned custom", (&img{}).header(1, 1).kvU32("general.alignment", 64).str("w").u32(1).u64(4).u32(0).at(&a).u64(32).data(64, 128), `gguf: offset %d: tensor 0 "w": data offset 32 is not a multiple of the alignment 64`, a)
	add("misaligned unknown type", (&img{}).header(1, 0).str("w").u32(1).u64(4).u32(77).at(&a).u64(8).data(32, 64), `gguf: offset %d: tensor 0 "w": data offset 8 is not a multiple of the alignment 32`, a)

	// Data section.
	{
		m := (&img{}).header(2, 0).tensor("a", TypeF32, 0, 8).at(&a).tensor("blk.0.attn_q.weight", TypeF32, 32, 9).at(&c).data(32, 32+35)
		b = (c + 31) &^ 31
		add("beyond end", m, `gguf: offset %d: tensor 1 "blk.0.attn_q.weight": data [%d, %d) beyond end of file (size %d)`, a, b+32, b+32+36, b+32+35)
	}
	{
		m := (&img{}).header(1, 0).at(&a).tensor("w", TypeQ8_0, 1<<40, 32).at(&c).data(32, 0)
		b = (c + 31) &^ 31
		add("offset beyond end", m, `gguf: offset %d: tensor 0 "w": data [%d, %d) beyond end of file (size %d)`, a, uint64(b)+1<<40, uint64(b)+1<<40+34, b)
	}
	{
		m := (&img{}).header(1, 0).at(&a).tensor("w", TypeQ8_0, math.MaxUint64&^31, 32).at(&c).data(32, 0)
		b = (c + 31) &^ 31
		add("offset wraps", m, `gguf: offset %d: tensor 0 "w": data offset %d (relative to the data section at %d) beyond end of file (size %d)`, a, uint64(math.MaxUint64&^31), b, b)
	}
	{
		m := (&img{}).header(1, 0).at(&a).tensor("u", 200, 64, 4).at(&c).data(32, 32)
		b = (c + 31) &^ 31
		add("unknown type beyond end", m, `gguf: offset %d: tensor 0 "u": data offset %d beyond end of file (size %d)`, a, b+64, b+32)
	}
	{
		m := (&img{}).header(1, 0).tensor("w", TypeF32, 0, 1).at(&a)
		add("data section", m, `gguf: offset %d: header: data section at %d beyond end of file (size %d)`, a, (a+31)&^31, a)
	}
	{
		m := (&img{}).header(3, 0).tensor("a", TypeF32, 0, 16).tensor("b", TypeF32, 64, 16).at(&a).tensor("c", TypeF32, 32, 16).at(&c).data(32, 128)
		b = (c + 31) &^ 31
		add("overlap", m, `gguf: offset %d: tensor 2 "c": data [%d, %d) overlaps tensor 0 "a" [%d, %d)`, a, b+32, b+96, b, b+64)
	}
	{
		m := (&img{}).header(2, 0).tensor("a", TypeF32, 0, 8).at(&a).tensor("b", TypeI8, 0, 1).at(&c).data(32, 64)
		b = (c + 31) &^ 31
		add("same offset", m, `gguf: offset %d: tensor 1 "b": data [%d, %d) overlaps tensor 0 "a" [%d, %d)`, a, b, b+1, b, b+32)
	}
	return cs
}

func TestHostile(t *testing.T) {
	names := map[string]bool{}
	for _, c := range hostileImages() {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			require.False(t, names[c.name], "duplicate case name")
			names[c.name] = true
			f, err := Parse(c.b)
			require.Error(t, err)
			assert.Nil(t, f)
			assert.True(t, errors.Is(err, ErrFormat), "%v", err)
			assert.EqualError(t, err, c.msg)
		})
	}
}

func TestHostileVersions(t *testing.T) {
	for _, c := range []struct {
		b   []byte
		msg string
	}{
		{(&img{}).raw('G', 'G', 'U', 'F').u32(1).u32(0).u32(0).b, "gguf: offset 4: header: version 1 is not supported (it has 32-bit counts; convert the file to version 3)"},
		{(&img{}).raw('G', 'G', 'U', 'F', 0, 0, 0, 3).u64(0).u64(0).b, "gguf: offset 4: header: version field 0x03000000 looks byte-swapped: big-endian GGUF files are not supported"},
		{(&img{}).raw('G', 'G', 'U', 'F', 0, 0, 0, 2).u64(0).u64(0).b, "gguf: offset 4: header: version field 0x02000000 looks byte-swapped: big-endian GGUF files are not supported"},
		{(&img{}).raw('G', 'G', 'U', 'F').u32(4).u64(0).u64(0).b, "gguf: offset 4: header: version 4 is not supported (want 2 or 3)"},
		{(&img{}).raw('G', 'G', 'U', 'F').u32(0).u64(0).u64(0).b, "gguf: offset 4: header: version 0 is not supported (want 2 or 3)"},
	} {
		_, err := Parse(c.b)
		require.ErrorIs(t, err, ErrVersion)
		assert.EqualError(t, err, c.msg)
	}
}

// TestTruncatedEverywhere cuts a valid file at every byte up to the end of
// its last tensor's data: every cut must fail cleanly.
func TestTruncatedEverywhere(t *testing.T) {
	image := writeFile(t, allKinds(), sampleTensors())
	f, err := Parse(image)
	require.NoError(t, err)
	last := f.Tensors[len(f.Tensors)-1]
	size, err := last.Size()
	require.NoError(t, err)
	end := int(f.DataOffset) + int(last.Offset) + int(size)
	for n := range end {
		_, err := Parse(image[:n])
		require.Error(t, err, "cut at %d", n)
		require.ErrorIs(t, err, ErrFormat, "cut at %d", n)
	}
	_, err = Parse(image[:end])
	require.NoError(t, err, "only padding removed")
}

// TestHostileAllocation checks that counts claiming more than the input
// holds fail before anything is allocated for them.
func TestHostileAllocation(t *testing.T) {
	images := [][]byte{
		(&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).u32(uint32(ValueString)).u64(1 << 60).raw(make([]byte, 64)...).b,
		(&img{}).header(0, 1).str("k").u32(uint32(ValueArray)).u32(uint32(ValueUint8)).u64(1 << 60).raw(make([]byte, 64)...).b,
		(&img{}).header(1<<40, 1<<40).raw(make([]byte, 64)...).b,
	}
	for _, b := range images {
		allocs := testing.AllocsPerRun(10, func() {
			_, err := Parse(b)
			if err == nil {
				t.Fatal("accepted")
			}
		})
		assert.Less(t, allocs, 20.0)
	}
	// An array of arrays claiming the remaining bytes at every level: the
	// memory used stays proportional to what is actually read.
	m := (&img{}).header(0, 1).str("k").u32(uint32(ValueArray))
	for range maxArrayDepth - 1 {
		m.u32(uint32(ValueArray)).u64(1 << 16)
	}
	m.u32(uint32(ValueUint8)).u64(0).raw(make([]byte, 1<<20)...)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	_, err := Parse(m.b)
	runtime.ReadMemStats(&ms)
	require.Error(t, err)
	t.Logf("allocated %d bytes for a %d-byte input", ms.TotalAlloc-before, len(m.b))
	assert.Less(t, ms.TotalAlloc-before, uint64(16<<20))
}
