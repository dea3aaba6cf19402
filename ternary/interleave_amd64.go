//go:build amd64 && !purego

package ternary

// ilvTilesVNNI is the AVX-512 VNNI kernel of MatVecInterleavedRange (matvec_amd64.s):
// ilvTilesGeneric's contract, on tiles tiles of w (tileBytes apart), nb8 ≥ 1 groups of
// 8 blocks each, with acc 512 floats of scratch.
//
//go:noescape
func ilvTilesVNNI(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)

// ilvBlockVNNI is ilvBlockGeneric for one tile × block blk, q the block's activations
// (256·(b/2) + 32·(b%2) into Q8.Q), sum its Sum, out 64 int32.
//
//go:noescape
func ilvBlockVNNI(blk *byte, q *int8, sum *int32, out *int32)

func archIlvVNNI() bool { return hasAVX512VNNI() }

func archIlvTiles(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	ilvTilesVNNI(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
}

func archIlvBlock(blk *byte, q *int8, sum *int32, out *int32) { ilvBlockVNNI(blk, q, sum, out) }
