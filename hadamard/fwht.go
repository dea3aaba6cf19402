package hadamard

import "strconv"

// float is the element type of the transform kernels. The float32 instance is
// the one inference runs; the float64 one serves reference code and tests.
type float interface{ ~float32 | ~float64 }

// IsPowerOfTwo reports whether n is a positive power of two (1, 2, 4, ...).
func IsPowerOfTwo(n int) bool { return n > 0 && n&(n-1) == 0 }

// FWHT replaces x by Hₙ·x, where n = len(x) and Hₙ is the unnormalised
// Sylvester Walsh–Hadamard matrix in natural order:
// Hₙ[r][c] = (−1)^popcount(r&c). It runs in place in n·log₂n additions
// and allocates nothing.
//
// FWHT panics if len(x) is not a power of two. The lengths it sees come from
// a validated [Contract] or [Rotation], so any other length is a programming
// error rather than bad input.
func FWHT(x []float32) {
	checkLen(len(x))
	transform32(x, nil, nil)
}

// FWHT64 is [FWHT] in float64.
func FWHT64(x []float64) {
	checkLen(len(x))
	transform(x, nil, nil)
}

func checkLen(n int) {
	if !IsPowerOfTwo(n) {
		panic("hadamard: FWHT length " + strconv.Itoa(n) + " is not a power of two")
	}
}
