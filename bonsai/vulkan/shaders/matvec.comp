#version 450
// The ternary matrix-vector product of a decode step (matvec.metal): PQ2_0 (FMT=0:
// mv_*) or PTQ1_0 read as stored (FMT=1: mv_*_t1), with the activation site fused into
// its prologue (MODE), over one to three weight sets that share the input (qkv+z,
// q+k+v, gate+up).
//
// Geometry: workgroups of NSG virtual SIMD-groups; each SIMD-group computes MV_R rows per
// pass (a row group is NSG·MV_R consecutive rows of the sets' concatenated rows). When
// the input fits one chunk (K ≤ chunk) every workgroup builds the transformed input once
// in shared memory and then walks row groups tg, tg+ntg, ...; otherwise the input is
// streamed in chunks of whole Hadamard blocks and each workgroup owns one row group.
//
// The product converts four 2-bit codes per instruction: unpackUnorm4x8 of
// (w >> 2j) & 0x03030303 yields c/255 for the codes j, j+4, j+8, j+12 of a 16-code word,
// and the ternary map's −1 folds into one subtraction per word:
//   Σ x·(c−1) = 255·Σ x·(c/255) − Σ x,
// with Σ x over the word's 16 activations precomputed per chunk (pq2.glsl).
//
// Prologue modes:
//   PLAIN (0)  the input is used as given (already rotated);
//   FWHT (1)   signs, FWHT per block, 1/√n;
//   NORM (2)   x (+ delta) → RMSNorm·gain → signs, FWHT, 1/√n; workgroup 0 may write
//              the new residual x + delta and the normed vector before its rotation;
//              with MVF_CONV (a GDN layer's decode token) set 0's rows — attn_qkv, row
//              c channel c — go through their causal convolution and SiLU as they are
//              written (conv_step; buffers 13, the weights, and 14, the state);
//   SWIGLU (3) silu(gate)·up → signs, FWHT, 1/√n.
//
// Buffers (MVArgs at 0): 1 in0, 2 in1, 3 xout, 4 gain, 5 signs, 6..8 w0..w2 (16-bit
// words), 9..11 y0..y2, 12 hout, 13 conv weights, 14 conv state. Shared memory: the
// chunk and its group sums, sized by constant 1 (BONSAI_MAXCH), which the host sets per
// variant to the chunk its products use. Every sg_* call and barrier is reached by every thread
// the same number of times (the row-group loop's trip count is the workgroup's).

#include "common.glsl"

#define MODE_PLAIN 0
#define MODE_FWHT 1
#define MODE_NORM 2
#define MODE_SWIGLU 3

#ifndef MODE
#error "MODE undefined"
#endif
#ifndef FMT
#error "FMT undefined"
#endif

// MVArgs words.
#define A_K ARGU(0)
#define A_N0 ARGU(1)
#define A_N1 ARGU(2)
#define A_N2 ARGU(3)
#define A_CONVK ARGU(4)
#define A_NGROUPS ARGU(5)
#define A_BLK ARGU(6)
#define A_CHUNK ARGU(7)
#define A_SCALE ARGF(8)
#define A_EPS ARGF(9)
#define A_FLAGS ARGU(10)

#define MVF_DELTA 1u
#define MVF_XOUT 2u
#define MVF_HOUT 4u
#define MVF_CONV 8u

shared float xs[BONSAI_MAXCH];
shared float gs[BONSAI_MAXCH / 16u];

#include "pq2.glsl"

// The natural-order values of the activation at k ∈ [k0, k0+n), before any rotation,
// into xs[0, n).
void mv_stage(uint k0, uint n, float inv, bool wh) {
    F32 in0 = F32(ADDR(1));
    F32 in1 = F32(ADDR(2));
    for (uint i = TID; i < n; i += NT) {
        uint k = k0 + i;
        float v;
#if MODE == MODE_NORM
        float x = in0.v[k];
        if ((A_FLAGS & MVF_DELTA) != 0u) x += in1.v[k];
        v = x * inv;
        v = v * F32(ADDR(4)).v[k];
        if (wh) F32(ADDR(12)).v[k] = v;
#elif MODE == MODE_SWIGLU
        v = silu(in0.v[k]) * in1.v[k];
#else
        v = in0.v[k];
#endif
        xs[i] = v;
    }
}

void main() {
    const uint tg = gl_WorkGroupID.x;
    const uint ntg = gl_NumWorkGroups.x;
    const uint K = A_K;
    const uint n0 = A_N0, n1 = A_N1;
    const uint total = n0 + n1 + A_N2;
    const uint rs = (K / 128u) * (FMT == FMT_PQ2 ? PQ_US : PTQ1_US);
    const bool rotate = MODE != MODE_PLAIN;
    const bool pq2 = FMT == FMT_PQ2;
    const uint chunk = A_CHUNK;
    const uint ngroups = A_NGROUPS;
    F32 signs = F32(ADDR(5));
    float inv = 1.0;
#if MODE == MODE_NORM
    {
        F32 in0 = F32(ADDR(1));
        F32 in1 = F32(ADDR(2));
        F32 xout = F32(ADDR(3));
        float s = 0.0;
        bool wr = (A_FLAGS & MVF_XOUT) != 0u && tg == 0u;
        for (uint k = TID; k < K; k += NT) {
            float x = in0.v[k];
            if ((A_FLAGS & MVF_DELTA) != 0u) x += in1.v[k];
            if (wr) xout.v[k] = x;
            s += x * x;
        }
        s = tg_sum(s);
        inv = 1.0 / sqrt(s / float(K) + A_EPS);
    }
#endif
    const uint nch = (K + chunk - 1u) / chunk;
    const bool wh = MODE == MODE_NORM && (A_FLAGS & MVF_HOUT) != 0u && tg == 0u;
    uint64_t rows[MV_R];
    bool ok[MV_R];
    float acc[MV_R];
    if (nch == 1u) {
        mv_stage(0u, K, inv, wh);
        mv_finish(0u, K, rotate, pq2, signs, A_BLK, A_SCALE);
    }
    for (uint rg = tg; rg < ngroups; rg += ntg) {
        uint r0 = (rg * NSG + SG) * MV_R;
        for (uint r = 0u; r < MV_R; r++) {
            uint row = r0 + r;
            ok[r] = row < total;
            uint set = mv_set(row, n0, n1);
            uint lr = mv_local(row, set, n0, n1);
            uint64_t wp = ADDR(6u + set);
            rows[r] = ok[r] ? wp + uint64_t(lr) * uint64_t(rs) * 2ul : ADDR(6);
            acc[r] = 0.0;
        }
        if (nch == 1u) {
            if (pq2) mv_dot(acc, rows, ok, 0u, K / 16u);
            else mv_dot_t1(acc, rows, ok, 0u, K / 128u);
        } else {
            for (uint c = 0u; c < nch; c++) {
                uint k0 = c * chunk;
                uint n = min(chunk, K - k0);
                barrier();
                mv_stage(k0, n, inv, wh);
                mv_finish(k0, n, rotate, pq2, signs, A_BLK, A_SCALE);
                if (pq2) mv_dot(acc, rows, ok, k0 / 128u, n / 16u);
                else mv_dot_t1(acc, rows, ok, k0 / 128u, n / 128u);
            }
        }
        for (uint r = 0u; r < MV_R; r++) {
            float v = sg_sum(acc[r]);
            uint row = r0 + r;
            if (LANE == 0u && row < total) {
                uint set = mv_set(row, n0, n1);
                uint lr = mv_local(row, set, n0, n1);
#if MODE == MODE_NORM
                // A GDN layer's attn_qkv channel lr: its convolution state is this
                // thread's alone (one row, one writer).
                if (set == 0u && (A_FLAGS & MVF_CONV) != 0u) v = conv_step(lr, v, A_CONVK, n0, F32(ADDR(13)), F32(ADDR(14)));
#endif
                F32(ADDR(9u + set)).v[lr] = v;
            }
        }
    }
}
