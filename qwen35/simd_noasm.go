//go:build purego || !(amd64 || arm64)

package qwen35

// archKernels returns no SIMD implementation: the generic kernels run.
func archKernels() []*kernels { return nil }
