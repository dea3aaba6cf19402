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

// ilvPrefetch is how many bytes ahead of the step it reads the AVX-512 VNNI kernel
// prefetches (a multiple of the 2176-byte tile × block). Streaming 5120×17408 and
// 17408×5120 on 2 threads (BenchmarkIlvStream, % of the read loop over the same bytes):
// on a Zen 5 VM (~75 GB/s) 64–70% without prefetch, 89–98% at one block ahead, 110–118%
// at two, 106–121% at four; on an Intel Xeon VM (~30 GB/s) 90–92% at one block ahead,
// 83–85% at two and at four, 78–79% at sixteen. AMD's cores take four blocks, Intel's
// one; TERNARY_ILVPF (in bytes) overrides it for the benchmarks.
var ilvPrefetch = ilvPrefetchFor(cpuVendor())

// cpuVendor returns CPUID leaf 0's vendor string, in its three registers' order.
func cpuVendor() (ebx, edx, ecx uint32)

func ilvPrefetchFor(ebx, edx, ecx uint32) int {
	const block = 2176
	if ebx == 0x756e6547 && edx == 0x49656e69 && ecx == 0x6c65746e { // "GenuineIntel"
		return block
	}
	return 4 * block
}

// ilvTilesAVX2 and ilvBlockAVX2 are ilvTilesVNNI and ilvBlockVNNI for AVX2 (with FMA
// and F16C, as the AVX2 Q8 kernel): the same contracts, and the same bits.
//
//go:noescape
func ilvTilesAVX2(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)

//go:noescape
func ilvBlockAVX2(blk *byte, q *int8, sum *int32, out *int32)

// archIlvFamily returns the interleaved kernel whose bits are those of Q8 family id:
// the VNNI one for the AVX-512 families, the AVX2 one for the AVX2 family.
func archIlvFamily(id q8ID) ilvFamily {
	switch {
	case (id == q8AVX512 || id == q8GFNI) && hasAVX512VNNI():
		return ilvVNNI
	case id == q8AVX2 && hasAVX2():
		return ilvAVX2
	}
	return ilvGeneric
}

func archIlvTiles(fam ilvFamily, w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	if fam == ilvVNNI {
		ilvTilesVNNI(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	} else {
		ilvTilesAVX2(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	}
}

func archIlvBlock(fam ilvFamily, blk *byte, q *int8, sum *int32, out *int32) {
	if fam == ilvVNNI {
		ilvBlockVNNI(blk, q, sum, out)
	} else {
		ilvBlockAVX2(blk, q, sum, out)
	}
}
