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

// archIlvFamily returns the interleaved kernel of Q8 family id: the AVX-512 one for the
// AVX-512 VNNI families (it fuses the float multiply-add as they do).
func archIlvFamily(id q8ID) ilvFamily {
	if hasAVX512VNNI() && (id == q8AVX512 || id == q8GFNI) {
		return ilvVNNI
	}
	return ilvGeneric
}

func archIlvTiles(fam ilvFamily, w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	ilvTilesVNNI(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
}

func archIlvBlock(fam ilvFamily, blk *byte, q *int8, sum *int32, out *int32) {
	ilvBlockVNNI(blk, q, sum, out)
}
