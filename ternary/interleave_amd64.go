//go:build amd64 && !purego

package ternary

import "golang.org/x/sys/cpu"

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

// ilvTilesAVXVNNI and ilvBlockAVXVNNI are ilvTilesAVX2 and ilvBlockAVX2 by AVX-VNNI's
// VPDPBUSD (matvec_amd64.s): the same contracts, and the same bits.
//
//go:noescape
func ilvTilesAVXVNNI(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)

//go:noescape
func ilvBlockAVXVNNI(blk *byte, q *int8, sum *int32, out *int32)

// ilvTilesVNNI256 and ilvBlockVNNI256 are the AVX-VNNI kernels' instructions with
// VPDPBUSD in its EVEX encoding: what the tests run on AVX-512 VNNI machines to check
// the AVX-VNNI kernels' arithmetic (nothing else calls them).
//
//go:noescape
func ilvTilesVNNI256(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32)

//go:noescape
func ilvBlockVNNI256(blk *byte, q *int8, sum *int32, out *int32)

// ilvAVX2Impl is one implementation of the AVX2 family's interleaved kernels, decode
// and batched: all give ilvTilesAVX2's bits. Its methods call the assembly directly
// (a call through a func value would make every pointer argument escape).
type ilvAVX2Impl struct {
	name string
	id   ilvAVX2ID
}

type ilvAVX2ID uint8

const (
	ilvAVX2Plain    ilvAVX2ID = iota // VPMADDUBSW, int16 sums
	ilvAVX2VNNI                      // AVX-VNNI's VPDPBUSD (VEX)
	ilvAVX2VNNIEVEX                  // the same instructions, VPDPBUSD in EVEX: the tests' twin
)

func (k ilvAVX2Impl) tiles(w *byte, tiles, nb8, tileBytes int, q *int8, d *float32, sum *int32, acc *float32, y *float32) {
	switch k.id {
	case ilvAVX2VNNI:
		ilvTilesAVXVNNI(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	case ilvAVX2VNNIEVEX:
		ilvTilesVNNI256(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	default:
		ilvTilesAVX2(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	}
}

func (k ilvAVX2Impl) block(blk *byte, q *int8, sum *int32, out *int32) {
	switch k.id {
	case ilvAVX2VNNI:
		ilvBlockAVXVNNI(blk, q, sum, out)
	case ilvAVX2VNNIEVEX:
		ilvBlockVNNI256(blk, q, sum, out)
	default:
		ilvBlockAVX2(blk, q, sum, out)
	}
}

func (k ilvAVX2Impl) mat(nv int, a *ilvMatArgs) {
	switch k.id {
	case ilvAVX2VNNI:
		archIlvMatAVXVNNI(nv, a)
	case ilvAVX2VNNIEVEX:
		archIlvMatVNNI256(nv, a)
	default:
		archIlvMatAVX2(nv, a)
	}
}

// ilvAVX2Impls lists the implementations this CPU runs; ilvAVX2Use is the one the AVX2
// family uses: AVX-VNNI's where the CPU has it (the client and E-core Intel parts
// without AVX-512 since Alder Lake), else the AVX2 one.
var ilvAVX2Impls, ilvAVX2Use = func() ([]ilvAVX2Impl, ilvAVX2Impl) {
	avx2 := ilvAVX2Impl{"avx2", ilvAVX2Plain}
	if !hasAVX2() {
		return nil, avx2
	}
	ks, use := []ilvAVX2Impl{avx2}, avx2
	if cpu.X86.HasAVXVNNI {
		use = ilvAVX2Impl{"avx-vnni", ilvAVX2VNNI}
		ks = append(ks, use)
	}
	if hasAVX512VNNI() {
		ks = append(ks, ilvAVX2Impl{"avx-vnni-evex", ilvAVX2VNNIEVEX})
	}
	return ks, use
}()

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
		ilvAVX2Use.tiles(w, tiles, nb8, tileBytes, q, d, sum, acc, y)
	}
}

func archIlvBlock(fam ilvFamily, blk *byte, q *int8, sum *int32, out *int32) {
	if fam == ilvVNNI {
		ilvBlockVNNI(blk, q, sum, out)
	} else {
		ilvAVX2Use.block(blk, q, sum, out)
	}
}

// archIlvAVX2Name names the AVX2 family's interleaved kernels in use.
func archIlvAVX2Name() string { return ilvAVX2Use.name }
