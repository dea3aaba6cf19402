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

// Decodes elements j0..j0+15 (j0 a multiple of 16) of a PTQ1_0 block into out[i·stride]
// as (t−1)·d, eight at a time: each half is one trit n of eight consecutive bytes — of
// qs[0..15] for j0 < 80 (trit j0/16), of qs[16..23] after (trits 0..4 in turn) — except
// elements 120..127, the four trits of qh[0] and qh[1]. Four bytes are decoded at once
// in two 16-bit lanes, as ptq1_word_dot does.
inline void ptq1_decode16(device const uchar* blk, uint j0, float d, threadgroup float* out, uint stride) {
    // 16-bit reads, as the matvec's: a block is 2-byte aligned wherever the file puts it.
    device const ushort* us = (device const ushort*)blk;
    for (uint h = 0; h < 2u; h++) {
        threadgroup float* o = out + 8u * h * stride;
        uint idx = j0 < 80u ? 0u : (j0 - 80u) / 8u + h;  // the half's place after qs[0..15]
        if (j0 >= 80u && idx == 5u) {
            uint v = uint(us[12]);
            v = (v & 0xFFu) | ((v & 0xFF00u) << 8);  // qh[0], qh[1] in the two lanes
            for (uint n = 0; n < 4u; n++) {
                uint v3 = v + (v << 1);
                uint t = (v3 >> 8) & 0x00030003u;
                o[(2u * n) * stride] = float(int(t & 3u) - 1) * d;
                o[(2u * n + 1u) * stride] = float(int(t >> 16) - 1) * d;
                v = v3 & 0x00FF00FFu;
            }
            continue;
        }
        uint n = j0 < 80u ? j0 / 16u : idx;
        uint w0 = j0 < 80u ? 2u * h : 4u;  // first word of the eight bytes
        for (uint q = 0; q < 2u; q++) {
            uint word = uint(us[2u * (w0 + q)]) | (uint(us[2u * (w0 + q) + 1u]) << 16);
            uint lo = word & 0x00FF00FFu;
            uint hi = (word >> 8) & 0x00FF00FFu;
            for (uint i = 0; i < n; i++) {
                lo = (lo + (lo << 1)) & 0x00FF00FFu;
                hi = (hi + (hi << 1)) & 0x00FF00FFu;
            }
            uint tl = ((lo + (lo << 1)) >> 8) & 0x00030003u;
            uint th = ((hi + (hi << 1)) >> 8) & 0x00030003u;
            threadgroup float* oq = o + 4u * q * stride;
            oq[0] = float(int(tl & 3u) - 1) * d;
            oq[stride] = float(int(th & 3u) - 1) * d;
            oq[2u * stride] = float(int(tl >> 16) - 1) * d;
            oq[3u * stride] = float(int(th >> 16) - 1) * d;
        }
    }
}

template <int FMT>
inline void gemm_impl(constant GemmArgs& a, device const uchar* w, device const float* x, device float* y,
                      threadgroup float* ws, threadgroup float4* xs4, threadgroup float* stage,
                      uint2 tgp, ushort tid, ushort sg, ushort lane) {
    // The token tile is a float4 array (xs4) because the loader stores whole float4s:
    // Metal aligns a threadgroup array to its element type only, so a float array may sit
    // at any multiple of 4 bytes, where float4 stores are misaligned (undefined behaviour;
    // the emulator's strict alignment mode checks it). Reading it as floats is fine.
    threadgroup float* xs = (threadgroup float*)xs4;
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
            if (FMT == FMT_PQ2) {
                for (uint i = 0; i < 16u; i++) {
                    ws[(lk + i) * GEMM_NR + lr] = float(int(block_code<FMT_PQ2>(blk, j0 + i)) - 1) * d;
                }
            } else {
                ptq1_decode16(blk, j0, d, ws + lk * GEMM_NR + lr, GEMM_NR);
            }
        } else {
            for (uint i = 0; i < 16u; i++) ws[(lk + i) * GEMM_NR + lr] = 0.0f;
        }
        if (t < T) {
            device const float4* src = (device const float4*)(x + t * K + k0 + lk);
            threadgroup float4* dst = xs4 + (lr * GEMM_NK + lk) / 4u;
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
    threadgroup float4 xs4[GEMM_NT * GEMM_NK / 4];
    threadgroup float stage[64 * (GEMM_THREADS / 32)];
    gemm_impl<FMT_PQ2>(a, w, x, y, ws, xs4, stage, tgp, tid, sg, lane);
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
    threadgroup float4 xs4[GEMM_NT * GEMM_NK / 4];
    threadgroup float stage[64 * (GEMM_THREADS / 32)];
    gemm_impl<FMT_PTQ1>(a, w, x, y, ws, xs4, stage, tgp, tid, sg, lane);
}
