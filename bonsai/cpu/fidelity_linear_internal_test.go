package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/x448/float16"
)

// fidelityMatrix returns n rows of k random ternary weights, scales near √(1.5/k) (the
// synthetic models' choice, which keeps activations in range), packed in format f.
func fidelityMatrix(rng *rand.Rand, f ternary.Format, k, n int) []byte {
	codes := make([]uint8, k*n)
	for i := range codes {
		codes[i] = uint8(rng.IntN(3))
	}
	scales := make([]uint16, k*n/ternary.BlockSize)
	d := math.Sqrt(1.5 / float64(k))
	for i := range scales {
		scales[i] = float16.Fromfloat32(float32(d * (0.5 + rng.Float64()))).Bits()
	}
	w := make([]byte, n*f.RowBytes(k))
	if err := f.Pack(w, codes, scales); err != nil {
		panic(err)
	}
	return w
}

// engineProduct runs y = W′·(R x) for the T rows of x the way forwardChunk runs a site:
// rotateRows, quantize (int8 engines), then one productJob on the engine's pool.
func engineProduct(e *cpuEngine, s *scratch, m *qwen35.Matrix, rot *hadamard.Rotation, x []float32, T int) []float32 {
	xr := append([]float32(nil), x...)
	e.rotateRows(s, xr, T, rot)
	q8 := e.quantize(s, xr, T, ternary.NewQ8Batch(m.K, T))
	y := make([]float32, T*m.N)
	s.prod.reset(T)
	s.prod.ternary(m, xr, q8, y)
	e.run(s, &s.prod)
	return y
}

// TestFidelityLinearMatchesEngine checks that ternary.Linear, the public standalone
// folded linear, computes what the model engine computes on the same weights and input:
// real widths (K = 5120 with the 27B model's Hadamard block of 1024, and 17408, the
// down projection's), both formats, a random ±1 sign vector, on a two-worker pool.
//
//   - float32 activations, one token (the decode step): bit-identical — both rotate
//     with the same hadamard.Rotation and call ternary.MatVecRange.
//   - float32 activations, a prefill chunk of 8 tokens (ternary.MatMulRange, which sums
//     each token's products as MatVecRange does): bit-identical too, and so within
//     K·2⁻²³·Σ|w·x′| per output.
//   - int8 activations (the default; ternary.MatVecQ8Range and MatMulQ8Range): within the
//     quantisation error Σ_j |w_ij|·0.5001·D[block(j)] (ternary.Q8) plus the float32
//     bound above.
func TestFidelityLinearMatchesEngine(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 20))
	pool := parallel.NewPool(2)
	defer pool.Close()
	for _, shape := range []struct{ k, n int }{{5120, 384}, {17408, 160}} {
		k, n := shape.k, shape.n
		signs := make([]int8, k)
		for i := range signs {
			signs[i] = int8(1 - 2*rng.IntN(2))
		}
		rot, err := hadamard.NewRotation(signs, 1024)
		require.NoError(t, err)
		for _, f := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
			w := fidelityMatrix(rng, f, k, n)
			lin, err := ternary.NewLinear(f, w, k, n, rot)
			require.NoError(t, err)
			m := &qwen35.Matrix{Name: "fidelity", Format: f, K: k, N: n, Data: w}

			const T = 8
			x := make([]float32, T*k)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			// The standalone linear, token by token, and what the bounds need: x′ = R x
			// and the decoded rows.
			want := make([]float32, T*n)
			xr := make([]float32, T*k)
			site := ternary.NewSite(rot, k)
			for tok := 0; tok < T; tok++ {
				lin.Forward(want[tok*n:(tok+1)*n], x[tok*k:(tok+1)*k])
				site.Set(x[tok*k : (tok+1)*k])
				copy(xr[tok*k:], site.Rotated())
				// Apply on a shared site and ApplyRange split as a pool would split it.
				y := make([]float32, n)
				lin.Apply(y, site)
				require.Equal(t, want[tok*n:(tok+1)*n], y)
				clear(y)
				lin.ApplyRange(y, site, 0, n/3)
				lin.ApplyRange(y, site, n/3, n)
				require.Equal(t, want[tok*n:(tok+1)*n], y)
			}
			rows := make([][]float32, n)
			for i := range rows {
				rows[i] = make([]float32, k)
				require.NoError(t, f.Decode(rows[i], m.Row(i)))
			}
			// floatBound and q8Bound of output (tok, i).
			floatBound := func(tok, i int) float64 {
				var abs float64
				for j, wj := range rows[i] {
					abs += math.Abs(float64(wj) * float64(xr[tok*k+j]))
				}
				return float64(k) * 0x1p-23 * abs
			}
			q8Bound := func(tok, i int) float64 {
				var b float64
				for blk := 0; blk < k/ternary.BlockSize; blk++ {
					var amax, wsum float64
					for j := blk * ternary.BlockSize; j < (blk+1)*ternary.BlockSize; j++ {
						amax = max(amax, math.Abs(float64(xr[tok*k+j])))
						wsum += math.Abs(float64(rows[i][j]))
					}
					b += wsum * 0.5001 * amax / 127
				}
				return b + floatBound(tok, i)
			}

			for _, int8 := range []bool{false, true} {
				e := &cpuEngine{pool: pool, int8: int8}
				s := &scratch{}
				if !int8 {
					s.rows = newRowScratch(pool.Workers(), k)
				}
				s.prod.rows = &s.rows
				acts := map[bool]string{false: "float32", true: "int8"}[int8]

				// One token: the decode step.
				step := engineProduct(e, s, m, rot, x[:k], 1)
				// A prefill chunk.
				chunk := engineProduct(e, s, m, rot, x, T)

				var worstStep, worstChunk, worstRatio float64
				for i := 0; i < n; i++ {
					worstStep = max(worstStep, math.Abs(float64(step[i]-want[i])))
				}
				for tok := 0; tok < T; tok++ {
					for i := 0; i < n; i++ {
						d := math.Abs(float64(chunk[tok*n+i] - want[tok*n+i]))
						worstChunk = max(worstChunk, d)
						bound := floatBound(tok, i)
						if int8 {
							bound = q8Bound(tok, i)
						}
						worstRatio = max(worstRatio, d/bound)
						require.LessOrEqual(t, d, bound, "%s K=%d %s activations: token %d row %d", f, k, acts, tok, i)
					}
				}
				if !int8 {
					assert.Equal(t, want[:n], step, "%s K=%d: the float32 decode step must be bit-identical to Linear.Forward", f, k)
					assert.Equal(t, want, chunk, "%s K=%d: the float32 chunk must be bit-identical to Linear.Forward token by token", f, k)
				} else {
					for i := 0; i < n; i++ {
						require.LessOrEqual(t, math.Abs(float64(step[i]-want[i])), q8Bound(0, i), "%s K=%d int8 step row %d", f, k, i)
					}
				}
				t.Logf("%s %d×%d, %s activations: Linear.Forward vs engine: step max |Δ| %.3g, %d-token chunk max |Δ| %.3g (at most %.2g of the bound)",
					f, k, n, acts, worstStep, T, worstChunk, worstRatio)
			}
		}
	}
}
