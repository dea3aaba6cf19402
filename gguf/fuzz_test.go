package gguf

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

func fuzzSeeds(tb testing.TB) [][]byte {
	seeds := [][]byte{
		writeFile(tb, allKinds(), sampleTensors()),
		writeFile(tb, allKinds(), sampleTensors(), WithVersion(2)),
		writeFile(tb, nil, nil),
		writeFile(tb, []KV{{"general.alignment", MustValue(uint32(8))}}, sampleTensors()[:2]),
		writeFile(tb, []KV{{"general.architecture", MustValue("qwen35")}, {"v", MustValue([]Value{MustValue([]Value{MustValue([]uint8{1})})})}}, nil),
		// Unknown type, out-of-order and gapped offsets: valid but not
		// canonical.
		(&img{}).header(3, 1).kvU32("general.alignment", 16).
			tensor("u", 99, 64, 8).tensor("b", TypeF32, 32, 2).tensor("a", TypeI8, 0, 3).data(16, 96).b,
		(&img{}).header(2, 0).tensor("b", TypeF32, 64, 2).tensor("a", TypeQ8_0, 0, 32).data(32, 72).b,
	}
	if b, err := os.ReadFile("testdata/gguf-py.gguf"); err == nil {
		seeds = append(seeds, b)
	}
	for _, h := range hostileImages() {
		seeds = append(seeds, h.b)
	}
	return seeds
}

// FuzzParse checks that Parse never panics, that its errors wrap a
// sentinel, and that any file it accepts is written again by the Writer to
// a file with the same content, which the Writer reproduces byte for byte.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "gguf: offset ") {
				t.Fatalf("error does not locate itself: %v", err)
			}
			return
		}
		for _, kv := range g.KV {
			_ = kv.Value.String()
			_ = kv.Value.Interface()
		}
		unknown := false
		for _, ti := range g.Tensors {
			d, err := g.TensorData(ti.Name)
			if !ti.Type.Known() {
				unknown = true
				if !errors.Is(err, ErrUnknownType) {
					t.Fatalf("tensor %q of unknown type: %v", ti.Name, err)
				}
				continue
			}
			size, _ := ti.Size()
			if err != nil || int64(len(d)) != size {
				t.Fatalf("tensor %q: %d bytes, size %d, %v", ti.Name, len(d), size, err)
			}
		}
		if g.DataOffset > int64(len(data))+1<<16 {
			// A header with no tensors need not be padded, so a huge
			// alignment would have the Writer emit that much padding.
			return
		}
		out, err := rewrite(g)
		if unknown {
			if !errors.Is(err, ErrUnknownType) {
				t.Fatalf("rewrite with unknown tensor types: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("rewrite of an accepted file: %v", err)
		}
		h, err := Parse(out)
		if err != nil {
			t.Fatalf("rewritten file refused: %v", err)
		}
		requireSameContent(t, g, h)
		again, err := rewrite(h)
		if err != nil {
			t.Fatalf("second rewrite: %v", err)
		}
		if !bytes.Equal(out, again) {
			t.Fatalf("rewrite is not a fixed point")
		}
	})
}
