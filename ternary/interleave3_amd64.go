//go:build amd64 && !purego

package ternary

// ilv3TilesVNNI is the AVX-512 VNNI kernel of MatVecInterleaved3Range
// (interleave3_amd64.s): ilv3TilesGeneric's contract, on tiles tiles of w (tileBytes
// apart), nb8 ≥ 1 groups of 8 blocks each, with acc 640 floats of scratch.
//
//go:noescape
func ilv3TilesVNNI(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)

// ilv3BlockVNNI is ilv3BlockGeneric for one tile × block blk, q the block's activations
// (256·(b/2) + 32·(b%2) into Q8.Q), sum its Sum, out 80 int32.
//
//go:noescape
func ilv3BlockVNNI(blk *byte, q *int8, sum *int32, out *int32)

func archIlv3VNNI() bool { return hasAVX512VNNI() }

func archIlv3Tiles(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	ilv3TilesVNNI(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
}

func archIlv3Block(blk *byte, q *int8, sum *int32, out *int32) { ilv3BlockVNNI(blk, q, sum, out) }
