//go:build !(amd64 || arm64) || purego

package ternary

// No SIMD interleaved kernel on this platform (or in a purego build): the generic twin
// runs.

func archIlvFamily(id q8ID) ilvFamily { return ilvGeneric }

func archIlvTiles(fam ilvFamily, w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	panic("ternary: no SIMD interleaved kernel on this platform")
}

func archIlvBlock(fam ilvFamily, blk *byte, q *int8, sum *int32, out *int32) {
	panic("ternary: no SIMD interleaved kernel on this platform")
}

func archIlvAVX2Name() string { return "avx2" }
