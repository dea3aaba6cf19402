package metal

import (
	"errors"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/gpu"
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

// The darwin device's mapping of a failed command buffer's NSError.
func TestCommandBufferFailure(t *testing.T) {
	for _, c := range []struct {
		code int64
		desc string
		want error
	}{
		{2, "Caused GPU Timeout Error (00000002:kIOGPUCommandBufferCallbackErrorTimeout)", gpu.ErrTimeout},
		{1, "Internal Error (0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity)", gpu.ErrTimeout},
		{8, "Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)", gpu.ErrOutOfMemory},
		{3, "Caused GPU Address Fault Error (0000000b:kIOGPUCommandBufferCallbackErrorPageFault)", nil},
	} {
		err := mtlCommandBufferFailure(c.code, c.desc)
		if !strings.Contains(err.Error(), c.desc) {
			t.Errorf("%d: %v lacks the description", c.code, err)
		}
		for _, s := range []error{gpu.ErrTimeout, gpu.ErrOutOfMemory} {
			if errors.Is(err, s) != (s == c.want) {
				t.Errorf("%d %q: errors.Is(%v) = %v", c.code, c.desc, s, !(s == c.want))
			}
		}
	}
}
