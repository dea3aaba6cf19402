package mslemu

import (
	"errors"
	"strings"
	"testing"
)

// lintKernelSrc is a kernel that obeys every rule; each negative case below breaks one.
const lintKernelSrc = `#include <metal_stdlib>
using namespace metal;
#ifndef TGN
#define TGN 256
#endif
kernel void k(device float* a [[buffer(0)]],
              device const float* b [[buffer(1)]],
              uint2 tgp [[threadgroup_position_in_grid]],
              uint2 ntg [[threads_per_threadgroup]],
              uint tid [[thread_index_in_threadgroup]],
              ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup float xs[TGN];
  threadgroup float4 ys[TGN / 4];
  xs[tid] = b[tid];
  ys[0] = float4(1.0f);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  a[tgp.x * ntg.x + tid] = xs[tid] + ys[0].x + float(lane);
}
`

func lintCase(t *testing.T, src string) error {
	t.Helper()
	_, err := generate(map[string]string{"k.metal": src})
	return err
}

func TestLintRules(t *testing.T) {
	if err := lintCase(t, lintKernelSrc); err != nil {
		t.Fatalf("the well-formed kernel is refused: %v", err)
	}
	for _, c := range []struct {
		name, old, new, want string
	}{
		// defect 1 of issue 12: a vector position beside a scalar size
		{"width", "uint2 ntg [[threads_per_threadgroup]]", "uint ntg [[threads_per_threadgroup]]", "vectors of one width"},
		{"width3", "uint2 ntg [[threads_per_threadgroup]]", "ushort3 ntg [[threads_per_threadgroup]]", "vectors of one width"},
		{"position type", "uint2 tgp [[threadgroup_position_in_grid]]", "int2 tgp [[threadgroup_position_in_grid]]", "position and size attributes are uint, ushort"},
		{"index int", "uint tid [[thread_index_in_threadgroup]]", "int tid [[thread_index_in_threadgroup]]", "index attributes are uint or ushort"},
		{"index vector", "ushort lane [[thread_index_in_simdgroup]]", "ushort2 lane [[thread_index_in_simdgroup]]", "index attributes are uint or ushort"},
		{"buffer duplicate", "b [[buffer(1)]]", "b [[buffer(0)]]", "both use [[buffer(0)]]"},
		{"buffer range", "b [[buffer(1)]]", "b [[buffer(31)]]", "[[buffer(31)]] is outside 0..30"},
		{"double type", "xs[tid] = b[tid];", "double d = b[tid]; xs[tid] = float(d);", "MSL has no double"},
		{"double vector", "xs[tid] = b[tid];", "double2 d; xs[tid] = b[tid];", "MSL has no double"},
		{"double macro", "#define TGN 256", "#define TGN 256\n#define D double", "MSL has no double"},
		{"long double literal", "xs[tid] = b[tid];", "xs[tid] = b[tid] * 1.0L;", "long double literal"},
	} {
		bad := strings.Replace(lintKernelSrc, c.old, c.new, 1)
		if bad == lintKernelSrc {
			t.Fatalf("%s: the substitution did not apply", c.name)
		}
		err := lintCase(t, bad)
		if !errors.Is(err, ErrRule) || !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an ErrRule containing %q", c.name, err, c.want)
		}
	}
}

// The threadgroup-memory rule needs the macros, so clang evaluates it: at N = 256 the
// kernel holds 2 KiB, at N = 4096 exactly 32 KiB (allowed), one more float4 row over.
func TestLintThreadgroupMemory(t *testing.T) {
	src := map[string]string{"k.metal": lintKernelSrc}
	for _, n := range []string{"256", "4096"} {
		if err := checkOrSkip(t, src, map[string]string{"TGN": n}); err != nil {
			t.Errorf("N=%s (%s KiB): %v", n, n, err)
		}
	}
	// 4100 floats + 1025 float4: 16400 + 16400 bytes = 32800 > 32768
	err := checkOrSkip(t, src, map[string]string{"TGN": "4100"})
	if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), "static threadgroup memory over 32768 bytes") ||
		!strings.Contains(err.Error(), "tg_limit<32800, 32768>") {
		t.Errorf("N=4100: got %v, want the 32 KiB limit with the size 32800", err)
	}
	// the 16-byte granularity: 4095 floats (16380 → 16384) + 1024 float4 = 32768, allowed;
	// 4093 (16372 → 16384) as well; each rounded separately
	one := strings.Replace(lintKernelSrc, "threadgroup float4 ys[TGN / 4];", "threadgroup float4 ys[1024]; threadgroup float zs[1];", 1)
	one = strings.Replace(one, "ys[0] = float4(1.0f);", "ys[0] = float4(1.0f); zs[0] = 0.0f;", 1)
	err = checkOrSkip(t, map[string]string{"k.metal": one}, map[string]string{"TGN": "4092"})
	// 16368 + 16384 + 16 (one float rounded to 16) = 32768
	if err != nil {
		t.Errorf("N=4092 with a 1-float array: %v", err)
	}
	err = checkOrSkip(t, map[string]string{"k.metal": one}, map[string]string{"TGN": "4093"})
	if !strings.Contains(err.Error(), "tg_limit<32784, 32768>") {
		t.Errorf("N=4093 with a 1-float array: got %v, want 32784 bytes refused", err)
	}
}

// Buffer indices written as macros are checked by clang.
func TestLintMacroIndices(t *testing.T) {
	src := strings.Replace(lintKernelSrc, "b [[buffer(1)]]", "b [[buffer(IDX)]]", 1)
	if err := checkOrSkip(t, map[string]string{"k.metal": src}, map[string]string{"IDX": "2"}); err != nil {
		t.Fatalf("IDX=2: %v", err)
	}
	for idx, want := range map[string]string{"0": "share a [[buffer(n)]] index", "31": "outside 0..30"} {
		err := checkOrSkip(t, map[string]string{"k.metal": src}, map[string]string{"IDX": idx})
		if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), want) {
			t.Errorf("IDX=%s: got %v, want %q", idx, err, want)
		}
	}
}
