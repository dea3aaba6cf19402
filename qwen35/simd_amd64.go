//go:build !purego

package qwen35

import "golang.org/x/sys/cpu"

// The kernels of simd_amd64.s. They take lengths as the wrappers of simd.go leave them.

//go:noescape
func dotAVX2(a, b []float32) float32

//go:noescape
func dotRowsAVX2(out []float32, os int, a []float32, as, na int, b []float32, bs, nb, d int)

//go:noescape
func scalAVX2(x []float32, alpha float32)

//go:noescape
func scaleAddRowsAVX2(y []float32, scale float32, c, x []float32, stride int)

//go:noescape
func gdnStepAVX2(S, k, q, v, o []float32, decay, beta float32)

//go:noescape
func sumSquaresAVX2(x []float32) float64

//go:noescape
func scaleMulAVX2(dst, x []float32, scale float32, gain []float32)

//go:noescape
func siluMulAVX2(dst, g, u []float32)

//go:noescape
func gateMulAVX2(dst, g, u []float32, s float32)

//go:noescape
func f16ToF32F16C(dst []float32, src []uint16)

//go:noescape
func dequantInt8AVX2(dst []float32, src []int8, scales []float32)

//go:noescape
func dotBF16AVX2(row []byte, x []float32) float32

//go:noescape
func expSubAVX2(x []float32, m float32) float32

//go:noescape
func dot6x4F32AVX512(out []float32, os int, q []float32, k []float32, nb, d int)

//go:noescape
func dot6x4F16AVX512(out []float32, os int, q []float32, k []uint16, nb, d int)

//go:noescape
func axpy6F32AVX512(acc []float32, w []float32, ws int, v []float32, n, d int)

//go:noescape
func axpy6F16AVX512(acc []float32, w []float32, ws int, v []uint16, n, d int)

//go:noescape
func dot6x2F32AVX2(out []float32, os int, q []float32, k []float32, nb, d int)

//go:noescape
func dot6x2F16AVX2(out []float32, os int, q []float32, k []uint16, nb, d int)

//go:noescape
func axpy6F32AVX2(acc []float32, w []float32, ws int, v []float32, n, d int)

//go:noescape
func axpy6F16AVX2(acc []float32, w []float32, ws int, v []uint16, n, d int)

//go:noescape
func maxAVX2(x []float32) float32

//go:noescape
func maxAVX512(x []float32) float32

// maxX86 is maxAVX2 over whole vectors of eight and Go for the rest.
func maxX86(x []float32) float32 {
	n8 := len(x) &^ 7
	m := maxAVX2(x[:n8])
	for _, v := range x[n8:] {
		m = max(m, v)
	}
	return m
}

//go:noescape
func dequantQ4AVX2(dst []float32, src []byte, scales []uint16)

//go:noescape
func dequantInt8AVX512(dst []float32, src []int8, scales []float32)

//go:noescape
func dequantQ4AVX512(dst []float32, src []byte, scales []uint16)

// dequantQ4X86 and dequantQ4X86_512 run the AVX2 and AVX-512 kernels over the whole
// blocks (wholeQ4Blocks).
func dequantQ4X86(dst []float32, src []byte, scales []uint16) {
	wholeQ4Blocks(dequantQ4AVX2, dst, src, scales)
}

func dequantQ4X86_512(dst []float32, src []byte, scales []uint16) {
	wholeQ4Blocks(dequantQ4AVX512, dst, src, scales)
}

//go:noescape
func dotAVX512(a, b []float32) float32

//go:noescape
func expSubAVX512(x []float32, m float32) float32

//go:noescape
func dotRowsAVX512(out []float32, os int, a []float32, as, na int, b []float32, bs, nb, d int)

//go:noescape
func scaleAddRowsAVX512(y []float32, scale float32, c, x []float32, stride int)

//go:noescape
func gdnStepAVX512(S, k, q, v, o []float32, decay, beta float32)

//go:noescape
func siluMulAVX512(dst, g, u []float32)

//go:noescape
func f16ToF32AVX512(dst []float32, src []uint16)

// archKernels returns the implementations this CPU runs, best last: AVX2 with FMA and
// F16C (every x86-64 since Haswell and Zen), and where AVX-512 F is present a set that
// uses it for the kernels that gain from it and keeps the AVX2 ones for the rest.
func archKernels() []*kernels {
	x := cpu.X86
	if !(x.HasAVX2 && x.HasFMA && x.HasF16C) {
		return nil
	}
	avx2 := &kernels{
		name:         "avx2",
		dot:          dotAVX2,
		dotRows:      dotRowsAVX2,
		scal:         scalAVX2,
		scaleAddRows: scaleAddRowsAVX2,
		gdnStep:      gdnStepAVX2,
		sumSquares:   sumSquaresAVX2,
		scaleMul:     scaleMulAVX2,
		siluMul:      siluMulAVX2,
		gateMul:      gateMulAVX2,
		f16ToF32:     f16ToF32F16C,
		dequantInt8:  dequantInt8AVX2,
		dotBF16:      dotBF16AVX2,
		expSub:       expSubAVX2,
		dequantQ4:    dequantQ4X86,
		max:          maxX86,
		dot6F32:      dot6x2F32AVX2,
		dot6F16:      dot6x2F16AVX2,
		axpy6F32:     axpy6F32AVX2,
		axpy6F16:     axpy6F16AVX2,
		scoreInt8:    scoreInt8AVX2,
		scoreQ4:      scoreQ4AVX2,
		axpy6Int8:    axpy6Int8AVX2,
		axpy6Q4:      axpy6Q4AVX2,
	}
	if !x.HasAVX512F {
		return []*kernels{avx2}
	}
	avx512 := *avx2
	avx512.name = "avx512"
	avx512.dot = dotAVX512
	avx512.dotRows = dotRowsAVX512
	avx512.scaleAddRows = scaleAddRowsAVX512
	avx512.gdnStep = gdnStepAVX512
	avx512.siluMul = siluMulAVX512
	avx512.f16ToF32 = f16ToF32AVX512
	avx512.expSub = expSubAVX512
	avx512.max = maxAVX512
	avx512.dequantInt8 = dequantInt8AVX512
	avx512.dequantQ4 = dequantQ4X86_512
	avx512.dot6F32 = dot6x4F32AVX512
	avx512.dot6F16 = dot6x4F16AVX512
	avx512.axpy6F32 = axpy6F32AVX512
	avx512.axpy6F16 = axpy6F16AVX512
	avx512.axpy6Int8 = axpy6Int8AVX512
	avx512.axpy6Q4 = axpy6Q4AVX512
	if x.HasAVX512VNNI && x.HasAVX512BW {
		// Integer attention scores by VPDPBUSD (VPSRLW on a ZMM is AVX-512 BW); else
		// the AVX2 ones.
		avx512.scoreInt8 = scoreInt8AVX512
		avx512.scoreQ4 = scoreQ4AVX512
	}
	return []*kernels{avx2, &avx512}
}
