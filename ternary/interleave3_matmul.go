package ternary

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// The batched (prefill, many-sequence) product over an [Interleaved3] matrix, as
// MatMulInterleavedRange is over an [Interleaved] one.
//
// The decode kernel (ilv3TilesVNNI) loads each 64-byte step of a tile, triples it five
// times (x₀ = c, xₙ₊₁ = 3xₙ mod 256, two VPADDB each) and multiplies the six byte
// vectors with one broadcast activation dword into P₀ … P₅, from which a block's row
// sums are Sₙ = (3Pₙ − Pₙ₊₁)/256. The batched kernel decodes each block pair of a tile
// once into scratch (the six byte vectors of every step) for up to ilv3MatGroups
// groups of ilv3MatWidth vectors, and each group then reads the six from there and
// multiplies them with each of its vectors' dwords, six integer accumulators per
// vector. The activations are the vectors' [Q8] rows as they are, as for the 2-bit
// batched kernel.
//
// Each vector's block integers, their fold into eight float lanes and the lane tree
// are those of ilv3TilesVNNI, so every vector's outputs are bit for bit what
// [MatVecInterleaved3Range] gives it, whatever the batch around it.

// ilv3MatWidth is the most vectors a group takes: six accumulators per vector, the
// six byte vectors of a step and two broadcast activation dwords fill the 32 registers
// at four.
//
// Per step a group of four costs 24 VPDPBUSD, and a block of one vector 32 vector
// instructions of fold (the row step in floats, see ilv3matmul_amd64_gen.go), on the
// two ports VPDPBUSD issues on; the decoding, 10 VPADDB and 6 stores a step, is shared
// by the call's groups. Triplings done in the step instead (at most five vectors then:
// two registers for the byte vectors, the dwords broadcast by the VPDPBUSD from memory)
// cost 10 VPADDB a step for every five vectors, and ran at 171–188 G multiply-adds per
// CPU second in the cache on the 2-core AVX-512 Xeon VM whose 2-bit batched kernel ran
// 244–275 (BenchmarkIlvMatKernel); decoded once for eight groups of four, 206–225
// (BenchmarkIlv3MatKernel, g=8; 195–201 at three groups, 154–157 at one) with the
// integer row step of ilv3TilesVNNI (45 instructions a block and vector), 220–230 with
// the float one. The base-3 step's six VPDPBUSD for 320 products against the 2-bit
// step's four for 256 bound the ratio at 5/6 before the fold.
const ilv3MatWidth = 4

// ilv3MatArgs is the argument block of the batched base-3 kernels (ilv3MatGeneric and
// ilv3MatVNNI<nv> in ilv3matmul_amd64.s, which read its fields at fixed offsets: keep
// the order). One call runs one tile of 80 rows and groups·nv vectors. Its first
// fields are ilvMatArgs's, for 80-row tiles.
type ilv3MatArgs struct {
	w   *byte    // the tile's first block
	nb8 int      // groups of 8 blocks (≥ 1)
	q   *int8    // vector 0's Q ([Q8] layout)
	qs  int      // bytes from one vector's Q to the next's
	d   *float32 // vector 0's D
	sum *int32   // vector 0's Sum
	ds  int      // bytes from one vector's D (and Sum) to the next's
	acc *float32 // scratch: 640 float32 per vector (eight lanes of 80 rows), 64-byte aligned
	y   *float32 // vector 0's output of the tile's row 0
	ys  int      // bytes from one vector's outputs to the next's
	// pfd is the distance from w to the tile the kernel prefetches into L2, a line for
	// each of w's (the next tile of the range on a tile's first call, which reads w from
	// memory; 0, w itself, on the others).
	pfd int
	// groups is the groups of nv vectors the call runs (vector nv·g+v of the call is
	// vector v of group g), at most ilv3MatGroups; acc holds 640 floats for each.
	groups int
	// planes is scratch for a block pair's decoded steps (ilv3PlaneBytes, 64-byte
	// aligned): the triplings, computed once for all the call's groups.
	planes *byte
}

// ilv3MatGroups is the most groups of vectors a batched base-3 kernel call runs over
// one decoding of each block pair (eight: 32 vectors, a prompt chunk of 64 in two
// calls; the scratch for their accumulators is 80 KiB of the caller's stack), and
// ilv3PlaneBytes the room the decoding takes.
const (
	ilv3MatGroups  = 8
	ilv3PlaneBytes = 2 * 32 * 6 * 64
)

// Interleaved3BatchNative reports whether [MatMulInterleaved3Range] runs a SIMD kernel
// here, one whose outputs are bit for bit those of [MatMulQ8Range] over the PTQ1_0 file
// (wherever [Interleaved3Native] says so: on AVX-VNNI a kernel that takes two vectors
// at a time, on arm64 four and two). Elsewhere it runs a pure-Go twin, right but slow,
// which matches the generic Q8 kernel only: an engine should then keep batches on
// MatMulQ8Range.
func Interleaved3BatchNative() bool { return ilv3Native() }

// MatMulInterleaved3Range is [MatMulQ8Range] over an interleaved PTQ1_0 matrix: for
// each of the first t vectors s of x, y[s·n+i] = Σ_j W[i][j]·x_s[j] for rows lo ≤ i < hi
// (n the matrix's rows; lo a multiple of 80, hi a multiple of 80 or n, as for
// [MatVecInterleaved3Range]). Every vector's outputs are bit for bit what
// MatVecInterleaved3Range gives it alone, so they do not depend on the batch; where
// [Interleaved3BatchNative] says so, and always on the generic family, they are also
// MatMulQ8Range's over the file. It does not allocate; goroutines sharing x and v give
// each its own row range.
func MatMulInterleaved3Range(v *Interleaved3, x *Q8Batch, t int, y []float32, lo, hi int) {
	if t < 0 || t > x.T {
		panic(fmt.Sprintf("ternary: MatMulInterleaved3Range: %d vectors, batch capacity %d", t, x.T))
	}
	ilv3CheckRows("MatMulInterleaved3Range", v.n, lo, hi)
	if x.K != v.k {
		panic(fmt.Sprintf("ternary: MatMulInterleaved3Range: activation width %d, matrix row width %d", x.K, v.k))
	}
	if t == 0 || lo == hi {
		return
	}
	n := v.n
	if len(y) < (t-1)*n+hi {
		panic(fmt.Sprintf("ternary: MatMulInterleaved3Range: %d vectors of %d rows up to %d, len(y) = %d", t, n, hi, len(y)))
	}
	nb8 := v.nb / 8
	native := ilv3Native()
	if t == 1 || nb8 == 0 {
		// One vector, or rows narrower than a group (nothing for a vector to share):
		// the decode path keeps every vector's bits.
		for s := range t {
			MatVecInterleaved3Range(v, &x.rows[s], y[s*n:(s+1)*n], lo, hi)
		}
		return
	}
	if native && !archIlv3Batched(q8Sel.id) {
		ilv3MatPairs(v, x, t, y, lo, hi)
		return
	}
	if native && amxUse(ilvSel(), t) {
		// The AVX-512 VNNI family's bits, by AMX.
		matMulInterleaved3AMX(v, x, t, y, lo, hi)
		return
	}
	// Past here the family's decode kernel is the AVX-512 VNNI one, whose batched twin
	// runs, or the generic twin, whose bits ilv3MatGeneric gives.
	var calls [2]q8Call
	ncalls := q8TileCalls(&calls, ilv3MatWidth, t)
	// The kernels' scratch, on 64-byte lines: their stores of it would straddle two
	// otherwise.
	var accBuf [ilv3MatGroups*ilv3MatWidth*8*Ilv3Rows + 15]float32
	acc := accBuf[int(-uintptr(unsafe.Pointer(&accBuf[0]))&63)/4:]
	var last [ilv3MatGroups * ilv3MatWidth * Ilv3Rows]float32 // a padded last tile's outputs
	var planeBuf [ilv3PlaneBytes + 63]byte
	planes := &planeBuf[int(-uintptr(unsafe.Pointer(&planeBuf[0]))&63)]
	tb := v.tileBytes()
	qs := q8QBytes(v.k)
	for r0 := lo; r0 < hi; r0 += Ilv3Rows {
		tile := v.buf[r0/Ilv3Rows*tb : (r0/Ilv3Rows+1)*tb]
		rows := min(Ilv3Rows, hi-r0)
		pfd := 0
		if r0+Ilv3Rows < hi {
			pfd = tb
		}
		for _, cl := range calls[:ncalls] {
			end := cl.v0 + cl.tiles*cl.tv
			for s0 := cl.v0; s0 < end; {
				g := min(ilv3MatGroups, (end-s0)/cl.tv)
				a := ilv3MatArgs{w: &tile[0], nb8: nb8, q: &x.q[s0*qs], qs: qs,
					d: &x.d[s0*v.nb], sum: &x.sum[s0*v.nb], ds: 4 * v.nb, acc: &acc[0], pfd: pfd,
					groups: g, planes: planes}
				pfd = 0
				if rows == Ilv3Rows {
					a.y, a.ys = &y[s0*n+r0], 4*n
				} else {
					a.y, a.ys = &last[0], 4*Ilv3Rows
				}
				if native {
					archIlv3Mat(cl.tv, &a)
				} else {
					ilv3MatGeneric(cl.tv, &a)
				}
				for s := s0; s < s0+g*cl.tv; s++ {
					yt := y[s*n+r0 : s*n+r0+rows]
					if rows < Ilv3Rows {
						copy(yt, last[(s-s0)*Ilv3Rows:])
					}
					if v.nb > 8*nb8 {
						ilv3TailAdd(native, tile, v.nb, nb8, &x.rows[s], yt)
					}
				}
				s0 += g * cl.tv
			}
		}
	}
}

// ilv3MatPairs is MatMulInterleaved3Range for the families whose base-3 kernels have a
// pair kernel (archIlv3Pair) rather than a batched one, the AVX2 family on AVX-VNNI
// and the NEON SDOT family: tile by tile, four vectors at a time where the family has
// a four-vector kernel (archIlv3Quad: NEON SDOT), then two, each tile read from the
// cache after the first call; an odd last vector and a padded last tile run the decode
// kernel. Every vector's outputs are its decode kernel's alone.
func ilv3MatPairs(v *Interleaved3, x *Q8Batch, t int, y []float32, lo, hi int) {
	n, nb8, tb, qs := v.n, v.nb/8, v.tileBytes(), q8QBytes(v.k)
	var acc [4 * 8 * Ilv3Rows]float32
	for r0 := lo; r0 < hi; r0 += Ilv3Rows {
		r1 := min(r0+Ilv3Rows, hi)
		s := 0
		if r1-r0 == Ilv3Rows {
			tile := v.buf[r0/Ilv3Rows*tb : (r0/Ilv3Rows+1)*tb]
			for archIlv3Quads && s+4 <= t {
				archIlv3Quad(&tile[0], nb8, &x.q[s*qs], qs, &x.d[s*v.nb], &x.sum[s*v.nb], 4*v.nb, &acc[0], &y[s*n+r0], 4*n)
				for range 4 {
					if v.nb > 8*nb8 {
						ilv3TailAdd(true, tile, v.nb, nb8, &x.rows[s], y[s*n+r0:s*n+r1])
					}
					s++
				}
			}
			for ; s+2 <= t; s += 2 {
				archIlv3Pair(&tile[0], nb8, &x.q[s*qs], qs, &x.d[s*v.nb], &x.sum[s*v.nb], 4*v.nb, &acc[0], &y[s*n+r0], 4*n)
				if v.nb > 8*nb8 {
					ilv3TailAdd(true, tile, v.nb, nb8, &x.rows[s], y[s*n+r0:s*n+r1])
					ilv3TailAdd(true, tile, v.nb, nb8, &x.rows[s+1], y[(s+1)*n+r0:(s+1)*n+r1])
				}
			}
		}
		for ; s < t; s++ {
			MatVecInterleaved3Range(v, &x.rows[s], y[s*n:(s+1)*n], r0, r1)
		}
	}
}

// ilv3TailAdd adds to the outputs yt of one tile (its first len(yt) rows) the blocks
// after its last group of 8, added in block order as q8TailDot adds them (ilv3Tiles and
// MatMulInterleaved3Range both finish a tile with it).
func ilv3TailAdd(native bool, tile []byte, nb, nb8 int, x *Q8, yt []float32) {
	var tail [Ilv3Rows]float32
	for b := 8 * nb8; b < nb; b++ {
		blk := (*[ilv3BlockBytes]byte)(tile[b*ilv3BlockBytes:])
		var sums [Ilv3Rows]int32
		if native {
			archIlv3Block(&blk[0], &x.Q[256*(b/2)+32*(b%2)], &x.Sum[b], &sums[0])
		} else {
			ilv3BlockGeneric(&sums, blk, x, b)
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

// ilv3MatGeneric is the pure-Go twin of the ilv3MatVNNI kernels: for each of the
// nv·a.groups vectors of a, the 80 outputs of a's tile over its 8·nb8 first blocks, as
// ilv3TilesGeneric computes them for that vector alone.
func ilv3MatGeneric(nv int, a *ilv3MatArgs) {
	nv *= a.groups
	nb := 8 * a.nb8
	tile := unsafe.Slice(a.w, nb*ilv3BlockBytes)
	accs := unsafe.Slice(a.acc, nv*8*Ilv3Rows)
	clear(accs)
	var xs [ilv3MatGroups * ilv3MatWidth]Q8
	for v := range nv {
		xs[v] = Q8{
			Q:   unsafe.Slice((*int8)(unsafe.Add(unsafe.Pointer(a.q), v*a.qs)), 256*a.nb8*4),
			D:   unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(a.d), v*a.ds)), nb),
			Sum: unsafe.Slice((*int32)(unsafe.Add(unsafe.Pointer(a.sum), v*a.ds)), nb),
		}
	}
	for b := range nb {
		blk := (*[ilv3BlockBytes]byte)(tile[b*ilv3BlockBytes:])
		for v := range nv {
			x := &xs[v]
			var sums [Ilv3Rows]int32
			ilv3BlockGeneric(&sums, blk, x, b)
			lane := (*[Ilv3Rows]float32)(accs[(8*v+b%8)*Ilv3Rows:])
			for r := range Ilv3Rows {
				s := fp16(binary.LittleEndian.Uint16(blk[2*r:])) * x.D[b]
				lane[r] += s * float32(sums[r])
			}
		}
	}
	for v := range nv {
		acc := (*[8][Ilv3Rows]float32)(unsafe.Pointer(&accs[8*v*Ilv3Rows]))
		yt := unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(a.y), v*a.ys)), Ilv3Rows)
		for r := range yt {
			yt[r] = ((acc[0][r] + acc[4][r]) + (acc[2][r] + acc[6][r])) + ((acc[1][r] + acc[5][r]) + (acc[3][r] + acc[7][r]))
		}
	}
}
