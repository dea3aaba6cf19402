//go:build linux && (amd64 || arm64)

package mslemu

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// sgmSource exercises the simdgroup matrix functions: each SIMD group of the threadgroup
// computes D = A·B + C for 8×8 tiles read with a stride, an origin and optionally
// transposed, from device memory and through threadgroup memory, and stores D the same
// ways; a half variant converts on load; the negative kernels break Metal's rules.
const sgmSource = `#include <metal_stdlib>
using namespace metal;

struct SGArgs {
    uint epr;      // elements per row of the source matrices
    uint ox, oy;   // origin of the tiles
    uint ta, tb;   // transpose A / B on load
    uint ts;       // transpose D on store
    uint pad0, pad1;
};

// One SIMD group per 8×8 product g: A_g, B_g, C_g are 16×16 row-major blocks (epr 16).
kernel void sgm_mac(constant SGArgs& a [[buffer(0)]],
                    device const float* A [[buffer(1)]],
                    device const float* B [[buffer(2)]],
                    device const float* C [[buffer(3)]],
                    device float* D [[buffer(4)]],
                    device float* P [[buffer(5)]],
                    ushort sg [[simdgroup_index_in_threadgroup]],
                    ushort tid [[thread_index_in_threadgroup]]) {
    threadgroup float bt[2][16 * 16];
    const uint n = 16u * 16u;
    for (uint i = tid; i < 2u * n; i += 64u) bt[i / n][i % n] = B[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 ma, mb, mc, md;
    simdgroup_load(ma, A + sg * n, a.epr, ulong2(a.ox, a.oy), a.ta != 0u);
    simdgroup_load(mb, &bt[sg][0], a.epr, ulong2(a.ox, a.oy), a.tb != 0u);
    simdgroup_load(mc, C + sg * n, a.epr, ulong2(a.ox, a.oy), false);
    simdgroup_multiply_accumulate(md, ma, mb, mc);
    simdgroup_store(md, D + sg * n, a.epr, ulong2(a.ox, a.oy), a.ts != 0u);
    // A·B alone, from a filled matrix and the diagonal constructor: P = (A·B + 2)·I·3.
    simdgroup_float8x8 two = make_filled_simdgroup_matrix<float, 8>(2.0f);
    simdgroup_float8x8 prod, out;
    simdgroup_multiply(prod, ma, mb);
    simdgroup_multiply_accumulate(prod, prod, simdgroup_float8x8(1.0f), two);
    simdgroup_multiply(out, prod, simdgroup_float8x8(3.0f));
    simdgroup_store(out, P + sg * 64u, 8);
}

// Half tiles times float tiles (llama.cpp's mixed kernel_mul_mm), half output.
kernel void sgm_half(device const half* A [[buffer(0)]],
                     device const float* B [[buffer(1)]],
                     device half* D [[buffer(2)]]) {
    simdgroup_half8x8 ma;
    simdgroup_float8x8 mb;
    simdgroup_half8x8 md = make_filled_simdgroup_matrix<half, 8>(half(0.0f));
    simdgroup_load(ma, A);
    simdgroup_load(mb, B);
    simdgroup_multiply_accumulate(md, ma, mb, md);
    simdgroup_store(md, D);
}

// Only some lanes reach the load: undefined on a GPU, an error here.
kernel void sgm_partial(device const float* A [[buffer(0)]],
                        device float* D [[buffer(1)]],
                        ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 m;
    if (lane < 16u) {
        simdgroup_load(m, A);
        simdgroup_store(m, D);
    }
}

// The lanes pass different pointers.
kernel void sgm_divergent(device const float* A [[buffer(0)]],
                          device float* D [[buffer(1)]],
                          ushort lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 m;
    simdgroup_load(m, A + (lane & 1u));
    simdgroup_store(m, D);
}

// A default-constructed matrix is undefined: the emulator makes it NaN.
kernel void sgm_uninit(device float* D [[buffer(0)]]) {
    simdgroup_float8x8 m;
    simdgroup_store(m, D);
}
`

var sgmKernels = []string{"sgm_mac", "sgm_half", "sgm_partial", "sgm_divergent", "sgm_uninit"}

// tile reads an 8×8 tile of a row-major matrix with epr elements per row at (ox, oy),
// transposed when tr: the emulator's documented simdgroup_load semantics.
func tile(src []float32, epr, ox, oy int, tr bool) [8][8]float64 {
	var m [8][8]float64
	for r := 0; r < 8; r++ {
		for c := 0; c < 8; c++ {
			if tr {
				m[r][c] = float64(src[(oy+c)*epr+ox+r])
			} else {
				m[r][c] = float64(src[(oy+r)*epr+ox+c])
			}
		}
	}
	return m
}

func TestSimdgroupMatrix(t *testing.T) {
	d := newDevice(t)
	compileMu.Lock()
	ps, err := d.Compile(map[string]string{"sgm.metal": sgmSource}, nil, sgmKernels)
	compileMu.Unlock()
	require.NoError(t, err)
	rng := rand.New(rand.NewSource(11))
	const n = 16 * 16
	for _, tc := range []struct {
		name           string
		ox, oy         int
		ta, tb, ts     bool
		integer        bool
		wantMaxAbsDiff float64
	}{
		{name: "plain, small integers (exact)", integer: true},
		{name: "origin (3, 5), A transposed", ox: 3, oy: 5, ta: true, integer: true},
		{name: "origin (8, 1), B transposed, store transposed", ox: 8, oy: 1, tb: true, ts: true, integer: true},
		{name: "random floats, all transposed", ox: 2, oy: 7, ta: true, tb: true, ts: true, wantMaxAbsDiff: 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gen := func() []float32 {
				v := make([]float32, 2*n)
				for i := range v {
					if tc.integer {
						v[i] = float32(rng.Intn(15) - 7)
					} else {
						v[i] = float32(rng.NormFloat64())
					}
				}
				return v
			}
			A, B, C := gen(), gen(), gen()
			D := make([]float32, 2*n)
			for i := range D {
				D[i] = -99 // untouched places must stay
			}
			P := make([]float32, 2*64)
			b2u := func(b bool) uint32 {
				if b {
					return 1
				}
				return 0
			}
			args := []uint32{16, uint32(tc.ox), uint32(tc.oy), b2u(tc.ta), b2u(tc.tb), b2u(tc.ts), 0, 0}
			ab := make([]byte, 4*len(args))
			for i, w := range args {
				copy(ab[4*i:], u32bytes(w))
			}
			bD, bP := bufF32(t, d, D), bufF32(t, d, P)
			require.NoError(t, run(t, d, ps["sgm_mac"], gpu.Size{1, 1, 1}, gpu.Size{64, 1, 1},
				gpu.Arg{Index: 0, Bytes: ab}, gpu.Arg{Index: 1, Buf: bufF32(t, d, A)}, gpu.Arg{Index: 2, Buf: bufF32(t, d, B)},
				gpu.Arg{Index: 3, Buf: bufF32(t, d, C)}, gpu.Arg{Index: 4, Buf: bD}, gpu.Arg{Index: 5, Buf: bP}))
			gotD, gotP := f32s(bD), f32s(bP)
			maxDiff := 0.0
			for g := 0; g < 2; g++ {
				a := tile(A[g*n:], 16, tc.ox, tc.oy, tc.ta)
				b := tile(B[g*n:], 16, tc.ox, tc.oy, tc.tb)
				c := tile(C[g*n:], 16, tc.ox, tc.oy, false)
				written := map[int]bool{}
				for r := 0; r < 8; r++ {
					for col := 0; col < 8; col++ {
						want, ab := c[r][col], 0.0
						for k := 0; k < 8; k++ {
							want += a[r][k] * b[k][col]
							ab += a[r][k] * b[k][col]
						}
						at := (tc.oy+r)*16 + tc.ox + col
						if tc.ts {
							at = (tc.oy+col)*16 + tc.ox + r
						}
						written[at] = true
						maxDiff = math.Max(maxDiff, math.Abs(float64(gotD[g*n+at])-want))
						wantP := (ab + 2) * 3
						maxDiff = math.Max(maxDiff, math.Abs(float64(gotP[g*64+r*8+col])-wantP)/math.Max(1, math.Abs(wantP)))
					}
				}
				for i := 0; i < n; i++ {
					if !written[i] {
						require.Equal(t, float32(-99), gotD[g*n+i], "group %d: element %d outside the stored tile changed", g, i)
					}
				}
			}
			if tc.integer {
				require.Zero(t, maxDiff, "integer products must be exact")
			} else {
				require.LessOrEqual(t, maxDiff, tc.wantMaxAbsDiff)
			}
			t.Logf("max |Δ| vs float64: %.3g", maxDiff)
		})
	}

	t.Run("half times float", func(t *testing.T) {
		A := make([]byte, 2*64)
		B := make([]float32, 64)
		af := make([]float64, 64)
		for i := range B {
			h := float16.Fromfloat32(float32(rng.NormFloat64()))
			af[i] = float64(h.Float32())
			A[2*i], A[2*i+1] = byte(h.Bits()), byte(h.Bits()>>8)
			B[i] = float32(rng.NormFloat64())
		}
		bA := bufBytes(t, d, len(A))
		copy(bA.Contents(), A)
		bD := bufBytes(t, d, 2*64)
		require.NoError(t, run(t, d, ps["sgm_half"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1},
			gpu.Arg{Index: 0, Buf: bA}, gpu.Arg{Index: 1, Buf: bufF32(t, d, B)}, gpu.Arg{Index: 2, Buf: bD}))
		got := u16s(bD)
		for r := 0; r < 8; r++ {
			for c := 0; c < 8; c++ {
				want := 0.0
				for k := 0; k < 8; k++ {
					want += af[r*8+k] * float64(B[k*8+c])
				}
				g := float64(float16.Frombits(got[r*8+c]).Float32())
				// one half rounding of a float sum: within 2^-10 relative plus the float error
				require.InDelta(t, want, g, math.Abs(want)/1024+1e-4, "element (%d, %d)", r, c)
			}
		}
	})

	A := bufF32(t, d, make([]float32, 128))
	D := bufBytes(t, d, 4*128)
	contains(t, run(t, d, ps["sgm_partial"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: A}, gpu.Arg{Index: 1, Buf: D}),
		"only some lanes")
	contains(t, run(t, d, ps["sgm_divergent"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: A}, gpu.Arg{Index: 1, Buf: D}),
		"different arguments")
	// a threadgroup of 40 threads: the second SIMD group has 8 lanes
	contains(t, run(t, d, ps["sgm_divergent"], gpu.Size{1, 1, 1}, gpu.Size{40, 1, 1}, gpu.Arg{Index: 0, Buf: A}, gpu.Arg{Index: 1, Buf: D}),
		"simdgroup")
	require.NoError(t, run(t, d, ps["sgm_uninit"], gpu.Size{1, 1, 1}, gpu.Size{32, 1, 1}, gpu.Arg{Index: 0, Buf: D}))
	for i, v := range f32s(D)[:64] {
		require.True(t, math.IsNaN(float64(v)), "element %d of an uninitialised matrix is %v, want NaN", i, v)
	}
}
