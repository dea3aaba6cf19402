package qwen35

import (
	"encoding/binary"
	"math"
)

// The pure-Go kernels: what runs where no SIMD implementation does (simd.go picks), and
// the reference every SIMD implementation is tested against. The wrappers in simd.go
// check the lengths; a kernel may assume them.
//
// The accumulating kernels are written as before the SIMD versions existed; the compiler
// may fuse their multiply-adds (it does on arm64, and on amd64 at GOAMD64=v3), so they
// are compared with tolerances. The elementwise ones have no additions to fuse.

// dotGeneric returns Σ a[i]·b[i] over len(a) with four partial sums (b must be at least as
// long).
func dotGeneric(a, b []float32) float32 {
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

// dotRowsGeneric sets out[i·os + j] = a[i·as : i·as+d] · b[j·bs : j·bs+d] for i < na,
// j < nb, each with dotGeneric.
func dotRowsGeneric(out []float32, os int, a []float32, as, na int, b []float32, bs, nb, d int) {
	for i := 0; i < na; i++ {
		ai := a[i*as : i*as+d]
		o := out[i*os : i*os+nb]
		for j := range o {
			o[j] = dotGeneric(ai, b[j*bs:j*bs+d])
		}
	}
}

// scalGeneric multiplies x by alpha.
func scalGeneric(x []float32, alpha float32) {
	for i := range x {
		x[i] *= alpha
	}
}

// The kernels below are register-blocked so that each load feeds more than one
// multiply-add and eight accumulation chains hide the add latency: without SIMD that is
// what separates one multiply-add per cycle from two.

// scaleAddRowsGeneric sets y ← scale·y + Σ_s c[s]·x[s·stride : s·stride+len(y)]. Eight
// values of y stay in registers while every row of x streams past, so y is read and
// written once however many rows there are.
func scaleAddRowsGeneric(y []float32, scale float32, c, x []float32, stride int) {
	n := len(y)
	if len(c) == 0 {
		scalGeneric(y, scale)
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

// gdnStepGeneric runs the rows of one GDN decode step: for each value-row j of S (rows of
// len(k), len(o) of them), δ = (v[j] − decay·(row·k))·beta, row ← decay·row + δ·k and
// o[j] = row·q. Each row is touched in two passes while it sits in L1.
func gdnStepGeneric(S, k, q, v, o []float32, decay, beta float32) {
	d := len(k)
	for j := range o {
		row := S[j*d : (j+1)*d]
		dl := (v[j] - decay*dotGeneric(row, k)) * beta
		o[j] = decayUpdateDotGeneric(row, decay, dl, k, q)
	}
}

// decayUpdateDotGeneric sets row ← decay·row + dl·k and returns row·q.
func decayUpdateDotGeneric(row []float32, decay, dl float32, k, q []float32) float32 {
	k, q = k[:len(row)], q[:len(row)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(row); i += 4 {
		r, ks, qs := row[i:i+4:i+4], k[i:i+4:i+4], q[i:i+4:i+4]
		r0 := decay*r[0] + dl*ks[0]
		r1 := decay*r[1] + dl*ks[1]
		r2 := decay*r[2] + dl*ks[2]
		r3 := decay*r[3] + dl*ks[3]
		r[0], r[1], r[2], r[3] = r0, r1, r2, r3
		s0 += r0 * qs[0]
		s1 += r1 * qs[1]
		s2 += r2 * qs[2]
		s3 += r3 * qs[3]
	}
	for ; i < len(row); i++ {
		r := decay*row[i] + dl*k[i]
		row[i] = r
		s0 += r * q[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// sumSquaresGeneric returns Σ x[i]² accumulated in float64 (four partial sums). Each
// square of a float32 is exact in float64, so only the additions round.
func sumSquaresGeneric(x []float32) float64 {
	n := len(x)
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
	return s0 + s1 + s2 + s3
}

// scaleMulGeneric sets dst[i] = x[i]·scale·gain[i] (rounded after each product), or
// x[i]·scale for an empty gain, over len(x).
func scaleMulGeneric(dst, x []float32, scale float32, gain []float32) {
	dst = dst[:len(x)]
	if len(gain) == 0 {
		for i := range dst {
			dst[i] = x[i] * scale
		}
		return
	}
	gain = gain[:len(x)]
	for i := range dst {
		dst[i] = x[i] * scale * gain[i]
	}
}

// siluMulGeneric sets dst[i] = silu(g[i])·u[i], or silu(g[i]) for an empty u, over
// len(dst): the SiLU in float64, rounded once, then the product in float32.
func siluMulGeneric(dst, g, u []float32) {
	g = g[:len(dst)]
	if len(u) == 0 {
		for i := range dst {
			dst[i] = SiLU(g[i])
		}
		return
	}
	u = u[:len(dst)]
	for i := range dst {
		dst[i] = SiLU(g[i]) * u[i]
	}
}

// sigmoid32 returns 1/(1+e^−x) with the float32 exponential.
func sigmoid32(x float32) float32 {
	if x >= 0 {
		return 1 / (1 + expf32(-x))
	}
	e := expf32(x)
	return e / (1 + e)
}

// gateMulGeneric sets dst[i] = (u[i]·s)·σ(g[i]) with sigmoid32, over len(dst).
func gateMulGeneric(dst, g, u []float32, s float32) {
	g, u = g[:len(dst)], u[:len(dst)]
	for i := range dst {
		dst[i] = u[i] * s * sigmoid32(g[i])
	}
}

// f16ToF32Generic widens IEEE halves to float32, exactly.
func f16ToF32Generic(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = f16ToF32(src[i])
	}
}

// dequantInt8Generic sets dst[i] = float32(src[i])·scales[i/kvBlock] over len(dst): the
// int8 KV cache's blocks widened (exactly) and scaled (one rounding).
func dequantInt8Generic(dst []float32, src []int8, scales []float32) {
	for b, s := range scales {
		lo, hi := b*kvBlock, min((b+1)*kvBlock, len(dst))
		for i := lo; i < hi; i++ {
			dst[i] = float32(src[i]) * s
		}
	}
}

// dotBF16Generic returns Σ bf16(row[2j:])·x[j] over len(x): each bfloat16 is widened
// exactly to float32 and accumulated in four partial sums.
func dotBF16Generic(row []byte, x []float32) float32 {
	k := len(x)
	row = row[:2*k]
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
	return (s0 + s1) + (s2 + s3)
}

// The constants of expf32 (Cephes' expf), as the SIMD kernels hold them.
var (
	expMin = math.Float32frombits(0xc2aeac50) // ln 2⁻¹²⁶: below, 2ⁿ would be subnormal
	log2e  = math.Float32frombits(0x3fb8aa3b)
	nln2hi = math.Float32frombits(0xbf318000) // −ln 2, high part (exact in 9 bits)
	nln2lo = math.Float32frombits(0x395e8083) // −ln 2 − nln2hi
	expP   = [6]float32{
		math.Float32frombits(0x39506967), math.Float32frombits(0x3ab743ce), math.Float32frombits(0x3c088908),
		math.Float32frombits(0x3d2aa9c1), math.Float32frombits(0x3e2aaaaa), math.Float32frombits(0x3f000000),
	}
)

// expf32 returns e^y for y ≤ 0 in float32, as the SIMD kernels compute it: y clamped to
// ln 2⁻¹²⁶, split as n·ln 2 + r with |r| ≤ ½ln 2, Cephes' degree-7 polynomial for e^r
// and the exponent added to its bits. It is what the softmax of attention uses, where
// a float64 math.Exp per score cost more than the rest of the arithmetic.
func expf32(y float32) float32 {
	y = max(y, expMin)
	n := float32(math.RoundToEven(float64(y * log2e)))
	r := y + n*nln2hi
	r = r + n*nln2lo
	p := expP[0]
	p = p*r + expP[1]
	p = p*r + expP[2]
	p = p*r + expP[3]
	p = p*r + expP[4]
	p = p*r + expP[5]
	p = p*(r*r) + r
	p = p + 1
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// expSubGeneric sets x[i] = e^(x[i]−m) with expf32 and returns the sum of the new x[i]
// (in four partial sums). The softmax calls it with m = max x, so every argument is ≤ 0.
func expSubGeneric(x []float32, m float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		xs := x[i : i+4 : i+4]
		xs[0] = expf32(xs[0] - m)
		xs[1] = expf32(xs[1] - m)
		xs[2] = expf32(xs[2] - m)
		xs[3] = expf32(xs[3] - m)
		s0 += xs[0]
		s1 += xs[1]
		s2 += xs[2]
		s3 += xs[3]
	}
	for ; i < len(x); i++ {
		x[i] = expf32(x[i] - m)
		s0 += x[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// wholeQ4Blocks runs kernel, which takes whole q4 blocks only, over the whole blocks of
// dst and dequantQ4Generic over a short last one.
func wholeQ4Blocks(kernel func(dst []float32, src []byte, scales []uint16), dst []float32, src []byte, scales []uint16) {
	whole := len(dst) / kvBlock
	kernel(dst[:whole*kvBlock], src, scales)
	if whole < len(scales) {
		dequantQ4Generic(dst[whole*kvBlock:], src[16*whole:], scales[whole:])
	}
}

// dequantQ4Generic sets dst[i] = (code i − 8)·scale over len(dst): each block of kvBlock
// values is 16 bytes of codes, value j the low nibble of byte j (j < 16) or the high one
// of byte j − 16, and one IEEE half scale. Exact widening, one rounding.
func dequantQ4Generic(dst []float32, src []byte, scales []uint16) {
	for b, h := range scales {
		s := f16ToF32(h)
		lo, hi := b*kvBlock, min((b+1)*kvBlock, len(dst))
		codes := src[16*b : 16*b+16]
		for i := lo; i < hi; i++ {
			j := i - lo
			q := codes[j&15] >> (4 * (j >> 4)) & 15
			dst[i] = float32(int(q)-8) * s
		}
	}
}

// maxGeneric returns the largest of x, or −Inf for an empty x.
func maxGeneric(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	return m
}
