//go:build !amd64 || purego

package ternary

// The PTQ1_0 activation copy as the NEON kernel (and the portable one elsewhere) reads
// it (see matvec_ptq1.go): per block pair and trit position n, 64 bytes holding the
// negated activation −a for register byte i at i. The NEON kernel decodes trits as
// byte masks m = −[x ≥ 86] − [x ≥ 171] = −t, and (−t)·(−a) = t·a.
const (
	ptq1PairAct = 5 * 64 // bytes per block pair
	ptq1ActStep = 64     // from one trit position to the next
	ptq1ActNeg  = true   // the activations are stored negated
)

// ptq1ActPos returns the position in a pair's activation copy of the activation that
// meets trit n of register byte i.
func ptq1ActPos(n, i int) int { return 64*n + i }
