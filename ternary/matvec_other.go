//go:build !(amd64 || arm64) || purego

package ternary

// No SIMD kernels on this platform (or in a purego build): the generic ones run.

func archQ8Kernels() []q8Kernel { return nil }

func archQ8Rows(id q8ID, w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32) {
	panic("ternary: no SIMD Q8 kernels on this platform")
}

func archMemReaders() []memReader { return nil }

func archQ8TilePairs(id q8ID) int { return q8TilePairsMax }

func archQ8TileWidth(id q8ID) int { return q8TileVMax }

func archQ8Tile(id q8ID, rp, tv int, a *q8TileArgs) {
	panic("ternary: no SIMD Q8 kernels on this platform")
}

func archQ8Repack(dst *byte, stride int, a, b *byte, ng int) bool { return false }

func archPTQ1Native(id q8ID) bool { return false }

func archQ8RowsPTQ1(id q8ID, w *byte, rowBytes, rows, nb8 int, t *int8, d *float32, sum *int32, y *float32) {
	panic("ternary: no SIMD PTQ1_0 kernels on this platform")
}

func archQ8RepackPTQ1(id q8ID, dst *byte, stride int, a, b *byte, ng int) bool { return false }
