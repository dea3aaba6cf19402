package qwen35

import (
	"encoding/binary"
	"math"
)

// The elementwise and small dense kernels the mixers and the engine share. They work on
// float32 activations and widen to float64 only where a long reduction would otherwise
// lose digits (the mean of squares of a 5120-wide residual) or where a transcendental has
// no float32 form in the standard library.

// RMSNorm writes x / sqrt(mean(x²) + eps) ⊙ gain to dst; a nil gain multiplies by one.
// dst may alias x. The mean of squares is accumulated in float64 because the residual
// stream is wide and grows large over the layers.
func RMSNorm(dst, x, gain []float32, eps float32) {
	n := len(x)
	if n == 0 {
		return
	}
	dst = dst[:n]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= n; i += 4 {
		a, b, c, d := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < n; i++ {
		a := float64(x[i])
		s0 += a * a
	}
	scale := float32(1 / math.Sqrt((s0+s1+s2+s3)/float64(n)+float64(eps)))
	if gain == nil {
		for i := range dst {
			dst[i] = x[i] * scale
		}
		return
	}
	gain = gain[:n]
	for i := range dst {
		dst[i] = x[i] * scale * gain[i]
	}
}

// L2Normalize scales x to unit Euclidean length; eps keeps an all-zero vector finite, as
// ggml_l2_norm does (x / max(‖x‖, eps)).
func L2Normalize(x []float32, eps float32) {
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		a, b := float64(x[i]), float64(x[i+1])
		s0 += a * a
		s1 += b * b
	}
	for ; i < len(x); i++ {
		a := float64(x[i])
		s0 += a * a
	}
	norm := math.Sqrt(s0 + s1)
	if norm < float64(eps) {
		norm = float64(eps)
	}
	scale := float32(1 / norm)
	for i := range x {
		x[i] *= scale
	}
}

// Sigmoid returns 1/(1+e^−x), saturating cleanly to 0 and 1.
func Sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// SiLU returns x·sigmoid(x).
func SiLU(x float32) float32 { return float32(float64(x) / (1 + math.Exp(-float64(x)))) }

// Softplus returns log(1+e^x), and x itself for x > 20 where the two agree in float32;
// the threshold is llama.cpp's, so decay gates match it bit for bit in that range.
func Softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log1p(math.Exp(float64(x))))
}

// SwiGLU writes silu(gate) ⊙ up to dst; dst may alias either input.
func SwiGLU(dst, gate, up []float32) {
	n := len(dst)
	gate, up = gate[:n], up[:n]
	for i := range dst {
		g := float64(gate[i])
		dst[i] = float32(g/(1+math.Exp(-g))) * up[i]
	}
}

// MulVec computes y = W·x for the whole matrix: y[i] = Σ_j W[i][j]·x[j] for i < N.
func (m *BF16Matrix) MulVec(y, x []float32) { m.MulVecRange(y, x, 0, m.N) }

// MulVecRange computes the rows lo ≤ i < hi of W·x into y[i] (y is indexed by row, so
// workers splitting the rows can share one y). The weights stay bfloat16 in place; each is
// widened exactly to float32 and accumulated in four partial sums, which is accurate
// enough for the 5120-wide, 48-row alpha/beta projections and keeps the loop simple.
func (m *BF16Matrix) MulVecRange(y, x []float32, lo, hi int) {
	k := m.K
	x = x[:k]
	_ = y[hi-1]
	rowBytes := 2 * k
	for i := lo; i < hi; i++ {
		row := m.Data[i*rowBytes : (i+1)*rowBytes]
		var s0, s1, s2, s3 float32
		j := 0
		for ; j+4 <= k; j += 4 {
			u := binary.LittleEndian.Uint64(row[2*j:])
			xs := x[j : j+4 : j+4]
			s0 += math.Float32frombits(uint32(u)<<16) * xs[0]
			s1 += math.Float32frombits(uint32(u)&0xffff0000) * xs[1]
			s2 += math.Float32frombits(uint32(u>>32)<<16) * xs[2]
			s3 += math.Float32frombits(uint32(u>>32)&0xffff0000) * xs[3]
		}
		for ; j < k; j++ {
			s0 += math.Float32frombits(uint32(binary.LittleEndian.Uint16(row[2*j:]))<<16) * x[j]
		}
		y[i] = (s0 + s1) + (s2 + s3)
	}
}

// decayWeight returns e^x for x ≤ 0, flushed to zero below e^−50. A weight that small
// is 14 orders of magnitude under float32 resolution next to the weight-one terms it is
// summed with, while letting it through would breed subnormal floats in the state and
// accumulators, each of which costs x86 a ~100-cycle microcode assist: strong GDN
// decay made the chunked form twice as slow before this cutoff.
func decayWeight(x float64) float32 {
	if x < -50 {
		return 0
	}
	return float32(math.Exp(x))
}

// dot returns Σ a[i]·b[i] over len(a) with four partial sums (b must be at least as long).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		as, bs := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += as[0] * bs[0]
		s1 += as[1] * bs[1]
		s2 += as[2] * bs[2]
		s3 += as[3] * bs[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy adds alpha·x to y over len(y).
func axpy(y []float32, alpha float32, x []float32) {
	x = x[:len(y)]
	i := 0
	for ; i+4 <= len(y); i += 4 {
		ys, xs := y[i:i+4:i+4], x[i:i+4:i+4]
		ys[0] += alpha * xs[0]
		ys[1] += alpha * xs[1]
		ys[2] += alpha * xs[2]
		ys[3] += alpha * xs[3]
	}
	for ; i < len(y); i++ {
		y[i] += alpha * x[i]
	}
}

// scal multiplies x by alpha.
func scal(x []float32, alpha float32) {
	for i := range x {
		x[i] *= alpha
	}
}

// The kernels below are register-blocked so that each load feeds more than one
// multiply-add and eight accumulation chains hide the add latency: without SIMD that is
// what separates one multiply-add per cycle from two.

// dots2x2 returns a·x, a·y, b·x and b·y over len(a).
func dots2x2(a, b, x, y []float32) (ax, ay, bx, by float32) {
	n := len(a)
	b, x, y = b[:n], x[:n], y[:n]
	var ax0, ax1, ay0, ay1, bx0, bx1, by0, by1 float32
	i := 0
	for ; i+2 <= n; i += 2 {
		a2, b2, x2, y2 := a[i:i+2:i+2], b[i:i+2:i+2], x[i:i+2:i+2], y[i:i+2:i+2]
		ax0 += a2[0] * x2[0]
		ay0 += a2[0] * y2[0]
		bx0 += b2[0] * x2[0]
		by0 += b2[0] * y2[0]
		ax1 += a2[1] * x2[1]
		ay1 += a2[1] * y2[1]
		bx1 += b2[1] * x2[1]
		by1 += b2[1] * y2[1]
	}
	if i < n {
		ax0 += a[i] * x[i]
		ay0 += a[i] * y[i]
		bx0 += b[i] * x[i]
		by0 += b[i] * y[i]
	}
	return ax0 + ax1, ay0 + ay1, bx0 + bx1, by0 + by1
}

// scaleAddRows sets y ← scale·y + Σ_s c[s]·x[s·stride : s·stride+len(y)]. Eight values
// of y stay in registers while every row of x streams past, so y is read and written
// once however many rows there are.
func scaleAddRows(y []float32, scale float32, c, x []float32, stride int) {
	n := len(y)
	if len(c) == 0 {
		scal(y, scale)
		return
	}
	_ = x[(len(c)-1)*stride+n-1]
	i := 0
	for ; i+8 <= n; i += 8 {
		ys := y[i : i+8 : i+8]
		y0, y1, y2, y3 := scale*ys[0], scale*ys[1], scale*ys[2], scale*ys[3]
		y4, y5, y6, y7 := scale*ys[4], scale*ys[5], scale*ys[6], scale*ys[7]
		off := i
		for _, cs := range c {
			xs := x[off : off+8 : off+8]
			y0 += cs * xs[0]
			y1 += cs * xs[1]
			y2 += cs * xs[2]
			y3 += cs * xs[3]
			y4 += cs * xs[4]
			y5 += cs * xs[5]
			y6 += cs * xs[6]
			y7 += cs * xs[7]
			off += stride
		}
		ys[0], ys[1], ys[2], ys[3] = y0, y1, y2, y3
		ys[4], ys[5], ys[6], ys[7] = y4, y5, y6, y7
	}
	for ; i < n; i++ {
		v := scale * y[i]
		off := i
		for _, cs := range c {
			v += cs * x[off]
			off += stride
		}
		y[i] = v
	}
}
