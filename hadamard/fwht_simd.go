package hadamard

import "math/bits"

// The float32 transform has SIMD implementations (fwht_amd64.s: AVX2 and
// AVX-512; fwht_arm64.s: NEON) behind the same driver. Every one computes the
// radix-2 stages of the generic code in the same order with the same
// additions, subtractions and multiplications, and so returns the same bits:
// the value at position i after stage h depends only on the two values at i
// and i^h before it, so how the stages are grouped into passes over memory,
// and which lanes share a register, cannot change any result.
//
// An implementation provides four primitives over a whole block x of n = 2ᵐ
// floats, n ≥ minN ≥ 2·lanes:
//
//	first(x, pre)         x ← pre ⊙ x (pre may be empty: none), then the stages
//	                      h = 1, 2, …, lanes/2, which stay inside one vector
//	pass2(x, post, h)     stage h, then x ← post ⊙ x if post is not empty
//	pass4(x, post, h)     stages h, 2h, then post
//	pass8(x, post, h)     stages h, 2h, 4h, then post
//
// with h ≥ lanes a power of two, so that every butterfly of a pass combines
// whole vectors. The inside-a-vector stages use the identity, for the lane pair
// (a at i, b at i+h),
//
//	a' = a + b = fma(a, +1, b),   b' = a − b = fma(b, −1, a)
//
// (products by ±1 are exact, so the fused multiply-add rounds once, exactly
// as the addition does, and a − b is by definition a + (−b), signed zeros
// included): a vector, its lane-swapped copy and one constant of ±1 give a
// whole stage in two instructions.
//
// The build tag purego leaves the assembly out (fwht_noasm.go).

// fwhtImpl is one SIMD implementation of the float32 transform.
type fwhtImpl struct {
	name  string
	lanes int // float32s per vector
	minN  int // shortest block it takes (≥ 2·lanes); shorter ones go to the generic code

	first               func(x, pre []float32)
	pass2, pass4, pass8 func(x, post []float32, h int)
}

// fwhtImpls lists the SIMD implementations this machine can run, worst first;
// active is the one the package uses, nil for the generic code. Both are set
// once, at package initialisation, from the CPU's features.
var (
	fwhtImpls = archImpls()
	active    = best(fwhtImpls)
)

func best(impls []*fwhtImpl) *fwhtImpl {
	if len(impls) == 0 {
		return nil
	}
	return impls[len(impls)-1]
}

// transform32 is transform for float32 on the active implementation. x is one
// block, its length a power of two; pre, when present, as long as x; post,
// when present, at least as long as x.
func transform32(x, pre, post []float32) {
	if im := active; im != nil && len(x) >= im.minN {
		im.transform(x, pre, post)
		return
	}
	transform(x, pre, post)
}

// transform sets x to post ⊙ (H·(pre ⊙ x)), as the generic transform does, for
// len(x) ≥ minN. The stages left after first go in passes of three, with a
// pass of two or one for the rest (two and two rather than three and one, as
// each pass costs a read and write of the block); the last applies post.
func (im *fwhtImpl) transform(x, pre, post []float32) {
	n := len(x)
	if post != nil {
		post = post[:n]
	}
	if pre != nil {
		pre = pre[:n]
	}
	im.first(x, pre)
	h := im.lanes
	r := bits.TrailingZeros(uint(n)) - bits.TrailingZeros(uint(h)) // stages left
	for r > 0 {
		k := 3
		switch r {
		case 1:
			k = 1
		case 2, 4:
			k = 2
		}
		r -= k
		var p []float32
		if r == 0 {
			p = post
		}
		switch k {
		case 1:
			im.pass2(x, p, h)
		case 2:
			im.pass4(x, p, h)
		default:
			im.pass8(x, p, h)
		}
		h <<= k
	}
}
