//go:build arm64 && !purego

package ternary

// The interleaved kernels of the two arm64 Q8 families live in interleave_arm64.s:
// ilvTilesGeneric's contract, on tiles tiles of w (tileBytes apart), nb8 ≥ 1 groups of
// 8 blocks each, with acc 512 floats of scratch. Each gives the integers and the float
// fold of its family's row kernel (q8RowsNEONDot, q8RowsNEON).

//go:noescape
func ilvTilesNEONDot(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)

//go:noescape
func ilvTilesNEON(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)

// ilvBlockNEONDot and ilvBlockNEON are ilvBlockGeneric for one tile × block blk, q the
// block's activations (256·(b/2) + 32·(b%2) into Q8.Q), sum its Sum, out 64 int32.
//
//go:noescape
func ilvBlockNEONDot(blk *byte, q *int8, sum *int32, out *int32)

//go:noescape
func ilvBlockNEON(blk *byte, q *int8, sum *int32, out *int32)

// archIlvFamily returns the interleaved kernel of Q8 family id: each NEON family has
// its own (the SDOT one only runs where the CPU has SDOT, as q8NEONDot does).
func archIlvFamily(id q8ID) ilvFamily {
	switch id {
	case q8NEONDot:
		return ilvNEONDot
	case q8NEON:
		return ilvNEON
	}
	return ilvGeneric
}

func archIlvTiles(fam ilvFamily, w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	switch fam {
	case ilvNEONDot:
		ilvTilesNEONDot(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	case ilvNEON:
		ilvTilesNEON(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	default:
		panic("ternary: no interleaved kernel for this family")
	}
}

func archIlvBlock(fam ilvFamily, blk *byte, q *int8, sum *int32, out *int32) {
	switch fam {
	case ilvNEONDot:
		ilvBlockNEONDot(blk, q, sum, out)
	case ilvNEON:
		ilvBlockNEON(blk, q, sum, out)
	default:
		panic("ternary: no interleaved kernel for this family")
	}
}

func archIlvAVX2Name() string { return "avx2" }
