package ternary_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/bonsai-go/sdk/ternary"
)

// TestDotRef compares DotRef and MatVecRef with a float64 evaluation built
// from the decoded values, and with one built from the raw codes and scales.
func TestDotRef(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{128, 256, 384, 1152, 5120, 6144, 17408} {
		for _, n := range []int{1, 3} {
			codes, scales := randTernary(r, n*k/128)
			for i := range scales {
				// Finite, positive, model-like scales.
				scales[i] = float16.Fromfloat32(float32(0.004 + 0.02*r.Float64())).Bits()
			}
			x := make([]float32, k)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			for _, f := range formats {
				w := make([]byte, n*f.RowBytes(k))
				require.NoError(t, f.Pack(w, codes, scales))
				dec := make([]float32, n*k)
				require.NoError(t, f.Decode(dec, w))

				y := make([]float32, n)
				require.NoError(t, ternary.MatVecRef(f, w, k, x, y))
				for i := range n {
					row := w[i*f.RowBytes(k) : (i+1)*f.RowBytes(k)]
					got, err := ternary.DotRef(f, row, x)
					require.NoError(t, err)

					var fromDecoded, fromCodes float64
					for j := range k {
						fromDecoded += float64(dec[i*k+j]) * float64(x[j])
						e := i*k + j
						d := float64(float16.Frombits(scales[e/128]).Float32())
						fromCodes += (float64(codes[e]) - 1) * d * float64(x[j])
					}
					tol := 1e-12 * (1 + math.Abs(fromDecoded))
					assert.InDelta(t, fromDecoded, got, tol, "%v k=%d row %d", f, k, i)
					assert.InDelta(t, fromCodes, got, tol, "%v k=%d row %d", f, k, i)
					assert.Equal(t, float32(got), y[i], "%v k=%d row %d", f, k, i)
				}
			}
		}
	}
}

// TestDotRefCode3 checks that the reference counts code 3 as +2d.
func TestDotRefCode3(t *testing.T) {
	codes := make([]uint8, 128)
	for j := range codes {
		codes[j] = 1
	}
	codes[0], codes[1], codes[2], codes[127] = 3, 2, 0, 3
	row := make([]byte, 34)
	require.NoError(t, ternary.PQ2_0.Pack(row, codes, []uint16{0x3800})) // d = 0.5
	x := make([]float32, 128)
	x[0], x[1], x[2], x[127] = 10, 100, 1000, 3
	got, err := ternary.DotRef(ternary.PQ2_0, row, x)
	require.NoError(t, err)
	assert.Equal(t, 2*0.5*10+0.5*100-0.5*1000+2*0.5*3, got)

	y := []float32{7, 7}
	require.NoError(t, ternary.MatVecRef(ternary.PQ2_0, nil, 0, nil, nil))
	require.NoError(t, ternary.MatVecRef(ternary.PQ2_0, nil, 0, nil, y))
	assert.Equal(t, []float32{0, 0}, y)
}
