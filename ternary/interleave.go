package ternary

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// IlvRows is the row tile of an [Interleaved] matrix.
const IlvRows = 64

// ilvBlockBytes is one tile × block of an [Interleaved] matrix: 64 fp16 scales and 64
// rows × 128 codes, as many bytes as the 64 PQ2_0 blocks it holds.
const ilvBlockBytes = IlvRows * pq2BlockBytes // 2176 = 128 + 2048

// Interleaved is a PQ2_0 matrix's bytes rearranged once, at load, into 64-row tiles for
// the decode kernel [MatVecInterleavedRange]: the same codes and scales, so that
// [Interleaved.Unpack] gives back the file's bytes.
//
// # Layout
//
// Tile t (rows 64t … 64t+63) holds the matrix's blocks b = 0 … nb−1 (nb = k/128) one
// after the other, ilvBlockBytes each, tiles following each other (tile t, block b at
// 2176·(t·nb + b)). A tile × block is
//
//	bytes 0 … 127     the fp16 scales of rows 64t+r (r = 0 … 63) at 2r, little endian;
//	bytes 128 … 2175  32 steps of 64 bytes, step 8p+s (p, s = 0 … 3, 0 … 7) at 128+64·(8p+s).
//
// In step 8p+s, byte 4L+j (L = 0 … 15, j = 0 … 3) holds the codes of column
// 16s+4j+p of the block for rows L, 16+L, 32+L and 48+L at bits 0, 2, 4 and 6. So the
// dword at 4L holds the four columns whose activations are the dword at
// 256·(b/2)+64p+32·(b%2)+4s of the [Q8] layout, and a 64-byte step with one broadcast
// activation dword is 256 products of 64 rows (see ilvTilesVNNI and ilvTilesAVX2 in
// matvec_amd64.s for how the four rows of a byte are separated).
//
// A last tile of fewer than 64 rows is padded with rows of zero codes and scales, which
// no product reports; the rows need not be a multiple of 64.
type Interleaved struct {
	k, n int
	nb   int
	buf  []byte // ⌈n/64⌉ · nb · ilvBlockBytes, 64-byte aligned
}

// NewInterleaved returns room for the interleaved layout of an n×k PQ2_0 matrix (k a
// positive multiple of 128, n ≥ 1), to be filled by [Interleaved.Fill].
func NewInterleaved(k, n int) (*Interleaved, error) {
	size, err := InterleavedSize(k, n)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, size+63)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & 63)
	return NewInterleavedIn(raw[off:off+size:off+size], k, n)
}

// InterleavedSize returns the bytes of the interleaved layout of an n×k PQ2_0 matrix:
// its PQ2_0 size, rounded up to whole tiles.
func InterleavedSize(k, n int) (int, error) {
	if k <= 0 || k%BlockSize != 0 || n < 1 {
		return 0, fmt.Errorf("ternary: interleaved %d×%d matrix: want k a positive multiple of %d and n ≥ 1", n, k, BlockSize)
	}
	return (n + IlvRows - 1) / IlvRows * (k / BlockSize) * ilvBlockBytes, nil
}

// NewInterleavedIn is [NewInterleaved] in memory of the caller's (huge pages, say):
// mem must be 64-byte aligned and hold [InterleavedSize] bytes, which the layout then
// owns.
func NewInterleavedIn(mem []byte, k, n int) (*Interleaved, error) {
	size, err := InterleavedSize(k, n)
	if err != nil {
		return nil, err
	}
	if len(mem) < size || uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%64 != 0 {
		return nil, fmt.Errorf("ternary: interleaved %d×%d matrix: want %d bytes of 64-byte aligned memory, have %d at %p", n, k, size, len(mem), unsafe.SliceData(mem))
	}
	return &Interleaved{k: k, n: n, nb: k / BlockSize, buf: mem[:size:size]}, nil
}

// K is the matrix's row width.
func (v *Interleaved) K() int { return v.k }

// N is the matrix's row count.
func (v *Interleaved) N() int { return v.n }

// Bytes is the memory the layout takes.
func (v *Interleaved) Bytes() int { return len(v.buf) }

// tileBytes is one tile's span.
func (v *Interleaved) tileBytes() int { return v.nb * ilvBlockBytes }

// ilvCheckRows panics unless lo and hi are tile-aligned rows of an n-row matrix: lo a
// multiple of 64, hi a multiple of 64 or n.
func ilvCheckRows(op string, n, lo, hi int) {
	if lo < 0 || hi > n || lo > hi || lo%IlvRows != 0 || (hi%IlvRows != 0 && hi != n) {
		panic(fmt.Sprintf("ternary: %s: rows %d…%d of %d (want multiples of %d, or the row count)", op, lo, hi, n, IlvRows))
	}
}

// Fill interleaves rows lo ≤ i < hi of the PQ2_0 matrix w (the one v was made for); lo
// must be a multiple of 64 and hi a multiple of 64 or the row count, so that goroutines
// filling disjoint ranges write disjoint tiles.
func (v *Interleaved) Fill(w []byte, lo, hi int) {
	ilvCheckRows("Interleaved.Fill", v.n, lo, hi)
	rb := PQ2_0.RowBytes(v.k)
	if len(w) < v.n*rb {
		panic(fmt.Sprintf("ternary: Interleaved.Fill: %d bytes, want %d rows of %d", len(w), v.n, rb))
	}
	v.FillRows(w[lo*rb:hi*rb], lo, hi)
}

// FillRows is Fill from rows, which holds the matrix's rows lo ≤ i < hi alone (rows[0]
// is row lo's first byte): a loader that makes them a few at a time (transcoding
// another format) needs no copy of the whole matrix.
func (v *Interleaved) FillRows(rows []byte, lo, hi int) {
	ilvCheckRows("Interleaved.FillRows", v.n, lo, hi)
	rb := PQ2_0.RowBytes(v.k)
	if len(rows) != (hi-lo)*rb {
		panic(fmt.Sprintf("ternary: Interleaved.FillRows: %d bytes, want %d rows of %d", len(rows), hi-lo, rb))
	}
	w := rows
	tb := v.tileBytes()
	var touched byte
	defer func() { touchSink.Add(uint32(touched)) }()
	for r0 := lo; r0 < hi; r0 += IlvRows {
		tile := v.buf[r0/IlvRows*tb : (r0/IlvRows+1)*tb]
		n := min(IlvRows, v.n-r0)
		at := (r0 - lo) * rb
		touched ^= touchLines(w[at : at+n*rb])
		for b := range v.nb {
			ilvPackBlock((*[ilvBlockBytes]byte)(tile[b*ilvBlockBytes:]), w[at+b*pq2BlockBytes:], rb, n)
		}
	}
}

// ilvPackBlock writes one tile × block from block 0 of the first rows PQ2_0 rows at w,
// rb bytes apart (rows ≤ 64; the others are zero).
//
// Each output byte gathers one column's codes of four rows g (rows L, 16+L, 32+L,
// 48+L): a 2-bit transpose between the rows and the four columns of a qs byte, done
// eight qs bytes (two steps) at a time: with u_g the little-endian qs bytes 8h … 8h+7
// of row g, step (p, s = 2h or 2h+1), dword L is Σ_g ((u_g >> 2p) & 0x03…03) << 2g.
func ilvPackBlock(dst *[ilvBlockBytes]byte, w []byte, rb, rows int) {
	const m3 = 0x0303030303030303
	var zero [pq2BlockBytes]byte
	var blk [IlvRows]*[pq2BlockBytes]byte
	for r := range blk {
		blk[r] = &zero
		if r < rows {
			blk[r] = (*[pq2BlockBytes]byte)(w[r*rb:])
		}
	}
	for r, b := range blk {
		dst[2*r], dst[2*r+1] = b[0], b[1]
	}
	codes := (*[ilvBlockBytes - 128]byte)(dst[128:])
	for L := range 16 {
		a0, a1, a2, a3 := blk[L], blk[16+L], blk[32+L], blk[48+L]
		for h := range 4 {
			u0 := binary.LittleEndian.Uint64(a0[2+8*h:])
			u1 := binary.LittleEndian.Uint64(a1[2+8*h:])
			u2 := binary.LittleEndian.Uint64(a2[2+8*h:])
			u3 := binary.LittleEndian.Uint64(a3[2+8*h:])
			for p := range 4 {
				sh := uint(2 * p)
				o := u0>>sh&m3 | (u1>>sh&m3)<<2 | (u2>>sh&m3)<<4 | (u3>>sh&m3)<<6
				off := 64*(8*p+2*h) + 4*L
				binary.LittleEndian.PutUint32(codes[off:], uint32(o))
				binary.LittleEndian.PutUint32(codes[off+64:], uint32(o>>32))
			}
		}
	}
}

// Unpack writes rows lo ≤ i < hi of the matrix back in PQ2_0 (hi·rowBytes bytes of
// dst, row i at i·rowBytes): the bytes Fill read. lo and hi are as for Fill.
func (v *Interleaved) Unpack(dst []byte, lo, hi int) {
	ilvCheckRows("Interleaved.Unpack", v.n, lo, hi)
	rb := PQ2_0.RowBytes(v.k)
	if len(dst) < hi*rb {
		panic(fmt.Sprintf("ternary: Interleaved.Unpack: rows up to %d need %d bytes, have %d", hi, hi*rb, len(dst)))
	}
	tb := v.tileBytes()
	for i := lo; i < hi; i++ {
		tile := v.buf[i/IlvRows*tb:]
		r := i % IlvRows
		g, L := r/16, r%16
		row := dst[i*rb : (i+1)*rb]
		for b := range v.nb {
			blk := tile[b*ilvBlockBytes : (b+1)*ilvBlockBytes]
			out := row[b*pq2BlockBytes : (b+1)*pq2BlockBytes]
			out[0], out[1] = blk[2*r], blk[2*r+1]
			for m := range 32 {
				s, j := m/4, m%4
				var q byte
				for p := range 4 {
					q |= (blk[128+64*(8*p+s)+4*L+j] >> (2 * g) & 3) << (2 * p)
				}
				out[2+m] = q
			}
		}
	}
}

// ilvFamily names an implementation of the interleaved kernel.
type ilvFamily uint8

const (
	ilvGeneric ilvFamily = iota
	ilvVNNI
	ilvAVX2
	ilvNEONDot
	ilvNEON
)

// ilvSel returns the interleaved kernel that matches the selected Q8 kernel family
// (archIlvFamily): the one that gives its integers and folds them into floats as it
// does (AVX-512 VNNI for the AVX-512 families, AVX2 for the AVX2 one, SDOT and plain
// NEON for the two NEON ones), the generic twin where the family has none.
func ilvSel() ilvFamily {
	if q8Sel.id == q8Generic {
		return ilvGeneric
	}
	return archIlvFamily(q8Sel.id)
}

// InterleavedKernel names the interleaved kernels [MatVecInterleavedRange] and
// [MatMulInterleavedRange] run here: "avx512vnni", "avx-vnni" (the AVX2 family's on a
// CPU with AVX-VNNI), "avx2", "neondot", "neon" or "generic".
func InterleavedKernel() string {
	switch fam := ilvSel(); fam {
	case ilvVNNI:
		return "avx512vnni"
	case ilvAVX2:
		return archIlvAVX2Name()
	case ilvNEONDot:
		return "neondot"
	case ilvNEON:
		return "neon"
	}
	return "generic"
}

// InterleavedNative reports whether [MatVecInterleavedRange] runs a SIMD kernel here,
// one that gives the bits of the kernel [MatVecQ8Range] runs (AVX-512 VNNI or AVX2 on
// amd64, both NEON families on arm64). Elsewhere it runs its pure-Go twin, which gives
// the bits of the generic Q8 kernel: the same integers, with the float rounding of a
// multiply then add where a SIMD Q8 kernel fuses them (arm64's Go fuses them too).
func InterleavedNative() bool { return ilvSel() != ilvGeneric }

// MatVecInterleavedRange is [MatVecQ8Range] over an interleaved PQ2_0 matrix for rows
// lo ≤ i < hi, lo a multiple of 64 and hi a multiple of 64 or the row count (the
// engine's threads split tiles): bit for bit what MatVecQ8Range gives over the file's
// bytes where [InterleavedNative] says so, and always on the generic family. It does
// not allocate.
func MatVecInterleavedRange(v *Interleaved, x *Q8, y []float32, lo, hi int) {
	ilvCheckRows("MatVecInterleavedRange", v.n, lo, hi)
	if x.K != v.k {
		panic(fmt.Sprintf("ternary: MatVecInterleavedRange: activation width %d, matrix row width %d", x.K, v.k))
	}
	if len(y) < hi {
		panic(fmt.Sprintf("ternary: MatVecInterleavedRange: rows up to %d, len(y) = %d", hi, len(y)))
	}
	if lo == hi {
		return
	}
	fam := ilvSel()
	tb := v.tileBytes()
	t0, t1 := lo/IlvRows, (hi+IlvRows-1)/IlvRows
	whole := t1 - t0
	if hi%IlvRows != 0 {
		whole-- // the padded last tile goes through a buffer
	}
	var acc [8 * IlvRows]float32
	if whole > 0 {
		out := y[lo : lo+whole*IlvRows]
		ilvTiles(fam, v.buf[t0*tb:(t0+whole)*tb], whole, v.nb, x, &acc, out)
	}
	if whole < t1-t0 {
		var last [IlvRows]float32
		t := t1 - 1
		ilvTiles(fam, v.buf[t*tb:(t+1)*tb], 1, v.nb, x, &acc, last[:])
		copy(y[t*IlvRows:hi], last[:])
	}
}

// ilvTiles sets the 64 outputs y[64i…64i+63] of each of the tiles of w (nb blocks
// each) on family fam: the groups of 8 blocks by the family's kernel, the blocks after
// the last group (added in block order, as q8TailDot does) from its block sums.
func ilvTiles(fam ilvFamily, w []byte, tiles, nb int, x *Q8, acc *[8 * IlvRows]float32, y []float32) {
	nb8 := nb / 8
	tb := nb * ilvBlockBytes
	y = y[:tiles*IlvRows]
	if nb8 > 0 {
		_ = x.Sum[8*nb8-1]
		_ = x.D[8*nb8-1]
		_ = x.Q[256*4*nb8-1]
		if fam != ilvGeneric {
			archIlvTiles(fam, &w[0], tiles, nb8, tb, &x.Q[0], &x.D[0], &x.Sum[0], &acc[0], &y[0])
		} else {
			ilvTilesGeneric(w, tiles, nb8, tb, x, acc, y)
		}
	} else {
		clear(y)
	}
	if nb == 8*nb8 {
		return
	}
	for t := range tiles {
		ilvTailAdd(fam, w[t*tb:(t+1)*tb], nb, nb8, x, y[t*IlvRows:(t+1)*IlvRows])
	}
}

// ilvTilesGeneric is the pure-Go twin of ilvTilesVNNI (matvec_amd64.s): for each of
// the tiles of w (tb bytes apart), y[64i+r] = the Q8 rows kernel's value over its 8·nb8
// first blocks, the same eight lanes folded in the same order (see q8RowsFunc).
func ilvTilesGeneric(w []byte, tiles, nb8, tb int, x *Q8, accBuf *[8 * IlvRows]float32, y []float32) {
	acc := (*[8][IlvRows]float32)(unsafe.Pointer(accBuf))
	for t := range tiles {
		*acc = [8][IlvRows]float32{}
		tile := w[t*tb:]
		for b := range 8 * nb8 {
			blk := (*[ilvBlockBytes]byte)(tile[b*ilvBlockBytes:])
			var sums [IlvRows]int32
			ilvBlockGeneric(&sums, blk, x, b)
			lane := &acc[b%8]
			for r := range IlvRows {
				s := fp16(binary.LittleEndian.Uint16(blk[2*r:])) * x.D[b]
				lane[r] += s * float32(sums[r])
			}
		}
		yt := y[t*IlvRows : (t+1)*IlvRows]
		for r := range yt {
			yt[r] = ((acc[0][r] + acc[4][r]) + (acc[2][r] + acc[6][r])) + ((acc[1][r] + acc[5][r]) + (acc[3][r] + acc[7][r]))
		}
	}
}

// ilvBlockGeneric sets sums[r] to the integer I_b = Σ_j c_j·Q_j − Sum_b of row r of
// the tile × block blk with block b of x (the pure-Go twin of ilvBlockVNNI).
func ilvBlockGeneric(sums *[IlvRows]int32, blk *[ilvBlockBytes]byte, x *Q8, b int) {
	var s [IlvRows]int32
	base := 256*(b/2) + 32*(b%2)
	for p := range 4 {
		for st := range 8 {
			codes := (*[64]byte)(blk[128+64*(8*p+st):])
			acts := (*[4]int8)(x.Q[base+64*p+4*st:])
			for L := range 16 {
				for j := range 4 {
					c := codes[4*L+j]
					a := int32(acts[j])
					s[L] += int32(c&3) * a
					s[16+L] += int32(c>>2&3) * a
					s[32+L] += int32(c>>4&3) * a
					s[48+L] += int32(c>>6) * a
				}
			}
		}
	}
	for r := range s {
		sums[r] = s[r] - x.Sum[b]
	}
}
