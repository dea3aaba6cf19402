// The ternary dot-product cores shared by the matrix-vector kernels (matvec.metal) and the
// fused GDN decode kernel (gdn.metal): the activation layout in threadgroup memory and
// the per-lane dots — PQ2_0 over 16-code words with the unorm unpack and the −1 fold,
// PTQ1_0 over the 32-bit words of its base-3 bytes.

#ifndef BONSAI_PQ2_H
#define BONSAI_PQ2_H

#include "common.h"
#include "formats.h"

// Rotation (when rotate: signs, FWHT per block, 1/√blk) of xs[0, n), which the calling
// thread filled at indices tid, tid+nt, ...; then, for PQ2_0 (pq2), the dot layout: each
// group of 16 values permuted so that float4 j holds elements j, j+4, j+8, j+12, and the
// group sums in gs. PTQ1_0's dot reads the values in natural order; gs then holds, per
// 128-value block, the sums of the values each of its seven 32-bit words covers
// (ptq1_word_dot), for the −1 fold.
inline void mv_finish(threadgroup float* xs, threadgroup float* gs, uint k0, uint n, bool rotate, bool pq2,
                      device const float* signs, uint blk, float scale, uint tid, uint nt) {
    if (rotate) {
        for (uint i = tid; i < n; i += nt) xs[i] = xs[i] * signs[k0 + i];
        tg_fwht(xs, n, blk, tid, nt);
    } else {
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (!pq2) {
        if (rotate) {
            for (uint i = tid; i < n; i += nt) xs[i] = xs[i] * scale;
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        for (uint g = tid; g < (n / 128u) * 7u; g += nt) {
            threadgroup const float* xb = xs + 128u * (g / 7u);
            uint u = g % 7u;
            float s = 0.0f;
            if (u < 6u) {
                uint off = u < 4u ? 4u * u : 80u + 4u * (u - 4u);
                uint st = u < 4u ? 16u : 8u;
                for (uint m = 0; m < 5u; m++) {
                    for (uint i = 0; i < 4u; i++) s += xb[off + st * m + i];
                }
            } else {
                for (uint i = 120u; i < 128u; i++) s += xb[i];
            }
            gs[g] = s;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        return;
    }
    for (uint g = tid; g < n / 16u; g += nt) {
        float t[16];
        float s = 0.0f;
        for (uint j = 0; j < 16u; j++) {
            float v = xs[16u * g + j];
            if (rotate) v = v * scale;
            t[j] = v;
            s += v;
        }
        for (uint j = 0; j < 4u; j++) {
            for (uint m = 0; m < 4u; m++) {
                xs[16u * g + 4u * j + m] = t[4u * m + j];
            }
        }
        gs[g] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

// Which weight set a row of the concatenation belongs to, and its row within the set.
inline uint mv_set(uint row, uint n0, uint n1) { return row < n0 ? 0u : (row < n0 + n1 ? 1u : 2u); }
inline uint mv_local(uint row, uint set, uint n0, uint n1) {
    return set == 0u ? row : (set == 1u ? row - n0 : row - n0 - n1);
}

// Adds this lane's share of MV_R rows' dot products over one chunk (PQ2_0 blocks kb0..,
// nw 16-code words) to acc. rows[r] points at row r's first ushort, or is unused when
// !ok[r].
inline void mv_dot(thread float* acc, device const ushort* thread* rows, thread const bool* ok,
                   uint kb0, uint nw, threadgroup const float4* x4, threadgroup const float* gs,
                   uint lane) {
    for (uint w = lane; w < nw; w += 32u) {
        float4 xa = x4[4u * w];
        float4 xb = x4[4u * w + 1u];
        float4 xc = x4[4u * w + 2u];
        float4 xd = x4[4u * w + 3u];
        float g = gs[w];
        uint boff = (kb0 + (w >> 3)) * PQ_US;
        uint wo = boff + (w & 7u) * 2u + 1u;
        for (uint r = 0; r < MV_R; r++) {
            if (!ok[r]) continue;
            device const ushort* p = rows[r];
            float d = half_bits(p[boff]);
            uint q = uint(p[wo]) | (uint(p[wo + 1u]) << 16);
            float s = dot(unpack_unorm4x8_to_float(q & 0x03030303u), xa);
            s += dot(unpack_unorm4x8_to_float((q >> 2) & 0x03030303u), xb);
            s += dot(unpack_unorm4x8_to_float((q >> 4) & 0x03030303u), xc);
            s += dot(unpack_unorm4x8_to_float((q >> 6) & 0x03030303u), xd);
            acc[r] += d * (255.0f * s - g);
        }
    }
}

// Σ x·(t−1) over the trits of one 32-bit word of a PTQ1_0 block, x the block's 128
// values in natural order and g their sum over the word's elements. Word u (0..6) of a
// block holds qs[4u..4u+3] for u < 6 — for u < 4 the trits n of bytes m = 4u..4u+3 are
// elements 16n + m, for u = 4, 5 those of bytes 16 + m (m = 4(u−4)..+3) elements
// 80 + 8n + m — and for u = 6 qh[0], qh[1] (trit n of qh[h] is element 120 + 2n + h) and
// the scale. Four bytes are decoded at once in two 16-bit lanes: trit n of b is
// (uint8(b·3ⁿ)·3) >> 8, uint8(b·3ⁿ) reached by multiplying by 3 (a shift and an add: a
// 32-bit multiply is slow on the GPU) and truncating n times. The four trits go back
// into the bytes they came from, so that, as in PQ2_0's dot, one unorm unpack converts
// them and the −1 folds into one subtraction per word: Σ x·(t−1) = 255·Σ x·(t/255) − g.
inline float ptq1_word_dot(uint q, uint u, threadgroup const float* xb, float g) {
    float s = 0.0f;
    if (u < 6u) {
        uint off = u < 4u ? 4u * u : 80u + 4u * (u - 4u);
        uint st = u < 4u ? 16u : 8u;
        uint lo = q & 0x00FF00FFu;         // bytes 0 and 2
        uint hi = (q >> 8) & 0x00FF00FFu;  // bytes 1 and 3
        for (uint n = 0; n < 5u; n++) {
            uint l3 = lo + (lo << 1);
            uint h3 = hi + (hi << 1);
            uint t = ((l3 >> 8) & 0x00030003u) | ((h3 & 0x03000300u));
            s += dot(unpack_unorm4x8_to_float(t), *(threadgroup const float4*)(xb + off + st * n));
            lo = l3 & 0x00FF00FFu;
            hi = h3 & 0x00FF00FFu;
        }
    } else {
        // qh[0], qh[1] in the two lanes; trits n and n+1 of both make elements
        // 120 + 2n .. 123 + 2n.
        uint v = (q & 0xFFu) | ((q & 0xFF00u) << 8);
        for (uint n = 0; n < 4u; n += 2u) {
            uint v3 = v + (v << 1);
            uint a = (v3 >> 8) & 0x00030003u;  // trit n: qh[0] in bits 0–1, qh[1] in 16–17
            v = v3 & 0x00FF00FFu;
            v3 = v + (v << 1);
            uint b = (v3 >> 8) & 0x00030003u;  // trit n + 1
            v = v3 & 0x00FF00FFu;
            uint t = (a & 3u) | ((a >> 8) & 0x300u) | ((b & 3u) << 16) | ((b & 0x30000u) << 8);
            s += dot(unpack_unorm4x8_to_float(t), *(threadgroup const float4*)(xb + 120u + 2u * n));
        }
    }
    return 255.0f * s - g;
}

// mv_dot for PTQ1_0: adds this lane's share of MV_R rows' dot products over nb blocks
// from block kb0 (x holds their values from index 0, natural order; gs their word sums,
// mv_finish). A row is 14 ushorts per block; lane w takes word w % 7 of block w / 7.
inline void mv_dot_t1(thread float* acc, device const ushort* thread* rows, thread const bool* ok,
                      uint kb0, uint nb, threadgroup const float* x, threadgroup const float* gs, uint lane) {
    const uint nw = nb * 7u;
    for (uint w = lane; w < nw; w += 32u) {
        uint blk = w / 7u;
        uint u = w % 7u;
        threadgroup const float* xb = x + 128u * blk;
        float g = gs[w];
        uint bo = (kb0 + blk) * PTQ1_US;
        for (uint r = 0; r < MV_R; r++) {
            if (!ok[r]) continue;
            device const ushort* p = rows[r];
            float d = half_bits(p[bo + 13u]);
            uint q = uint(p[bo + 2u * u]) | (uint(p[bo + 2u * u + 1u]) << 16);
            acc[r] += d * ptq1_word_dot(q, u, xb, g);
        }
    }
}

#endif  // BONSAI_PQ2_H
