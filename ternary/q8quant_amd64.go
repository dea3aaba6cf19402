//go:build amd64 && !purego

package ternary

// quantizeQ8AVX2 quantises blocks b0 … nb−1 of x into q, d and sum as quantizeQ8Block
// does, to the same bits, and returns the first block it left (see q8quant_amd64.s).
//
//go:noescape
func quantizeQ8AVX2(q *int8, d *float32, sum *int32, x *float32, b0, nb int) int

// archQuantizeQ8 quantises blocks b0 … len(d)−1 with the SIMD kernel where the CPU has
// one and returns the first block it left to the generic code (b0 if none ran).
func archQuantizeQ8(q []int8, d []float32, sum []int32, x []float32, b0 int) int {
	if !hasAVX2() || b0 >= len(d) {
		return b0
	}
	return quantizeQ8AVX2(&q[0], &d[0], &sum[0], &x[0], b0, len(d))
}
