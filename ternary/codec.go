package ternary

import "fmt"

// codeError reports a code that format f cannot hold. block < 0 means the
// error comes from a single-block function and has no block index.
func codeError(f Format, block, elem int, code uint8) error {
	where := fmt.Sprintf("element %d", elem)
	if block >= 0 {
		where = fmt.Sprintf("block %d element %d (tensor element %d)", block, elem, block*BlockSize+elem)
	}
	if code == 3 {
		return fmt.Errorf("%w: %s cannot hold it, at %s", ErrCode3, f, where)
	}
	return fmt.Errorf("%w: %s %s has code %d", ErrCodeRange, f, where, code)
}

// Decode stores the values of the blocks in src into dst. len(dst) must be a
// multiple of BlockSize and src must hold exactly len(dst)/BlockSize blocks;
// otherwise Decode returns an error wrapping [ErrSize] and writes nothing.
// Each value is float32(q−1)·d; see the package documentation for
// non-finite scales.
func (f Format) Decode(dst []float32, src []byte) error {
	nb, err := f.pair("Decode", len(dst), len(src))
	if err != nil {
		return err
	}
	bb := f.BlockBytes()
	decode := decodePQ2_0
	if f == PTQ1_0 {
		decode = decodePTQ1_0
	}
	for i := range nb {
		decode(dst[i*BlockSize:], src[i*bb:])
	}
	return nil
}

// Quantize quantises src into blocks of f in dst with the vendor's
// quantiser: per block of 128, d = max|w| rounded to fp16 (nearest even), and
// each code is lround(w·(1/d)) + 1, computed in float32, rounding halves
// away from zero. A block of zeros gets d = 0 and code 1 throughout. A d so
// small that it rounds to an fp16 subnormal or zero still yields codes from
// the float32 max|w|, as in the vendor's C.
//
// len(src) must be a multiple of BlockSize and len(dst) must be the
// matching number of bytes, or Quantize returns an error wrapping [ErrSize].
// A NaN or infinite input gives an error wrapping [ErrNonFinite], and a
// block whose max|w| rounds to fp16 infinity (|w| ≥ 65520) one wrapping
// [ErrOverflow]; both name the block, and the blocks before it have been
// written.
func (f Format) Quantize(dst []byte, src []float32) error {
	nb, err := f.pair("Quantize", len(src), len(dst))
	if err != nil {
		return err
	}
	bb := f.BlockBytes()
	var codes [BlockSize]uint8
	for i := range nb {
		blk := src[i*BlockSize : (i+1)*BlockSize]
		scale, status := quantizeCodes(&codes, blk)
		switch {
		case status == quantOverflow:
			var amax float32
			for _, w := range blk {
				amax = max(amax, abs32(w))
			}
			return fmt.Errorf("%w: %s Quantize: block %d has max|w| = %g, above the fp16 range",
				ErrOverflow, f, i, amax)
		case status != quantOK:
			return fmt.Errorf("%w: %s Quantize: block %d element %d (tensor element %d) is %g",
				ErrNonFinite, f, i, status, i*BlockSize+status, blk[status])
		}
		if f == PQ2_0 {
			PackPQ2_0(dst[i*bb:], &codes, scale)
		} else {
			packPTQ1_0(dst[i*bb:], &codes, scale) // the quantiser never makes code 3
		}
	}
	return nil
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// Unpack stores the codes (0..3) of the blocks in src in codes and their raw
// fp16 scale bits in scales. With n = len(scales) blocks, codes must hold
// n·128 entries and src n blocks, or Unpack returns an error wrapping
// [ErrSize].
func (f Format) Unpack(codes []uint8, scales []uint16, src []byte) error {
	nb, err := f.blocks("Unpack source", src)
	if err != nil {
		return err
	}
	if len(codes) != nb*BlockSize || len(scales) != nb {
		return fmt.Errorf("%w: %s Unpack: %d blocks need %d codes and %d scales, have %d and %d",
			ErrSize, f, nb, nb*BlockSize, nb, len(codes), len(scales))
	}
	bb := f.BlockBytes()
	unpack := UnpackPQ2_0
	if f == PTQ1_0 {
		unpack = UnpackPTQ1_0
	}
	for i := range nb {
		scales[i] = unpack((*[BlockSize]uint8)(codes[i*BlockSize:]), src[i*bb:])
	}
	return nil
}

// Pack is the inverse of Unpack: it writes one block of f to dst for each
// scale, from the raw fp16 scale bits and the block's 128 codes. Codes above
// 3, and code 3 in PTQ1_0, give an error wrapping [ErrCodeRange] or
// [ErrCode3] that names the block and element; the blocks before it have
// been written. Mismatched lengths give an error wrapping [ErrSize].
func (f Format) Pack(dst []byte, codes []uint8, scales []uint16) error {
	nb, err := f.blocks("Pack destination", dst)
	if err != nil {
		return err
	}
	if len(codes) != nb*BlockSize || len(scales) != nb {
		return fmt.Errorf("%w: %s Pack: %d blocks need %d codes and %d scales, have %d and %d",
			ErrSize, f, nb, nb*BlockSize, nb, len(codes), len(scales))
	}
	bb := f.BlockBytes()
	for i := range nb {
		c := (*[BlockSize]uint8)(codes[i*BlockSize:])
		if f == PQ2_0 {
			for j, v := range c {
				if v > 3 {
					return codeError(f, i, j, v)
				}
			}
			PackPQ2_0(dst[i*bb:], c, scales[i])
			continue
		}
		if j := firstAbove2(c); j >= 0 {
			return codeError(f, i, j, c[j])
		}
		packPTQ1_0(dst[i*bb:], c, scales[i])
	}
	return nil
}

// Transcode converts the blocks in src, stored in format from, into format
// to in dst, which must hold exactly as many blocks. Codes and scale bits
// carry over unchanged, so decoding either side gives identical values.
// PQ2_0 blocks holding code 3 cannot be written as PTQ1_0: Transcode then
// returns an error wrapping [ErrCode3] naming the block and element, having
// converted the blocks before it. When to == from, Transcode copies, and
// dst and src may overlap; otherwise they must not.
func Transcode(dst []byte, to Format, src []byte, from Format) error {
	if !to.valid() {
		return fmt.Errorf("%w %d", ErrFormat, uint8(to))
	}
	nb, err := from.blocks("Transcode source", src)
	if err != nil {
		return err
	}
	if want := nb * to.BlockBytes(); len(dst) != want {
		return fmt.Errorf("%w: Transcode %s to %s: %d source bytes (%d blocks) need %d destination bytes, have %d",
			ErrSize, from, to, len(src), nb, want, len(dst))
	}
	if to == from {
		copy(dst, src)
		return nil
	}
	var codes [BlockSize]uint8
	if from == PTQ1_0 {
		transcodePTQ1ToPQ2(dst, src, nb)
		return nil
	}
	for i := range nb {
		scale := UnpackPQ2_0(&codes, src[i*pq2BlockBytes:])
		if j := firstAbove2(&codes); j >= 0 {
			return codeError(PTQ1_0, i, j, codes[j])
		}
		packPTQ1_0(dst[i*ptq1BlockBytes:], &codes, scale)
	}
	return nil
}

// DecodePQ2_0 is PQ2_0.Decode.
func DecodePQ2_0(dst []float32, src []byte) error { return PQ2_0.Decode(dst, src) }

// DecodePTQ1_0 is PTQ1_0.Decode.
func DecodePTQ1_0(dst []float32, src []byte) error { return PTQ1_0.Decode(dst, src) }

// QuantizePQ2_0 is PQ2_0.Quantize.
func QuantizePQ2_0(dst []byte, src []float32) error { return PQ2_0.Quantize(dst, src) }

// QuantizePTQ1_0 is PTQ1_0.Quantize.
func QuantizePTQ1_0(dst []byte, src []float32) error { return PTQ1_0.Quantize(dst, src) }
