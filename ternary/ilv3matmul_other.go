//go:build !amd64 || purego

package ternary

func archIlv3Mat(nv int, a *ilv3MatArgs) {
	panic("ternary: no SIMD batched base-3 interleaved kernel on this platform")
}
