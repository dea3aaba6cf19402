//go:build purego || !(amd64 || arm64)

package hadamard

// archImpls returns no SIMD implementation: the generic code runs.
func archImpls() []*fwhtImpl { return nil }
