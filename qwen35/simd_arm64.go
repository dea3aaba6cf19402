//go:build !purego

package qwen35

import "golang.org/x/sys/cpu"

// The kernels of simd_arm64.s. They take lengths as the wrappers of simd.go leave them.

//go:noescape
func dotNEON(a, b []float32) float32

//go:noescape
func dotRowsNEON4(out []float32, os int, a []float32, as, na int, b []float32, bs, nb, d int)

//go:noescape
func scalNEON(x []float32, alpha float32)

//go:noescape
func scaleAddRowsNEON(y []float32, scale float32, c, x []float32, stride int)

//go:noescape
func gdnStepNEON(S, k, q, v, o []float32, decay, beta float32)

//go:noescape
func sumSquaresNEON(x []float32) float64

//go:noescape
func scaleMulNEON(dst, x []float32, scale float32, gain []float32)

//go:noescape
func siluMulNEON(dst, g, u []float32)

//go:noescape
func gateMulNEON(dst, g, u []float32, s float32)

//go:noescape
func f16ToF32NEON(dst []float32, src []uint16)

//go:noescape
func dequantInt8NEON(dst []float32, src []int8, scales []float32)

//go:noescape
func dequantQ4NEON(dst []float32, src []byte, scales []uint16)

// dequantQ4ARM64 runs the NEON kernel over the whole blocks (wholeQ4Blocks).
func dequantQ4ARM64(dst []float32, src []byte, scales []uint16) {
	wholeQ4Blocks(dequantQ4NEON, dst, src, scales)
}

//go:noescape
func dotBF16NEON(row []byte, x []float32) float32

//go:noescape
func expSubNEON4(x []float32, m float32) float32

// expSubNEON is expSubNEON4 over whole vectors of four and expf32 for the rest.
func expSubNEON(x []float32, m float32) float32 {
	n4 := len(x) &^ 3
	s := expSubNEON4(x[:n4], m)
	for i := n4; i < len(x); i++ {
		x[i] = expf32(x[i] - m)
		s += x[i]
	}
	return s
}

//go:noescape
func dot6x4F32NEON(out []float32, os int, q []float32, k []float32, nb, d int)

//go:noescape
func dot6x4F16NEON(out []float32, os int, q []float32, k []uint16, nb, d int)

//go:noescape
func axpy6F32NEON(acc []float32, w []float32, ws int, v []float32, n, d int)

//go:noescape
func axpy6F16NEON(acc []float32, w []float32, ws int, v []uint16, n, d int)

//go:noescape
func maxNEON4(x []float32) float32

// maxNEON is maxNEON4 over whole vectors of four and Go for the rest.
func maxNEON(x []float32) float32 {
	n4 := len(x) &^ 3
	m := maxNEON4(x[:n4])
	for _, v := range x[n4:] {
		m = max(m, v)
	}
	return m
}

// dotRowsNEON is dotRowsNEON4 over the columns in whole vectors of four, plus the last
// d mod 4 products of each pair, added in Go.
func dotRowsNEON(out []float32, os int, a []float32, as, na int, b []float32, bs, nb, d int) {
	dotRowsNEON4(out, os, a, as, na, b, bs, nb, d)
	if d4 := d &^ 3; d4 < d {
		for i := 0; i < na; i++ {
			ai := a[i*as+d4 : i*as+d]
			o := out[i*os : i*os+nb]
			for j := range o {
				bj := b[j*bs+d4 : j*bs+d]
				s := o[j]
				for l, x := range ai {
					s += x * bj[l]
				}
				o[j] = s
			}
		}
	}
}

// archKernels returns the NEON kernels, which every arm64 CPU runs, and where the CPU
// has the dot product instructions (ARMv8.2) the same set with the integer attention
// scores by SDOT (neondot), preferred.
func archKernels() []*kernels {
	k := archNEON()
	if cpu.ARM64.HasASIMDDP {
		dot := *k[0]
		dot.name = "neondot"
		dot.scoreInt8 = scoreInt8SDOT
		dot.scoreQ4 = scoreQ4SDOT
		k = append(k, &dot)
	}
	return k
}

func archNEON() []*kernels {
	return []*kernels{{
		name:         "neon",
		dot:          dotNEON,
		dotRows:      dotRowsNEON,
		scal:         scalNEON,
		scaleAddRows: scaleAddRowsNEON,
		gdnStep:      gdnStepNEON,
		sumSquares:   sumSquaresNEON,
		scaleMul:     scaleMulNEON,
		siluMul:      siluMulNEON,
		gateMul:      gateMulNEON,
		f16ToF32:     f16ToF32NEON,
		dequantInt8:  dequantInt8NEON,
		dotBF16:      dotBF16NEON,
		expSub:       expSubNEON,
		dequantQ4:    dequantQ4ARM64,
		max:          maxNEON,
		dot6F32:      dot6x4F32NEON,
		dot6F16:      dot6x4F16NEON,
		axpy6F32:     axpy6F32NEON,
		axpy6F16:     axpy6F16NEON,
		axpy6Int8:    axpy6Int8NEON,
		axpy6Q4:      axpy6Q4NEON,
		scoreInt8:    scoreInt8NEON,
		scoreQ4:      scoreQ4NEON,
	}}
}
