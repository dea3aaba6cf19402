// The ternary GEMM of a prefill chunk: Y[t][n] = Σ_k W[n][k]·X[t][k] for T rotated
// activation rows X (T × K, row-major float) and a ternary matrix W (N rows of K, PQ2_0 or
// PTQ1_0 as stored), Y T × N, on SIMD-group matrices (8×8, float), organised as
// llama.cpp's kernel_mul_mm and MLX's steel GEMMs are.
//
// Geometry: grid (⌈N/GEMM_NR⌉, ⌈T/GEMM_NT⌉), GEMM_THREADS threads (4 SIMD groups). A
// threadgroup owns a tile of 64 weight rows × 64 tokens — a whole 64-token chunk — so
// every code is decoded once per chunk. Per step of GEMM_NK inputs it decodes its rows'
// codes, (c−1)·d, into threadgroup memory (k-major, so that the weights are the right-hand
// operand without a transposed load), copies the tokens' slice of X beside them, and
// each SIMD group multiplies a 32-token × 32-row quarter of the tile: 4 × 4 accumulators,
// 16 multiply-accumulates per 8 inputs. The output is written once, straight from the
// accumulators where the quarter lies inside Y, through an 8×8 staging tile otherwise.
//
// Numerics: float32 throughout, as the scalar kernel it replaces (the weights' values
// (c−1)·d are exact in float; the sums run in another order, as any float GEMM's).

#include "common.h"
#include "formats.h"

#define GEMM_NR 64
#define GEMM_NT 64
#define GEMM_NK 32
#define GEMM_THREADS 128

template <int FMT>
inline void gemm_impl(constant GemmArgs& a, device const uchar* w, device const float* x, device float* y,
                      threadgroup float* ws, threadgroup float* xs, threadgroup float* stage,
                      uint2 tgp, ushort tid, ushort sg, ushort lane) {
    const uint K = a.K, N = a.N, T = a.T;
    const uint bb = FMT == FMT_PQ2 ? PQ2_BLOCK : PTQ1_BLOCK;
    const uint rowBytes = (K / 128u) * bb;
    const uint n0 = tgp.x * GEMM_NR;
    const uint t0 = tgp.y * GEMM_NT;
    // Loader roles: thread tid fills 16 values of weight row tid/2 and of token tid/2.
    const uint lr = uint(tid) / 2u;
    const uint lk = 16u * (uint(tid) % 2u);
    const uint n = n0 + lr;
    const uint t = t0 + lr;
    // This SIMD group's quarter: rows rb.., tokens tb.. of the tile.
    const uint rb = 32u * (uint(sg) % 2u);
    const uint tb = 32u * (uint(sg) / 2u);
    const bool active = n0 + rb < N && t0 + tb < T;
    simdgroup_float8x8 mc[4][4];
    for (uint i = 0; i < 4u; i++) {
        for (uint j = 0; j < 4u; j++) mc[i][j] = make_filled_simdgroup_matrix<float, 8>(0.0f);
    }
    for (uint k0 = 0; k0 < K; k0 += GEMM_NK) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (n < N) {
            device const uchar* blk = w + n * rowBytes + (k0 / 128u) * bb;
            float d = block_scale(blk, FMT == FMT_PQ2 ? 0u : PTQ1_SCALE);
            uint j0 = k0 % 128u + lk;
            for (uint i = 0; i < 16u; i++) {
                ws[(lk + i) * GEMM_NR + lr] = float(int(block_code<FMT>(blk, j0 + i)) - 1) * d;
            }
        } else {
            for (uint i = 0; i < 16u; i++) ws[(lk + i) * GEMM_NR + lr] = 0.0f;
        }
        if (t < T) {
            device const float4* src = (device const float4*)(x + t * K + k0 + lk);
            threadgroup float4* dst = (threadgroup float4*)(xs + lr * GEMM_NK + lk);
            for (uint i = 0; i < 4u; i++) dst[i] = src[i];
        } else {
            for (uint i = 0; i < 16u; i++) xs[lr * GEMM_NK + lk + i] = 0.0f;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (active) {
            for (uint kk = 0; kk < GEMM_NK; kk += 8u) {
                simdgroup_float8x8 ma[4];
                simdgroup_float8x8 mb[4];
                for (uint i = 0; i < 4u; i++) {
                    simdgroup_load(ma[i], xs + (tb + 8u * i) * GEMM_NK + kk, GEMM_NK);
                }
                for (uint j = 0; j < 4u; j++) {
                    simdgroup_load(mb[j], ws + kk * GEMM_NR + rb + 8u * j, GEMM_NR);
                }
                for (uint i = 0; i < 4u; i++) {
                    for (uint j = 0; j < 4u; j++) simdgroup_multiply_accumulate(mc[i][j], ma[i], mb[j], mc[i][j]);
                }
            }
        }
    }
    if (!active) return;
    if (n0 + rb + 32u <= N && t0 + tb + 32u <= T) {
        device float* out = y + (t0 + tb) * N + n0 + rb;
        for (uint i = 0; i < 4u; i++) {
            for (uint j = 0; j < 4u; j++) simdgroup_store(mc[i][j], out + 8u * i * N + 8u * j, N);
        }
        return;
    }
    // An edge quarter: each 8×8 block through the SIMD group's staging tile, then the
    // lanes write the elements that lie inside Y.
    threadgroup float* st = stage + 64u * uint(sg);
    for (uint i = 0; i < 4u; i++) {
        for (uint j = 0; j < 4u; j++) {
            simdgroup_store(mc[i][j], st, 8);
            simdgroup_barrier(mem_flags::mem_threadgroup);
            for (uint e = lane; e < 64u; e += 32u) {
                uint tt = t0 + tb + 8u * i + e / 8u;
                uint nn = n0 + rb + 8u * j + e % 8u;
                if (tt < T && nn < N) y[tt * N + nn] = st[e];
            }
            simdgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
}

kernel void gemm(constant GemmArgs& a [[buffer(0)]],
                 device const uchar* w [[buffer(1)]],
                 device const float* x [[buffer(2)]],
                 device float* y [[buffer(3)]],
                 uint2 tgp [[threadgroup_position_in_grid]],
                 ushort tid [[thread_index_in_threadgroup]],
                 ushort sg [[simdgroup_index_in_threadgroup]],
                 ushort lane [[thread_index_in_simdgroup]]) {
    threadgroup float ws[GEMM_NK * GEMM_NR];
    threadgroup float xs[GEMM_NT * GEMM_NK];
    threadgroup float stage[64 * (GEMM_THREADS / 32)];
    gemm_impl<FMT_PQ2>(a, w, x, y, ws, xs, stage, tgp, tid, sg, lane);
}

kernel void gemm_t1(constant GemmArgs& a [[buffer(0)]],
                    device const uchar* w [[buffer(1)]],
                    device const float* x [[buffer(2)]],
                    device float* y [[buffer(3)]],
                    uint2 tgp [[threadgroup_position_in_grid]],
                    ushort tid [[thread_index_in_threadgroup]],
                    ushort sg [[simdgroup_index_in_threadgroup]],
                    ushort lane [[thread_index_in_simdgroup]]) {
    threadgroup float ws[GEMM_NK * GEMM_NR];
    threadgroup float xs[GEMM_NT * GEMM_NK];
    threadgroup float stage[64 * (GEMM_THREADS / 32)];
    gemm_impl<FMT_PTQ1>(a, w, x, y, ws, xs, stage, tgp, tid, sg, lane);
}
