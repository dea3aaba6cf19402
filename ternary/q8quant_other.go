//go:build !(amd64 || arm64) || purego

package ternary

// archQuantizeQ8 has no SIMD kernel here: every block is the generic code's.
func archQuantizeQ8(q []int8, d []float32, sum []int32, x []float32, b0 int) int { return b0 }
