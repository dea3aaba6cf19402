//go:build amd64 && !purego

package ternary

// The PTQ1_0 activation copy as the amd64 kernels read it (see matvec_ptq1.go): per
// block pair, step n and chain c (0 even, 1 odd register bytes), 64 bytes holding the
// activation for register byte 2j+c at 2j+1 and zero at 2j, so that a 16-bit lane
// (xₙ₊₁, tₙ) meets (0, a).
const (
	ptq1PairAct = 5 * 128 // bytes per block pair
	ptq1ActStep = 128     // from one trit position to the next
	ptq1ActNeg  = false   // the activations are stored as they are
)

// ptq1ActPos returns the position in a pair's activation copy of the activation that
// meets trit n of register byte i.
func ptq1ActPos(n, i int) int { return 128*n + 64*(i&1) + (i &^ 1) + 1 }
