//go:build !linux

package ternary

// benchAlloc returns n bytes for benchmark weights.
func benchAlloc(n int) []byte { return make([]byte, n) }
