//go:build arm64 && !purego

package ternary

// quantizeQ8NEON quantises blocks b0 … nb−1 of x into q, d and sum as quantizeQ8Block
// does, to the same bits, and returns the first block it left (see q8quant_arm64.s).
//
//go:noescape
func quantizeQ8NEON(q *int8, d *float32, sum *int32, x *float32, b0, nb int) int

// archQuantizeQ8 quantises blocks b0 … len(d)−1 with the NEON kernel and returns the
// first block it left to the generic code.
func archQuantizeQ8(q []int8, d []float32, sum []int32, x []float32, b0 int) int {
	if b0 >= len(d) {
		return b0
	}
	return quantizeQ8NEON(&q[0], &d[0], &sum[0], &x[0], b0, len(d))
}
