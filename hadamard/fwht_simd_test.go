package hadamard

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// allImpls returns every float32 implementation this machine runs, the generic
// one (nil) first.
func allImpls() []*fwhtImpl { return append([]*fwhtImpl{nil}, fwhtImpls...) }

func implName(im *fwhtImpl) string {
	if im == nil {
		return "generic"
	}
	return im.name
}

// withImpl runs f with im as the active implementation.
func withImpl(im *fwhtImpl, f func()) {
	saved := active
	active = im
	defer func() { active = saved }()
	f()
}

// awkward returns n float32s that exercise rounding and special values: normal
// values over many binades, signed zeros, subnormals and values near overflow
// of a sum.
func awkward(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		switch rng.IntN(16) {
		case 0:
			x[i] = 0
		case 1:
			x[i] = float32(math.Copysign(0, -1))
		case 2:
			x[i] = math.Float32frombits(rng.Uint32N(1<<23)) * float32(1-2*rng.IntN(2)) // subnormal
		case 3:
			x[i] = float32(rng.NormFloat64() * 1e30)
		case 4:
			x[i] = float32(rng.IntN(7) - 3)
		default:
			x[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20)))
		}
	}
	return x
}

// Every SIMD implementation computes the generic code's arithmetic in the
// generic code's order, so it must return the same bits for any input,
// including signed zeros and subnormals, with and without the diagonal factors.
func TestImplsBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, im := range fwhtImpls {
		t.Run(im.name, func(t *testing.T) {
			for _, n := range powersOfTwo(1 << 14) {
				for trial := range 4 {
					x := awkward(rng, n)
					var pre, post []float32
					switch trial {
					case 1: // Forward: signs, then 1/√n
						pre = make([]float32, n)
						for i := range pre {
							pre[i] = float32(1 - 2*rng.IntN(2))
						}
						post = make([]float32, n)
						for i := range post {
							post[i] = float32(1 / math.Sqrt(float64(n)))
						}
					case 2: // Inverse: sign·(1/√n) after
						post = make([]float32, n)
						for i := range post {
							post[i] = float32(1-2*rng.IntN(2)) * float32(1/math.Sqrt(float64(n)))
						}
					case 3: // arbitrary diagonals: products that round
						pre, post = awkward(rng, n), awkward(rng, n)
					}
					want := append([]float32(nil), x...)
					transform(want, pre, post)
					got := append([]float32(nil), x...)
					withImpl(im, func() { transform32(got, pre, post) })
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("n=%d trial %d: [%d] = %v (%#08x), generic %v (%#08x)", n, trial, i,
								got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
			// Rotation at the model's widths, which call the transform block by block.
			for _, w := range realWidths {
				r, err := NewRotation(randSigns(rng, w), 1024)
				require.NoError(t, err)
				x := randn32(rng, w)
				for _, inverse := range []bool{false, true} {
					apply := r.Forward
					if inverse {
						apply = r.Inverse
					}
					var want, got []float32
					withImpl(nil, func() { want = append([]float32(nil), x...); apply(want) })
					withImpl(im, func() { got = append([]float32(nil), x...); apply(got) })
					require.Equal(t, want, got, "width %d inverse=%v", w, inverse)
				}
			}
		})
	}
}

// The package's own tests, run again on every implementation: the dense
// float64 comparisons, the error bounds, the hand-worked cases and the
// allocation checks.
func TestImplsDense(t *testing.T) {
	tests := []struct {
		name string
		f    func(*testing.T)
	}{
		{"FWHTColumns", TestFWHTColumns},
		{"FWHTExactIntegers", TestFWHTExactIntegers},
		{"FWHTFloat32ErrorBound", TestFWHTFloat32ErrorBound},
		{"FWHTByHand", TestFWHTByHand},
		{"FWHTNoAlloc", TestFWHTNoAlloc},
		{"RotationDense", TestRotationDense},
		{"RotationRoundTrip", TestRotationRoundTrip},
		{"RotationByHand", TestRotationByHand},
		{"RotationSignOrder", TestRotationSignOrder},
		{"RotationNoAlloc", TestRotationNoAlloc},
	}
	for _, im := range allImpls() {
		t.Run(implName(im), func(t *testing.T) {
			for _, tc := range tests {
				withImpl(im, func() { t.Run(tc.name, tc.f) })
			}
		})
	}
}

func TestActiveIsBest(t *testing.T) {
	t.Logf("float32 transform implementations: %d SIMD; active: %s", len(fwhtImpls), implName(active))
	if len(fwhtImpls) > 0 {
		require.Same(t, fwhtImpls[len(fwhtImpls)-1], active)
	} else {
		require.Nil(t, active)
	}
}

// BenchmarkRotationImpls is BenchmarkRotation on each implementation.
func BenchmarkRotationImpls(b *testing.B) {
	for _, im := range allImpls() {
		for _, w := range realWidths {
			b.Run(fmt.Sprintf("%s/%d", implName(im), w), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				r, err := NewRotation(randSigns(rng, w), 1024)
				if err != nil {
					b.Fatal(err)
				}
				x := randn32(rng, w)
				b.SetBytes(int64(4 * w))
				withImpl(im, func() {
					for b.Loop() {
						r.Forward(x)
					}
				})
			})
		}
	}
}
