//go:build !purego

package hadamard

import "golang.org/x/sys/cpu"

// The primitives of fwht_amd64.s; see fwhtImpl for what each one does.

//go:noescape
func firstAVX2(x, pre []float32)

//go:noescape
func pass2AVX2(x, post []float32, h int)

//go:noescape
func pass4AVX2(x, post []float32, h int)

//go:noescape
func pass8AVX2(x, post []float32, h int)

//go:noescape
func firstAVX512(x, pre []float32)

//go:noescape
func pass2AVX512(x, post []float32, h int)

//go:noescape
func pass4AVX512(x, post []float32, h int)

//go:noescape
func pass8AVX512(x, post []float32, h int)

// archImpls returns the implementations this CPU runs: AVX2 with FMA, and
// AVX-512 (F) on top of it.
func archImpls() []*fwhtImpl {
	var impls []*fwhtImpl
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		impls = append(impls, &fwhtImpl{name: "avx2", lanes: 8, minN: 16,
			first: firstAVX2, pass2: pass2AVX2, pass4: pass4AVX2, pass8: pass8AVX2})
		if cpu.X86.HasAVX512F {
			impls = append(impls, &fwhtImpl{name: "avx512", lanes: 16, minN: 32,
				first: firstAVX512, pass2: pass2AVX512, pass4: pass4AVX512, pass8: pass8AVX512})
		}
	}
	return impls
}
