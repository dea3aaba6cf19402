//go:build !(amd64 || arm64) || purego

package ternary

// No SIMD base-3 interleaved kernel on this platform (or in a purego build): the
// generic twin runs.

func archIlv3Native(id q8ID) bool { return false }

func archIlv3Name() string { return "generic" }

func archIlv3Tiles(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	panic("ternary: no SIMD base-3 interleaved kernel on this platform")
}

func archIlv3Block(blk *byte, q *int8, sum *int32, out *int32) {
	panic("ternary: no SIMD base-3 interleaved kernel on this platform")
}

func archIlv3Batched(id q8ID) bool { return false }

// archIlv3Quads reports whether archIlv3Quad runs a kernel (a pair kernel's for four
// vectors): not here.
const archIlv3Quads = false

func archIlv3Quad(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int) {
	panic("ternary: no base-3 four-vector kernel on this platform")
}

func archIlv3Pair(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int) {
	panic("ternary: no SIMD base-3 interleaved kernel on this platform")
}
