//go:build !purego

package qwen35

//go:noescape
func scoreInt8SDOT(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)

//go:noescape
func scoreQ4SDOT(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int)

//go:noescape
func scoreInt8NEON(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []int8, ks []float32, n, d int)

//go:noescape
func scoreQ4NEON(out []float32, os int, codes []int8, sq []float32, corr []int32, rep int, k []byte, ks []uint16, n, d int)

//go:noescape
func axpy6Int8NEON(acc []float32, w []float32, ws int, v []int8, vs []float32, n, d int)

//go:noescape
func axpy6Q4NEON(acc []float32, w []float32, ws int, v []byte, vs []float32, n, d int)
