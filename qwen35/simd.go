package qwen35

// The small float32 kernels of the mixers and the engine — dot products, the GDN
// state update, RMSNorm's sum of squares and scaling, SiLU, the softmax's exponential
// and maximum, the KV cache's half, int8 and 4-bit widening, attention's six-head score
// and value kernels, the int8 and q4 caches' integer scores (attnint.go; AVX-512 VNNI
// and AVX2 in attnint_amd64.s; NEON, by SDOT or by widening multiplies, in
// attnint_arm64.s) and the projections' bfloat16 widening —
// have SIMD implementations in simd_amd64.s (AVX2 with FMA and F16C; AVX-512) and
// simd_arm64.s (NEON), and pure-Go twins in simd_generic.go. One implementation is chosen
// when the package initialises, from the CPU's features, and every call goes through the
// wrappers below, which check the lengths so that the kernels need not. The build tag
// purego leaves the assembly out (simd_noasm.go).
//
// Agreement with the generic twins (simd_test.go checks every implementation this
// machine runs, at every tail length and at the model's sizes, and reruns the package's
// mixer tests — GDN and attention against the float64 reference — on each):
//
//   - scal, scaleMul, f16ToF32, dequantInt8 and dequantQ4 are elementwise and do the
//     same roundings in the same order: the same bits (f16ToF32: except that a signalling
//     NaN comes back quiet); max is exact.
//   - expSub is Cephes' float32 exponential, as the SiLU's, within 1 ulp of e^y on every
//     implementation (4 allowed), the sums in different orders; dot6F32/dot6F16 and
//     axpy6F32/axpy6F16 (amd64 and arm64 only) sum like dotRows and scaleAddRows, each
//     accumulator's positions in order, however many a kernel takes a pass (checked
//     against one position a call).
//   - dot, dotRows, dotBF16, scaleAddRows, gdnStep and sumSquares accumulate with fused
//     multiply-adds, the reductions in more partial sums, so they round differently:
//     each sum stays within the classic bound γₖ·Σ|terms| of the exact one (k the number
//     of additions a term goes through), and inputs whose sums are exact give exact,
//     identical results.
//   - scoreInt8 and scoreQ4 (attnint.go) have their integer parts exact and their float
//     parts in one order: every implementation gives the generic code's bits.
//   - siluMul computes the SiLU in float32 with Cephes' polynomial exp instead of in
//     float64: within 4 ulp of the exact silu(g) for every float32 g ≥ ln 2⁻¹²⁶ ≈ −87.34
//     (checked exhaustively; 91% correctly rounded), the generic code's being within ½.
//     Below that the exponential is clamped and the result, of magnitude < 1.1e−36, is
//     off by less than |g|·1.2e−38. The AVX2, AVX-512 and NEON versions do the same
//     operations and agree bit for bit (simd_test.go checks each against a Go model).
//   - gateMul's σ is the SiLU's (the same operations, so the same bits on every SIMD
//     set), the generic code's sigmoid32 (Cephes' exp in Go, e/(1+e) below zero): both
//     within 2 ulp of the exact σ(g) over a million arguments (simd_test.go).

// kernels is one implementation of the kernels; simd_generic.go documents each.
type kernels struct {
	name string

	dot          func(a, b []float32) float32
	dotRows      func(out []float32, os int, a []float32, as, na int, b []float32, bs, nb, d int)
	scal         func(x []float32, alpha float32)
	scaleAddRows func(y []float32, scale float32, c, x []float32, stride int)
	gdnStep      func(S, k, q, v, o []float32, decay, beta float32)
	sumSquares   func(x []float32) float64
	scaleMul     func(dst, x []float32, scale float32, gain []float32)
	siluMul      func(dst, g, u []float32)
	gateMul      func(dst, g, u []float32, s float32)
	f16ToF32     func(dst []float32, src []uint16)
	dequantInt8  func(dst []float32, src []int8, scales []float32)
	dotBF16      func(row []byte, x []float32) float32
	expSub       func(x []float32, m float32) float32
	dequantQ4    func(dst []float32, src []byte, scales []uint16)
	max          func(x []float32) float32

	// dot6F32 and dot6F16, where set, are dotRows for six query rows against nb key rows
	// of float32 or IEEE halves, d a multiple of 16 (the GQA group of the 27B model: six
	// query heads a KV head); nil where dotRows (after decoding) is as good.
	dot6F32 func(out []float32, os int, q []float32, k []float32, nb, d int)
	dot6F16 func(out []float32, os int, q []float32, k []uint16, nb, d int)
	// axpy6F32 and axpy6F16, where set, add Σ_p w[r·ws+p]·v_p to the six rows r of acc
	// (scaleAddRows for six rows at once), d a multiple of 32.
	axpy6F32 func(acc []float32, w []float32, ws int, v []float32, n, d int)
	axpy6F16 func(acc []float32, w []float32, ws int, v []uint16, n, d int)

	// scoreInt8 and scoreQ4 score quantised queries against int8 and q4 keys
	// (attnint.go); every set gives the generic code's bits. The SIMD ones take d = 256.
	scoreInt8 func(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)
	scoreQ4   func(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int)
	// axpy6Int8 and axpy6Q4, where set, are axpy6F32 on int8 and q4 value rows as the
	// cache holds them (codes, and a scale per block of 32: q4's halves widened to
	// float32 first), d a multiple of 32, with the bits of axpy6F32 on the rows
	// dequantInt8 and dequantQ4 decode.
	axpy6Int8 func(acc []float32, w []float32, ws int, v []int8, vs []float32, n, d int)
	axpy6Q4   func(acc []float32, w []float32, ws int, v []byte, vs []float32, n, d int)
}

var genericKernels = kernels{
	name:         "generic",
	dot:          dotGeneric,
	dotRows:      dotRowsGeneric,
	scal:         scalGeneric,
	scaleAddRows: scaleAddRowsGeneric,
	gdnStep:      gdnStepGeneric,
	sumSquares:   sumSquaresGeneric,
	scaleMul:     scaleMulGeneric,
	siluMul:      siluMulGeneric,
	gateMul:      gateMulGeneric,
	f16ToF32:     f16ToF32Generic,
	dequantInt8:  dequantInt8Generic,
	dotBF16:      dotBF16Generic,
	expSub:       expSubGeneric,
	dequantQ4:    dequantQ4Generic,
	max:          maxGeneric,
	scoreInt8:    scoreInt8Generic,
	scoreQ4:      scoreQ4Generic,
}

// kernelSets lists the implementations this machine runs, the generic one first and the
// preferred one last; kern is the one in use. Both are fixed at initialisation.
var (
	kernelSets = append([]*kernels{&genericKernels}, archKernels()...)
	kern       = kernelSets[len(kernelSets)-1]
)

// dot returns Σ a[i]·b[i] over len(a) (b must be at least as long).
func dot(a, b []float32) float32 { return kern.dot(a, b[:len(a)]) }

// dotRows sets out[i·os + j] = a[i·as : i·as+d] · b[j·bs : j·bs+d] for i < na and
// j < nb: every dot product of na rows of a with nb rows of b (strides in elements).
// The output rows must not overlap (os ≥ nb when na > 1).
func dotRows(out []float32, os int, a []float32, as, na int, b []float32, bs, nb, d int) {
	if na <= 0 || nb <= 0 {
		return
	}
	if os < 0 || as < 0 || bs < 0 || d < 0 || (na > 1 && os < nb) {
		panic("qwen35: dotRows: bad strides")
	}
	out = out[:(na-1)*os+nb]
	if d > 0 {
		a, b = a[:(na-1)*as+d], b[:(nb-1)*bs+d]
	}
	kern.dotRows(out, os, a, as, na, b, bs, nb, d)
}

// scal multiplies x by alpha.
func scal(x []float32, alpha float32) { kern.scal(x, alpha) }

// scaleAddRows sets y ← scale·y + Σ_s c[s]·x[s·stride : s·stride+len(y)].
func scaleAddRows(y []float32, scale float32, c, x []float32, stride int) {
	if len(y) == 0 {
		return
	}
	if len(c) > 0 {
		if stride < 0 {
			panic("qwen35: scaleAddRows: negative stride")
		}
		x = x[:(len(c)-1)*stride+len(y)]
	}
	kern.scaleAddRows(y, scale, c, x, stride)
}

// gdnStep runs the rows of one GDN decode step on the state S of one head: for each
// value-row j < len(o) of S (rows of d = len(k)), δ = (v[j] − decay·(row·k))·beta,
// row ← decay·row + δ·k and o[j] = row·q.
func gdnStep(S, k, q, v, o []float32, decay, beta float32) {
	d, rows := len(k), len(o)
	kern.gdnStep(S[:rows*d], k, q[:d], v[:rows], o, decay, beta)
}

// sumSquares returns Σ x[i]² accumulated in float64.
func sumSquares(x []float32) float64 { return kern.sumSquares(x) }

// scaleMul sets dst[i] = x[i]·scale·gain[i], or x[i]·scale for a nil gain, over len(x);
// dst may alias x.
func scaleMul(dst, x []float32, scale float32, gain []float32) {
	n := len(x)
	if gain != nil {
		gain = gain[:n]
	}
	kern.scaleMul(dst[:n], x, scale, gain)
}

// siluMul sets dst[i] = silu(g[i])·u[i], or silu(g[i]) for a nil u, over len(dst); dst
// may alias g or u.
func siluMul(dst, g, u []float32) {
	n := len(dst)
	if u != nil {
		u = u[:n]
	}
	kern.siluMul(dst, g[:n], u)
}

// gateMul sets dst[i] = (u[i]·s)·σ(g[i]) over len(dst), σ the logistic sigmoid: an
// attention head's output, its weighted values u normalised by s and gated; dst may
// alias g or u.
func gateMul(dst, g, u []float32, s float32) {
	n := len(dst)
	kern.gateMul(dst, g[:n], u[:n], s)
}

// f16ToF32s widens the IEEE halves of src to dst, over len(dst).
func f16ToF32s(dst []float32, src []uint16) { kern.f16ToF32(dst, src[:len(dst)]) }

// dequantInt8 sets dst[i] = float32(src[i])·scales[i/kvBlock] over len(dst).
func dequantInt8(dst []float32, src []int8, scales []float32) {
	n := len(dst)
	kern.dequantInt8(dst, src[:n], scales[:(n+kvBlock-1)/kvBlock])
}

// dotBF16 returns Σ bf16(row[2j:2j+2])·x[j] over len(x), the bfloat16s little-endian.
func dotBF16(row []byte, x []float32) float32 { return kern.dotBF16(row[:2*len(x)], x) }

// expSub sets x[i] = e^(x[i]−m) and returns the sum of the new values: the softmax's
// weights of one block of scores. Every x[i]−m must be ≤ 0 (m is their maximum). The
// exponential is float32 (expf32: within a few ulp of e^y, and 2⁻¹²⁶·(1+ε) for
// y < ln 2⁻¹²⁶); implementations differ by their fused roundings and summation order.
func expSub(x []float32, m float32) float32 { return kern.expSub(x, m) }

// dequantQ4 sets dst[i] = (code i − 8)·scales[i/kvBlock] over len(dst), the codes of the
// q4 KV cache's blocks of 16 bytes (see quantizeQ4) and the scales IEEE halves.
func dequantQ4(dst []float32, src []byte, scales []uint16) {
	nb := (len(dst) + kvBlock - 1) / kvBlock
	kern.dequantQ4(dst, src[:16*nb], scales[:nb])
}

// maxf returns the largest of x, or −Inf for an empty x; x holds no NaN (scores).
func maxf(x []float32) float32 { return kern.max(x) }
