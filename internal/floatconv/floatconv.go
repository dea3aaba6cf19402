// Package floatconv converts between float32 and the 16-bit float formats stored in
// model files (bfloat16 here; IEEE half precision comes from github.com/x448/float16).
package floatconv

import "math"

// BF16ToFloat32 widens a bfloat16 bit pattern. The conversion is exact: bfloat16 is the
// upper half of a float32.
func BF16ToFloat32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// Float32ToBF16 rounds to the nearest bfloat16, ties to even, as PyTorch and ggml do.
// NaNs stay NaNs (quiet); values past the largest bfloat16 become infinities.
func Float32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 { // NaN: keep the sign, force a quiet payload bit
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}
