//go:build !purego

package hadamard

// The primitives of fwht_arm64.s; see fwhtImpl for what each one does.

//go:noescape
func firstNEON(x, pre []float32)

//go:noescape
func pass2NEON(x, post []float32, h int)

//go:noescape
func pass4NEON(x, post []float32, h int)

//go:noescape
func pass8NEON(x, post []float32, h int)

// archImpls returns the NEON implementation, which every arm64 CPU runs (the
// first pass works on 16 floats at a time).
func archImpls() []*fwhtImpl {
	return []*fwhtImpl{{name: "neon", lanes: 4, minN: 16,
		first: firstNEON, pass2: pass2NEON, pass4: pass4NEON, pass8: pass8NEON}}
}
