package qwen35

import "math"

// Integer scoring of the int8 and q4 caches.
//
// A key of an int8 or q4 cache is codes and a scale per block of kvBlock values, so a
// score q·k is Σ_b s_kb·Σ_{i∈b} q_i·c_i. Widening the codes to float32 for every query
// costs more than reading them; instead each query head is quantised once per step to
// int8 at the same block granularity, q_i ≈ s_qb·a_i with s_qb = max_b|q|/127 and
// a_i = round(q_i/s_qb), and a score is s_qb·s_kb·Σ a_i·c_i with the inner sums in
// integers (VPDPBUSD, VPMADDUBSW, SDOT), exact.
//
// The float part of a score is fixed, so that every kernel gives the same bits: a head's
// values are cut into lanes of eight, sixteen lanes to an accumulator vector of 128
// values (four blocks), lane l of vector v holding block b = 4v + l/4's values
// 32b + o + j and 32b + 16 + o + j, o = 4·(l mod 4), j < 4 — the bytes a 128-bit chunk of
// an int8 row's first and second halves of its blocks, or of a q4 row's low and high
// nibbles, put in one int32 lane — and the integer J of its eight products:
//
//	acc[l] += (float32(J)·sq_l)·sk_l   (each product rounded, no fused multiply-add)
//
// over the vectors in order, sq_l and sk_l the scales of the lane's block, then the
// sixteen lanes are summed in the tree hsum16 describes. J is exact (|J| ≤ 8·127·15
// for q4, 8·127² for int8, well inside float32's integers).
//
// Numerics against the float score (Σ q_i·k̂_i, k̂ the cache's decoded key, which the
// float64 reference tests compare with): rounding q moves each q_i by at most
// s_qb/2 = max_b|q|/254, so a logit moves by at most δ = Σ_b (s_qb/2)·Σ_{i∈b}|k̂_i|,
// plus float32's rounding of the combination (a few ulp of Σ|q_i·k̂_i|). That is the
// same size as the int8 cache's own rounding of k (s_kb/2 = max_b|k|/254 a value) and a
// sixteenth of q4's (max_b|k|/16). The softmax turns logit changes of at most δ_p into
// an output change of at most Σ_p w_p·m_p·|v_p − o| (m_p ≈ 2δ_p; refAttentionCached in
// attention_test.go derives it and the tests hold every output to it). The errors are
// of both signs and mostly cancel: on the 260-token test of TestAttentionCachePrecision
// the int8 cache's largest output error against the f32 cache grew from 5.2e−3 to
// 6.3e−3 of the largest output, and q4's stayed at 6.4e−2 (6.5e−2 before).

// qLanes is the number of int32 lanes of an accumulator vector.
const qLanes = 16

// qVectors returns the accumulator vectors of a head of d values, 128 (four blocks) each.
func qVectors(d int) int { return (d + 4*kvBlock - 1) / (4 * kvBlock) }

// qHead is the byte size of a quantised query head's codes: 128 a vector, the 64 values
// of its lanes' first fours, then the 64 of their second.
func qHead(d int) int { return 128 * qVectors(d) }

// quantQuery quantises one query head q (d values) for scoring against an int8 (q4
// false) or q4 cache: codes a_i = round(q_i/s_qb), s_qb = max_b|q|/127, laid out as
// the kernels read them next to the key codes, plus per lane its scale sq (0 past d)
// and its correction corr, the integer a kernel adds for the bias of its unsigned
// operand: −128·Σ a (int8: keys XOR 0x80 are the codes + 128) or −8·Σ a (q4: the codes
// are the values + 8). codes: qHead(d) bytes; sq, corr: qLanes·qVectors(d) each.
//
// The q4 layout follows the cache's: byte j of a block's 16 holds value j in its low
// nibble and value 16+j in its high one. Lane l of vector v covers block b = 4v + l/4
// and code bytes 64v + 4l … +3: its low-nibble values 32b + o + j and high-nibble
// values 32b + 16 + o + j, o = 4·(l mod 4), j < 4. codes[128v + 4l + j] and
// codes[128v + 64 + 4l + j] hold their query codes, so that each is at its code byte's
// offset.
func quantQuery(codes []int8, sq []float32, corr []int32, q []float32, q4 bool) {
	d := len(q)
	nb, nv := (d+kvBlock-1)/kvBlock, qVectors(d)
	var scale [64]float32 // a block's s_qb; heads of up to 2048 values
	var a [2048]int8      // the codes in value order, zero past d
	if nb > len(scale) {
		panic("qwen35: quantQuery: head too long")
	}
	for b := 0; b < nb; b++ {
		lo, hi := b*kvBlock, min((b+1)*kvBlock, d)
		// The largest |q| by its bits, the sign cleared: integer comparisons (a NaN's
		// bits exceed every number's, so a NaN still wins).
		var abits uint32
		for _, x := range q[lo:hi] {
			abits = max(abits, math.Float32bits(x)&0x7fffffff)
		}
		amax := math.Float32frombits(abits)
		scale[b] = amax / 127
		if amax == 0 {
			continue
		}
		inv := 127 / amax
		for i, x := range q[lo:hi] {
			// Clamped, then rounded half away from zero: y ± ½ is exact in float64 for
			// a float32 y of magnitude below 2²³, or below ½ by less than it can hold,
			// so the truncation gives math.Round's integer.
			y := float64(x * inv)
			if y > 127 {
				y = 127
			} else if y < -127 {
				y = -127
			}
			a[lo+i] = int8(int32(y + math.Copysign(0.5, y)))
		}
	}
	bias := int32(128) // int8: keys XOR 0x80
	if q4 {
		bias = 8
	}
	for v := 0; v < nv; v++ {
		for l := 0; l < qLanes; l++ {
			b := 4*v + l/4
			base := 32*b + 4*(l%4)
			lo, hi := a[base:base+4:base+4], a[base+16:base+20:base+20]
			copy(codes[128*v+4*l:128*v+4*l+4], lo)
			copy(codes[128*v+64+4*l:128*v+64+4*l+4], hi)
			sum := int32(lo[0]) + int32(lo[1]) + int32(lo[2]) + int32(lo[3]) +
				int32(hi[0]) + int32(hi[1]) + int32(hi[2]) + int32(hi[3])
			corr[v*qLanes+l] = -bias * sum
			sq[v*qLanes+l] = 0
			if b < nb {
				sq[v*qLanes+l] = scale[b]
			}
		}
	}
}

// hsum16 sums an accumulator vector's lanes in the kernels' order: halves, then
// quarters, then pairs.
func hsum16(a *[qLanes]float32) float32 {
	var a8 [8]float32
	for i := range a8 {
		a8[i] = a[i] + a[i+8]
	}
	a4 := [4]float32{a8[0] + a8[4], a8[1] + a8[5], a8[2] + a8[6], a8[3] + a8[7]}
	return (a4[0] + a4[2]) + (a4[1] + a4[3])
}

// scoreInt8Generic sets out[r·os + p] to the score of quantised query head r < rep
// (codes, sq: quantQuery's, heads one after another) against the int8 key p < n (k: n
// rows of d codes; ks: n rows of the blocks' scales). corr is not needed: the products
// are formed signed.
func scoreInt8Generic(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int) {
	nb, nv, hb := (d+kvBlock-1)/kvBlock, qVectors(d), qHead(d)
	for p := 0; p < n; p++ {
		kr, sr := k[p*d:(p+1)*d], ks[p*nb:(p+1)*nb]
		for r := 0; r < rep; r++ {
			var acc [qLanes]float32
			for v := 0; v < nv; v++ {
				qc, qs := codes[r*hb+128*v:], sq[(r*nv+v)*qLanes:]
				for l := 0; l < qLanes; l++ {
					b := 4*v + l/4
					if b >= nb {
						break // J = 0: the lane adds +0
					}
					var J int32
					for j, i := 0, 32*b+4*(l%4); j < 4; j++ {
						if i+j < d {
							J += int32(qc[4*l+j]) * int32(kr[i+j])
						}
						if i+16+j < d {
							J += int32(qc[64+4*l+j]) * int32(kr[i+16+j])
						}
					}
					e := float32(float32(J) * qs[l])
					acc[l] += float32(e * sr[b])
				}
			}
			out[r*os+p] = hsum16(&acc)
		}
	}
}

// scoreQ4Generic is scoreInt8Generic for a q4 cache: k holds n rows of 16 code bytes a
// block, ks n rows of the blocks' scales (IEEE halves).
func scoreQ4Generic(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int) {
	nb, nv, hb := (d+kvBlock-1)/kvBlock, qVectors(d), qHead(d)
	for p := 0; p < n; p++ {
		kr, sr := k[16*nb*p:16*nb*(p+1)], ks[p*nb:(p+1)*nb]
		for r := 0; r < rep; r++ {
			var acc [qLanes]float32
			for v := 0; v < nv; v++ {
				qc, qs := codes[r*hb+128*v:], sq[(r*nv+v)*qLanes:]
				for l := 0; l < qLanes; l++ {
					b := 4*v + l/4
					if b >= nb {
						break
					}
					var J int32
					for j := 4 * l; j < 4*l+4; j++ {
						c := kr[64*v+j]
						J += int32(qc[j])*(int32(c&15)-8) + int32(qc[64+j])*(int32(c>>4)-8)
					}
					e := float32(float32(J) * qs[l])
					acc[l] += float32(e * f16ToF32(sr[b]))
				}
			}
			out[r*os+p] = hsum16(&acc)
		}
	}
}

// scoreInt8 and scoreQ4 are the wrappers of the kernels: out[r·os + p] for r < rep and
// p < n. The SIMD kernels take a head dim of 256 (the model's); others run the generic
// code, which gives the same bits.
func scoreInt8(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int) {
	if n <= 0 || rep <= 0 {
		return
	}
	nb, nv := (d+kvBlock-1)/kvBlock, qVectors(d)
	out = out[:(rep-1)*os+n]
	codes, sq, corr = codes[:rep*qHead(d)], sq[:rep*nv*qLanes], corr[:rep*nv*qLanes]
	k, ks = k[:n*d], ks[:n*nb]
	if d == 256 && kern.scoreInt8 != nil {
		kern.scoreInt8(out, os, codes, sq, corr, rep, k, ks, n, d)
		return
	}
	scoreInt8Generic(out, os, codes, sq, corr, rep, k, ks, n, d)
}

func scoreQ4(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int) {
	if n <= 0 || rep <= 0 {
		return
	}
	nb, nv := (d+kvBlock-1)/kvBlock, qVectors(d)
	out = out[:(rep-1)*os+n]
	codes, sq, corr = codes[:rep*qHead(d)], sq[:rep*nv*qLanes], corr[:rep*nv*qLanes]
	k, ks = k[:16*nb*n], ks[:n*nb]
	if d == 256 && kern.scoreQ4 != nil {
		kern.scoreQ4(out, os, codes, sq, corr, rep, k, ks, n, d)
		return
	}
	scoreQ4Generic(out, os, codes, sq, corr, rep, k, ks, n, d)
}
