// Package shaders holds the Vulkan backend's compute shaders: GLSL sources and the
// SPIR-V that glslc makes of them, committed and embedded (go generate remakes it;
// TestGenerated checks that the committed SPIR-V is what the sources compile to). Every
// shader compiles with Debian bookworm's glslc 2023.2, which has no integer dot product
// or cooperative matrix extensions.
//
// The kernels of the GPU engine (internal/gpu/engine) are GLSL translations of its
// Metal library, one SPIR-V module per kernel named as the kernel (mv_plain.spv, …);
// common.glsl says how they find their buffers and arguments. The go:generate lines of
// this package's files (gen_*.go, one per source file) are the one list of modules.
package shaders

import (
	"embed"
	"fmt"
)

//go:generate glslc --target-env=vulkan1.2 -O rmsnorm.comp -o rmsnorm.spv

// RMSNorm normalizes rows: y = x / sqrt(mean(x²) + eps) · w. One workgroup per row;
// bindings 0 (x), 1 (w), 2 (y) of set 0 are float storage buffers; push constants are
// {uint n; float eps}; specialization constant 0 is the workgroup size (any, up to the
// device's limit: the reduction adapts to the subgroup size).
//
//go:embed rmsnorm.spv
var RMSNorm []byte

//go:embed *.spv
var modules embed.FS

// Kernel returns the SPIR-V of the engine kernel of that name.
func Kernel(name string) ([]byte, error) {
	b, err := modules.ReadFile(name + ".spv")
	if err != nil {
		return nil, fmt.Errorf("no SPIR-V for kernel %s", name)
	}
	return b, nil
}
