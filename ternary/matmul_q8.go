package ternary

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// The batched (prefill) product: register tiling over rows and activation vectors.
//
// The matrix-vector kernels extract a block's code planes, multiply them with one
// vector and reduce the products of every block to one integer, for each vector anew.
// MatMulQ8Range instead multiplies a tile of 2·rp rows (rp row pairs) with tv vectors
// at once (up to 8 for AVX-512, 6 for the others; see q8TileCalls): each code plane is
// extracted once and used against tv vectors, each activation load is used against the
// rp row pairs, and no integer ever needs a horizontal reduction, because every 32-bit
// lane of an accumulator belongs to one block of one row from the start:
//
//   - The weights of a tile are first repacked (q8RepackPQ2, or q8RepackPTQ1 straight
//     from PTQ1_0) so that for each group of 8 blocks and each step s = 0…7 one 64-byte
//     line holds code bytes 4s…4s+3 of the 8 blocks of both rows of a pair, one 32-bit
//     lane per block and row. Plane p of that line ((v >> 2p) & 3 in each byte) holds,
//     in lane L of row h, the codes of elements 16s+4j+p (j = 0…3) of block L.
//   - The activations are stored by Q8Batch.Quantize in the matching order
//     (q8TileActs): 32 bytes per (group, s, p), lane L holding the four activations of
//     those same elements of block L.
//   - One multiply-accumulate of four byte products per 32-bit lane (VPDPBUSD, SDOT, or
//     VPMADDUBSW pairs) therefore adds to lane L exactly the products of block L. After
//     the 8 steps × 4 planes of a group, lane L holds Σ c·Q over the whole block: the
//     same exact integer the matrix-vector kernels compute, for 8 blocks of 2 rows at
//     once.
//   - The group is then folded into float32 accumulators exactly as the matrix-vector
//     kernels fold it: I = Σ c·Q − Sum, s = fp16(d)·D, acc_L = fma(s, I, acc_L) with
//     lane L = block mod 8, in block order; the per-row lanes are summed at the end in
//     the same order ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)) with the same operand order
//     (the kernels' last step, q8TileReduceGeneric in Go), and the blocks after the last whole group are added by the same
//     q8TailDot. So every vector's result is bit for bit what MatVecQ8Range gives it with
//     the same kernel family.
//
// The float accumulators live in memory (facc, 16 float32 per row pair and vector:
// row 2q in lanes 0…7, row 2q+1 in lanes 8…15); each group reads and writes them once
// per row pair and vector, against 32 integer multiply-accumulates.

const (
	// q8TileVMax is the most activation vectors a tiled kernel runs at once (its tile
	// width tv; the widest of a family, q8TileWidth, is 8 or 6).
	q8TileVMax = 8
	// q8TilePairsMax is the largest number of row pairs a tiled kernel takes.
	q8TilePairsMax = 3
	// q8PairBytes is the repacked size of one row pair and one group of 8 blocks: eight
	// 64-byte code lines, then the 16 scales fp16(d) as float32 (row 2q in 0…7).
	q8PairBytes = 8*64 + 64
	// q8ChunkGroups is the most groups of 8 blocks repacked at once: a row tile whose
	// rows are wider (k > 18432) is done in chunks, the float accumulators carried over.
	q8ChunkGroups = 18
	// q8BatchMax is the most vectors whose float accumulators are kept at once (a
	// multiple of every family's widest tile width, and at least the model's 64): a
	// larger batch runs in several passes, which re-repack the chunks when a row tile is
	// done in chunks.
	q8BatchMax = 72
	// q8DescsMax is the most tile descriptors of a pass (see q8TileCalls):
	// ⌈q8BatchMax/tv⌉ tiles, tv ≥ 6 in every family.
	q8DescsMax = (q8BatchMax + 5) / 6
)

// q8TileArgs is the argument block of a tiled kernel (q8TileGeneric and the assembly
// kernels, which read its fields at fixed offsets: keep the order). The assembly
// kernels walk the descriptors through cur and count tiles down; they modify no
// pointer field (an advanced Go pointer could point past its object).
type q8TileArgs struct {
	w      *byte       // repacked weights of the row tile: ng groups of rp·q8PairBytes
	ng     int         // groups of 8 blocks
	facc   *float32    // tiles·rp·tv accumulators of 16 float32, [tile][pair][vector]
	tiles  int         // vector tiles
	desc   *q8TileDesc // the first tile's vectors
	yoff   int         // 4·(the tile's first row): its offset in each output row
	flags  int         // q8First | q8Last | q8Odd
	pfStep int         // bytes to prefetch from each desc.pf per group (> 0)
	// Scratch for the assembly kernels: the current descriptor, the current tile's
	// accumulators and the groups left.
	cur, cfacc uintptr
	left       int
}

const (
	q8First = 1 << iota // the first chunk of the rows: the accumulators start from zero
	q8Last              // the last chunk: store the lane sums into the output rows
	q8Odd               // the last row pair has one row (store only its first)
)

// q8TileDesc names the vectors of a tile (the first tv entries).
type q8TileDesc struct {
	act [q8TileVMax]*int8    // the vector's tiled activations at the chunk's first group
	d   [q8TileVMax]*float32 // its D at the chunk's first block
	sum [q8TileVMax]*int32   // its Sum at the chunk's first block
	y   [q8TileVMax]*float32 // its output row (element 0)
	// pf is the address of the weights the caller repacks next (its share of them):
	// the kernel prefetches a.pfStep bytes from it per group and advances it, so that
	// the repacking finds them in the cache. (An address, not a pointer: the kernel
	// moves it past the bytes it names, and it may name bytes past the matrix.)
	pf uintptr
}

// q8TileGeneric is the portable tiled kernel, for tiles of any width tv ≤ q8TileVMax.
// For each of a.tiles vector tiles, each of the a.ng groups, each of the rp row pairs
// and each of the tile's tv vectors, it adds the group's 16 block products to the float
// accumulators as described above; after the last group of the last chunk it stores
// the lane sums of each row (q8TileReduceGeneric) into the vector's output row at
// a.yoff.
//
// The integer part works on 64-bit words of two lanes (two blocks of one row): with
// the activations biased to unsigned bytes u = Q+128 (an xor), c·u = lo·u + 2·hi·u for
// the code's two bits, each a byte mask (computed once per group and row pair, and
// used for every vector), summed in four 16-bit lanes, two per block (at most
// 32·3·510 = 48960 each over a group); Σ c·Q = Σ c·u − 128·Σ c, with Σ c counted by
// popcount.
func q8TileGeneric(rp, tv int, a *q8TileArgs) {
	const (
		ones = 0x0101010101010101
		bias = 0x8080808080808080
		even = 0x00ff00ff00ff00ff
	)
	stride := rp * q8PairBytes
	buf := unsafe.Slice(a.w, a.ng*stride)
	fall := unsafe.Slice(a.facc, a.tiles*rp*tv*16)
	descs := unsafe.Slice(a.desc, a.tiles)
	// lo and hi: for step s, plane p and word w (row w/4, blocks 2(w%4), 2(w%4)+1),
	// the byte masks of the codes' low and high bits.
	var lo, hi [8][4][8]uint64
	var csum [16]int32
	for tl := range descs {
		dc := &descs[tl]
		facc := fall[tl*rp*tv*16 : (tl+1)*rp*tv*16]
		if a.flags&q8First != 0 {
			clear(facc)
		}
		var acts [q8TileVMax][]byte
		var ds [q8TileVMax][]float32
		var ss [q8TileVMax][]int32
		for v := range tv {
			acts[v] = unsafe.Slice((*byte)(unsafe.Pointer(dc.act[v])), a.ng*1024)
			ds[v] = unsafe.Slice(dc.d[v], a.ng*8)
			ss[v] = unsafe.Slice(dc.sum[v], a.ng*8)
		}
		for g := range a.ng {
			for q := range rp {
				pb := (*[q8PairBytes]byte)(buf[g*stride+q*q8PairBytes:])
				csum = [16]int32{}
				for s := range 8 {
					for w := range 8 {
						cw := binary.LittleEndian.Uint64(pb[64*s+8*w:])
						c0, c1 := uint32(cw), uint32(cw>>32)
						csum[2*w] += int32(bits.OnesCount32(c0&0x55555555) + 2*bits.OnesCount32(c0&0xaaaaaaaa))
						csum[2*w+1] += int32(bits.OnesCount32(c1&0x55555555) + 2*bits.OnesCount32(c1&0xaaaaaaaa))
						for p := range 4 {
							lo[s][p][w] = cw >> (2 * p) & ones * 0xff
							hi[s][p][w] = cw >> (2*p + 1) & ones * 0xff
						}
					}
				}
				var dw [16]float32
				for i := range dw {
					dw[i] = *(*float32)(unsafe.Pointer(&pb[512+4*i]))
				}
				for v := range tv {
					act := (*[1024]byte)(acts[v][1024*g:])
					var acc [8]uint64
					for s := range 8 {
						for p := range 4 {
							row := (*[32]byte)(act[128*s+32*p:])
							for w := range 4 {
								u := binary.LittleEndian.Uint64(row[8*w:]) ^ bias
								l0, h0 := u&lo[s][p][w], u&hi[s][p][w]
								l1, h1 := u&lo[s][p][w+4], u&hi[s][p][w+4]
								acc[w] += l0&even + l0>>8&even + 2*(h0&even+h0>>8&even)
								acc[w+4] += l1&even + l1>>8&even + 2*(h1&even+h1>>8&even)
							}
						}
					}
					f := facc[(q*tv+v)*16 : (q*tv+v)*16+16]
					d := ds[v][8*g : 8*g+8]
					sm := ss[v][8*g : 8*g+8]
					for h := range 2 {
						for l := range 8 {
							w := acc[4*h+l/2] >> (32 * (l % 2))
							cu := int32(w&0xffff + w>>16&0xffff)
							i := cu - 128*csum[8*h+l] - sm[l]
							s := dw[8*h+l] * d[l]
							f[8*h+l] += s * float32(i)
						}
					}
				}
			}
		}
		if a.flags&q8Last == 0 {
			continue
		}
		var out [2]float32
		for q := range rp {
			for v := range tv {
				q8TileReduceGeneric(facc[(q*tv+v)*16:(q*tv+v)*16+16], out[:])
				// Element by element: with an odd row count the last pair's second
				// output lies past the end of y, and a *[2]float32 would straddle it.
				y0 := unsafe.Add(unsafe.Pointer(dc.y[v]), a.yoff+8*q)
				*(*float32)(y0) = out[0]
				if q < rp-1 || a.flags&q8Odd == 0 {
					*(*float32)(unsafe.Add(y0, 4)) = out[1]
				}
			}
		}
	}
}

// q8TileReduceGeneric sets out[2i+h] to the sum of lanes 8h…8h+7 of the accumulator
// facc[16i:16i+16], in the order of the matrix-vector kernels.
func q8TileReduceGeneric(facc, out []float32) {
	for i := range len(out) / 2 {
		for h := range 2 {
			acc := (*[8]float32)(facc[16*i+8*h:])
			out[2*i+h] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
		}
	}
}

// q8RepackPQ2 repacks ng groups of 8 PQ2_0 blocks of the rows a and b (a row pair; b
// may be a again) into dst, group g at dst[g·stride:]: for step s = 0…7 the 64-byte line
// at 64s holds in 32-bit lane L the code bytes 4s…4s+3 of block 8g+L of row a, and in
// lane 8+L those of row b; then 16 float32 scales fp16(d), row a's 8 blocks first.
func q8RepackPQ2Generic(dst []byte, stride int, a, b []byte, ng int) {
	for g := range ng {
		out := (*[q8PairBytes]byte)(dst[g*stride:])
		for h, row := range [2][]byte{a, b} {
			for l := range 8 {
				blk := (*[pq2BlockBytes]byte)(row[(8*g+l)*pq2BlockBytes:])
				for s := range 8 {
					copy(out[64*s+32*h+4*l:64*s+32*h+4*l+4], blk[2+4*s:6+4*s])
				}
				*(*float32)(unsafe.Pointer(&out[512+32*h+4*l])) = fp16(binary.LittleEndian.Uint16(blk[:]))
			}
		}
	}
}

// q8RepackPTQ1 is q8RepackPQ2 for PTQ1_0 rows: each block is transcoded to its PQ2_0
// code words on the way (as ptq1ToPQ2 does), by the selected family's kernel where it
// has one (q8RepackPTQ1AVX512).
func q8RepackPTQ1(dst []byte, stride int, a, b []byte, ng int) {
	_ = dst[(ng-1)*stride+q8PairBytes-1]
	_ = a[ng*8*ptq1BlockBytes-1]
	_ = b[ng*8*ptq1BlockBytes-1]
	if q8Sel.id == q8Generic || !archQ8RepackPTQ1(q8Sel.id, &dst[0], stride, &a[0], &b[0], ng) {
		q8RepackPTQ1Generic(dst, stride, a, b, ng)
	}
}

// q8RepackPTQ1Generic is the portable q8RepackPTQ1.
func q8RepackPTQ1Generic(dst []byte, stride int, a, b []byte, ng int) {
	for g := range ng {
		out := (*[q8PairBytes]byte)(dst[g*stride:])
		for h, row := range [2][]byte{a, b} {
			for l := range 8 {
				s := (*[ptq1BlockBytes]byte)(row[(8*g+l)*ptq1BlockBytes:])
				w := ptq1Words(s)
				for i, v := range w {
					binary.LittleEndian.PutUint32(out[64*i+32*h+4*l:], v)
				}
				*(*float32)(unsafe.Pointer(&out[512+32*h+4*l])) = fp16(uint16(s[26]) | uint16(s[27])<<8)
			}
		}
	}
}

// q8Call is one call of a tiled kernel within a pass over a batch: tiles tiles of tv
// vectors, the first at vector v0 of the pass (and at slot v0 of its accumulators).
type q8Call struct{ v0, tv, tiles int }

// q8TileCalls splits the nv vectors of a pass into the calls of the tiled kernels of
// widest width tv, in calls[:n], and returns n: the fewest tiles that hold nv vectors
// (⌈nv/tv⌉), as even as they can be: the wider ones first, one width apart (each family
// has a kernel for every width up to its widest). So the work follows nv rather than
// the next multiple of tv, and a batch just over a multiple of tv does not run its
// rest in one narrow tile, whose planes and activation loads serve too few products:
// 9 vectors at width 8 run as 5+4, not 8+1, and a 2-wide AVX2 tile ran at as little as
// half the multiply-adds per second of a 4-wide one (BenchmarkQ8TileKernel).
func q8TileCalls(calls *[2]q8Call, tv, nv int) int {
	if nv <= 0 {
		return 0
	}
	tiles := (nv + tv - 1) / tv
	w := nv / tiles    // the narrower width
	wide := nv % tiles // tiles of width w+1
	n := 0
	if wide > 0 {
		calls[n] = q8Call{0, w + 1, wide}
		n++
	}
	calls[n] = q8Call{wide * (w + 1), w, tiles - wide}
	return n + 1
}

// matMulQ8Tiled is MatMulQ8Range for k ≥ 1024 and PQ2_0 rows of at most mmPanel bytes:
// for each tile of up to 2·rpMax rows, repack its rows (whole, or in chunks of at most
// q8ChunkGroups groups, the float accumulators carried over) and run the tiled kernels
// over all the vectors, in passes of at most q8BatchMax vectors split by q8TileCalls;
// then add the blocks after the last whole group as q8RowsPQ2 does.
func matMulQ8Tiled(f Format, w []byte, k, n int, x *Q8Batch, t int, y []float32, lo, hi int) {
	nb := k / BlockSize
	ng := nb / 8
	rpMax := q8TilePairs()
	nch := (ng + q8ChunkGroups - 1) / q8ChunkGroups
	cg := (ng + nch - 1) / nch // groups per chunk (the last may have fewer)
	rb := f.RowBytes(k)
	bb := pq2BlockBytes
	if f == PTQ1_0 {
		bb = ptq1BlockBytes
	}
	var buf [q8ChunkGroups * q8TilePairsMax * q8PairBytes]byte
	var facc [q8TilePairsMax * q8BatchMax * 16]float32
	var descs [q8DescsMax]q8TileDesc
	var calls [2]q8Call
	tv := q8TileWidth()
	descFor := [2]int{-1, -1} // the (first vector, first group) descs was filled for
	for r0 := lo; r0 < hi; r0 += 2 * rpMax {
		rows := min(2*rpMax, hi-r0)
		rp := (rows + 1) / 2
		if nch == 1 {
			q8RepackTile(buf[:], f, w, rb, r0, rows, 0, ng)
		}
		for v0 := 0; v0 < t; v0 += q8BatchMax {
			nv := min(q8BatchMax, t-v0)
			ncalls := q8TileCalls(&calls, tv, nv)
			tiles := 0 // descriptors
			for _, cl := range calls[:ncalls] {
				tiles += cl.tiles
			}
			for c := range nch {
				g0 := c * cg
				gn := min(cg, ng-g0)
				if nch > 1 {
					q8RepackTile(buf[:], f, w, rb, r0, rows, g0, gn)
				}
				if descFor != [2]int{v0, g0} {
					descFor = [2]int{v0, g0}
					q8FillDescs(&descs, calls[:ncalls], x, y, n, v0, g0)
				}
				// What is repacked next, prefetched by the kernels a share per group and
				// descriptor: the next chunk of these rows (descriptor i: row i mod rows),
				// or the next rows, whose bytes are contiguous (descriptor i: the i-th
				// share of them, however few the descriptors).
				pfStep := 8 * bb
				switch nr0 := r0 + 2*rpMax; {
				case c < nch-1:
					for i := range tiles {
						descs[i].pf = uintptr(unsafe.Pointer(&w[(r0+i%rows)*rb+(g0+gn)*8*bb]))
					}
				case nr0 < hi:
					next := min(2*rpMax, hi-nr0) * rb
					pfStep = ((next+tiles*gn-1)/(tiles*gn) + 63) &^ 63
					base := uintptr(unsafe.Pointer(&w[nr0*rb]))
					for i := range tiles {
						descs[i].pf = base + uintptr(i*gn*pfStep)
					}
				default: // the last rows of the range: nothing to prefetch
					pfStep = 64
					for i := range tiles {
						descs[i].pf = uintptr(unsafe.Pointer(&w[(hi-1)*rb]))
					}
				}
				flags := 0
				if c == 0 {
					flags |= q8First
				}
				if c == nch-1 {
					flags |= q8Last
				}
				if rows%2 == 1 {
					flags |= q8Odd
				}
				d := 0
				for _, cl := range calls[:ncalls] {
					a := q8TileArgs{w: &buf[0], ng: gn, facc: &facc[rp*16*cl.v0], tiles: cl.tiles, desc: &descs[d],
						yoff: 4 * r0, flags: flags, pfStep: pfStep}
					q8Tile(rp, cl.tv, &a)
					d += cl.tiles
				}
			}
		}
		if nb > 8*ng {
			q8TailRows(f, w, rb, nb, ng, x, t, n, y, r0, r0+rows)
		}
	}
}

// q8TailRows adds to rows r0 ≤ r < r1 of the t output vectors the blocks after the last
// whole group of 8, as q8RowsPQ2 adds them.
func q8TailRows(f Format, w []byte, rb, nb, ng int, x *Q8Batch, t, n int, y []float32, r0, r1 int) {
	tn := nb - 8*ng
	var tail [7 * pq2BlockBytes]byte
	for r := r0; r < r1; r++ {
		var src []byte
		if f == PTQ1_0 {
			ptq1ToPQ2(tail[:], w[r*rb+8*ng*ptq1BlockBytes:], tn)
			src = tail[:tn*pq2BlockBytes]
		} else {
			src = w[r*rb+8*ng*pq2BlockBytes : r*rb+nb*pq2BlockBytes]
		}
		for s := range t {
			y[s*n+r] += q8TailDot(src, &x.rows[s], 8*ng, tn)
		}
	}
}

// q8FillDescs names in descs the vectors of the calls, from vector v0 on, at group g0:
// their tiled activations, D and Sum from that group, and their output rows of n values.
func q8FillDescs(descs *[q8DescsMax]q8TileDesc, calls []q8Call, x *Q8Batch, y []float32, n, v0, g0 int) {
	nb := x.K / BlockSize
	tb := q8TileBytes(x.K)
	d := 0
	for _, cl := range calls {
		for i := range cl.tiles * cl.tv {
			s := v0 + cl.v0 + i
			dc := &descs[d+i/cl.tv]
			l := i % cl.tv
			dc.act[l] = &x.tq[s*tb+1024*g0]
			dc.d[l] = &x.d[s*nb+8*g0]
			dc.sum[l] = &x.sum[s*nb+8*g0]
			dc.y[l] = &y[s*n]
		}
		d += cl.tiles
	}
}

// q8RepackTile repacks groups g0 … g0+gn−1 of the rows r0 … r0+rows−1 (rb bytes each,
// format f) into buf, as ⌈rows/2⌉ row pairs (an odd tile repeats its last row).
func q8RepackTile(buf []byte, f Format, w []byte, rb, r0, rows, g0, gn int) {
	rp := (rows + 1) / 2
	stride := rp * q8PairBytes
	bb := pq2BlockBytes
	if f == PTQ1_0 {
		bb = ptq1BlockBytes
	}
	for q := range rp {
		ra := r0 + 2*q
		rb2 := min(ra+1, r0+rows-1)
		a := w[ra*rb+g0*8*bb : ra*rb+(g0+gn)*8*bb]
		b := w[rb2*rb+g0*8*bb : rb2*rb+(g0+gn)*8*bb]
		_ = buf[(gn-1)*stride+q*q8PairBytes+q8PairBytes-1]
		if f == PTQ1_0 {
			q8RepackPTQ1(buf[q*q8PairBytes:], stride, a, b, gn)
		} else {
			q8RepackPQ2(buf[q*q8PairBytes:], stride, a, b, gn)
		}
	}
}

// transcodePTQ1ToPQ2 writes the nb PTQ1_0 blocks of src as PQ2_0 blocks into dst. Runs
// of 256 blocks go through the selected family's PTQ1_0 repacking kernel (as if they
// were two rows of 16 groups, the code words then taken back out of its lines); the
// rest, and every block where the family has no such kernel, through ptq1ToPQ2. Both
// write the words ptq1Words gives, so the result does not depend on the family.
func transcodePTQ1ToPQ2(dst, src []byte, nb int) {
	const ng = 16 // groups of 8 blocks per half of a run
	var buf [ng * q8PairBytes]byte
	i := 0
	for ; q8Sel.id != q8Generic && i+16*ng <= nb; i += 16 * ng {
		a := src[i*ptq1BlockBytes : (i+8*ng)*ptq1BlockBytes]
		b := src[(i+8*ng)*ptq1BlockBytes : (i+16*ng)*ptq1BlockBytes]
		if !archQ8RepackPTQ1(q8Sel.id, &buf[0], q8PairBytes, &a[0], &b[0], ng) {
			break
		}
		for h := range 2 {
			for g := range ng {
				line := (*[q8PairBytes]byte)(buf[g*q8PairBytes:])
				for l := range 8 {
					blk := i + 8*ng*h + 8*g + l
					d := (*[pq2BlockBytes]byte)(dst[blk*pq2BlockBytes:])
					s := (*[ptq1BlockBytes]byte)(src[blk*ptq1BlockBytes:])
					d[0], d[1] = s[26], s[27]
					for w := range 8 {
						o := 64*w + 32*h + 4*l
						copy(d[2+4*w:6+4*w], line[o:o+4])
					}
				}
			}
		}
	}
	ptq1ToPQ2(dst[i*pq2BlockBytes:], src[i*ptq1BlockBytes:], nb-i)
}
