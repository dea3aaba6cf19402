//go:build !amd64 || purego

package ternary

func archIlvMat(nv int, a *ilvMatArgs) {
	panic("ternary: no SIMD batched interleaved kernel on this platform")
}

func archIlvMatAVX2(nv int, a *ilvMatArgs) {
	panic("ternary: no SIMD batched interleaved kernel on this platform")
}
