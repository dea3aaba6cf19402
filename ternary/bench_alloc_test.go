package ternary

import "github.com/bonsai-go/sdk/internal/hugemem"

// benchAlloc returns n bytes for benchmark weights as the model loader holds them
// (hugemem: an anonymous mapping with transparent huge pages requested, on Linux), so
// that the benchmarks see the TLB behaviour of a loaded model. The memory lives as long
// as the test binary.
func benchAlloc(n int) []byte {
	b, _ := hugemem.Alloc(n)
	return b
}
