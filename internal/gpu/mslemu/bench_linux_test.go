//go:build linux && (amd64 || arm64)

package mslemu

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// BenchmarkMatvec: the naive one-thread-per-row float matvec, 5120x5120 (bytes: weights).
func BenchmarkMatvec(b *testing.B) {
	const rows, k = 5120, 5120
	d := newDevice(b)
	ps := pipelines(b, d)
	bw, bx, by := bufF32(b, d, make([]float32, rows*k)), bufF32(b, d, make([]float32, k)), bufBytes(b, d, 4*rows)
	args := []gpu.Arg{{Index: 0, Buf: bw}, {Index: 1, Buf: bx}, {Index: 2, Buf: by}, {Index: 3, Bytes: u32bytes(k)}}
	b.SetBytes(4 * rows * k)
	for i := 0; i < b.N; i++ {
		require.NoError(b, run(b, d, ps["matvec"], gpu.Size{rows / 256, 1, 1}, gpu.Size{256, 1, 1}, args...))
	}
}

// BenchmarkBarrierReduction: 1024 threadgroups of 256 threads, 9 barriers each: the cost
// of fibers and barriers (per op: one dispatch).
func BenchmarkBarrierReduction(b *testing.B) {
	const groups = 1024
	d := newDevice(b)
	ps := pipelines(b, d)
	a, out := bufF32(b, d, make([]float32, 256*groups)), bufBytes(b, d, 4*groups)
	for i := 0; i < b.N; i++ {
		require.NoError(b, run(b, d, ps["reduce_tg"], gpu.Size{groups, 1, 1}, gpu.Size{256, 1, 1}, gpu.Arg{Index: 0, Buf: a}, gpu.Arg{Index: 1, Buf: out}))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(groups*256*10), "ns/thread-switch")
}

// BenchmarkSIMDSum: simd_ops (20 SIMD-group functions per thread) on 1024 threadgroups of 64.
func BenchmarkSIMDOps(b *testing.B) {
	const groups = 1024
	d := newDevice(b)
	ps := pipelines(b, d)
	x, out := bufF32(b, d, make([]float32, 64*groups)), bufBytes(b, d, 4*20*64*groups)
	for i := 0; i < b.N; i++ {
		require.NoError(b, run(b, d, ps["simd_ops"], gpu.Size{groups, 1, 1}, gpu.Size{64, 1, 1}, gpu.Arg{Index: 0, Buf: x}, gpu.Arg{Index: 1, Buf: out}))
	}
}
