package ternary

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// This file holds the pure-Go twin of the SIMD kernels. It is compiled on every
// platform, runs wherever no SIMD kernel is available, and is the yardstick the SIMD
// kernels are tested against: all of them compute the same per-block integers and fold
// the scales in the same lane order.

// q8RowsFunc is the signature every Q8 row kernel shares (q8RowsGeneric, the assembly
// kernels, and the dispatcher q8Rows). For r in [0, rows) it sets
//
//	y[r] = Σ_b s_b·I_b over the blocks b < 8·nb8 of the PQ2_0 row at w + r·rowBytes,
//
// where I_b = Σ_j c_j·Q_j − Sum_b is the block's exact integer dot product of the codes
// c (0…3) with the activations Q (so that the −1 of the ternary map is folded into the
// activation sum: Σ Q·(c−1) = Σ Q·c − Sum), and s_b = fp16(d_w)·D_b in float32. q, d and
// sum point at the Q8's Q, D and Sum for block 0 (q must be at a block pair boundary).
//
// The float part has a fixed shape that every implementation follows: eight lanes,
// lane i accumulating acc_i += s_b·I_b for the blocks b ≡ i (mod 8) in order (the SIMD
// kernels fuse the multiply-add; the generic one may round twice), and
//
//	y = ((acc0+acc4) + (acc2+acc6)) + ((acc1+acc5) + (acc3+acc7)).
//
// nb8 ≥ 1 and rows ≥ 1; the callers handle the rest.
type q8RowsFunc func(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32)

// q8RowsGeneric is the portable q8RowsFunc.
func q8RowsGeneric(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32) {
	nb := 8 * nb8
	ws := unsafe.Slice(w, (rows-1)*rowBytes+nb*pq2BlockBytes)
	qs := unsafe.Slice(q, nb*BlockSize)
	ds := unsafe.Slice(d, nb)
	ss := unsafe.Slice(sum, nb)
	ys := unsafe.Slice(y, rows)
	for r := range ys {
		row := ws[r*rowBytes : r*rowBytes+nb*pq2BlockBytes]
		var acc [8]float32
		for b := range nb {
			blk := row[b*pq2BlockBytes : (b+1)*pq2BlockBytes]
			i := q8BlockDot(blk, qs, b) - ss[b]
			s := fp16(binary.LittleEndian.Uint16(blk)) * ds[b]
			acc[b%8] += s * float32(i)
		}
		ys[r] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
	}
}

// q8BlockDot returns Σ_j c_j·Q_j for the PQ2_0 block blk (34 bytes) and block b of the
// activations q (laid out as in [Q8]).
//
// It works on 64-bit words, eight elements of one plane at a time: with the activations
// biased to unsigned bytes u = Q+128 (an xor), c·u = lo·u + 2·hi·u for the code's low and
// high bits, each a byte mask applied with an and; the masked bytes are summed in four
// 16-bit lanes (at most 16·3·510 = 24480 per lane), and Σ c·Q = Σ c·u − 128·Σ c, with Σ c
// counted by popcount. About twice the speed of the plain loop.
func q8BlockDot(blk []byte, q []int8, b int) int32 {
	const (
		ones  = 0x0101010101010101
		bias  = 0x8080808080808080
		even  = 0x00ff00ff00ff00ff
		bit0s = 0x5555555555555555
	)
	codes := (*[32]byte)(blk[2:pq2BlockBytes])
	off := 256*(b/2) + 32*(b%2)
	a := (*[192 + 32]byte)(unsafe.Slice((*byte)(unsafe.Pointer(&q[off])), 192+32))
	var acc uint64
	var csum int
	for w := 0; w < 32; w += 8 {
		cw := binary.LittleEndian.Uint64(codes[w:])
		csum += bits.OnesCount64(cw&bit0s) + 2*bits.OnesCount64(cw&^bit0s)
		u0 := binary.LittleEndian.Uint64(a[w:]) ^ bias
		u1 := binary.LittleEndian.Uint64(a[64+w:]) ^ bias
		u2 := binary.LittleEndian.Uint64(a[128+w:]) ^ bias
		u3 := binary.LittleEndian.Uint64(a[192+w:]) ^ bias
		l0, h0 := u0&(cw&ones*0xff), u0&(cw>>1&ones*0xff)
		l1, h1 := u1&(cw>>2&ones*0xff), u1&(cw>>3&ones*0xff)
		l2, h2 := u2&(cw>>4&ones*0xff), u2&(cw>>5&ones*0xff)
		l3, h3 := u3&(cw>>6&ones*0xff), u3&(cw>>7&ones*0xff)
		l := l0&even + l0>>8&even + l1&even + l1>>8&even + l2&even + l2>>8&even + l3&even + l3>>8&even
		h := h0&even + h0>>8&even + h1&even + h1>>8&even + h2&even + h2>>8&even + h3&even + h3>>8&even
		acc += l + 2*h
	}
	sum := acc&0xffff + acc>>16&0xffff + acc>>32&0xffff + acc>>48
	return int32(sum) - 128*int32(csum)
}

// q8TailDot returns Σ s_b·I_b, added in block order, over the n blocks of the PQ2_0
// bytes row, which are blocks b0 … b0+n−1 of the activation vector x.
func q8TailDot(row []byte, x *Q8, b0, n int) float32 {
	var t float32
	for k := range n {
		blk := row[k*pq2BlockBytes : (k+1)*pq2BlockBytes]
		b := b0 + k
		i := q8BlockDot(blk, x.Q, b) - x.Sum[b]
		t += fp16(binary.LittleEndian.Uint16(blk)) * x.D[b] * float32(i)
	}
	return t
}

// ptq1ToPQ2 transcodes n PTQ1_0 blocks of src into PQ2_0 blocks in dst.
func ptq1ToPQ2(dst, src []byte, n int) {
	for k := range n {
		s := (*[ptq1BlockBytes]byte)(src[k*ptq1BlockBytes : (k+1)*ptq1BlockBytes])
		d := dst[k*pq2BlockBytes : (k+1)*pq2BlockBytes]
		w := ptq1Words(s)
		d[0], d[1] = s[26], s[27]
		for i, v := range w {
			binary.LittleEndian.PutUint32(d[2+4*i:], v)
		}
	}
}

// ptq1Words returns the PQ2_0 code bytes of the PTQ1_0 block s as eight little-endian
// words, word w holding elements 16w … 16w+15 at bits 2·(e%16).
//
// Byte qs[m] (m < 16) holds trit n of element 16n+m: bits 2m of words 0…4, added with
// two 64-bit lookups (words 0|1 and 2|3, 32 bits each) and one 32-bit one (word 4).
// Byte qs[16+m] holds elements 80+8n+m: bits 2m (n even) or 16+2m (n odd) of words 5,
// 6, 7 (one lookup for 5|6, one for 7); byte qh[h] holds elements 120+2n+h: bits
// 16+4n+2h of word 7.
func ptq1Words(s *[ptq1BlockBytes]byte) [8]uint32 {
	var w01, w23, w56 uint64
	var w4, w7 uint32
	for m := range 16 {
		b := s[m]
		sh := uint(2 * m)
		w01 |= ptq1Tab01[b] << sh
		w23 |= ptq1Tab23[b] << sh
		w4 |= uint32(ptq1Tab4[b]) << sh
	}
	for m := range 8 {
		b := s[16+m]
		sh := uint(2 * m)
		w56 |= ptq1Tab56[b] << sh
		w7 |= uint32(ptq1Tab4[b]) << sh
	}
	w7 |= ptq1TabH[s[24]] | ptq1TabH[s[25]]<<2
	return [8]uint32{uint32(w01), uint32(w01 >> 32), uint32(w23), uint32(w23 >> 32), w4,
		uint32(w56), uint32(w56 >> 32), w7}
}

// Trits of a PTQ1_0 byte placed for ptq1Words.
var (
	ptq1Tab01, ptq1Tab23, ptq1Tab56 [256]uint64
	ptq1Tab4                        [256]uint8
	ptq1TabH                        [256]uint32
)

func init() {
	for b := range 256 {
		var t [5]uint8
		for n := range t {
			t[n] = tritOf(uint8(b), n)
		}
		ptq1Tab01[b] = uint64(t[0]) | uint64(t[1])<<32
		ptq1Tab23[b] = uint64(t[2]) | uint64(t[3])<<32
		ptq1Tab4[b] = t[4]
		ptq1Tab56[b] = uint64(t[0]) | uint64(t[1])<<16 | uint64(t[2])<<32 | uint64(t[3])<<48
		ptq1TabH[b] = uint32(t[0])<<16 | uint32(t[1])<<20 | uint32(t[2])<<24 | uint32(t[3])<<28
	}
}
