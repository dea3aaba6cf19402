//go:build arm64 && !purego

package ternary

// ilv3TilesNEONDot is the SDOT kernel of MatVecInterleaved3Range
// (interleave3_arm64.s): ilv3TilesGeneric's contract, on tiles tiles of w (tileBytes
// apart), nb8 ≥ 1 groups of 8 blocks each, with acc 640 floats of scratch. It does not
// read sum: its integers come out with the block's Sum already taken off.
//
//go:noescape
func ilv3TilesNEONDot(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)

// ilv3BlockNEONDot is ilv3BlockGeneric for one tile × block blk, q the block's
// activations (256·(b/2) + 32·(b%2) into Q8.Q), out 80 int32.
//
//go:noescape
func ilv3BlockNEONDot(blk *byte, q *int8, sum *int32, out *int32)

// ilv3PairNEONDot is the SDOT family's batched base-3 kernel: one tile (8·nb8 blocks)
// and two vectors, vector 1's activations qs bytes after vector 0's (q), its D ds bytes
// after d, its 640 floats of acc after vector 0's, its 80 outputs ys bytes after y;
// each vector's outputs are ilv3TilesNEONDot's for it alone. Like the decode kernel it
// does not read sum.
//
//go:noescape
func ilv3PairNEONDot(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int)

// ilv3QuadNEONDot is ilv3PairNEONDot for four vectors (vector v's arguments v·qs, v·ds
// and v·ys bytes on, its acc 640·v floats on).
//
//go:noescape
func ilv3QuadNEONDot(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int)

// archIlv3Native reports whether a base-3 SIMD kernel gives Q8 family id's bits here:
// the SDOT family's (which runs only where the CPU has SDOT). The plain NEON family has
// none: on ARMv8.0 cores PTQ1_0 keeps the file's layout.
func archIlv3Native(id q8ID) bool { return id == q8NEONDot }

func archIlv3Name() string { return "neondot" }

func archIlv3Tiles(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	ilv3TilesNEONDot(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
}

func archIlv3Block(blk *byte, q *int8, sum *int32, out *int32) {
	ilv3BlockNEONDot(blk, q, sum, out)
}

// archIlv3Batched reports whether the base-3 kernels of Q8 family id have a batched
// twin: not on arm64, whose batches run four vectors at a time, then two (archIlv3Quad,
// archIlv3Pair).
func archIlv3Batched(id q8ID) bool { return false }

// archIlv3Quads reports whether archIlv3Quad runs a kernel: the SDOT family's batches
// take four vectors at a time, then two.
const archIlv3Quads = true

func archIlv3Quad(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int) {
	ilv3QuadNEONDot(w, nb8, q, qs, d, sum, ds, acc, y, ys)
}

func archIlv3Pair(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int) {
	ilv3PairNEONDot(w, nb8, q, qs, d, sum, ds, acc, y, ys)
}
