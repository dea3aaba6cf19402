package qwen35_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bonsai-go/sdk/internal/floatconv"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randVec returns n normal values times scale from a seeded source.
func randVec(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

// relErr returns max|got−want| / max(max|want|, floor): an error relative to the scale
// of the whole vector, which is what matters once the values are summed downstream.
func relErr(got []float32, want []float64, floor float64) float64 {
	var e, m float64
	for i := range want {
		e = math.Max(e, math.Abs(float64(got[i])-want[i]))
		m = math.Max(m, math.Abs(want[i]))
	}
	return e / math.Max(m, floor)
}

func TestRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	for _, n := range []int{1, 3, 7, 128, 5120} {
		for _, withGain := range []bool{false, true} {
			x := randVec(rng, n, 3)
			var gain []float32
			if withGain {
				gain = randVec(rng, n, 1)
			}
			const eps = 1e-6
			var ss float64
			for _, v := range x {
				ss += float64(v) * float64(v)
			}
			r := 1 / math.Sqrt(ss/float64(n)+eps)
			want := make([]float64, n)
			for i, v := range x {
				want[i] = float64(v) * r
				if withGain {
					want[i] *= float64(gain[i])
				}
			}
			got := make([]float32, n)
			qwen35.RMSNorm(got, x, gain, eps)
			e := relErr(got, want, 1e-30)
			worst = math.Max(worst, e)
			assert.Less(t, e, 3e-7, "n=%d gain=%v", n, withGain)
			// In place gives the same bits.
			qwen35.RMSNorm(x, x, gain, eps)
			assert.Equal(t, got, x)
		}
	}
	// eps dominates a zero vector: the result stays finite.
	z := make([]float32, 8)
	qwen35.RMSNorm(z, z, nil, 1e-6)
	assert.Equal(t, make([]float32, 8), z)
	t.Logf("RMSNorm max error relative to max|y|: %.2e", worst)
}

func TestL2Normalize(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 5, 128} {
		x := randVec(rng, n, 2)
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		want := make([]float64, n)
		for i, v := range x {
			want[i] = float64(v) / math.Max(math.Sqrt(ss), 1e-6)
		}
		qwen35.L2Normalize(x, 1e-6)
		assert.Less(t, relErr(x, want, 1e-30), 3e-7, n)
	}
	// Below eps the divisor is eps: a tiny vector is scaled up by 1/eps, not normalised.
	x := []float32{3e-8, 4e-8}
	qwen35.L2Normalize(x, 1e-6)
	assert.InDelta(t, 0.03, x[0], 1e-8)
	assert.InDelta(t, 0.04, x[1], 1e-8)
	z := []float32{0, 0}
	qwen35.L2Normalize(z, 1e-6)
	assert.Equal(t, []float32{0, 0}, z)
}

func TestActivations(t *testing.T) {
	points := []float64{-100, -30, -20.5, -5, -1, -1e-3, 0, 1e-3, 0.5, 1, 5, 19.9, 20, 20.001, 25, 88, 100}
	for _, x := range points {
		sig := 1 / (1 + math.Exp(-x))
		assert.InDelta(t, sig, qwen35.Sigmoid(float32(x)), 1e-7*math.Max(1, sig), "sigmoid(%g)", x)
		silu := x * sig
		assert.InDelta(t, silu, qwen35.SiLU(float32(x)), 1e-7*math.Max(1, math.Abs(silu)), "silu(%g)", x)
		sp := math.Log1p(math.Exp(x))
		if x > 20 {
			sp = x
		}
		assert.InDelta(t, sp, qwen35.Softplus(float32(x)), 1e-7*math.Max(1, sp), "softplus(%g)", x)
	}
	// The > 20 branch returns its argument exactly.
	for _, x := range []float32{20.0001, 21, 1e4, 3e38} {
		assert.Equal(t, x, qwen35.Softplus(x))
	}
	// At exactly 20 the formula applies (llama.cpp's test is x > 20).
	assert.InDelta(t, math.Log1p(math.Exp(20)), qwen35.Softplus(20), 1e-5)
	assert.Equal(t, float32(0), qwen35.Sigmoid(-1e4))
	assert.Equal(t, float32(1), qwen35.Sigmoid(1e4))
}

func TestSwiGLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n := 301
	gate, up := randVec(rng, n, 4), randVec(rng, n, 2)
	want := make([]float64, n)
	for i := range want {
		g := float64(gate[i])
		want[i] = g / (1 + math.Exp(-g)) * float64(up[i])
	}
	got := make([]float32, n)
	qwen35.SwiGLU(got, gate, up)
	assert.Less(t, relErr(got, want, 1e-30), 3e-7)
	g2 := append([]float32(nil), gate...)
	qwen35.SwiGLU(g2, g2, up) // dst aliases gate
	assert.Equal(t, got, g2)
	u2 := append([]float32(nil), up...)
	qwen35.SwiGLU(u2, gate, u2) // dst aliases up
	assert.Equal(t, got, u2)
}

// bf16Matrix packs w (n rows of k) as a BF16Matrix and returns the values it holds.
func bf16Matrix(w []float32, k, n int) (qwen35.BF16Matrix, []float64) {
	m := qwen35.BF16Matrix{Name: "test", K: k, N: n, Data: make([]byte, 2*k*n)}
	held := make([]float64, k*n)
	for i, x := range w {
		b := floatconv.Float32ToBF16(x)
		m.Data[2*i], m.Data[2*i+1] = byte(b), byte(b>>8)
		held[i] = float64(math.Float32frombits(uint32(b) << 16))
	}
	return m, held
}

func TestBF16MulVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	worst := 0.0
	for _, kn := range [][2]int{{1, 1}, {3, 2}, {301, 7}, {5120, 48}} {
		k, n := kn[0], kn[1]
		m, held := bf16Matrix(randVec(rng, k*n, 0.05), k, n)
		x := randVec(rng, k, 1)
		y := make([]float32, n)
		m.MulVec(y, x)
		for i := 0; i < n; i++ {
			var want, mag float64
			for j := 0; j < k; j++ {
				p := held[i*k+j] * float64(x[j])
				want += p
				mag += math.Abs(p)
			}
			e := math.Abs(float64(y[i])-want) / mag
			worst = math.Max(worst, e)
			require.Less(t, e, 1e-6, "k=%d n=%d row %d", k, n, i)
		}
		if n > 2 {
			// A range touches its rows only.
			y2 := make([]float32, n)
			for i := range y2 {
				y2[i] = -7
			}
			m.MulVecRange(y2, x, 1, n-1)
			assert.Equal(t, float32(-7), y2[0])
			assert.Equal(t, float32(-7), y2[n-1])
			assert.Equal(t, y[1:n-1], y2[1:n-1])
		}
	}
	t.Logf("BF16 MulVec max error relative to Σ|w·x|: %.2e", worst)
}
