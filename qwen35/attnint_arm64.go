//go:build !purego

package qwen35

//go:noescape
func scoreInt8SDOT(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)

//go:noescape
func scoreQ4SDOT(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int)
