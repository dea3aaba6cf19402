package ternary

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/x448/float16"
)

// pow3 holds 3ⁿ for the five trit positions of a PTQ1_0 byte.
var pow3 = [5]uint8{1, 3, 9, 27, 81}

// tritTab[b][n] is trit n of byte b, computed once with the vendor's formula
// so that every decode path agrees with it bit for bit, including on the 13
// byte values the encoder never writes.
var tritTab [256][5]uint8

// canonQS and canonQH report whether a byte is one the encoder writes for a
// qs (five-trit) or qh (four-trit) byte; Scan counts the others.
var canonQS, canonQH [256]bool

// countQS and countQH hold, for each byte, how many of its trits are 0, 1
// and 2, in bits 0, 8 and 16, so that Scan sums a block's 26 bytes with one
// addition each (a block has 128 trits, so no field can carry into the
// next).
var countQS, countQH [256]uint32

func init() {
	for b := range 256 {
		for n := range 5 {
			t := tritOf(uint8(b), n)
			tritTab[b][n] = t
			countQS[b] += 1 << (8 * t)
			if n < 4 {
				countQH[b] += 1 << (8 * t)
			}
		}
	}
	for q := range 243 {
		canonQS[encodeTrits(uint(q))] = true
	}
	for q := range 81 {
		canonQH[encodeTrits(uint(q)*3)] = true
	}
}

// tritOf returns trit n of a PTQ1_0 byte. Multiplying by 3ⁿ in 8 bits
// discards the n more significant trits (the byte is a base-3 fraction
// scaled by 256); the top trit of what remains is then floor(·3/256).
func tritOf(b uint8, n int) uint8 {
	return uint8((uint16(b*pow3[n]) * 3) >> 8)
}

// encodeTrits turns q = 81t0+27t1+9t2+3t3+t4 (0..242) into its byte,
// ceil(q·256/243). Rounding up rather than down is what makes tritOf exact:
// the byte then never falls below the fraction q/243 it stands for.
func encodeTrits(q uint) uint8 {
	return uint8((q*256 + 242) / 243)
}

// fp16 converts raw binary16 bits to float32, exactly.
func fp16(h uint16) float32 { return float16.Frombits(h).Float32() }

// valueLUT returns the decoded value of each code for scale bits h, computed
// as the vendor does, float32(q−1)·d, so that non-finite scales give the
// same NaNs and infinities.
func valueLUT(h uint16) [4]float32 {
	d := fp16(h)
	var lut [4]float32
	for q := range lut {
		lut[q] = float32(q-1) * d
	}
	return lut
}

// UnpackPQ2_0 stores the 128 codes (0..3) of a PQ2_0 block in codes and
// returns the block's raw fp16 scale bits. It panics if block is shorter than
// 34 bytes.
func UnpackPQ2_0(codes *[BlockSize]uint8, block []byte) (scale uint16) {
	_ = block[pq2BlockBytes-1] // check against len, not cap
	b := block[:pq2BlockBytes]
	for i, v := range b[2:] {
		c := codes[4*i : 4*i+4 : 4*i+4]
		c[0] = v & 3
		c[1] = v >> 2 & 3
		c[2] = v >> 4 & 3
		c[3] = v >> 6
	}
	return binary.LittleEndian.Uint16(b)
}

// PackPQ2_0 writes a PQ2_0 block holding codes and the raw fp16 scale bits
// scale into block. Only the low two bits of each code are stored: this is
// the unchecked fast path, and [Format.Pack] checks the range. It panics if
// block is shorter than 34 bytes.
func PackPQ2_0(block []byte, codes *[BlockSize]uint8, scale uint16) {
	_ = block[pq2BlockBytes-1] // check against len, not cap
	b := block[:pq2BlockBytes]
	binary.LittleEndian.PutUint16(b, scale)
	qs := b[2:]
	for i := range qs {
		c := codes[4*i : 4*i+4 : 4*i+4]
		qs[i] = c[0]&3 | (c[1]&3)<<2 | (c[2]&3)<<4 | (c[3]&3)<<6
	}
}

// UnpackPTQ1_0 stores the 128 codes (0..2) of a PTQ1_0 block in codes and
// returns the block's raw fp16 scale bits. It panics if block is shorter than
// 28 bytes.
func UnpackPTQ1_0(codes *[BlockSize]uint8, block []byte) (scale uint16) {
	_ = block[ptq1BlockBytes-1] // check against len, not cap
	b := block[:ptq1BlockBytes]
	for m := range 16 {
		t := &tritTab[b[m]]
		codes[m] = t[0]
		codes[16+m] = t[1]
		codes[32+m] = t[2]
		codes[48+m] = t[3]
		codes[64+m] = t[4]
	}
	for m := range 8 {
		t := &tritTab[b[16+m]]
		codes[80+m] = t[0]
		codes[88+m] = t[1]
		codes[96+m] = t[2]
		codes[104+m] = t[3]
		codes[112+m] = t[4]
	}
	for h := range 2 {
		t := &tritTab[b[24+h]]
		codes[120+h] = t[0]
		codes[122+h] = t[1]
		codes[124+h] = t[2]
		codes[126+h] = t[3]
	}
	return binary.LittleEndian.Uint16(b[26:])
}

// PackPTQ1_0 writes a PTQ1_0 block holding codes and the raw fp16 scale bits
// scale into block. PTQ1_0 has no room for code 3: if any code is above 2 it
// returns an error wrapping [ErrCode3] (or [ErrCodeRange] for codes above 3)
// that names the first such element, and leaves block unchanged. It panics
// if block is shorter than 28 bytes.
func PackPTQ1_0(block []byte, codes *[BlockSize]uint8, scale uint16) error {
	if j := firstAbove2(codes); j >= 0 {
		return codeError(PTQ1_0, -1, j, codes[j])
	}
	packPTQ1_0(block, codes, scale)
	return nil
}

// firstAbove2 returns the index of the first code above 2, or -1.
func firstAbove2(codes *[BlockSize]uint8) int {
	for j, c := range codes {
		if c > 2 {
			return j
		}
	}
	return -1
}

// packPTQ1_0 is PackPTQ1_0 for codes known to be 0..2.
func packPTQ1_0(block []byte, codes *[BlockSize]uint8, scale uint16) {
	_ = block[ptq1BlockBytes-1] // check against len, not cap
	b := block[:ptq1BlockBytes]
	for m := range 16 {
		q := 81*uint(codes[m]) + 27*uint(codes[16+m]) + 9*uint(codes[32+m]) + 3*uint(codes[48+m]) + uint(codes[64+m])
		b[m] = encodeTrits(q)
	}
	for m := range 8 {
		q := 81*uint(codes[80+m]) + 27*uint(codes[88+m]) + 9*uint(codes[96+m]) + 3*uint(codes[104+m]) + uint(codes[112+m])
		b[16+m] = encodeTrits(q)
	}
	for h := range 2 {
		// Four trits, shifted up one place so the byte reads as five trits
		// with a zero last: the decoder then needs no special case.
		q := 27*uint(codes[120+h]) + 9*uint(codes[122+h]) + 3*uint(codes[124+h]) + uint(codes[126+h])
		b[24+h] = encodeTrits(3 * q)
	}
	binary.LittleEndian.PutUint16(b[26:], scale)
}

// unitLUT is the code values q−1 themselves: valueLUT of the scale 1.
var unitLUT = [4]float32{-1, 0, 1, 2}

// decodePQ2_0 decodes one PQ2_0 block into dst[:128].
func decodePQ2_0(dst []float32, block []byte) {
	decodePQ2With(dst, block, valueLUT(binary.LittleEndian.Uint16(block[:2])))
}

// decodePQ2With decodes one PQ2_0 block's codes into dst[:128] as lut[code].
func decodePQ2With(dst []float32, block []byte, lut [4]float32) {
	b := block[:pq2BlockBytes]
	dst = dst[:BlockSize]
	for i, v := range b[2:] {
		o := dst[4*i : 4*i+4 : 4*i+4]
		o[0] = lut[v&3]
		o[1] = lut[v>>2&3]
		o[2] = lut[v>>4&3]
		o[3] = lut[v>>6]
	}
}

// decodePTQ1_0 decodes one PTQ1_0 block into dst[:128].
func decodePTQ1_0(dst []float32, block []byte) {
	decodePTQ1With(dst, block, valueLUT(binary.LittleEndian.Uint16(block[26:28])))
}

// decodePTQ1With decodes one PTQ1_0 block's codes into dst[:128] as lut[code].
func decodePTQ1With(dst []float32, block []byte, lut [4]float32) {
	b := block[:ptq1BlockBytes]
	dst = dst[:BlockSize]
	for m := range 16 {
		t := &tritTab[b[m]]
		dst[m] = lut[t[0]]
		dst[16+m] = lut[t[1]]
		dst[32+m] = lut[t[2]]
		dst[48+m] = lut[t[3]]
		dst[64+m] = lut[t[4]]
	}
	for m := range 8 {
		t := &tritTab[b[16+m]]
		dst[80+m] = lut[t[0]]
		dst[88+m] = lut[t[1]]
		dst[96+m] = lut[t[2]]
		dst[104+m] = lut[t[3]]
		dst[112+m] = lut[t[4]]
	}
	for h := range 2 {
		t := &tritTab[b[24+h]]
		dst[120+h] = lut[t[0]]
		dst[122+h] = lut[t[1]]
		dst[124+h] = lut[t[2]]
		dst[126+h] = lut[t[3]]
	}
}

// Results of quantizeCodes besides success.
const (
	quantOK       = -1
	quantOverflow = BlockSize // any other value is a non-finite element index
)

// quantizeCodes runs the vendor's quantiser on one block of 128 values: it
// stores the codes and returns the fp16 bits of d = max|w|. status is
// quantOK, quantOverflow, or the index of the first non-finite element.
func quantizeCodes(codes *[BlockSize]uint8, src []float32) (scale uint16, status int) {
	src = src[:BlockSize]
	// Non-negative floats order as their bit patterns do, so max|w| is an
	// integer max over the bits with the sign cleared; a NaN or infinity
	// shows up as a maximum above MaxFloat32's bits. Integer max compiles
	// without branches.
	var amaxBits uint32
	for _, w := range src {
		amaxBits = max(amaxBits, math.Float32bits(w)&^(1<<31))
	}
	if amaxBits > 0x7f7fffff {
		for j, w := range src {
			if math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) {
				return 0, j
			}
		}
	}
	amax := math.Float32frombits(amaxBits)
	h := float16.Fromfloat32(amax) // round to nearest even
	if h.IsInf(0) {
		// The vendor would store +Inf and every element would decode to
		// ±Inf or NaN; refusing is kinder than writing a poisoned block.
		return 0, quantOverflow
	}
	var id float32
	if amax > 0 {
		id = 1 / amax
	}
	if !math.IsInf(float64(id), 0) {
		for j, w := range src {
			codes[j] = ternaryCode(w * id)
		}
	} else {
		// amax is a float32 subnormal below 2⁻¹²⁸, so 1/amax overflows
		// float32 and the vendor's w·id would be ±Inf or NaN (0·Inf). The
		// stored scale is fp16 zero either way; divide in float64 so the
		// codes are still the nearest ternary values.
		for j, w := range src {
			codes[j] = ternaryCode(float32(float64(w) / float64(amax)))
		}
	}
	return h.Bits(), quantOK
}

// ternaryCode returns clamp(lroundf(p)+1, 0, 3) for the ratio p = w/d. Since
// |w| ≤ d and 1/d and the product are each correctly rounded, |p| is at
// most (1+2⁻²⁴)², so lroundf(p) is −1, 0 or 1 and rounding half away from
// zero reduces to testing |p| ≥ 0.5 and the sign; the clamp never bites.
//
// It works on the bits rather than comparing floats because on real
// weights the three codes are about equally likely, and the branches Go
// emits for float comparisons would mispredict about every other element.
func ternaryCode(p float32) uint8 {
	u := math.Float32bits(p)
	// big is 1 when |p| ≥ 0.5, whose bits are 0x3f000000.
	big := uint32(0x3effffff-int32(u&^(1<<31))) >> 31
	neg := u >> 31
	return uint8(1 + big - 2*(big&neg))
}

// histPQ2_0 adds the code counts of PQ2_0 qs bytes to hist. It counts four
// codes per byte at a time: with lo and hi the low and high bit of every
// two-bit field, code 3 is lo&hi, code 2 is hi&^lo, and code 1 is lo&^hi.
func histPQ2_0(hist *[4]int64, qs []byte) {
	const m = 0x5555555555555555
	for len(qs) >= 8 {
		x := binary.LittleEndian.Uint64(qs)
		lo, hi := x&m, x>>1&m
		hist[3] += int64(bits.OnesCount64(lo & hi))
		hist[2] += int64(bits.OnesCount64(hi &^ lo))
		hist[1] += int64(bits.OnesCount64(lo &^ hi))
		hist[0] += int64(bits.OnesCount64(^(lo | hi) & m))
		qs = qs[8:]
	}
	for _, v := range qs {
		for s := 0; s < 8; s += 2 {
			hist[v>>s&3]++
		}
	}
}
