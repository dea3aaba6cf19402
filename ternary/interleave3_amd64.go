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

// ilv3TilesAVXVNNI and ilv3BlockAVXVNNI are ilv3TilesVNNI and ilv3BlockVNNI for the
// AVX2 family on AVX-VNNI (256-bit VPDPBUSD in its VEX encoding): the integers of the
// AVX-512 kernel, the float fold of the AVX2 one.
//
//go:noescape
func ilv3TilesAVXVNNI(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)

//go:noescape
func ilv3BlockAVXVNNI(blk *byte, q *int8, sum *int32, out *int32)

// ilv3TilesVNNI256 and ilv3BlockVNNI256 are the AVX-VNNI kernels with VPDPBUSD in its
// EVEX encoding: what AVX-512 VNNI machines run to test their arithmetic.
//
//go:noescape
func ilv3TilesVNNI256(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)

//go:noescape
func ilv3BlockVNNI256(blk *byte, q *int8, sum *int32, out *int32)

// ilv3PairAVXVNNI is the AVX2 family's batched base-3 kernel on AVX-VNNI: one tile (8·nb8
// blocks) and two vectors, vector 1's activations qs bytes after vector 0's (q), its D
// and Sum ds bytes after d and sum, its 640 floats of acc after vector 0's, its 80
// outputs ys bytes after y; each vector's outputs are ilv3TilesAVXVNNI's for it alone.
// ilv3PairVNNI256 is its EVEX twin.
//
//go:noescape
func ilv3PairAVXVNNI(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int)

//go:noescape
func ilv3PairVNNI256(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int)

// archIlv3Native reports whether a base-3 SIMD kernel gives Q8 family id's bits here:
// the AVX-512 VNNI one for the AVX-512 families, the AVX2 family's implementation's in
// use for the AVX2 family. The AVX2 family's plain implementation has none: on an AVX2
// CPU without AVX-VNNI, PTQ1_0 keeps the file's layout.
func archIlv3Native(id q8ID) bool {
	switch id {
	case q8AVX512, q8GFNI:
		return hasAVX512VNNI()
	case q8AVX2:
		return hasAVX2() && ilvAVX2Use.base3()
	}
	return false
}

func archIlv3Name() string {
	if q8Sel.id == q8AVX2 {
		return archIlvAVX2Name()
	}
	return "avx512vnni"
}

func archIlv3Tiles(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	if q8Sel.id == q8AVX2 {
		ilvAVX2Use.tiles3(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	} else {
		ilv3TilesVNNI(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	}
}

func archIlv3Block(blk *byte, q *int8, sum *int32, out *int32) {
	if q8Sel.id == q8AVX2 {
		ilvAVX2Use.block3(blk, q, sum, out)
	} else {
		ilv3BlockVNNI(blk, q, sum, out)
	}
}

// archIlv3Quads reports whether archIlv3Quad runs a kernel (a pair kernel's for four
// vectors): not here.
const archIlv3Quads = false

func archIlv3Quad(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int) {
	panic("ternary: no base-3 four-vector kernel on this platform")
}

func archIlv3Pair(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int) {
	ilvAVX2Use.pair3(w, nb8, q, qs, d, sum, ds, acc, y, ys)
}

// base3 reports whether the implementation has base-3 kernels (tiles3, block3, pair3):
// the AVX-VNNI one and its twin. The plain one's int16 sums of VPMADDUBSW chains (the
// AVX2 PTQ1_0 kernel's) ran at 0.78–0.80 of its own 2-bit interleave's weights a second
// streaming (PQ2_0, which a PTQ1_0 file transcodes to losslessly, is the faster format
// there) and its batches at a third to a half of the file's tiled path: not kept.
func (k ilvAVX2Impl) base3() bool { return k.id != ilvAVX2Plain }

func (k ilvAVX2Impl) tiles3(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	switch k.id {
	case ilvAVX2VNNI:
		ilv3TilesAVXVNNI(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	case ilvAVX2VNNIEVEX:
		ilv3TilesVNNI256(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	default:
		panic("ternary: no base-3 kernel in the AVX2 family's " + k.name + " implementation")
	}
}

func (k ilvAVX2Impl) block3(blk *byte, q *int8, sum *int32, out *int32) {
	switch k.id {
	case ilvAVX2VNNI:
		ilv3BlockAVXVNNI(blk, q, sum, out)
	case ilvAVX2VNNIEVEX:
		ilv3BlockVNNI256(blk, q, sum, out)
	default:
		panic("ternary: no base-3 kernel in the AVX2 family's " + k.name + " implementation")
	}
}

func (k ilvAVX2Impl) pair3(w *byte, nb8 int, q *int8, qs int, d *float32, sum *int32, ds int, acc *float32, y *float32, ys int) {
	switch k.id {
	case ilvAVX2VNNI:
		ilv3PairAVXVNNI(w, nb8, q, qs, d, sum, ds, acc, y, ys)
	case ilvAVX2VNNIEVEX:
		ilv3PairVNNI256(w, nb8, q, qs, d, sum, ds, acc, y, ys)
	default:
		panic("ternary: no base-3 kernel in the AVX2 family's " + k.name + " implementation")
	}
}

// archIlv3Batched reports whether the base-3 kernels of Q8 family id have a batched
// twin (archIlv3Mat): the AVX-512 VNNI ones do; the AVX2 family's batches run two
// vectors at a time (archIlv3Pair).
func archIlv3Batched(id q8ID) bool { return id == q8AVX512 || id == q8GFNI }
