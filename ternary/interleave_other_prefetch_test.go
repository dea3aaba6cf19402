//go:build !amd64 || purego

package ternary

// setIlvPrefetch does nothing here: only the AVX-512 VNNI kernel's prefetch distance
// is a variable.
func setIlvPrefetch(int) func() { return func() {} }
