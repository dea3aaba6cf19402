package qwen35

import "math"

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
	scale := float32(1 / math.Sqrt(sumSquares(x)/float64(n)+float64(eps)))
	scaleMul(dst[:n], x, scale, gain)
}

// L2Normalize scales x to unit Euclidean length; eps keeps an all-zero vector finite, as
// ggml_l2_norm does (x / max(‖x‖, eps)).
func L2Normalize(x []float32, eps float32) {
	norm := math.Sqrt(sumSquares(x))
	if norm < float64(eps) {
		norm = float64(eps)
	}
	scal(x, float32(1/norm))
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
	siluMul(dst, gate[:n], up[:n])
}

// MulVec computes y = W·x for the whole matrix: y[i] = Σ_j W[i][j]·x[j] for i < N.
func (m *BF16Matrix) MulVec(y, x []float32) { m.MulVecRange(y, x, 0, m.N) }

// MulVecRange computes the rows lo ≤ i < hi of W·x into y[i] (y is indexed by row, so
// workers splitting the rows can share one y). The weights stay bfloat16 in place; each is
// widened exactly to float32 and accumulated in float32 partial sums (dotBF16), which is
// accurate enough for the 5120-wide, 48-row alpha/beta projections.
func (m *BF16Matrix) MulVecRange(y, x []float32, lo, hi int) {
	k := m.K
	x = x[:k]
	_ = y[hi-1]
	rowBytes := 2 * k
	for i := lo; i < hi; i++ {
		y[i] = dotBF16(m.Data[i*rowBytes:(i+1)*rowBytes], x)
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
