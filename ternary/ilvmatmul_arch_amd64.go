//go:build amd64 && !purego

package ternary

// archIlvMatWidth returns the widest batch of family fam's batched kernel, 0 where it
// has none.
func archIlvMatWidth(fam ilvFamily) int {
	switch fam {
	case ilvVNNI, ilvAVX2:
		return ilvMatWidth
	}
	return 0
}

// archIlvMatFam runs family fam's batched kernel for nv vectors, 1 ≤ nv ≤
// archIlvMatWidth(fam).
func archIlvMatFam(fam ilvFamily, nv int, a *ilvMatArgs) {
	switch fam {
	case ilvVNNI:
		archIlvMat(nv, a)
	case ilvAVX2:
		ilvAVX2Use.mat(nv, a)
	default:
		panic("ternary: no batched interleaved kernel for this family")
	}
}
