// The tiled ternary GEMM of a prefill chunk: Y[t][n] = Σ_k W[n][k]·X[t][k] for T rotated
// activation rows X (T × K, row-major) and a PQ2_0 matrix W (N rows of K), Y T × N.
//
// Geometry: grid (⌈N/GM⌉, ⌈T/GT⌉), GEMM_THREADS threads. Per step of 64 inputs the
// threadgroup decodes its GM rows' codes once into threadgroup memory, (c−1)·d, loads
// the GT activation rows' slice, and each thread accumulates a 2 × 2 tile of outputs:
// every weight is converted once per threadgroup and reused over GT tokens.

#include "common.h"

#define GM 32
#define GT 32
#define GK 64
#define GEMM_THREADS 256

kernel void gemm(constant GemmArgs& a [[buffer(0)]],
                 device const ushort* w [[buffer(1)]],
                 device const float* x [[buffer(2)]],
                 device float* y [[buffer(3)]],
                 uint2 tgp [[threadgroup_position_in_grid]],
                 uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float ws[GM][GK + 1];
    threadgroup float xs[GT][GK + 1];
    const uint K = a.K;
    const uint rs = (K / 128u) * PQ_US;
    const uint n0 = tgp.x * GM;
    const uint t0 = tgp.y * GT;
    // The thread's 2 × 2 output tile: rows tr, tr+16; tokens tt, tt+16.
    const uint tr = tid % 16u;
    const uint tt = tid / 16u;
    float acc00 = 0.0f, acc01 = 0.0f, acc10 = 0.0f, acc11 = 0.0f;
    // Loader roles: 8 threads per row (or token), 8 values each.
    const uint lrow = tid / 8u;
    const uint lseg = tid % 8u;
    for (uint k0 = 0; k0 < K; k0 += GK) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        {
            uint n = n0 + lrow;
            if (n < a.N) {
                device const ushort* b = w + n * rs + (k0 / 128u) * PQ_US;
                float d = half_bits(b[0]);
                // codes k0%128 + 8·lseg .. +7: one ushort.
                uint j = (k0 % 128u) + 8u * lseg;
                uint q = uint(b[1u + j / 8u]);
                for (uint e = 0; e < 8u; e++) {
                    ws[lrow][8u * lseg + e] = float(int((q >> (2u * e)) & 3u) - 1) * d;
                }
            } else {
                for (uint e = 0; e < 8u; e++) ws[lrow][8u * lseg + e] = 0.0f;
            }
            uint t = t0 + lrow;
            for (uint e = 0; e < 8u; e++) {
                xs[lrow][8u * lseg + e] = t < a.T ? x[t * K + k0 + 8u * lseg + e] : 0.0f;
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < GK; k++) {
            float w0 = ws[tr][k];
            float w1 = ws[tr + 16u][k];
            float x0 = xs[tt][k];
            float x1 = xs[tt + 16u][k];
            acc00 += w0 * x0;
            acc01 += w0 * x1;
            acc10 += w1 * x0;
            acc11 += w1 * x1;
        }
    }
    uint r0 = n0 + tr, r1 = n0 + tr + 16u;
    uint s0 = t0 + tt, s1 = t0 + tt + 16u;
    if (r0 < a.N && s0 < a.T) y[s0 * a.N + r0] = acc00;
    if (r0 < a.N && s1 < a.T) y[s1 * a.N + r0] = acc01;
    if (r1 < a.N && s0 < a.T) y[s0 * a.N + r1] = acc10;
    if (r1 < a.N && s1 < a.T) y[s1 * a.N + r1] = acc11;
}
