//go:build !amd64 || purego

package ternary

import "testing"

// setIlvPrefetch does nothing here: only the AVX-512 VNNI kernel's prefetch distance
// is a variable.
func setIlvPrefetch(int) func() { return func() {} }

// eachAVX2Impl runs f once: only amd64 has more than one implementation of the AVX2
// family's interleaved kernels.
func eachAVX2Impl(t *testing.T, f func(t *testing.T)) { f(t) }

// eachAVX2ImplOf runs f once, with no implementation's name.
func eachAVX2ImplOf(id q8ID, f func(impl string)) { f("") }

// avx512VNNIMachine reports false: only amd64 has AVX-512.
func avx512VNNIMachine() bool { return false }
