package mslemu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFloatLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"1.0": "1.0f", "1.": "1.f", ".5": ".5f", "1e-3": "1e-3f", "2.5E+4": "2.5E+4f", "0x1.8p3": "0x1.8p3f",
		"1.0f": "", "1.0F": "", "3": "", "0xff": "", "0xFFe3": "", "1u": "", "1.5h": "::half(1.5f)", "2e3h": "::half(2e3f)",
	} {
		got, ok := floatLiteral(in)
		if want == "" {
			assert.False(t, ok, in)
			continue
		}
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
}

func TestRewrite(t *testing.T) {
	src := `#include <metal_stdlib>
#define EPS 1e-6
using namespace metal;
// a comment with [[buffer(9)]] and threadgroup float x[4];
/* block
   comment 2.0 */
struct S { float a [[id(0)]]; };
inline float helper(threadgroup float* p, float v) { return p[0] * v * 0.5; }
[[max_total_threads_per_threadgroup(128)]]
kernel void k1(device const float* a [[buffer(0)]],
               constant S& s [[ buffer(1) ]],
               threadgroup float* dyn [[threadgroup(2)]],
               uint3 gid [[thread_position_in_grid]],
               ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup float sh[32][2], other[8];
  threadgroup atomic_uint
      counter;
  threadgroup float* p = sh[0];
  const char* str = "kernel void fake(int x)";
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
template <typename T> kernel void tk(device T* a [[buffer(0)]]) {}
template [[host_name("tk_f")]] kernel void tk<float>(device float* a [[buffer(0)]]);
`
	id := 0
	res, err := rewriteSource("t.metal", src, &id)
	require.NoError(t, err)
	assert.Equal(t, strings.Count(src, "\n"), strings.Count(res.Text, "\n"), "line count kept")
	assert.NotContains(t, res.Text, "[[buffer(0)]]")
	assert.NotContains(t, res.Text, "[[id(0)]]")
	assert.Contains(t, res.Text, "[[buffer(9)]]", "comments are left alone")
	assert.Contains(t, res.Text, "#define EPS 1e-6f")
	assert.Contains(t, res.Text, "v * 0.5f")
	assert.Contains(t, res.Text, "typedef float mslemu_tgt_1[32][2]; mslemu_tgt_1& sh =")
	assert.Contains(t, res.Text, "typedef float mslemu_tgt_2[8]; mslemu_tgt_2& other =")
	assert.Contains(t, res.Text, "typedef atomic_uint mslemu_tgt_3; mslemu_tgt_3& counter =")
	assert.Contains(t, res.Text, "threadgroup float* p = sh[0];", "pointer declarations stay")
	assert.Contains(t, res.Text, `"kernel void fake(int x)"`)
	require.Len(t, res.Kernels, 3)
	assert.True(t, res.Kernels[1].Template)
	res.Kernels = append(res.Kernels[:1], res.Kernels[2:]...)
	k := res.Kernels[0]
	assert.Equal(t, "k1", k.Name)
	assert.Equal(t, 128, k.MaxThreads)
	assert.Equal(t, 10, k.Line)
	require.Len(t, k.Params, 5)
	assert.Equal(t, kernelParam{Name: "a", Type: "device const float*", Kind: paramBuffer, Index: "0"}, k.Params[0])
	assert.Equal(t, kernelParam{Name: "s", Type: "constant S&", Kind: paramBuffer, Index: "1"}, k.Params[1])
	assert.Equal(t, kernelParam{Name: "dyn", Type: "threadgroup float*", Kind: paramThreadgroup, Index: "2"}, k.Params[2])
	assert.Equal(t, kernelParam{Name: "gid", Type: "uint3", Kind: paramBuiltin, Attr: "thread_position_in_grid"}, k.Params[3])
	assert.Equal(t, "tk_f", res.Kernels[1].Name)
	assert.Equal(t, "::tk<float>", res.Kernels[1].Call)

	res, err = rewriteSource("ns.metal", "namespace a::b { namespace { kernel void k(device float* x [[buffer(0)]]) {} } }\nkernel void top(device float* x [[buffer(0)]]) {}", &id)
	require.NoError(t, err)
	require.Len(t, res.Kernels, 2)
	assert.Equal(t, "::a::b::k", res.Kernels[0].Call)
	assert.Equal(t, "::top", res.Kernels[1].Call)

	_, err = rewriteSource("bad.metal", "kernel void k(device float* a) {}", &id)
	assert.ErrorContains(t, err, "parameter a has no [[buffer(i)]]")
	_, err = rewriteSource("bad.metal", "kernel void k(texture2d<float> t [[texture(0)]]) {}", &id)
	assert.ErrorContains(t, err, "unsupported attribute [[texture]]")
}

func checkOrSkip(t *testing.T, src map[string]string, macros map[string]string) error {
	t.Helper()
	err := CompileCheck(src, macros)
	if errors.Is(err, ErrNoCompiler) && os.Getenv("MSLEMU_REQUIRE") == "" {
		t.Skip("no clang++: install clang (CI sets MSLEMU_REQUIRE, which turns this into a failure)")
	}
	return err
}

func TestCompileCheck(t *testing.T) {
	src := map[string]string{}
	for _, pat := range []string{"testdata/*.metal", "testdata/*.h"} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			src[filepath.Base(f)] = string(data)
		}
	}
	require.NoError(t, checkOrSkip(t, src, nil))

	bad := map[string]string{"a.metal": `#include <metal_stdlib>
using namespace metal;
kernel void k(device float4* a [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  float3 b = a[gid].xyz;
  a[gid] = a[gid] + b;   // float4 + float3: an error in MSL too
}
`}
	err := checkOrSkip(t, bad, nil)
	require.ErrorIs(t, err, ErrCompile)
	assert.Contains(t, err.Error(), "a.metal:5:")
	t.Log(err)

	// macros reach the preprocessor
	cond := map[string]string{"m.metal": `#include <metal_stdlib>
#if !defined(WIDTH) || WIDTH != 4
#error WIDTH must be 4
#endif
kernel void k(device float* a [[buffer(0)]]) { a[0] = WIDTH; }
`}
	require.NoError(t, checkOrSkip(t, cond, map[string]string{"WIDTH": "4"}))
	require.ErrorIs(t, checkOrSkip(t, cond, nil), ErrCompile)

	// a kernel parameter type error is found too (entry points are type-checked)
	require.ErrorIs(t, checkOrSkip(t, map[string]string{"p.metal": `#include <metal_stdlib>
kernel void k(device float* a [[buffer(0)]], float3 gid [[thread_position_in_grid]]) {}
`}, nil), ErrCompile)
}

// TestLanguageLevelAndWarnings: the kernels are compiled as C++14 (MSL 3's base) with
// warnings fatal. Each case is valid C++17 or valid-but-suspect code that clang's C++17
// build with -w accepted, and that must now fail.
func TestLanguageLevelAndWarnings(t *testing.T) {
	const head = "#include <metal_stdlib>\nusing namespace metal;\n"
	ok := head + `kernel void k(device float* a [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  a[gid] = a[gid] * 2.0f;
}
`
	require.NoError(t, checkOrSkip(t, map[string]string{"k.metal": ok}, nil))
	for name, body := range map[string]string{
		"if constexpr (C++17)":         "if constexpr (sizeof(float) == 4) { a[gid] = 1.0f; }",
		"structured binding (C++17)":   "struct P { float x, y; }; P p = {1.0f, 2.0f}; auto [u, v] = p; a[gid] = u + v;",
		"init-statement in if (C++17)": "if (float v = a[gid]; v > 0.0f) { a[gid] = v; }",
		"unused variable":              "float unused = a[gid]; a[gid] = 1.0f;",
		"sign comparison":              "int n = -1; if (gid < n) { a[gid] = 1.0f; }",
		"uninitialized":                "float v; if (gid > 3u) { v = 1.0f; } a[gid] = v;",
	} {
		src := head + "kernel void k(device float* a [[buffer(0)]], uint gid [[thread_position_in_grid]]) {\n  " + body + "\n}\n"
		err := checkOrSkip(t, map[string]string{"k.metal": src}, nil)
		if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), "k.metal:4:") {
			t.Errorf("%s: got %v, want a compile error at k.metal:4", name, err)
		}
	}
}
