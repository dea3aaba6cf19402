package backend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/x448/float16"
)

// KVPrecision is how an attention layer's key/value cache stores keys and values. The
// cache is the one memory cost that grows with the context (64 KiB per token for the 27B
// model at fp16), so the choice trades memory for a small drift in the attention scores.
type KVPrecision uint8

const (
	// KVFloat16 stores IEEE half precision: half the memory of float32 and, for the
	// normalised keys and projected values of this model, well inside its range.
	KVFloat16 KVPrecision = iota
	// KVFloat32 stores the values exactly as computed.
	KVFloat32
	// KVInt8 stores blocks of KVBlock values of a head as int8 with a float32 scale
	// (absmax/127): 1.125 bytes per value.
	KVInt8
	// KVQ4 stores blocks of KVBlock values of a head as 4-bit codes with an IEEE half
	// scale, as llama.cpp's q4_0 cache: value = (code − 8)·scale, the scale chosen so
	// that the block's largest magnitude is code 0 exactly. 0.5625 bytes per value: at
	// 262,144 positions the 27B model's cache is 4.5 GiB instead of fp16's 16.
	KVQ4
)

// KVBlock is the number of values of a head that share one scale in the int8 and q4
// caches (a head's last block may be shorter).
const KVBlock = 32

// String returns "f16", "f32", "int8" or "q4", as the command lines spell them.
func (p KVPrecision) String() string {
	switch p {
	case KVFloat16:
		return "f16"
	case KVFloat32:
		return "f32"
	case KVInt8:
		return "int8"
	case KVQ4:
		return "q4"
	}
	return fmt.Sprintf("KVPrecision(%d)", uint8(p))
}

// Valid reports whether p is one of the precisions above.
func (p KVPrecision) Valid() bool { return p <= KVQ4 }

// RowBytes is the size of one encoded key or value row of heads × headDim values:
//
//   - f32: the values as float32;
//   - f16: the values as IEEE halves;
//   - int8: the int8 codes, then one float32 scale per block of KVBlock values of a
//     head, a value being code·scale (code −128 never used);
//   - q4: 16 bytes of 4-bit codes per block (value j of a block the low nibble of byte
//     j for j < 16, the high nibble of byte j−16 otherwise; a short last block padded
//     with code 8), then one IEEE half scale per block, a value being (code − 8)·scale.
//
// All numbers are little-endian; blocks are ordered head by head.
func (p KVPrecision) RowBytes(heads, headDim int) int {
	n, blocks := heads*headDim, heads*kvBlocks(headDim)
	switch p {
	case KVFloat32:
		return 4 * n
	case KVFloat16:
		return 2 * n
	case KVInt8:
		return n + 4*blocks
	case KVQ4:
		return 16*blocks + 2*blocks
	}
	return 0
}

func kvBlocks(headDim int) int { return (headDim + KVBlock - 1) / KVBlock }

// QuantizeInt8 is the int8 cache's quantiser of one head's row: per block of KVBlock
// values the scale absmax/127 and the codes round(x·127/absmax).
func QuantizeInt8(codes []int8, scales []float32, src []float32) {
	for b := range scales {
		lo, hi := b*KVBlock, min((b+1)*KVBlock, len(src))
		var amax float32
		for _, x := range src[lo:hi] {
			amax = max(amax, abs32(x))
		}
		scales[b] = amax / 127
		if amax == 0 {
			clear(codes[lo:hi])
			continue
		}
		inv := 127 / amax
		for i := lo; i < hi; i++ {
			q := math.Round(float64(src[i] * inv))
			codes[i] = int8(max(-127, min(127, q)))
		}
	}
}

// QuantizeQ4 is the q4 cache's quantiser of one head's row: per block the value m of
// largest magnitude sets the scale d = m/−8, rounded to an IEEE half, and each value its
// code round(x/d) + 8 clamped to [0, 15], so that m is code 0 and decodes exactly to
// −8·d. codes holds 16 bytes per block, scales one half per block.
func QuantizeQ4(codes []byte, scales []uint16, src []float32) {
	for b := range scales {
		lo, hi := b*KVBlock, min((b+1)*KVBlock, len(src))
		var m float32
		for _, x := range src[lo:hi] {
			if abs32(x) > abs32(m) {
				m = x
			}
		}
		h := float16.Fromfloat32(m / -8)
		d := h.Float32()
		scales[b] = h.Bits()
		var q [KVBlock]byte
		for j := range q {
			q[j] = 8
			if i := lo + j; i < hi && d != 0 {
				q[j] = byte(max(0, min(15, math.Round(float64(src[i]/d))+8)))
			}
		}
		out := codes[16*b : 16*b+16]
		for j := range out {
			out[j] = q[j] | q[j+16]<<4
		}
	}
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// ErrKVRow is wrapped by DecodeKVRow's errors: a row no quantiser writes.
var ErrKVRow = errors.New("invalid KV row")

// KVRowCodec encodes and decodes rows of one shape at any precision, with scratch for a
// row so that it allocates nothing per row.
type KVRowCodec struct {
	heads, dim, blocks int
	codes              []int8
	scales             []float32
	halves             []uint16
}

// NewKVRowCodec returns a codec for rows of heads × headDim values.
func NewKVRowCodec(heads, headDim int) *KVRowCodec {
	b := kvBlocks(headDim)
	return &KVRowCodec{heads: heads, dim: headDim, blocks: b,
		codes: make([]int8, headDim), scales: make([]float32, b), halves: make([]uint16, b)}
}

// Encode writes src (heads × headDim values) into dst at precision p.
func (c *KVRowCodec) Encode(p KVPrecision, dst []byte, src []float32) {
	n, d, nb := c.heads*c.dim, c.dim, c.blocks
	switch p {
	case KVFloat32:
		for i, v := range src[:n] {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case KVFloat16:
		for i, v := range src[:n] {
			binary.LittleEndian.PutUint16(dst[2*i:], float16.Fromfloat32(v).Bits())
		}
	case KVInt8:
		for h := range c.heads {
			QuantizeInt8(c.codes, c.scales, src[h*d:(h+1)*d])
			for i, q := range c.codes {
				dst[h*d+i] = byte(q)
			}
			for b, s := range c.scales {
				binary.LittleEndian.PutUint32(dst[n+4*(h*nb+b):], math.Float32bits(s))
			}
		}
	case KVQ4:
		codes := dst[:16*c.heads*nb]
		for h := range c.heads {
			QuantizeQ4(codes[16*h*nb:16*(h+1)*nb], c.halves, src[h*d:(h+1)*d])
			for b, s := range c.halves {
				binary.LittleEndian.PutUint16(dst[16*c.heads*nb+2*(h*nb+b):], s)
			}
		}
	}
}

// Decode reads a row of precision p from src into dst (heads × headDim values). A row
// no quantiser writes (an int8 code −128, a scale negative or not finite) is an error
// wrapping ErrKVRow.
func (c *KVRowCodec) Decode(p KVPrecision, dst []float32, src []byte) error {
	n, d, nb := c.heads*c.dim, c.dim, c.blocks
	switch p {
	case KVFloat32:
		for i := range dst[:n] {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case KVFloat16:
		for i := range dst[:n] {
			dst[i] = float16.Frombits(binary.LittleEndian.Uint16(src[2*i:])).Float32()
		}
	case KVInt8:
		for i := range dst[:n] {
			h, j := i/d, i%d
			s := math.Float32frombits(binary.LittleEndian.Uint32(src[n+4*(h*nb+j/KVBlock):]))
			q := int8(src[i])
			if q == -128 || s < 0 || math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
				return fmt.Errorf("%w: int8 block of head %d at value %d", ErrKVRow, h, j)
			}
			dst[i] = float32(q) * s
		}
	case KVQ4:
		scales := src[16*c.heads*nb:]
		for i := range dst[:n] {
			h, j := i/d, i%d
			blk, k := h*nb+j/KVBlock, j%KVBlock
			s := binary.LittleEndian.Uint16(scales[2*blk:])
			if s&0x7c00 == 0x7c00 {
				return fmt.Errorf("%w: q4 block scale of head %d at value %d is not finite", ErrKVRow, h, j)
			}
			code := src[16*blk+k%16]
			if k >= 16 {
				code >>= 4
			}
			dst[i] = float32(int(code&15)-8) * float16.Frombits(s).Float32()
		}
	default:
		return fmt.Errorf("%w: unknown precision %v", ErrKVRow, p)
	}
	return nil
}
