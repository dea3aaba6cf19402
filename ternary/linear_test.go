package ternary

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bonsai-go/sdk/hadamard"
	"github.com/stretchr/testify/require"
	"github.com/x448/float16"
)

// randomTernary returns n rows of k random ternary weights with scales near d.
func randomTernary(rng *rand.Rand, f Format, k, n int, d float64) []byte {
	codes := make([]uint8, k*n)
	for i := range codes {
		codes[i] = uint8(rng.IntN(3))
	}
	scales := make([]uint16, k*n/BlockSize)
	for i := range scales {
		scales[i] = float16.Fromfloat32(float32(d * (0.5 + rng.Float64()))).Bits()
	}
	w := make([]byte, n*f.RowBytes(k))
	if err := f.Pack(w, codes, scales); err != nil {
		panic(err)
	}
	return w
}

func randomVector(rng *rand.Rand, k int) []float32 {
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func randomSigns(rng *rand.Rand, k int) []int8 {
	s := make([]int8, k)
	for i := range s {
		s[i] = int8(1 - 2*rng.IntN(2))
	}
	return s
}

// The float32 kernels agree with the float64 reference to within the float32 rounding
// of a K-term sum: |err| ≤ K·2⁻²³·Σ|w·x| (a loose, always-valid bound); in practice
// far below it.
func TestMatVecRangeMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range []Format{PQ2_0, PTQ1_0} {
		for _, k := range []int{128, 384, 5120, 6144, 17408} {
			n := 37
			w := randomTernary(rng, f, k, n, math.Sqrt(1.5/float64(k)))
			x := randomVector(rng, k)
			y := make([]float32, n)
			MatVecRange(f, w, k, x, y, 0, n)
			want := make([]float32, n)
			require.NoError(t, MatVecRef(f, w, k, x, want))
			ym := make([]float32, n)
			MatMulRange(f, w, k, n, x, 1, ym, 0, n, nil)
			row := make([]float32, k)
			for i := 0; i < n; i++ {
				require.NoError(t, f.Decode(row, w[i*f.RowBytes(k):(i+1)*f.RowBytes(k)]))
				var abs float64
				for j := range row {
					abs += math.Abs(float64(row[j]) * float64(x[j]))
				}
				bound := float64(k) * 0x1p-23 * abs
				require.InDelta(t, want[i], y[i], bound, "%s K=%d row %d", f, k, i)
				require.InDelta(t, want[i], ym[i], bound, "%s K=%d row %d (MatMul)", f, k, i)
				// The typical error is many orders below the bound: catch a wrong block scale.
				require.InDelta(t, want[i], y[i], 1e-4*abs, "%s K=%d row %d", f, k, i)
			}
		}
	}
}

func TestMatMulRangeBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const k, n, batch = 256, 20, 5
	w := randomTernary(rng, PQ2_0, k, n, 0.1)
	x := randomVector(rng, k*batch)
	y := make([]float32, batch*n)
	MatMulRange(PQ2_0, w, k, n, x, batch, y, 3, 17, nil)
	for s := 0; s < batch; s++ {
		want := make([]float32, n)
		require.NoError(t, MatVecRef(PQ2_0, w, k, x[s*k:(s+1)*k], want))
		for i := 0; i < n; i++ {
			if i < 3 || i >= 17 {
				require.Zero(t, y[s*n+i], "row %d outside the range was written", i)
				continue
			}
			require.InDelta(t, want[i], y[s*n+i], 1e-4, "token %d row %d", s, i)
		}
		// Each input's sums do not depend on the others in the batch: alone, it gives
		// the same bits (and a scratch row changes nothing).
		alone := make([]float32, n)
		MatMulRange(PQ2_0, w, k, n, x[s*k:(s+1)*k], 1, alone, 3, 17, make([]float32, k))
		require.Equal(t, alone[3:17], y[s*n+3:s*n+17], "token %d computed alone", s)
	}
}

// W′·(R x) equals W·x for the unfolded W = W′·R (each row unfolded as
// signs ⊙ FWHT(row′)/√n): the identity the whole model rests on.
func TestLinearFoldIdentity(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{1024, 5120} {
		n := 9
		rot, err := hadamard.NewRotation(randomSigns(rng, k), 1024)
		require.NoError(t, err)
		w := randomTernary(rng, PQ2_0, k, n, 0.02)
		l, err := NewLinear(PQ2_0, w, k, n, rot)
		require.NoError(t, err)
		x := randomVector(rng, k)
		y := make([]float32, n)
		l.Forward(y, x)

		row := make([]float32, k)
		row64 := make([]float64, k)
		for i := 0; i < n; i++ {
			require.NoError(t, PQ2_0.Decode(row, w[i*PQ2_0.RowBytes(k):(i+1)*PQ2_0.RowBytes(k)]))
			for j := range row {
				row64[j] = float64(row[j])
			}
			rot.Inverse64(row64) // unfold
			var want float64
			for j := range row64 {
				want += row64[j] * float64(x[j])
			}
			require.InDelta(t, want, float64(y[i]), 1e-4*math.Sqrt(float64(k))*0.02, "K=%d row %d", k, i)
		}
	}
}

func TestSiteSharedAndLinearErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const k = 512
	rot, err := hadamard.NewRotation(randomSigns(rng, k), 256)
	require.NoError(t, err)
	a := randomTernary(rng, PQ2_0, k, 3, 0.1)
	b := randomTernary(rng, PTQ1_0, k, 4, 0.1)
	la, err := NewLinear(PQ2_0, a, k, 3, rot)
	require.NoError(t, err)
	lb, err := NewLinear(PTQ1_0, b, k, 4, rot)
	require.NoError(t, err)
	x := randomVector(rng, k)
	site := NewSite(rot, k)
	site.Set(x)
	ya, yb := make([]float32, 3), make([]float32, 4)
	la.Apply(ya, site)
	lb.Apply(yb, site)
	wa, wb := make([]float32, 3), make([]float32, 4)
	la.Forward(wa, x)
	lb.Forward(wb, x)
	require.Equal(t, wa, ya)
	require.Equal(t, wb, yb)

	_, err = NewLinear(PQ2_0, a[:10], k, 3, rot)
	require.ErrorIs(t, err, ErrSize)
	_, err = NewLinear(PQ2_0, a, k, 3, mustRotation(t, 256))
	require.ErrorIs(t, err, ErrSize)
	_, err = NewLinear(PQ2_0, a, 100, 3, nil)
	require.ErrorIs(t, err, ErrSize)
}

func mustRotation(t *testing.T, k int) *hadamard.Rotation {
	s := make([]int8, k)
	for i := range s {
		s[i] = 1
	}
	r, err := hadamard.NewRotation(s, k)
	require.NoError(t, err)
	return r
}

func TestMatVecAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const k, n = 1024, 16
	w := randomTernary(rng, PQ2_0, k, n, 0.1)
	x := randomVector(rng, k)
	y := make([]float32, n)
	allocs := testing.AllocsPerRun(10, func() { MatVecRange(PQ2_0, w, k, x, y, 0, n) })
	require.Zero(t, allocs)
}

func BenchmarkMatVecGeneric(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const k, n = 5120, 1024
	w := randomTernary(rng, PQ2_0, k, n, 0.02)
	x := randomVector(rng, k)
	y := make([]float32, n)
	b.SetBytes(int64(len(w)))
	for b.Loop() {
		MatVecRange(PQ2_0, w, k, x, y, 0, n)
	}
}

// A PTQ1_0 matrix and its PQ2_0 transcode give bit-identical products.
func TestMatVecFormatsBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const k, n = 5120, 64
	w := randomTernary(rng, PTQ1_0, k, n, 0.02)
	pq := make([]byte, n*PQ2_0.RowBytes(k))
	require.NoError(t, Transcode(pq, PQ2_0, w, PTQ1_0))
	x := randomVector(rng, k)
	a, b := make([]float32, n), make([]float32, n)
	MatVecRange(PTQ1_0, w, k, x, a, 0, n)
	MatVecRange(PQ2_0, pq, k, x, b, 0, n)
	require.Equal(t, b, a)
	MatMulRange(PTQ1_0, w, k, n, x, 1, a, 0, n, nil)
	MatMulRange(PQ2_0, pq, k, n, x, 1, b, 0, n, nil)
	require.Equal(t, b, a)
}

// The float32 batched product gives each vector, bit for bit, what the matrix-vector
// kernel gives it alone, in both formats: a token's products do not depend on its batch.
func TestMatMulRangeMatchesMatVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const n, batch = 23, 6
	for _, f := range []Format{PQ2_0, PTQ1_0} {
		for _, k := range []int{128, 640, 5120} {
			w := randomTernary(rng, f, k, n, math.Sqrt(1.5/float64(k)))
			// Magnitudes spread over decades, so that sums in another order would round
			// differently.
			x := make([]float32, batch*k)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * math.Exp(2*rng.NormFloat64()))
			}
			y := make([]float32, batch*n)
			MatMulRange(f, w, k, n, x, batch, y, 2, n-3, make([]float32, k))
			for s := range batch {
				want := make([]float32, n)
				MatVecRange(f, w, k, x[s*k:(s+1)*k], want, 2, n-3)
				for i := 2; i < n-3; i++ {
					if math.Float32bits(y[s*n+i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s k=%d vector %d row %d: MatMulRange %v, MatVecRange %v", f, k, s, i, y[s*n+i], want[i])
					}
				}
			}
		}
	}
}
