package hadamard

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

// The widths of the released model: residual stream, attention/GDN output,
// MLP hidden.
var realWidths = []int{5120, 6144, 17408}

func randSigns(rng *rand.Rand, n int) []int8 {
	s := make([]int8, n)
	for i := range s {
		s[i] = int8(1 - 2*rng.IntN(2))
	}
	return s
}

// denseBlocks returns the diagonal blocks of R = (1/√n)·Hₙ·S as dense
// float64 matrices: block b is (H/√n)·diag(signs[b·n:(b+1)·n]), built entry
// by entry from the definition of H.
func denseBlocks(signs []int8, n int) []*mat.Dense {
	h := denseH(n)
	scale := 1 / math.Sqrt(float64(n))
	var blocks []*mat.Dense
	for off := 0; off < len(signs); off += n {
		rb := mat.NewDense(n, n, nil)
		for r := range n {
			for c := range n {
				rb.Set(r, c, h.At(r, c)*float64(signs[off+c])*scale)
			}
		}
		blocks = append(blocks, rb)
	}
	return blocks
}

// applyDense returns R·x, or Rᵀ·x if transpose is set, block by block.
func applyDense(blocks []*mat.Dense, x []float64, transpose bool) []float64 {
	n, _ := blocks[0].Dims()
	y := make([]float64, len(x))
	for b, rb := range blocks {
		var m mat.Matrix = rb
		if transpose {
			m = rb.T()
		}
		out := mat.NewVecDense(n, y[b*n:(b+1)*n])
		out.MulVec(m, mat.NewVecDense(n, append([]float64(nil), x[b*n:(b+1)*n]...)))
	}
	return y
}

// Error bound for Rotation.Forward and Inverse in float32. Per block of n =
// 2ᵐ entries, the transform of the sign-flipped block (sign flips are exact)
// is within γₘ·‖x_b‖₁ of exact (see TestFWHTFloat32ErrorBound). The scale
// σ = 1/√n is rounded to float32 once and multiplied in once, two more
// relative errors of ≤ u, and |(R·x)ᵣ| ≤ σ·‖x_b‖₁, so for r in block b
//
//	|Forward(x)ᵣ − (R·x)ᵣ| ≤ γₘ₊₂·‖x_b‖₁/√n.
//
// Inverse does the same operations in another order (its sign is folded
// into the scale, exactly), so the same bound holds against Rᵀ·x.
func rotationBound(x []float64, n int) []float64 {
	m := bits.TrailingZeros(uint(n))
	bound := make([]float64, len(x))
	for off := 0; off < len(x); off += n {
		b := gamma(m+2) * l1(x[off:off+n]) / math.Sqrt(float64(n))
		for i := off; i < off+n; i++ {
			bound[i] = b
		}
	}
	return bound
}

type rotCase struct{ width, block int }

func rotationCases() []rotCase {
	cases := []rotCase{{24, 4}, {24, 8}, {6, 2}, {3, 1}, {16, 16}, {96, 32}, {2048, 1024}}
	for _, w := range realWidths {
		cases = append(cases, rotCase{w, 1024})
	}
	return cases
}

func TestRotationDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range rotationCases() {
		t.Run(fmt.Sprintf("%d/%d", tc.width, tc.block), func(t *testing.T) {
			signs := randSigns(rng, tc.width)
			r, err := NewRotation(signs, tc.block)
			require.NoError(t, err)
			blocks := denseBlocks(signs, tc.block)

			x32 := randn32(rng, tc.width)
			x := to64(x32)
			bound := rotationBound(x, tc.block)
			wantF := applyDense(blocks, x, false)
			wantI := applyDense(blocks, x, true)

			f32 := append([]float32(nil), x32...)
			r.Forward(f32)
			i32 := append([]float32(nil), x32...)
			r.Inverse(i32)
			f64 := append([]float64(nil), x...)
			r.Forward64(f64)
			i64 := append([]float64(nil), x...)
			r.Inverse64(i64)

			worstF, worstI, maxF := 0.0, 0.0, 0.0
			for i := range x {
				eF := math.Abs(float64(f32[i]) - wantF[i])
				eI := math.Abs(float64(i32[i]) - wantI[i])
				require.LessOrEqual(t, eF, bound[i], "Forward[%d]", i)
				require.LessOrEqual(t, eI, bound[i], "Inverse[%d]", i)
				maxF = math.Max(maxF, eF)
				if bound[i] > 0 {
					worstF = math.Max(worstF, eF/bound[i])
					worstI = math.Max(worstI, eI/bound[i])
				}
				// float64: the same analysis with u = 2⁻⁵³ and a factor
				// two to cover the dense product's own rounding.
				tol64 := 2 * bound[i] * 0x1p-29
				require.InDelta(t, wantF[i], f64[i], tol64, "Forward64[%d]", i)
				require.InDelta(t, wantI[i], i64[i], tol64, "Inverse64[%d]", i)
			}
			t.Logf("max observed error / bound: Forward %.4f, Inverse %.4f; max Forward error %.2g (bound ~%.2g)",
				worstF, worstI, maxF, bound[0])
		})
	}
}

// Forward and Inverse undo each other, in both orders, and keep the norm.
//
// Round trip bound: with γ = γₘ₊₂ and A = ‖x_b‖₁, the first pass leaves
// errors ≤ γ·A/√n per entry; the exact second rotation maps an error block
// e_b to entries of at most ‖e_b‖₁/√n ≤ n·(γ·A/√n)/√n = γ·A, and its own
// rounding adds ≤ γ·‖ŷ_b‖₁/√n ≤ γ·(‖x_b‖₂ + γ·A), using ‖y_b‖₁ ≤ √n·‖y_b‖₂
// = √n·‖x_b‖₂. Hence
//
//	|Inverse(Forward(x))ᵣ − xᵣ| ≤ γ·(A·(1+γ) + ‖x_b‖₂).
//
// The norm moves by at most ‖ŷ − y‖₂ ≤ γ·√(Σ_b A_b²).
func TestRotationRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, tc := range rotationCases() {
		t.Run(fmt.Sprintf("%d/%d", tc.width, tc.block), func(t *testing.T) {
			r, err := NewRotation(randSigns(rng, tc.width), tc.block)
			require.NoError(t, err)
			n := tc.block
			g := gamma(bits.TrailingZeros(uint(n)) + 2)

			x32 := randn32(rng, tc.width)
			x := to64(x32)
			tol := make([]float64, len(x))
			sumA2 := 0.0
			for off := 0; off < len(x); off += n {
				a := l1(x[off : off+n])
				sumA2 += a * a
				b := g * (a*(1+g) + mat.Norm(mat.NewVecDense(n, x[off:off+n]), 2))
				for i := off; i < off+n; i++ {
					tol[i] = b
				}
			}

			fi := append([]float32(nil), x32...)
			r.Forward(fi)
			norm := mat.Norm(mat.NewVecDense(len(x), to64(fi)), 2)
			assert.InDelta(t, mat.Norm(mat.NewVecDense(len(x), x), 2), norm, g*math.Sqrt(sumA2), "‖R·x‖ ≠ ‖x‖")
			r.Inverse(fi)
			if_ := append([]float32(nil), x32...)
			r.Inverse(if_)
			r.Forward(if_)
			worst := 0.0
			for i := range x {
				require.InDelta(t, x[i], float64(fi[i]), tol[i], "Inverse∘Forward [%d]", i)
				require.InDelta(t, x[i], float64(if_[i]), tol[i], "Forward∘Inverse [%d]", i)
				if tol[i] > 0 {
					worst = math.Max(worst, math.Abs(float64(fi[i])-x[i])/tol[i])
				}
			}
			t.Logf("Inverse∘Forward: max observed error / bound = %.5f", worst)

			y := append([]float64(nil), x...)
			r.Forward64(y)
			assert.InDelta(t, mat.Norm(mat.NewVecDense(len(x), x), 2), mat.Norm(mat.NewVecDense(len(y), y), 2), 1e-12*math.Sqrt(sumA2))
			r.Inverse64(y)
			for i := range x {
				require.InDelta(t, x[i], y[i], 1e-12*tol[i]/g, "Inverse64∘Forward64 [%d]", i)
			}
		})
	}
}

// A width-8, block-4 rotation worked by hand.
//
//	signs = (+ − + + | − − + −),  x = (1 2 3 4 | 5 6 7 8),  1/√4 = 1/2
//
// Forward, signs first:   s⊙x = (1 −2 3 4 | −5 −6 7 −8)
// then H₄ (rows ++++, +−+−, ++−−, +−−+) and /2:
//
//	block 0: (1−2+3+4, 1+2+3−4, 1−2−3−4, 1+2−3+4)/2 = (6, 2, −8, 4)/2   = (3, 1, −4, 2)
//	block 1: (−5−6+7−8, −5+6+7+8, −5−6−7+8, −5+6−7−8)/2 = (−12, 16, −10, −14)/2 = (−6, 8, −5, −7)
//
// (‖x‖² = 204 = 9+1+16+4+36+64+25+49.) Inverse of x, transform first:
//
//	block 0: H₄·(1 2 3 4)/2 = (10, −2, −4, 0)/2 = (5, −1, −2, 0), then signs (+ − + +) → (5, 1, −2, 0)
//	block 1: H₄·(5 6 7 8)/2 = (26, −2, −4, 0)/2 = (13, −1, −2, 0), then signs (− − + −) → (−13, 1, −2, 0)
func TestRotationByHand(t *testing.T) {
	r, err := NewRotation([]int8{1, -1, 1, 1, -1, -1, 1, -1}, 4)
	require.NoError(t, err)
	assert.Equal(t, 8, r.Width())
	assert.Equal(t, 4, r.BlockSize())

	x := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	r.Forward(x)
	assert.Equal(t, []float32{3, 1, -4, 2, -6, 8, -5, -7}, x)
	r.Inverse(x)
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6, 7, 8}, x)

	r.Inverse(x)
	assert.Equal(t, []float32{5, 1, -2, 0, -13, 1, -2, 0}, x)

	y := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	r.Forward64(y)
	assert.Equal(t, []float64{3, 1, -4, 2, -6, 8, -5, -7}, y)
	y = []float64{1, 2, 3, 4, 5, 6, 7, 8}
	r.Inverse64(y)
	assert.Equal(t, []float64{5, 1, -2, 0, -13, 1, -2, 0}, y)
}

// Forward applies the signs before the transform and Inverse after it; the
// other order is a different map whenever the signs are not all equal.
func TestRotationSignOrder(t *testing.T) {
	signs := []int8{1, -1, 1, 1}
	r, err := NewRotation(signs, 4)
	require.NoError(t, err)
	x := []float32{1, 2, 3, 4}
	r.Forward(x)
	wrong := []float32{1, 2, 3, 4}
	FWHT(wrong)
	for i := range wrong {
		wrong[i] *= float32(signs[i]) / 2
	}
	assert.NotEqual(t, wrong, x)
}

func TestNewRotationErrors(t *testing.T) {
	for _, tc := range []struct {
		signs []int8
		block int
		want  string
	}{
		{[]int8{1, 1, 1, 1}, 0, "hadamard: block size 0 is not a power of two"},
		{[]int8{1, 1, 1, 1, 1, 1}, 3, "hadamard: block size 3 is not a power of two"},
		{[]int8{1, 1, 1, 1}, -4, "hadamard: block size -4 is not a power of two"},
		{nil, 4, "hadamard: no signs"},
		{[]int8{1, 1, 1, 1, 1, 1}, 4, "hadamard: width 6 is not a multiple of block size 4"},
		{[]int8{1, 1, 1, 1}, 8, "hadamard: width 4 is not a multiple of block size 8"},
		{[]int8{1, -1, 0, 1}, 4, "hadamard: sign 2 is 0, want ±1"},
		{[]int8{1, -1, 1, 2}, 2, "hadamard: sign 3 is 2, want ±1"},
	} {
		r, err := NewRotation(tc.signs, tc.block)
		assert.Nil(t, r)
		assert.EqualError(t, err, tc.want)
	}
}

func TestRotationCopiesSigns(t *testing.T) {
	signs := []int8{1, -1, 1, 1}
	r, err := NewRotation(signs, 2)
	require.NoError(t, err)
	signs[0] = -1
	assert.Equal(t, []int8{1, -1, 1, 1}, r.Signs())
}

func TestRotationPanics(t *testing.T) {
	r, err := NewRotation([]int8{1, 1, 1, 1, 1, 1, 1, 1}, 4)
	require.NoError(t, err)
	assert.PanicsWithValue(t, "hadamard: Rotation.Forward: length 4, want width 8",
		func() { r.Forward(make([]float32, 4)) })
	assert.Panics(t, func() { r.Inverse(make([]float32, 12)) })
	assert.Panics(t, func() { r.Forward64(make([]float64, 0)) })
	assert.Panics(t, func() { r.Inverse64(make([]float64, 9)) })
}

func TestRotationNoAlloc(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	r, err := NewRotation(randSigns(rng, 17408), 1024)
	require.NoError(t, err)
	x := randn32(rng, 17408)
	assert.Zero(t, testing.AllocsPerRun(10, func() { r.Forward(x) }))
	assert.Zero(t, testing.AllocsPerRun(10, func() { r.Inverse(x) }))
}

func benchmarkRotation(b *testing.B, inverse bool) {
	for _, w := range realWidths {
		b.Run(fmt.Sprint(w), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			r, err := NewRotation(randSigns(rng, w), 1024)
			if err != nil {
				b.Fatal(err)
			}
			// R is orthogonal, so repeating it keeps x bounded.
			x := randn32(rng, w)
			b.SetBytes(int64(4 * w)) // one float32 vector, rotated in place
			if inverse {
				for b.Loop() {
					r.Inverse(x)
				}
			} else {
				for b.Loop() {
					r.Forward(x)
				}
			}
		})
	}
}

// BenchmarkRotation measures the forward rotation of one activation vector
// at each width of the released model.
func BenchmarkRotation(b *testing.B) { benchmarkRotation(b, false) }

// BenchmarkRotationInverse measures the embedding-side inverse.
func BenchmarkRotationInverse(b *testing.B) { benchmarkRotation(b, true) }
