//go:build arm64 && !purego

package ternary

import "golang.org/x/sys/cpu"

// The arm64 kernels live in matvec_arm64.s: one with SDOT (the "dotprod" extension,
// FEAT_DotProd: Apple M1 and later, Cortex-A76/Neoverse N1 and later) and a plain
// ARMv8.0 NEON one (SMLAL into int16, SADDLP to int32) for cores without it. Codes 0…3
// are valid signed bytes, so both multiply signed by signed.

//go:noescape
func q8RowsNEONDot(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32)

//go:noescape
func q8RowsNEON(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32)

//go:noescape
func memReadNEON(p *byte, n int) uint64

// archQ8Kernels returns the SIMD kernels this CPU can run, the preferred one last.
func archQ8Kernels() []q8Kernel {
	ks := []q8Kernel{{"neon", q8NEON}}
	if cpu.ARM64.HasASIMDDP {
		ks = append(ks, q8Kernel{"neondot", q8NEONDot})
	}
	return ks
}

// archQ8Rows runs SIMD kernel id.
func archQ8Rows(id q8ID, w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32) {
	switch id {
	case q8NEON:
		q8RowsNEON(w, rowBytes, rows, nb8, q, d, sum, y)
	case q8NEONDot:
		q8RowsNEONDot(w, rowBytes, rows, nb8, q, d, sum, y)
	default:
		panic("ternary: no Q8 kernel " + q8Sel.name)
	}
}

// archMemReaders returns the streaming-read kernels this CPU can run.
func archMemReaders() []memReader {
	return []memReader{{"neon", memReadNEON, 128}}
}
