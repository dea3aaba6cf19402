//go:build !(linux && amd64) || purego

package ternary

import "sync/atomic"

// amxUse reports whether MatMulInterleavedRange takes AMX: only on Linux on amd64.
func amxUse(ilvFamily, int) bool { return false }

func matMulInterleavedAMX(*Interleaved, *Q8Batch, int, []float32, int, int) {
	panic("ternary: AMX is not built on this platform")
}

func matMulInterleaved3AMX(*Interleaved3, *Q8Batch, int, []float32, int, int) {
	panic("ternary: AMX is not built on this platform")
}

func amxAvailable() bool { return false }

// amxOff is SetAMX's setting, kept where AMX is not built for its API alone.
var amxOff atomic.Bool
