//go:build amd64 && !purego

package ternary

import "golang.org/x/sys/cpu"

// The amd64 kernels live in matvec_amd64.s. All need AVX2, FMA and F16C (the fp16
// scales are converted with VCVTPH2PS); the AVX-512 ones also need AVX512F/BW/VL and
// VNNI (VPDPBUSD), and the preferred one GFNI as well (VGF2P8AFFINEQB extracts a code
// plane in one instruction: Ice Lake, Sapphire Rapids, Zen 4 and later; Cascade Lake has
// VNNI without GFNI). x/sys/cpu reports the AVX-512 features only when the OS saves the
// ZMM state.

//go:noescape
func q8RowsAVX2(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32)

//go:noescape
func q8RowsAVX512(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32)

//go:noescape
func q8RowsGFNI(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32)

//go:noescape
func memReadAVX2(p *byte, n int) uint64

//go:noescape
func memReadAVX512(p *byte, n int) uint64

func hasAVX2() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C }

func hasAVX512VNNI() bool {
	return hasAVX2() && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL &&
		cpu.X86.HasAVX512VNNI
}

// archQ8Kernels returns the SIMD kernels this CPU can run, the preferred one last.
func archQ8Kernels() []q8Kernel {
	var ks []q8Kernel
	if hasAVX2() {
		ks = append(ks, q8Kernel{"avx2", q8AVX2})
	}
	if hasAVX512VNNI() {
		ks = append(ks, q8Kernel{"avx512vnni", q8AVX512})
	}
	if hasAVX512VNNI() && cpu.X86.HasAVX512GFNI {
		ks = append(ks, q8Kernel{"avx512gfni", q8GFNI})
	}
	return ks
}

// archQ8Rows runs SIMD kernel id.
func archQ8Rows(id q8ID, w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32) {
	switch id {
	case q8AVX2:
		q8RowsAVX2(w, rowBytes, rows, nb8, q, d, sum, y)
	case q8AVX512:
		q8RowsAVX512(w, rowBytes, rows, nb8, q, d, sum, y)
	case q8GFNI:
		q8RowsGFNI(w, rowBytes, rows, nb8, q, d, sum, y)
	default:
		panic("ternary: no Q8 kernel " + q8Sel.name)
	}
}

// archMemReaders returns the streaming-read kernels (xor of every 64-bit word of p[:n])
// this CPU can run, the widest last, and the byte multiple n must be.
func archMemReaders() []memReader {
	var rs []memReader
	if hasAVX2() {
		rs = append(rs, memReader{"avx2", memReadAVX2, 128})
	}
	if hasAVX512VNNI() {
		rs = append(rs, memReader{"avx512", memReadAVX512, 256})
	}
	return rs
}
