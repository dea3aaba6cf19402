package ternary

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// The batched (prefill, many-sequence) product over an [Interleaved] matrix.
//
// The matrix-vector kernel (ilvTilesVNNI) loads each 64-byte step of a tile, masks it
// three times and multiplies the four variants with one broadcast activation dword.
// The batched kernel does that load and masking once per step and multiplies the four
// variants with the dwords of several vectors (ilvMatWidth at most), four integer
// accumulators per vector: the weights are read once per group of vectors, and no
// repacking is needed, since the interleaved layout already puts every row of a block
// in its own 32-bit lane. The activations are the vectors' [Q8] rows as they are (not
// Q8Batch's tiled copy): a step's dword lies at the same offset in every vector, one
// vector's Q a fixed stride from the next's.
//
// Each vector's block integers, their fold into eight float lanes (lane b mod 8, one
// multiply for the scale and one fused multiply-add) and the lane tree are those of
// ilvTilesVNNI, so every vector's outputs are bit for bit what
// [MatVecInterleavedRange] gives it, whatever the batch around it.
//
// The AVX2 kernels (ilvMatAVX2<nv>, ilvmatmul_avx2_amd64.s) do the same with
// ilvTilesAVX2's arithmetic, in four passes a block for want of registers: see there.

// ilvMatWidth is the most vectors the batched kernels take at once: four accumulators
// per vector, and a code step, its three masked variants, the three masks and a
// broadcast activation dword fill the 32 registers at six.
//
// At six, a block of one vector costs 128 VPDPBUSD, a sixth of the step's 96 masking
// ANDs and 22 vector instructions of fold, all on the two ports VPDPBUSD issues on:
// at best 77% of the VNNI rate. On a 2-core AVX-512 Xeon VM whose pure VPDPBUSD loop
// ran 361–368 G multiply-adds per CPU second, the kernel ran 237–272 in the cache
// (BenchmarkIlvMatKernel), as the tiled kernels do (BenchmarkIlvMatKernelTiled).
const ilvMatWidth = 6

// ilvMatArgs is the argument block of the batched interleaved kernels (ilvMatGeneric
// and ilvMatVNNI<nv> in ilvmatmul_amd64.s, which read its fields at fixed offsets:
// keep the order). One call runs one tile of 64 rows and nv vectors.
type ilvMatArgs struct {
	w   *byte    // the tile's first block
	nb8 int      // groups of 8 blocks (≥ 1)
	q   *int8    // vector 0's Q ([Q8] layout)
	qs  int      // bytes from one vector's Q to the next's
	d   *float32 // vector 0's D
	sum *int32   // vector 0's Sum
	ds  int      // bytes from one vector's D (and Sum) to the next's
	acc *float32 // scratch: 512 float32 per vector (eight lanes of 64 rows)
	y   *float32 // vector 0's output of the tile's row 0
	ys  int      // bytes from one vector's outputs to the next's
	// pfd is the distance from w to the tile the kernel prefetches into L2, a line for
	// each of w's (the next tile of the range on a tile's first call, which reads w from
	// memory; 0, w itself, on the others).
	pfd int
}

// InterleavedBatchNative reports whether [MatMulInterleavedRange] runs a SIMD kernel
// here, one whose outputs are bit for bit those of [MatMulQ8Range] over the file's bytes
// (AVX-512 VNNI and AVX2; both NEON families on arm64). Elsewhere it runs a pure-Go
// twin, right but slow, which matches the generic Q8 kernel only (and where the selected
// family had an interleaved decode kernel but no batched one, it would run that kernel
// vector by vector): an engine should then keep batches on MatMulQ8Range.
func InterleavedBatchNative() bool {
	fam := ilvSel()
	return fam != ilvGeneric && ilvMatFamWidth(fam) > 0
}

// InterleavedBatchAMX reports whether [MatMulInterleavedRange] and
// [MatMulInterleaved3Range] multiply batches of 32 vectors or more with Intel AMX here:
// on Linux on a CPU with AMX-INT8 (Sapphire Rapids and later Xeons) where the AVX-512
// VNNI family runs, unless [SetAMX] turned it off. The outputs are the VNNI kernels'
// bits.
func InterleavedBatchAMX() bool { return amxUse(ilvSel(), amxMinBatch) }

// SetAMX turns the AMX path of the batched interleaved products off (on = false) or
// back on for the whole process and returns the previous setting; results are the same
// bits either way, so it is only for measuring one against the other. It is safe to call
// at any time from any goroutine.
func SetAMX(on bool) (was bool) { return !amxOff.Swap(!on) }

// ilvMatFamWidth returns the widest batch of family fam's batched kernel (the pure-Go
// twin's for the generic family), 0 where it has none; archIlvMatWidth says it per
// platform and archIlvMatFam runs the kernel.
func ilvMatFamWidth(fam ilvFamily) int {
	if fam == ilvGeneric {
		return ilvMatWidth
	}
	return min(archIlvMatWidth(fam), ilvMatWidth)
}

// MatMulInterleavedRange is [MatMulQ8Range] over an interleaved PQ2_0 matrix: for each
// of the first t vectors s of x, y[s·n+i] = Σ_j W[i][j]·x_s[j] for rows lo ≤ i < hi (n
// the matrix's rows; lo a multiple of 64, hi a multiple of 64 or n, as for
// [MatVecInterleavedRange]). Every vector's outputs are bit for bit what
// MatVecInterleavedRange gives it alone, so they do not depend on the batch; where
// [InterleavedBatchNative] says so, and always on the generic family, they are also
// MatMulQ8Range's. It does not allocate; goroutines sharing x and v give each its own
// row range.
func MatMulInterleavedRange(v *Interleaved, x *Q8Batch, t int, y []float32, lo, hi int) {
	if t < 0 || t > x.T {
		panic(fmt.Sprintf("ternary: MatMulInterleavedRange: %d vectors, batch capacity %d", t, x.T))
	}
	ilvCheckRows("MatMulInterleavedRange", v.n, lo, hi)
	if x.K != v.k {
		panic(fmt.Sprintf("ternary: MatMulInterleavedRange: activation width %d, matrix row width %d", x.K, v.k))
	}
	if t == 0 || lo == hi {
		return
	}
	n := v.n
	if len(y) < (t-1)*n+hi {
		panic(fmt.Sprintf("ternary: MatMulInterleavedRange: %d vectors of %d rows up to %d, len(y) = %d", t, n, hi, len(y)))
	}
	nb8 := v.nb / 8
	fam := ilvSel()
	width := ilvMatFamWidth(fam)
	if t == 1 || nb8 == 0 || width == 0 {
		// One vector, rows narrower than a group (nothing for a vector to share), or a
		// family with no batched kernel: its decode kernel keeps every vector's bits.
		for s := range t {
			MatVecInterleavedRange(v, &x.rows[s], y[s*n:(s+1)*n], lo, hi)
		}
		return
	}
	if amxUse(fam, t) {
		matMulInterleavedAMX(v, x, t, y, lo, hi)
		return
	}
	var calls [2]q8Call
	ncalls := q8TileCalls(&calls, width, t)
	var acc [ilvMatWidth * 8 * IlvRows]float32
	var last [ilvMatWidth * IlvRows]float32 // a padded last tile's outputs
	tb := v.tileBytes()
	qs := q8QBytes(v.k)
	for r0 := lo; r0 < hi; r0 += IlvRows {
		tile := v.buf[r0/IlvRows*tb : (r0/IlvRows+1)*tb]
		rows := min(IlvRows, hi-r0)
		pfd := 0
		if r0+IlvRows < hi {
			pfd = tb
		}
		for _, cl := range calls[:ncalls] {
			for s0 := cl.v0; s0 < cl.v0+cl.tiles*cl.tv; s0 += cl.tv {
				a := ilvMatArgs{w: &tile[0], nb8: nb8, q: &x.q[s0*qs], qs: qs,
					d: &x.d[s0*v.nb], sum: &x.sum[s0*v.nb], ds: 4 * v.nb, acc: &acc[0], pfd: pfd}
				pfd = 0
				if rows == IlvRows {
					a.y, a.ys = &y[s0*n+r0], 4*n
				} else {
					a.y, a.ys = &last[0], 4*IlvRows
				}
				if fam != ilvGeneric {
					archIlvMatFam(fam, cl.tv, &a)
				} else {
					ilvMatGeneric(cl.tv, &a)
				}
				for s := s0; s < s0+cl.tv; s++ {
					yt := y[s*n+r0 : s*n+r0+rows]
					if rows < IlvRows {
						copy(yt, last[(s-s0)*IlvRows:])
					}
					if v.nb > 8*nb8 {
						ilvTailAdd(fam, tile, v.nb, nb8, &x.rows[s], yt)
					}
				}
			}
		}
	}
}

// ilvTailAdd adds to the outputs yt of one tile (its first len(yt) rows) the blocks
// after its last group of 8, added in block order as q8TailDot adds them (ilvTiles and
// MatMulInterleavedRange both finish a tile with it).
func ilvTailAdd(fam ilvFamily, tile []byte, nb, nb8 int, x *Q8, yt []float32) {
	var tail [IlvRows]float32
	for b := 8 * nb8; b < nb; b++ {
		blk := (*[ilvBlockBytes]byte)(tile[b*ilvBlockBytes:])
		var sums [IlvRows]int32
		if fam != ilvGeneric {
			archIlvBlock(fam, &blk[0], &x.Q[256*(b/2)+32*(b%2)], &x.Sum[b], &sums[0])
		} else {
			ilvBlockGeneric(&sums, blk, x, b)
		}
		for r := range tail {
			h := binary.LittleEndian.Uint16(blk[2*r:])
			tail[r] += fp16(h) * x.D[b] * float32(sums[r])
		}
	}
	for r := range yt {
		yt[r] += tail[r]
	}
}

// ilvMatGeneric is the pure-Go twin of the ilvMatVNNI kernels: for each of the nv
// vectors of a, the 64 outputs of a's tile over its 8·nb8 first blocks, as
// ilvTilesGeneric computes them for that vector alone.
func ilvMatGeneric(nv int, a *ilvMatArgs) {
	nb := 8 * a.nb8
	tile := unsafe.Slice(a.w, nb*ilvBlockBytes)
	accs := unsafe.Slice(a.acc, nv*8*IlvRows)
	clear(accs)
	var xs [ilvMatWidth]Q8
	for v := range nv {
		xs[v] = Q8{
			Q:   unsafe.Slice((*int8)(unsafe.Add(unsafe.Pointer(a.q), v*a.qs)), 256*a.nb8*4),
			D:   unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(a.d), v*a.ds)), nb),
			Sum: unsafe.Slice((*int32)(unsafe.Add(unsafe.Pointer(a.sum), v*a.ds)), nb),
		}
	}
	for b := range nb {
		blk := (*[ilvBlockBytes]byte)(tile[b*ilvBlockBytes:])
		for v := range nv {
			x := &xs[v]
			var sums [IlvRows]int32
			ilvBlockGeneric(&sums, blk, x, b)
			lane := (*[IlvRows]float32)(accs[(8*v+b%8)*IlvRows:])
			for r := range IlvRows {
				s := fp16(binary.LittleEndian.Uint16(blk[2*r:])) * x.D[b]
				lane[r] += s * float32(sums[r])
			}
		}
	}
	for v := range nv {
		acc := (*[8][IlvRows]float32)(unsafe.Pointer(&accs[8*v*IlvRows]))
		yt := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(a.y), v*a.ys)), IlvRows)
		for r := range yt {
			yt[r] = ((acc[0][r] + acc[4][r]) + (acc[2][r] + acc[6][r])) + ((acc[1][r] + acc[5][r]) + (acc[3][r] + acc[7][r]))
		}
	}
}
