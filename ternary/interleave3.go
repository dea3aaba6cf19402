package ternary

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Ilv3Rows is the row tile of an [Interleaved3] matrix: five groups of 16 rows, one per
// trit of a byte.
const Ilv3Rows = 80

const (
	// ilv3CodeOff is where a tile × block's code bytes start: after the 80 fp16 scales
	// (160 bytes) and 32 bytes of zeros that keep the 64-byte steps on cache lines.
	ilv3CodeOff = 192
	// ilv3BlockBytes is one tile × block of an [Interleaved3] matrix: 2240 bytes, as
	// many as the 80 PTQ1_0 blocks it holds.
	ilv3BlockBytes = ilv3CodeOff + 32*64
)

// Interleaved3 is a PTQ1_0 matrix's trits rearranged once, at load, into 80-row tiles
// for the decode kernel [MatVecInterleaved3Range], still five trits a byte (base 3,
// PTQ1_0's own encoding) and so as many bytes as the file: the [Interleaved] layout
// with a fifth row in every code byte. [Interleaved3.Unpack] gives back the file's
// bytes where those are canonical (as the encoder writes them).
//
// # Layout
//
// Tile t (rows 80t … 80t+79) holds the matrix's blocks b = 0 … nb−1 (nb = k/128) one
// after the other, ilv3BlockBytes each, tiles following each other (tile t, block b at
// 2240·(t·nb + b)). A tile × block is
//
//	bytes 0 … 159     the fp16 scales of rows 80t+r (r = 0 … 79) at 2r, little endian;
//	bytes 160 … 191   zero;
//	bytes 192 … 2239  32 steps of 64 bytes, step 8p+s (p, s = 0 … 3, 0 … 7) at 192+64·(8p+s).
//
// In step 8p+s, byte 4L+j (L = 0 … 15, j = 0 … 3) holds the trits u₀ … u₄ of column
// 16s+4j+p of the block for rows L, 16+L, 32+L, 48+L and 64+L, encoded as a PTQ1_0 qs
// byte: ⌈q·256/243⌉ with q = 81u₀+27u₁+9u₂+3u₃+u₄, so that trit g of byte c is
// (uint8(c·3^g)·3) >> 8 and the row's weight there is (trit − 1)·d. The columns of a
// step are those of [Interleaved]'s, so the dword at 4L meets the activation dword at
// 256·(b/2)+64p+32·(b%2)+4s of the [Q8] layout, and a 64-byte step with one broadcast
// activation dword is 320 products of 80 rows (see interleave3_amd64.s for how the
// five rows of a byte are separated).
//
// A last tile of fewer than 80 rows is padded with rows of trit 1 (weight 0) and scale
// 0, which no product reports; the rows need not be a multiple of 80.
type Interleaved3 struct {
	k, n int
	nb   int
	buf  []byte // ⌈n/80⌉ · nb · ilv3BlockBytes, 64-byte aligned
}

// NewInterleaved3 returns room for the interleaved layout of an n×k PTQ1_0 matrix (k a
// positive multiple of 128, n ≥ 1), to be filled by [Interleaved3.Fill].
func NewInterleaved3(k, n int) (*Interleaved3, error) {
	size, err := Interleaved3Size(k, n)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, size+63)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(raw))) & 63)
	return NewInterleaved3In(raw[off:off+size:off+size], k, n)
}

// Interleaved3Size returns the bytes of the base-3 interleaved layout of an n×k PTQ1_0
// matrix: its PTQ1_0 size, rounded up to whole tiles.
func Interleaved3Size(k, n int) (int, error) {
	if k <= 0 || k%BlockSize != 0 || n < 1 {
		return 0, fmt.Errorf("ternary: interleaved base-3 %d×%d matrix: want k a positive multiple of %d and n ≥ 1", n, k, BlockSize)
	}
	return (n + Ilv3Rows - 1) / Ilv3Rows * (k / BlockSize) * ilv3BlockBytes, nil
}

// NewInterleaved3In is [NewInterleaved3] in memory of the caller's (huge pages, say):
// mem must be 64-byte aligned and hold [Interleaved3Size] bytes, which the layout then
// owns.
func NewInterleaved3In(mem []byte, k, n int) (*Interleaved3, error) {
	size, err := Interleaved3Size(k, n)
	if err != nil {
		return nil, err
	}
	if len(mem) < size || uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%64 != 0 {
		return nil, fmt.Errorf("ternary: interleaved base-3 %d×%d matrix: want %d bytes of 64-byte aligned memory, have %d at %p", n, k, size, len(mem), unsafe.SliceData(mem))
	}
	return &Interleaved3{k: k, n: n, nb: k / BlockSize, buf: mem[:size:size]}, nil
}

// K is the matrix's row width.
func (v *Interleaved3) K() int { return v.k }

// N is the matrix's row count.
func (v *Interleaved3) N() int { return v.n }

// Bytes is the memory the layout takes.
func (v *Interleaved3) Bytes() int { return len(v.buf) }

func (v *Interleaved3) tileBytes() int { return v.nb * ilv3BlockBytes }

// ilv3CheckRows panics unless lo and hi are tile-aligned rows of an n-row matrix: lo a
// multiple of 80, hi a multiple of 80 or n.
func ilv3CheckRows(op string, n, lo, hi int) {
	if lo < 0 || hi > n || lo > hi || lo%Ilv3Rows != 0 || (hi%Ilv3Rows != 0 && hi != n) {
		panic(fmt.Sprintf("ternary: %s: rows %d…%d of %d (want multiples of %d, or the row count)", op, lo, hi, n, Ilv3Rows))
	}
}

var (
	// ilv3Trits[c] holds the five trits of byte c in its bytes 0 … 4, so that Fill
	// runs Horner's rule for all five trits of a byte at once: 3·acc + ilv3Trits[c]
	// never carries from one byte into the next (each stays ≤ 242).
	ilv3Trits [256]uint64
	// ilv3Enc[q] is the canonical byte of the five trits q = 81u₀+…+u₄ (q < 243).
	ilv3Enc [256]byte
	// ilv3Pad is the PTQ1_0 block the padding rows of a last tile read: every trit 1
	// (weight 0) and scale 0.
	ilv3Pad [ptq1BlockBytes]byte
)

func init() {
	for c := range 256 {
		for n := range 5 {
			ilv3Trits[c] |= uint64(tritTab[c][n]) << (8 * n)
		}
		if c < 243 {
			ilv3Enc[c] = encodeTrits(uint(c))
		}
	}
	var ones [BlockSize]uint8
	for i := range ones {
		ones[i] = 1
	}
	packPTQ1_0(ilv3Pad[:], &ones, 0)
}

// ilv3CodePos returns the offset within a tile × block's code bytes (after
// ilv3CodeOff) of column e's byte for L = 0.
func ilv3CodePos(e int) int {
	p, s, j := e%4, e/16, e%16/4
	return 64*(8*p+s) + j
}

// Fill interleaves rows lo ≤ i < hi of the PTQ1_0 matrix w (the one v was made for); lo
// must be a multiple of 80 and hi a multiple of 80 or the row count, so that goroutines
// filling disjoint ranges write disjoint tiles. It reads the trits where PTQ1_0 keeps
// them (there is no PQ2_0 step), and every code byte it writes is canonical.
func (v *Interleaved3) Fill(w []byte, lo, hi int) {
	ilv3CheckRows("Interleaved3.Fill", v.n, lo, hi)
	rb := PTQ1_0.RowBytes(v.k)
	if len(w) < v.n*rb {
		panic(fmt.Sprintf("ternary: Interleaved3.Fill: %d bytes, want %d rows of %d", len(w), v.n, rb))
	}
	v.FillRows(w[lo*rb:hi*rb], lo, hi)
}

// FillRows is Fill from rows, which holds the matrix's rows lo ≤ i < hi alone (rows[0]
// is row lo's first byte), as Interleaved.FillRows.
func (v *Interleaved3) FillRows(rows []byte, lo, hi int) {
	ilv3CheckRows("Interleaved3.FillRows", v.n, lo, hi)
	rb := PTQ1_0.RowBytes(v.k)
	if len(rows) != (hi-lo)*rb {
		panic(fmt.Sprintf("ternary: Interleaved3.FillRows: %d bytes, want %d rows of %d", len(rows), hi-lo, rb))
	}
	w := rows
	tb := v.tileBytes()
	var blk [Ilv3Rows]*[ptq1BlockBytes]byte
	var touched byte
	defer func() { touchSink.Add(uint32(touched)) }()
	for r0 := lo; r0 < hi; r0 += Ilv3Rows {
		tile := v.buf[r0/Ilv3Rows*tb : (r0/Ilv3Rows+1)*tb]
		n := min(Ilv3Rows, v.n-r0)
		at := (r0 - lo) * rb
		touched ^= touchLines(w[at : at+n*rb])
		for b := range v.nb {
			for r := range blk {
				blk[r] = &ilv3Pad
				if r < n {
					blk[r] = (*[ptq1BlockBytes]byte)(w[at+r*rb+b*ptq1BlockBytes:])
				}
			}
			ilv3PackBlock((*[ilv3BlockBytes]byte)(tile[b*ilv3BlockBytes:]), &blk)
		}
	}
}

// ilv3PackBlock writes one tile × block from the 80 PTQ1_0 blocks blk.
//
// For each L and each of the 26 trit bytes m, Horner's rule over the five rows of the
// byte group gives the five output q values (one per trit n of byte m) in the bytes of
// one word; each goes through the encoder to its column's place (ilv3CodePos), and
// the four bytes of one dword are assembled in a register and stored at once: qs[m]
// with m = p, p+4, p+8, p+12 make the dword at 512p+64n+4L (byte j from m = p+4j);
// qs[16+p] and qs[20+p] trits n = 0, 1 the dword at 512p+320+4L, trits 2, 3 the one
// 64 bytes on, trit 4 the low half of the one 128 bytes on, whose high half is qh[h]'s
// trits 0 and 2 (p = h) or 1 and 3 (p = h+2).
func ilv3PackBlock(dst *[ilv3BlockBytes]byte, blk *[Ilv3Rows]*[ptq1BlockBytes]byte) {
	for r, b := range blk {
		dst[2*r], dst[2*r+1] = b[26], b[27]
	}
	clear(dst[2*Ilv3Rows : ilv3CodeOff])
	codes := (*[ilv3BlockBytes - ilv3CodeOff]byte)(dst[ilv3CodeOff:])
	enc := &ilv3Enc
	// e32 is the encoded byte n of q, as a uint32.
	e32 := func(q uint64, n uint) uint32 { return uint32(enc[uint8(q>>(8*n))]) }
	put := func(o int, x uint32) { binary.LittleEndian.PutUint32(codes[o:o+4], x) }
	for L := range 16 {
		b0, b1, b2, b3, b4 := blk[L], blk[16+L], blk[32+L], blk[48+L], blk[64+L]
		h0, h1 := ilv3Horner(b0, b1, b2, b3, b4, 24), ilv3Horner(b0, b1, b2, b3, b4, 25)
		for p := range 4 {
			q0 := ilv3Horner(b0, b1, b2, b3, b4, p)
			q1 := ilv3Horner(b0, b1, b2, b3, b4, p+4)
			q2 := ilv3Horner(b0, b1, b2, b3, b4, p+8)
			q3 := ilv3Horner(b0, b1, b2, b3, b4, p+12)
			o := 512*p + 4*L
			put(o, e32(q0, 0)|e32(q1, 0)<<8|e32(q2, 0)<<16|e32(q3, 0)<<24)
			put(o+64, e32(q0, 1)|e32(q1, 1)<<8|e32(q2, 1)<<16|e32(q3, 1)<<24)
			put(o+128, e32(q0, 2)|e32(q1, 2)<<8|e32(q2, 2)<<16|e32(q3, 2)<<24)
			put(o+192, e32(q0, 3)|e32(q1, 3)<<8|e32(q2, 3)<<16|e32(q3, 3)<<24)
			put(o+256, e32(q0, 4)|e32(q1, 4)<<8|e32(q2, 4)<<16|e32(q3, 4)<<24)
			r0 := ilv3Horner(b0, b1, b2, b3, b4, 16+p)
			r1 := ilv3Horner(b0, b1, b2, b3, b4, 20+p)
			put(o+320, e32(r0, 0)|e32(r1, 0)<<8|e32(r0, 1)<<16|e32(r1, 1)<<24)
			put(o+384, e32(r0, 2)|e32(r1, 2)<<8|e32(r0, 3)<<16|e32(r1, 3)<<24)
			h, lo := h0, uint(0) // qh[p]'s trits 0 and 2, or qh[p−2]'s 1 and 3
			switch p {
			case 1:
				h = h1
			case 2:
				lo = 1
			case 3:
				h, lo = h1, 1
			}
			put(o+448, e32(r0, 4)|e32(r1, 4)<<8|e32(h, lo)<<16|e32(h, lo+2)<<24)
		}
	}
}

// ilv3Horner returns, in bytes 0 … 4, Σ_g 3^(4−g)·(trit n of byte m of row group g).
func ilv3Horner(b0, b1, b2, b3, b4 *[ptq1BlockBytes]byte, m int) uint64 {
	return (((ilv3Trits[b0[m]]*3+ilv3Trits[b1[m]])*3+ilv3Trits[b2[m]])*3+ilv3Trits[b3[m]])*3 + ilv3Trits[b4[m]]
}

// Unpack writes rows lo ≤ i < hi of the matrix back in PTQ1_0 (hi·rowBytes bytes of
// dst, row i at i·rowBytes), canonically encoded: the bytes Fill read where those were
// canonical. lo and hi are as for Fill.
func (v *Interleaved3) Unpack(dst []byte, lo, hi int) {
	ilv3CheckRows("Interleaved3.Unpack", v.n, lo, hi)
	rb := PTQ1_0.RowBytes(v.k)
	if len(dst) < hi*rb {
		panic(fmt.Sprintf("ternary: Interleaved3.Unpack: rows up to %d need %d bytes, have %d", hi, hi*rb, len(dst)))
	}
	var pos [BlockSize]int
	for e := range pos {
		pos[e] = ilv3CodeOff + ilv3CodePos(e)
	}
	tb := v.tileBytes()
	var codes [BlockSize]uint8
	for i := lo; i < hi; i++ {
		tile := v.buf[i/Ilv3Rows*tb:]
		r := i % Ilv3Rows
		g, L := r/16, r%16
		for b := range v.nb {
			blk := (*[ilv3BlockBytes]byte)(tile[b*ilv3BlockBytes:])
			for e, p := range pos {
				codes[e] = tritTab[blk[p+4*L]][g]
			}
			scale := binary.LittleEndian.Uint16(blk[2*r:])
			packPTQ1_0(dst[i*rb+b*ptq1BlockBytes:], &codes, scale)
		}
	}
}

// ilv3Native reports whether a SIMD kernel runs: where the selected Q8 family has one
// whose float fold it reproduces (archIlv3Native).
func ilv3Native() bool { return archIlv3Native(q8Sel.id) }

// Interleaved3Native reports whether [MatVecInterleaved3Range] runs a SIMD kernel here,
// one that gives the bits of the kernel [MatVecQ8Range] runs on the PTQ1_0 file: on
// AVX-512 VNNI, on AVX-VNNI (Intel's cores without AVX-512 since Alder Lake) and on
// arm64 with SDOT (ARMv8.2's dot product: Apple's cores, Neoverse N1 and later). Elsewhere
// it runs its pure-Go twin, which gives the bits of the generic Q8 kernel.
func Interleaved3Native() bool { return ilv3Native() }

// Interleaved3Kernel names the kernels [MatVecInterleaved3Range] and
// [MatMulInterleaved3Range] run here: "avx512vnni", "avx-vnni" (or, in this package's
// tests on an AVX-512 machine, "avx-vnni-evex"), "neondot" or "generic".
func Interleaved3Kernel() string {
	if !ilv3Native() {
		return "generic"
	}
	return archIlv3Name()
}

// MatVecInterleaved3Range is [MatVecQ8Range] over an interleaved PTQ1_0 matrix for rows
// lo ≤ i < hi, lo a multiple of 80 and hi a multiple of 80 or the row count (the
// engine's threads split tiles): bit for bit what MatVecQ8Range gives over the file's
// bytes where [Interleaved3Native] says so, and always on the generic family. It does
// not allocate.
func MatVecInterleaved3Range(v *Interleaved3, x *Q8, y []float32, lo, hi int) {
	ilv3CheckRows("MatVecInterleaved3Range", v.n, lo, hi)
	if x.K != v.k {
		panic(fmt.Sprintf("ternary: MatVecInterleaved3Range: activation width %d, matrix row width %d", x.K, v.k))
	}
	if len(y) < hi {
		panic(fmt.Sprintf("ternary: MatVecInterleaved3Range: rows up to %d, len(y) = %d", hi, len(y)))
	}
	if lo == hi {
		return
	}
	native := ilv3Native()
	tb := v.tileBytes()
	t0, t1 := lo/Ilv3Rows, (hi+Ilv3Rows-1)/Ilv3Rows
	whole := t1 - t0
	if hi%Ilv3Rows != 0 {
		whole-- // the padded last tile goes through a buffer
	}
	var acc [8 * Ilv3Rows]float32
	if whole > 0 {
		out := y[lo : lo+whole*Ilv3Rows]
		ilv3Tiles(native, v.buf[t0*tb:(t0+whole)*tb], whole, v.nb, x, &acc, out)
	}
	if whole < t1-t0 {
		var last [Ilv3Rows]float32
		t := t1 - 1
		ilv3Tiles(native, v.buf[t*tb:(t+1)*tb], 1, v.nb, x, &acc, last[:])
		copy(y[t*Ilv3Rows:hi], last[:])
	}
}

// ilv3Tiles sets the 80 outputs y[80i…80i+79] of each of the tiles of w (nb blocks
// each): the groups of 8 blocks by the tile kernel, the blocks after the last group
// (added in block order, as q8TailDot does) from their block sums.
func ilv3Tiles(native bool, w []byte, tiles, nb int, x *Q8, acc *[8 * Ilv3Rows]float32, y []float32) {
	nb8 := nb / 8
	tb := nb * ilv3BlockBytes
	y = y[:tiles*Ilv3Rows]
	if nb8 > 0 {
		_ = x.Sum[8*nb8-1]
		_ = x.D[8*nb8-1]
		_ = x.Q[256*4*nb8-1]
		if native {
			archIlv3Tiles(&w[0], tiles, nb8, tb, &x.Q[0], &x.D[0], &x.Sum[0], &acc[0], &y[0])
		} else {
			ilv3TilesGeneric(w, tiles, nb8, tb, x, acc, y)
		}
	} else {
		clear(y)
	}
	if nb == 8*nb8 {
		return
	}
	for t := range tiles {
		ilv3TailAdd(native, w[t*tb:(t+1)*tb], nb, nb8, x, y[t*Ilv3Rows:(t+1)*Ilv3Rows])
	}
}

// ilv3TilesGeneric is the pure-Go twin of ilv3TilesVNNI (interleave3_amd64.s): for
// each of the tiles of w (tb bytes apart), y[80i+r] = the Q8 rows kernel's value over
// its 8·nb8 first blocks, the same eight lanes folded in the same order (see
// q8RowsFunc).
func ilv3TilesGeneric(w []byte, tiles, nb8, tb int, x *Q8, accBuf *[8 * Ilv3Rows]float32, y []float32) {
	acc := (*[8][Ilv3Rows]float32)(unsafe.Pointer(accBuf))
	for t := range tiles {
		*acc = [8][Ilv3Rows]float32{}
		tile := w[t*tb:]
		for b := range 8 * nb8 {
			blk := (*[ilv3BlockBytes]byte)(tile[b*ilv3BlockBytes:])
			var sums [Ilv3Rows]int32
			ilv3BlockGeneric(&sums, blk, x, b)
			lane := &acc[b%8]
			for r := range Ilv3Rows {
				s := fp16(binary.LittleEndian.Uint16(blk[2*r:])) * x.D[b]
				lane[r] += s * float32(sums[r])
			}
		}
		yt := y[t*Ilv3Rows : (t+1)*Ilv3Rows]
		for r := range yt {
			yt[r] = ((acc[0][r] + acc[4][r]) + (acc[2][r] + acc[6][r])) + ((acc[1][r] + acc[5][r]) + (acc[3][r] + acc[7][r]))
		}
	}
}

// ilv3BlockGeneric sets sums[r] to the integer I_b = Σ_j u_j·Q_j − Sum_b of row r of
// the tile × block blk with block b of x (the pure-Go twin of ilv3BlockVNNI).
func ilv3BlockGeneric(sums *[Ilv3Rows]int32, blk *[ilv3BlockBytes]byte, x *Q8, b int) {
	var s [Ilv3Rows]int32
	base := 256*(b/2) + 32*(b%2)
	for p := range 4 {
		for st := range 8 {
			codes := (*[64]byte)(blk[ilv3CodeOff+64*(8*p+st):])
			acts := (*[4]int8)(x.Q[base+64*p+4*st:])
			for L := range 16 {
				for j := range 4 {
					t := &tritTab[codes[4*L+j]]
					a := int32(acts[j])
					s[L] += int32(t[0]) * a
					s[16+L] += int32(t[1]) * a
					s[32+L] += int32(t[2]) * a
					s[48+L] += int32(t[3]) * a
					s[64+L] += int32(t[4]) * a
				}
			}
		}
	}
	for r := range s {
		sums[r] = s[r] - x.Sum[b]
	}
}

// touchSink keeps touchLines's loads.
var touchSink atomic.Uint32

// touchLines reads one byte of each 64-byte line of p, in order, and returns their
// xor. A repacking reads a tile's rows a block at a time, 64 or 80 streams at once,
// more than a core's prefetchers follow, so that nearly every line it met was a miss
// (a fifth of the base-3 repacking's time went to the first load of each row's block);
// one sequential pass first brings the tile's rows (80–300 KB) into the cache at the
// memory's streaming rate.
func touchLines(p []byte) byte {
	var t byte
	for i := 0; i < len(p); i += 64 {
		t ^= p[i]
	}
	return t
}
