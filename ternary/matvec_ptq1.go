package ternary

import (
	"encoding/binary"
	"unsafe"
)

// PTQ1_0 rows in the integer matrix-vector kernels, read where they lie.
//
// A PTQ1_0 block is 26 bytes of base-3 digits and a scale; the codes never exist as
// bits. The kernels decode trits arithmetically, five steps per byte: with x₀ = b,
// 3·xₙ = 256·tₙ + xₙ₊₁ (the vendor's tₙ = (uint8(b·3ⁿ)·3) >> 8, xₙ₊₁ = uint8(3·xₙ)).
// On amd64 one unsigned×signed byte multiply-add per 16-bit lane (VPMADDUBSW by the
// bytes 3, 0) turns a lane holding xₙ in its low byte into one holding tₙ in its high
// byte and xₙ₊₁ in its low byte, ready for the next step; the products (VPDPBUSD) pair
// the lanes with activations stored at the odd byte positions, zeros at the even ones,
// so the xₙ₊₁ bytes multiply zero. Even and odd weight bytes run as two chains (the
// odd one starts by multiplying the bytes 0, 3). On arm64 the NEON kernel keeps xₙ in
// bytes (MUL by 3 modulo 256) and takes tₙ = [xₙ ≥ 86] + [xₙ ≥ 171] from two
// compares.
//
// Rather than moving the trits into element order, the activations are moved into
// trit order, once per activation vector (Q8.tr, derived by the first PTQ1_0 product
// after Q8.Quantize, in the layout of this architecture's kernels: ptq1layout_*.go):
// every weight byte then meets its five activations at fixed positions, and the
// kernels need no shuffle.
//
// Blocks come in pairs, as in the Q8 layout. A pair is 56 bytes; its register image is
// two 32-byte halves, bytes 0…31 of the pair (block 2k's 28 bytes, then 4 of block
// 2k+1) and bytes 24…55 (4 of block 2k, then block 2k+1's 28), so that each 32-bit lane
// holds bytes of one block only and each half belongs to one block: the block sums
// come out of the same reductions as the PQ2_0 kernels' (8 lanes a block). The
// activation that meets trit n of register byte i (0…63) is that of the element the
// trit encodes, or 0 where byte i is a scale byte, belongs to the other block of the
// pair, or is a qh byte and n = 4 (a qh byte has four trits). The scale, junk and
// fifth-qh-trit products are therefore zero whatever the bytes hold, and each lane's
// sum is an exact part of the block's Σ c·Q. The integers I_b = Σ c·Q − Sum_b are the
// ones the PQ2_0 kernels compute for the transcoded block, and the float fold that
// follows is theirs instruction for instruction, so PTQ1_0 results are bit-identical
// to the PQ2_0 ones of the same kernel family.

// ptq1ActBytes returns len(Q8.tr) for k elements.
func ptq1ActBytes(k int) int { return (k/BlockSize + 1) / 2 * ptq1PairAct }

// ptq1Moves lists, for one block pair, where each of its 256 activations goes in the
// copy: tr[ptq1PairAct·k + dst] = Q[256·k + src] (negated where ptq1ActNeg). Every
// other byte of the copy is zero, and stays so.
var ptq1Moves [2 * BlockSize]struct{ dst, src uint16 }

func init() {
	j := 0
	for n := range 5 {
		for i := range 64 {
			blk, m := 0, i // register byte i is byte m of block blk of the pair
			if i >= 32 {
				blk, m = 1, i-36
			}
			if m >= 0 && m < 26 {
				if e := ptq1Elem(m, n); e >= 0 {
					ptq1Moves[j].dst = uint16(ptq1ActPos(n, i))
					ptq1Moves[j].src = uint16(64*(e%4) + 32*blk + e/4)
					j++
				}
			}
		}
	}
	if j != len(ptq1Moves) {
		panic("ternary: PTQ1_0 activation layout misses elements")
	}
}

// ptq1Elem returns the element that trit n of byte m (0…25) of a PTQ1_0 block
// encodes (the package doc, § Formats), or -1 for the fifth trit of a qh byte.
func ptq1Elem(m, n int) int {
	switch {
	case m < 16:
		return 16*n + m
	case m < 24:
		return 80 + 8*n + m - 16
	case n < 4:
		return 120 + 2*n + m - 24
	}
	return -1
}

// ptq1ActOrder writes the PTQ1_0-ordered copy dst of the int8 values q (laid out as in
// [Q8]), len(dst)/ptq1PairAct block pairs. It writes only the bytes that hold
// activations: the others must be zero already (as a new copy is).
func ptq1ActOrder(dst, q []int8) {
	for p := range len(dst) / ptq1PairAct {
		src := (*[256]int8)(q[256*p:])
		out := (*[ptq1PairAct]int8)(dst[ptq1PairAct*p:])
		for _, mv := range &ptq1Moves {
			v := src[mv.src&255]
			if ptq1ActNeg {
				v = -v // |Q| ≤ 127
			}
			out[mv.dst] = v
		}
	}
}

// q8RowsPTQ1Generic is the portable PTQ1_0 row kernel: q8RowsFunc for PTQ1_0 rows,
// with t pointing at the Q8's PTQ1_0-ordered copy (tr) instead of Q. It computes the
// same I_b and folds them exactly as q8RowsGeneric does.
func q8RowsPTQ1Generic(w *byte, rowBytes, rows, nb8 int, t *int8, d *float32, sum *int32, y *float32) {
	nb := 8 * nb8
	ws := unsafe.Slice(w, (rows-1)*rowBytes+nb*ptq1BlockBytes)
	ts := unsafe.Slice(t, nb/2*ptq1PairAct)
	ds := unsafe.Slice(d, nb)
	ss := unsafe.Slice(sum, nb)
	ys := unsafe.Slice(y, rows)
	for r := range ys {
		row := ws[r*rowBytes : r*rowBytes+nb*ptq1BlockBytes]
		var acc [8]float32
		for b := range nb {
			blk := (*[ptq1BlockBytes]byte)(row[b*ptq1BlockBytes:])
			i := ptq1BlockDot(blk, (*[ptq1PairAct]int8)(ts[ptq1PairAct*(b/2):]), 36*(b%2)) - ss[b]
			s := fp16(binary.LittleEndian.Uint16(blk[26:])) * ds[b]
			acc[b%8] += s * float32(i)
		}
		ys[r] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
	}
}

// ptq1BlockDot returns Σ_j c_j·Q_j for the PTQ1_0 block blk, whose register bytes
// start at off (0 or 36) in its pair's activation copy t.
func ptq1BlockDot(blk *[ptq1BlockBytes]byte, t *[ptq1PairAct]int8, off int) int32 {
	const st = ptq1ActStep
	var s int32
	for m := range 26 {
		tt := &tritTab[blk[m]]
		p := ptq1ActPos(0, off+m)
		s += int32(tt[0])*int32(t[p]) + int32(tt[1])*int32(t[st+p]) + int32(tt[2])*int32(t[2*st+p]) +
			int32(tt[3])*int32(t[3*st+p]) + int32(tt[4])*int32(t[4*st+p])
	}
	if ptq1ActNeg {
		s = -s
	}
	return s
}

// q8RowsPTQ1 runs the PTQ1_0 row kernel of the selected family (see q8RowsPTQ1Generic).
func q8RowsPTQ1(w *byte, rowBytes, rows, nb8 int, t *int8, d *float32, sum *int32, y *float32) {
	if q8Sel.id == q8Generic {
		q8RowsPTQ1Generic(w, rowBytes, rows, nb8, t, d, sum, y)
		return
	}
	archQ8RowsPTQ1(q8Sel.id, w, rowBytes, rows, nb8, t, d, sum, y)
}

// ptq1Native reports whether the selected kernel family reads PTQ1_0 rows natively
// (otherwise they are transcoded to PQ2_0 on the way).
func ptq1Native() bool { return q8Sel.id == q8Generic || archPTQ1Native(q8Sel.id) }

// q8RowsPTQ1Range sets y[r] for the len(y) rows of the PTQ1_0 bytes w (rowBytes apart,
// nb blocks each) to their products with x, as q8RowsPQ2 does for the transcoded rows:
// the whole groups by the row kernel, the blocks after them by q8TailDot.
func q8RowsPTQ1Range(w []byte, rowBytes int, x *Q8, nb int, y []float32) {
	rows := len(y)
	nb8 := nb / 8
	if nb8 > 0 {
		_ = w[(rows-1)*rowBytes+nb8*8*ptq1BlockBytes-1]
		_ = x.Sum[nb8*8-1]
		tr := x.ptq1Acts()
		_ = tr[nb8*4*ptq1PairAct-1]
		q8RowsPTQ1(&w[0], rowBytes, rows, nb8, &tr[0], &x.D[0], &x.Sum[0], &y[0])
	} else {
		clear(y)
	}
	if tail := nb - 8*nb8; tail > 0 {
		var buf [7 * pq2BlockBytes]byte
		off := 8 * nb8 * ptq1BlockBytes
		for r := range y {
			ptq1ToPQ2(buf[:], w[r*rowBytes+off:], tail)
			y[r] += q8TailDot(buf[:tail*pq2BlockBytes], x, 8*nb8, tail)
		}
	}
}
