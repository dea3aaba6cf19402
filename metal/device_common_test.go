package metal

import (
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/metal/internal/gpu"
)

func TestDeviceJoinSources(t *testing.T) {
	src, err := mtlJoinSources(map[string]string{
		"z.metal":  "#include \"common.h\"\nkernel void z() {}",
		"a.metal":  "  #  include \"common.h\" // shared\n#include <metal_stdlib>\nkernel void a() {}\n",
		"common.h": "#pragma once\nstruct S { uint n; };\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "#line 1 \"common.h\"\n#pragma once\nstruct S { uint n; };\n" +
		"#line 1 \"a.metal\"\n// (already in the program) #include \"common.h\"\n#include <metal_stdlib>\nkernel void a() {}\n" +
		"#line 1 \"z.metal\"\n// (already in the program) #include \"common.h\"\nkernel void z() {}\n"
	if src != want {
		t.Errorf("joined:\n%s\nwant:\n%s", src, want)
	}
	for _, bad := range []map[string]string{
		nil,
		{"": "x"},
		{"a\"b.metal": "x"},
		{"a.metal": "\xff"},
		{"a.metal": "a\x00b"},
	} {
		if _, err := mtlJoinSources(bad); err == nil {
			t.Errorf("mtlJoinSources(%q) accepted", bad)
		}
	}
}

func TestDeviceLocalInclude(t *testing.T) {
	for line, want := range map[string]string{
		"#include \"a.h\"\n":          "a.h",
		"  # include  \"b c.h\"  ":    "b c.h",
		"#include \"x.h\" // why":     "x.h",
		"#include <metal_stdlib>\n":   "",
		"#include \"x.h\" junk":       "",
		"#import \"x.h\"":             "",
		"// #include \"x.h\"":         "",
		"#include \"unterminated.h\n": "",
	} {
		got, ok := mtlLocalInclude(line)
		if got != want || ok != (want != "") {
			t.Errorf("mtlLocalInclude(%q) = %q, %v; want %q", line, got, ok, want)
		}
	}
}

func TestDeviceCheckMacrosAndKernels(t *testing.T) {
	if err := mtlCheckMacros(map[string]string{"QK": "128", "_X1": "", "HAS_F": "1.0f"}); err != nil {
		t.Error(err)
	}
	for _, bad := range []map[string]string{{"1X": "1"}, {"A-B": "1"}, {"": "1"}, {"A": "1\n2"}, {"A": "\x00"}} {
		if err := mtlCheckMacros(bad); err == nil {
			t.Errorf("mtlCheckMacros(%q) accepted", bad)
		}
	}
	ks, err := mtlCheckKernels([]string{"a", "b", "a"})
	if err != nil || strings.Join(ks, ",") != "a,b" {
		t.Errorf("mtlCheckKernels = %v, %v", ks, err)
	}
	if _, err := mtlCheckKernels([]string{"a b"}); err == nil {
		t.Error("kernel name with a space accepted")
	}
}

func TestDeviceCheckNoCopy(t *testing.T) {
	const page, max = 16384, 1 << 29
	if err := mtlCheckNoCopy(4*page, 2*page, page, max); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		addr uintptr
		n    int
		want string
	}{
		{4 * page, 0, "empty"},
		{4*page + 4096, page, "not aligned"},
		{4 * page, page + 1, "not a multiple"},
		{4 * page, 2 * max, "maximum"},
	} {
		err := mtlCheckNoCopy(c.addr, c.n, page, max)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mtlCheckNoCopy(%#x, %d) = %v; want %q", c.addr, c.n, err, c.want)
		}
	}
}

func TestDeviceCheckSizes(t *testing.T) {
	if err := mtlCheckSizes("k", gpu.Size{4, 1, 1}, gpu.Size{32, 4, 2}, 256); err != nil {
		t.Error(err)
	}
	for _, c := range [][2]gpu.Size{
		{{0, 1, 1}, {1, 1, 1}},
		{{1, -1, 1}, {1, 1, 1}},
		{{1, 1, 1}, {1, 0, 1}},
		{{1, 1, 1}, {64, 4, 2}},
		{{1 << 32, 1, 1}, {1, 1, 1}},
	} {
		if err := mtlCheckSizes("k", c[0], c[1], 256); err == nil {
			t.Errorf("mtlCheckSizes(%v, %v) accepted", c[0], c[1])
		}
	}
}

type devFakeBuffer int

func (b devFakeBuffer) Len() int         { return int(b) }
func (b devFakeBuffer) Contents() []byte { return make([]byte, b) }
func (b devFakeBuffer) Release()         {}

func TestDeviceCheckArg(t *testing.T) {
	good := []struct {
		a  gpu.Arg
		tg int
	}{
		{gpu.Arg{Index: 0, Buf: devFakeBuffer(64)}, 0},
		{gpu.Arg{Index: 30, Buf: devFakeBuffer(64), Offset: 64}, 0},
		{gpu.Arg{Index: 3, Bytes: make([]byte, 4096)}, 0},
		{gpu.Arg{Index: 0, Threadgroup: 1}, 16},
		{gpu.Arg{Index: 1, Threadgroup: 4096}, 4096},
		{gpu.Arg{Index: 1, Threadgroup: 4100}, 4112},
	}
	for _, c := range good {
		tg, err := mtlCheckArg("k", c.a)
		if err != nil || tg != c.tg {
			t.Errorf("mtlCheckArg(%+v) = %d, %v; want %d", c.a, tg, err, c.tg)
		}
	}
	for _, a := range []gpu.Arg{
		{Index: -1, Buf: devFakeBuffer(4)},
		{Index: 31, Buf: devFakeBuffer(4)},
		{Index: 0},
		{Index: 0, Buf: devFakeBuffer(4), Bytes: []byte{1}},
		{Index: 0, Buf: devFakeBuffer(4), Threadgroup: 16},
		{Index: 0, Buf: devFakeBuffer(4), Offset: 5},
		{Index: 0, Buf: devFakeBuffer(4), Offset: -1},
		{Index: 0, Bytes: []byte{}},
		{Index: 0, Bytes: make([]byte, 4097)},
		{Index: 0, Bytes: []byte{1}, Offset: 1},
		{Index: 0, Threadgroup: -16},
		{Index: 0, Threadgroup: 16, Offset: 4},
	} {
		if _, err := mtlCheckArg("k", a); err == nil {
			t.Errorf("mtlCheckArg(%+v) accepted", a)
		}
	}
}
