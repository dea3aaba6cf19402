package ternary

import (
	"fmt"
	"unsafe"
)

// Tiles is a matrix's weights repacked once, ahead of the products, into the layout the
// batched kernels read (see matmul_q8.go): row pair q's groups of 8 blocks follow each
// other, q8PairBytes each (an odd last row is paired with itself). A batched product
// over it skips the repacking MatMulQ8Range does per call, a large share of a small
// batch's time (on the 2-core Zen 3 test VM a product of 2 vectors over tiles ran 1.5–1.9×
// as fast, of 4 vectors 1.4–1.5×, of 8 the same: BenchmarkMatMulQ8Batch, mode=tiles),
// at the price of a second copy of the weights: 576 bytes for every 544 of PQ2_0 codes
// and scales. The blocks after the last whole group stay in the original rows, which
// every product over Tiles also takes.
type Tiles struct {
	f     Format
	k, n  int
	lines []byte // ⌈n/2⌉ row pairs × ng groups × q8PairBytes
}

// Tiled reports whether a k-wide matrix can be pretiled: k holds a whole group of 8
// blocks and its PQ2_0 rows fit the batched kernels' panel (1024 ≤ k ≤ 61440).
func Tiled(k int) bool {
	return k%BlockSize == 0 && k/BlockSize >= 8 && PQ2_0.RowBytes(k) <= mmPanel
}

// NewTiles returns room for the tiles of an n×k matrix of format f, to be filled by
// Fill (in parallel over disjoint row ranges, if the caller likes).
func NewTiles(f Format, k, n int) (*Tiles, error) {
	if !f.valid() {
		return nil, fmt.Errorf("ternary: tiles: invalid format %d", uint8(f))
	}
	if !Tiled(k) || n < 1 {
		return nil, fmt.Errorf("ternary: tiles of a %d×%d matrix: want 1024 ≤ k ≤ 61440, k a multiple of %d, and n ≥ 1", n, k, BlockSize)
	}
	return &Tiles{f: f, k: k, n: n, lines: make([]byte, (n+1)/2*t8Pair(k))}, nil
}

// t8Pair is the tiled bytes of one row pair of a k-wide matrix.
func t8Pair(k int) int { return k / BlockSize / 8 * q8PairBytes }

// Bytes is the memory the tiles take.
func (t *Tiles) Bytes() int { return len(t.lines) }

// Fill repacks rows lo ≤ i < hi of w (the matrix the tiles were made for) into t; lo
// and hi must be even, or hi the row count.
func (t *Tiles) Fill(w []byte, lo, hi int) {
	rb := t.f.RowBytes(t.k)
	if lo < 0 || hi > t.n || lo > hi || lo%2 == 1 || (hi%2 == 1 && hi != t.n) {
		panic(fmt.Sprintf("ternary: Tiles.Fill: rows %d…%d of %d (want even bounds)", lo, hi, t.n))
	}
	if len(w) < t.n*rb {
		panic(fmt.Sprintf("ternary: Tiles.Fill: %d bytes, want %d rows of %d", len(w), t.n, rb))
	}
	ng := t.k / BlockSize / 8
	pb := t8Pair(t.k)
	for r := lo; r < hi; r += 2 {
		q8RepackTile(t.lines[r/2*pb:(r/2+1)*pb], t.f, w, rb, r, min(2, t.n-r), 0, ng)
	}
}

// MatMulQ8TilesRange is [MatMulQ8Range] over the same matrix w with its tiles (nil:
// MatMulQ8Range itself): the same bits, without the repacking. One vector runs the
// matrix-vector kernel over w, as MatMulQ8Range does.
func MatMulQ8TilesRange(f Format, w []byte, tl *Tiles, k, n int, x *Q8Batch, t int, y []float32, lo, hi int) {
	if tl == nil || t <= 1 {
		MatMulQ8Range(f, w, k, n, x, t, y, lo, hi)
		return
	}
	if tl.f != f || tl.k != k || tl.n != n {
		panic(fmt.Sprintf("ternary: MatMulQ8TilesRange: tiles of a %d×%d %s matrix for a %d×%d %s one", tl.n, tl.k, tl.f, n, k, f))
	}
	if t > x.T {
		panic(fmt.Sprintf("ternary: MatMulQ8TilesRange: %d vectors, batch capacity %d", t, x.T))
	}
	q8Check("MatMulQ8TilesRange", f, w, k, n, &x.rows[0], lo, hi)
	if lo == hi {
		return
	}
	if len(y) < (t-1)*n+hi {
		panic(fmt.Sprintf("ternary: MatMulQ8TilesRange: %d vectors of %d rows up to %d, len(y) = %d", t, n, hi, len(y)))
	}
	if lo%2 == 1 {
		// A range that starts inside a pair: its first row repacked, as MatMulQ8Range does.
		matMulQ8Tiled(f, w, k, n, x, t, y, lo, lo+1)
		lo++
	}
	nb := k / BlockSize
	ng := nb / 8
	pb := t8Pair(k)
	rb := f.RowBytes(k)
	var facc [q8BatchMax * 16]float32
	var descs [q8DescsMax]q8TileDesc
	var calls [2]q8Call
	tv := q8TileWidth()
	for v0 := 0; v0 < t; v0 += q8BatchMax {
		nv := min(q8BatchMax, t-v0)
		ncalls := q8TileCalls(&calls, tv, nv)
		tiles := 0
		for _, cl := range calls[:ncalls] {
			tiles += cl.tiles
		}
		q8FillDescs(&descs, calls[:ncalls], x, y, n, v0, 0)
		// Each pair's kernels prefetch the pair after next, a share per descriptor and
		// group: far enough ahead that memory has the time to deliver it.
		pfStep := ((pb+tiles*ng-1)/(tiles*ng) + 63) &^ 63
		for r0 := lo; r0 < hi; r0 += 2 {
			base := uintptr(unsafe.Pointer(&tl.lines[0])) + uintptr((r0/2+2)*pb)
			for i := range tiles {
				descs[i].pf = base + uintptr(i*ng*pfStep)
			}
			flags := q8First | q8Last
			if hi-r0 == 1 {
				flags |= q8Odd
			}
			d := 0
			for _, cl := range calls[:ncalls] {
				a := q8TileArgs{w: &tl.lines[r0/2*pb], ng: ng, facc: &facc[16*cl.v0], tiles: cl.tiles, desc: &descs[d],
					yoff: 4 * r0, flags: flags, pfStep: pfStep}
				q8Tile(1, cl.tv, &a)
				d += cl.tiles
			}
		}
	}
	if nb > 8*ng {
		q8TailRows(f, w, rb, nb, ng, x, t, n, y, lo, hi)
	}
}
