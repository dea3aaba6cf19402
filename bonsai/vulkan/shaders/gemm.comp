#version 450
// The ternary GEMM of a prefill chunk (gemm.metal): Y[t][n] = Σ_k W[n][k]·X[t][k] for T
// rotated activation rows X (T × K, row-major float) and a ternary matrix W (N rows of K,
// PQ2_0 or PTQ1_0 as stored), Y T × N. FMT (a -D on the glslc line) selects the format:
// 0 is gemm (PQ2_0), 1 gemm_t1 (PTQ1_0).
//
// Args (GemmArgs): w0 K, w1 N, w2 T. Buffers: 1 the matrix (16-bit aligned), 2 X, 3 Y.
//
// Geometry, as the Metal kernel's: grid (⌈N/GEMM_NR⌉, ⌈T/GEMM_NT⌉), GEMM_THREADS = 128
// threads; a workgroup owns a tile of 64 weight rows × 64 tokens. GLSL (with Debian's
// glslc) has no SIMD-group matrices, so the tile is a plain shared-memory GEMM: per step
// of GEMM_NK inputs every thread decodes 16 codes of one of the tile's rows, (c−1)·d,
// and copies 16 inputs of one of its tokens into shared memory (both k-major), then
// each thread accumulates an 8-token × 4-row register tile over the step. Threads
// 16·ty + tx own tokens 8ty..8ty+7 and rows 4tx..4tx+3 of the tile.
//
// Numerics: float32 throughout (the weights' values (c−1)·d are exact in float); each
// output sums its products in k order.

#include "common.glsl"

#define GEMM_NR 64u
#define GEMM_NT 64u
#define GEMM_NK 32u

#ifndef FMT
#define FMT FMT_PQ2
#endif

// ws[k·16 + r/4][r%4] = W[n0 + r][k0 + k]; xs[k·16 + t/4][t%4] = X[t0 + t][k0 + k].
shared vec4 ws[GEMM_NK * (GEMM_NR / 4u)];
shared vec4 xs[GEMM_NK * (GEMM_NT / 4u)];

// Byte b of the block whose first 16-bit word is word base.
uint blk_byte(U16 w, uint base, uint b) {
    return (uint(w.v[base + b / 2u]) >> (8u * (b & 1u))) & 0xFFu;
}

void main() {
    const uint K = ARGU(0), N = ARGU(1), T = ARGU(2);
    U16 w = U16(ADDR(1));
    F32 x = F32(ADDR(2));
    F32 y = F32(ADDR(3));
#if FMT == FMT_PQ2
    const uint us = PQ_US;
#else
    const uint us = PTQ1_US;
#endif
    const uint rowWords = (K / 128u) * us;
    const uint n0 = gl_WorkGroupID.x * GEMM_NR;
    const uint t0 = gl_WorkGroupID.y * GEMM_NT;
    // Loader roles: thread TID fills 16 values of weight row TID/2 and of token TID/2.
    const uint lr = TID / 2u;
    const uint lk = 16u * (TID % 2u);
    const uint ln = n0 + lr;
    const uint lt = t0 + lr;
    // Compute roles.
    const uint tx = TID % 16u;  // rows 4tx..4tx+3
    const uint ty = TID / 16u;  // tokens 8ty..8ty+7
    vec4 acc[8];
    for (uint i = 0u; i < 8u; i++) acc[i] = vec4(0.0);

    for (uint k0 = 0u; k0 < K; k0 += GEMM_NK) {
        barrier();
        // The weights: 16 codes of row ln, elements j0..j0+15 of its block.
        float wv[16];
        if (ln < N) {
            const uint base = ln * rowWords + (k0 / 128u) * us;
            const uint j0 = k0 % 128u + lk;
#if FMT == FMT_PQ2
            const float d = half_bits(uint(w.v[base]));
            // Codes j0..j0+15: bytes 2 + j0/4 .., i.e. words 1 + j0/8 and the next.
            const uint c = uint(w.v[base + 1u + j0 / 8u]) | (uint(w.v[base + 2u + j0 / 8u]) << 16);
            for (uint i = 0u; i < 16u; i++) wv[i] = float(int((c >> (2u * i)) & 3u) - 1) * d;
#else
            const float d = half_bits(uint(w.v[base + 13u]));
            // Elements 0–79 are trit j/16 of qs[j%16]; 80–119 trit (j−80)/8 of
            // qs[16 + (j−80)%8]; 120–127 trit (j−120)/2 of qh[(j−120)%2] (formats.h).
            for (uint i = 0u; i < 16u; i++) {
                const uint j = j0 + i;
                uint b, n;
                if (j < 80u) {
                    b = j % 16u;
                    n = j / 16u;
                } else if (j < 120u) {
                    b = 16u + (j - 80u) % 8u;
                    n = (j - 80u) / 8u;
                } else {
                    b = 24u + (j - 120u) % 2u;
                    n = (j - 120u) / 2u;
                }
                uint p = 1u;
                for (uint q = 0u; q < n; q++) p *= 3u;
                const uint code = (((blk_byte(w, base, b) * p) & 255u) * 3u) >> 8;
                wv[i] = float(int(code) - 1) * d;
            }
#endif
        } else {
            for (uint i = 0u; i < 16u; i++) wv[i] = 0.0;
        }
        for (uint i = 0u; i < 16u; i++) ws[(lk + i) * (GEMM_NR / 4u) + lr / 4u][lr % 4u] = wv[i];
        // The inputs: 16 of token lt.
        if (lt < T) {
            const uint xb = lt * K + k0 + lk;
            for (uint i = 0u; i < 16u; i++) xs[(lk + i) * (GEMM_NT / 4u) + lr / 4u][lr % 4u] = x.v[xb + i];
        } else {
            for (uint i = 0u; i < 16u; i++) xs[(lk + i) * (GEMM_NT / 4u) + lr / 4u][lr % 4u] = 0.0;
        }
        barrier();
        for (uint kk = 0u; kk < GEMM_NK; kk++) {
            const vec4 wr = ws[kk * (GEMM_NR / 4u) + tx];
            const vec4 xa = xs[kk * (GEMM_NT / 4u) + 2u * ty];
            const vec4 xb = xs[kk * (GEMM_NT / 4u) + 2u * ty + 1u];
            acc[0] = fma(vec4(xa.x), wr, acc[0]);
            acc[1] = fma(vec4(xa.y), wr, acc[1]);
            acc[2] = fma(vec4(xa.z), wr, acc[2]);
            acc[3] = fma(vec4(xa.w), wr, acc[3]);
            acc[4] = fma(vec4(xb.x), wr, acc[4]);
            acc[5] = fma(vec4(xb.y), wr, acc[5]);
            acc[6] = fma(vec4(xb.z), wr, acc[6]);
            acc[7] = fma(vec4(xb.w), wr, acc[7]);
        }
    }

    const uint nb = n0 + 4u * tx;
    for (uint i = 0u; i < 8u; i++) {
        const uint t = t0 + 8u * ty + i;
        if (t >= T) break;
        for (uint j = 0u; j < 4u; j++) {
            if (nb + j < N) y.v[t * N + nb + j] = acc[i][j];
        }
    }
}
