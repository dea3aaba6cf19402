package mslemu

import (
	"strings"
	"testing"
)

// FuzzParse: the source parser, its linter and the OpenCL rewrite never panic, and the
// rewrites keep every line where it was (diagnostics and barrier sites name MSL lines).
func FuzzParse(f *testing.F) {
	f.Add(lintKernelSrc)
	f.Add("kernel void k(device float* a [[buffer(0)]], uint2 g [[thread_position_in_grid]], uint n [[threads_per_grid]]) {}")
	f.Add("kernel void k(device float* a [[buffer(99999999999999999999)]]) { threadgroup float x[1]; }")
	f.Add("template [[host_name(\"x\")]] kernel k_t k<float>;\nkernel void k(")
	f.Add("#define D double\n[[[[ ]] kernel void (((")
	f.Add("kernel void k(device float* a [[buffer(0), buffer(0)]]) { threadgroup float4 y[2], z; float local = 1.0h; }")
	f.Fuzz(func(t *testing.T, src string) {
		_, _ = generate(map[string]string{"f.metal": src})
		id := 0
		if res, err := rewriteSource("f.metal", src, &id); err == nil && strings.Count(res.Text, "\n") != strings.Count(src, "\n") {
			t.Fatalf("rewriteSource moved lines: %d → %d", strings.Count(src, "\n"), strings.Count(res.Text, "\n"))
		}
		if out, err := rewriteOpenCL("f.metal", src); err == nil && strings.Count(out, "\n") != strings.Count(src, "\n") {
			t.Fatalf("rewriteOpenCL moved lines: %d → %d", strings.Count(src, "\n"), strings.Count(out, "\n"))
		}
	})
}
