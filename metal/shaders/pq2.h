// The PQ2_0 dot-product core shared by the matrix-vector kernels (matvec.metal) and the
// fused GDN decode kernel (gdn.metal): the activation layout in threadgroup memory and
// the per-lane dot over 16-code words with the unorm unpack and the −1 fold.

#ifndef BONSAI_PQ2_H
#define BONSAI_PQ2_H

#include "common.h"

// Rotation (when rotate: signs, FWHT per block, 1/√blk) of xs[0, n), which the calling
// thread filled at indices tid, tid+nt, ...; then the dot layout: each group of 16 values
// permuted so that float4 j holds elements j, j+4, j+8, j+12, and the group sums in gs.
inline void mv_finish(threadgroup float* xs, threadgroup float* gs, uint k0, uint n, bool rotate,
                      device const float* signs, uint blk, float scale, uint tid, uint nt) {
    if (rotate) {
        for (uint i = tid; i < n; i += nt) xs[i] = xs[i] * signs[k0 + i];
        tg_fwht(xs, n, blk, tid, nt);
    } else {
        threadgroup_barrier(mem_flags::mem_threadgroup);
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

#endif  // BONSAI_PQ2_H
