//go:build !(amd64 || arm64) || purego

package ternary

func archIlvMatWidth(fam ilvFamily) int { return 0 }

func archIlvMatFam(fam ilvFamily, nv int, a *ilvMatArgs) {
	panic("ternary: no SIMD batched interleaved kernel on this platform")
}
