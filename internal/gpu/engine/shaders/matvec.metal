// The ternary matrix-vector product of a decode step (PQ2_0: mv_*; PTQ1_0, read as
// stored: mv_*_t1), with the activation site fused into
// its prologue, over one to three weight sets that share the input (qkv+z, q+k+v,
// gate+up): one dispatch per site instead of a site kernel plus one per matrix.
//
// Threadgroup memory: the chunk (BONSAI_MAXCH floats) and its group sums (1/16 of it),
// compiled once per chunk size the model's products use (kernels.go, geometry.mv).
//
// Geometry: threadgroups of nsg SIMD-groups; each SIMD-group computes MV_R rows per pass
// (a row group is nsg·MV_R consecutive rows of the sets' concatenated rows). When the
// input fits one chunk (K ≤ args.chunk) every threadgroup builds the transformed input
// once in threadgroup memory and then walks row groups tg, tg+ntg, ... (the host caps
// the threadgroup count, bounding the redundant prologues); otherwise the input is
// streamed in chunks of whole Hadamard blocks and each threadgroup owns one row group
// (grid = ngroups).
//
// The product converts four 2-bit codes per instruction: unpack_unorm4x8_to_float of
// (w >> 2j) & 0x03030303 yields c/255 for the codes j, j+4, j+8, j+12 of a 16-code
// word, and the ternary map's −1 folds into one subtraction per word:
//   Σ x·(c−1) = 255·Σ x·(c/255) − Σ x,
// with Σ x over the word's 16 activations precomputed per chunk.
//
// Prologue modes:
//   PLAIN  the input is used as given (already rotated);
//   FWHT   signs, FWHT per block, 1/√n (o_proj and ssm_out read the mixer output);
//   NORM   x (+ delta) → RMSNorm·gain → signs, FWHT, 1/√n; threadgroup 0 may write
//          the new residual x + delta (the residual stream ping-pongs between buffers)
//          and the normed vector before its rotation (for the GDN alpha/beta); with
//          MVF_CONV (a GDN layer's decode token) the rows of set 0 — attn_qkv, whose
//          row c is channel c — go through their causal convolution and SiLU as they
//          are written (conv_step; buffers 13, the weights, and 14, the state), so that
//          gdn_decode reads its q, k and v ready;
//   SWIGLU silu(gate)·up → signs, FWHT, 1/√n (ffn_down).

#include "common.h"
#include "pq2.h"

#define MODE_PLAIN 0
#define MODE_FWHT 1
#define MODE_NORM 2
#define MODE_SWIGLU 3

// The natural-order values of the activation at k ∈ [k0, k0+n), before any rotation.
template <int MODE>
inline void mv_stage(constant MVArgs& a, uint k0, uint n, float inv,
                     device const float* in0, device const float* in1, device const float* gain,
                     device float* hout, bool wh, threadgroup float* xs, uint tid, uint nt) {
    for (uint i = tid; i < n; i += nt) {
        uint k = k0 + i;
        float v;
        if (MODE == MODE_NORM) {
            float x = in0[k];
            if ((a.flags & MVF_DELTA) != 0u) x += in1[k];
            v = x * inv;
            v = v * gain[k];
            if (wh) hout[k] = v;
        } else if (MODE == MODE_SWIGLU) {
            v = silu(in0[k]) * in1[k];
        } else {
            v = in0[k];
        }
        xs[i] = v;
    }
}

template <int MODE, int FMT>
inline void mv_impl(constant MVArgs& a,
                    device const float* in0, device const float* in1, device float* xout,
                    device const float* gain, device const float* signs,
                    device const ushort* w0, device const ushort* w1, device const ushort* w2,
                    device float* y0, device float* y1, device float* y2, device float* hout,
                    device const float* convw, device float* conv,
                    threadgroup float4* xs4, threadgroup float* gs, threadgroup float* red,
                    uint tg, uint ntg, uint tid, uint nt, uint lane, uint sg, uint nsg) {
    threadgroup float* xs = (threadgroup float*)xs4;
    const uint K = a.K;
    const uint total = a.n0 + a.n1 + a.n2;
    const uint rs = (K / 128u) * (FMT == FMT_PQ2 ? PQ_US : PTQ1_US);
    const bool rotate = MODE != MODE_PLAIN;
    const bool pq2 = FMT == FMT_PQ2;
    float inv = 1.0f;
    if (MODE == MODE_NORM) {
        float s = 0.0f;
        bool wr = (a.flags & MVF_XOUT) != 0u && tg == 0u;
        for (uint k = tid; k < K; k += nt) {
            float x = in0[k];
            if ((a.flags & MVF_DELTA) != 0u) x += in1[k];
            if (wr) xout[k] = x;
            s += x * x;
        }
        s = tg_sum(s, red, lane, sg, nsg);
        inv = 1.0f / sqrt(s / float(K) + a.eps);
    }
    const uint nch = (K + a.chunk - 1u) / a.chunk;
    const bool wh = MODE == MODE_NORM && (a.flags & MVF_HOUT) != 0u && tg == 0u;
    device const ushort* rows[MV_R];
    bool ok[MV_R];
    float acc[MV_R];
    if (nch == 1u) {
        mv_stage<MODE>(a, 0u, K, inv, in0, in1, gain, hout, wh, xs, tid, nt);
        mv_finish(xs, gs, 0u, K, rotate, pq2, signs, a.blk, a.scale, tid, nt);
    }
    for (uint rg = tg; rg < a.ngroups; rg += ntg) {
        uint r0 = (rg * nsg + sg) * MV_R;
        for (uint r = 0; r < MV_R; r++) {
            uint row = r0 + r;
            ok[r] = row < total;
            uint set = mv_set(row, a.n0, a.n1);
            uint lr = mv_local(row, set, a.n0, a.n1);
            device const ushort* wp = set == 0u ? w0 : (set == 1u ? w1 : w2);
            rows[r] = ok[r] ? wp + lr * rs : w0;
            acc[r] = 0.0f;
        }
        if (nch == 1u) {
            if (pq2) mv_dot(acc, rows, ok, 0u, K / 16u, xs4, gs, lane);
            else mv_dot_t1(acc, rows, ok, 0u, K / 128u, xs, gs, lane);
        } else {
            for (uint c = 0; c < nch; c++) {
                uint k0 = c * a.chunk;
                uint n = min(a.chunk, K - k0);
                threadgroup_barrier(mem_flags::mem_threadgroup);
                mv_stage<MODE>(a, k0, n, inv, in0, in1, gain, hout, wh, xs, tid, nt);
                mv_finish(xs, gs, k0, n, rotate, pq2, signs, a.blk, a.scale, tid, nt);
                if (pq2) mv_dot(acc, rows, ok, k0 / 128u, n / 16u, xs4, gs, lane);
                else mv_dot_t1(acc, rows, ok, k0 / 128u, n / 128u, xs, gs, lane);
            }
        }
        for (uint r = 0; r < MV_R; r++) {
            float v = simd_sum(acc[r]);
            uint row = r0 + r;
            if (lane == 0u && row < total) {
                uint set = mv_set(row, a.n0, a.n1);
                uint lr = mv_local(row, set, a.n0, a.n1);
                device float* yp = set == 0u ? y0 : (set == 1u ? y1 : y2);
                // A GDN layer's attn_qkv channel lr: its convolution state is this
                // thread's alone (one row, one writer).
                if (MODE == MODE_NORM && set == 0u && (a.flags & MVF_CONV) != 0u) v = conv_step(lr, v, a.convK, a.n0, convw, conv);
                yp[lr] = v;
            }
        }
    }
}

kernel void mv_plain(constant MVArgs& a [[buffer(0)]],
                     device const float* in0 [[buffer(1)]],
                     device const float* in1 [[buffer(2)]],
                     device float* xout [[buffer(3)]],
                     device const float* gain [[buffer(4)]],
                     device const float* signs [[buffer(5)]],
                     device const ushort* w0 [[buffer(6)]],
                     device const ushort* w1 [[buffer(7)]],
                     device const ushort* w2 [[buffer(8)]],
                     device float* y0 [[buffer(9)]],
                     device float* y1 [[buffer(10)]],
                     device float* y2 [[buffer(11)]],
                     device float* hout [[buffer(12)]],
                     device const float* convw [[buffer(13)]],
                     device float* conv [[buffer(14)]],
                     uint tg [[threadgroup_position_in_grid]],
                     uint ntg [[threadgroups_per_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint nt [[threads_per_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]],
                     uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float4 xs4[BONSAI_MAXCH / 4];
    threadgroup float gs[BONSAI_MAXCH / 16];
    threadgroup float red[MAX_SG];
    mv_impl<MODE_PLAIN, FMT_PQ2>(a, in0, in1, xout, gain, signs, w0, w1, w2, y0, y1, y2, hout, convw, conv, xs4, gs, red,
                        tg, ntg, tid, nt, lane, sg, nsg);
}

kernel void mv_fwht(constant MVArgs& a [[buffer(0)]],
                    device const float* in0 [[buffer(1)]],
                    device const float* in1 [[buffer(2)]],
                    device float* xout [[buffer(3)]],
                    device const float* gain [[buffer(4)]],
                    device const float* signs [[buffer(5)]],
                    device const ushort* w0 [[buffer(6)]],
                    device const ushort* w1 [[buffer(7)]],
                    device const ushort* w2 [[buffer(8)]],
                    device float* y0 [[buffer(9)]],
                    device float* y1 [[buffer(10)]],
                    device float* y2 [[buffer(11)]],
                    device float* hout [[buffer(12)]],
                    device const float* convw [[buffer(13)]],
                    device float* conv [[buffer(14)]],
                    uint tg [[threadgroup_position_in_grid]],
                    uint ntg [[threadgroups_per_grid]],
                    uint tid [[thread_index_in_threadgroup]],
                    uint nt [[threads_per_threadgroup]],
                    uint lane [[thread_index_in_simdgroup]],
                    uint sg [[simdgroup_index_in_threadgroup]],
                    uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float4 xs4[BONSAI_MAXCH / 4];
    threadgroup float gs[BONSAI_MAXCH / 16];
    threadgroup float red[MAX_SG];
    mv_impl<MODE_FWHT, FMT_PQ2>(a, in0, in1, xout, gain, signs, w0, w1, w2, y0, y1, y2, hout, convw, conv, xs4, gs, red,
                       tg, ntg, tid, nt, lane, sg, nsg);
}

kernel void mv_norm(constant MVArgs& a [[buffer(0)]],
                    device const float* in0 [[buffer(1)]],
                    device const float* in1 [[buffer(2)]],
                    device float* xout [[buffer(3)]],
                    device const float* gain [[buffer(4)]],
                    device const float* signs [[buffer(5)]],
                    device const ushort* w0 [[buffer(6)]],
                    device const ushort* w1 [[buffer(7)]],
                    device const ushort* w2 [[buffer(8)]],
                    device float* y0 [[buffer(9)]],
                    device float* y1 [[buffer(10)]],
                    device float* y2 [[buffer(11)]],
                    device float* hout [[buffer(12)]],
                    device const float* convw [[buffer(13)]],
                    device float* conv [[buffer(14)]],
                    uint tg [[threadgroup_position_in_grid]],
                    uint ntg [[threadgroups_per_grid]],
                    uint tid [[thread_index_in_threadgroup]],
                    uint nt [[threads_per_threadgroup]],
                    uint lane [[thread_index_in_simdgroup]],
                    uint sg [[simdgroup_index_in_threadgroup]],
                    uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float4 xs4[BONSAI_MAXCH / 4];
    threadgroup float gs[BONSAI_MAXCH / 16];
    threadgroup float red[MAX_SG];
    mv_impl<MODE_NORM, FMT_PQ2>(a, in0, in1, xout, gain, signs, w0, w1, w2, y0, y1, y2, hout, convw, conv, xs4, gs, red,
                       tg, ntg, tid, nt, lane, sg, nsg);
}

kernel void mv_swiglu(constant MVArgs& a [[buffer(0)]],
                      device const float* in0 [[buffer(1)]],
                      device const float* in1 [[buffer(2)]],
                      device float* xout [[buffer(3)]],
                      device const float* gain [[buffer(4)]],
                      device const float* signs [[buffer(5)]],
                      device const ushort* w0 [[buffer(6)]],
                      device const ushort* w1 [[buffer(7)]],
                      device const ushort* w2 [[buffer(8)]],
                      device float* y0 [[buffer(9)]],
                      device float* y1 [[buffer(10)]],
                      device float* y2 [[buffer(11)]],
                      device float* hout [[buffer(12)]],
                      device const float* convw [[buffer(13)]],
                      device float* conv [[buffer(14)]],
                      uint tg [[threadgroup_position_in_grid]],
                      uint ntg [[threadgroups_per_grid]],
                      uint tid [[thread_index_in_threadgroup]],
                      uint nt [[threads_per_threadgroup]],
                      uint lane [[thread_index_in_simdgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]],
                      uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float4 xs4[BONSAI_MAXCH / 4];
    threadgroup float gs[BONSAI_MAXCH / 16];
    threadgroup float red[MAX_SG];
    mv_impl<MODE_SWIGLU, FMT_PQ2>(a, in0, in1, xout, gain, signs, w0, w1, w2, y0, y1, y2, hout, convw, conv, xs4, gs, red,
                         tg, ntg, tid, nt, lane, sg, nsg);
}

kernel void mv_plain_t1(constant MVArgs& a [[buffer(0)]],
                        device const float* in0 [[buffer(1)]],
                        device const float* in1 [[buffer(2)]],
                        device float* xout [[buffer(3)]],
                        device const float* gain [[buffer(4)]],
                        device const float* signs [[buffer(5)]],
                        device const ushort* w0 [[buffer(6)]],
                        device const ushort* w1 [[buffer(7)]],
                        device const ushort* w2 [[buffer(8)]],
                        device float* y0 [[buffer(9)]],
                        device float* y1 [[buffer(10)]],
                        device float* y2 [[buffer(11)]],
                        device float* hout [[buffer(12)]],
                        device const float* convw [[buffer(13)]],
                        device float* conv [[buffer(14)]],
                        uint tg [[threadgroup_position_in_grid]],
                        uint ntg [[threadgroups_per_grid]],
                        uint tid [[thread_index_in_threadgroup]],
                        uint nt [[threads_per_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]],
                        uint sg [[simdgroup_index_in_threadgroup]],
                        uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float4 xs4[BONSAI_MAXCH / 4];
    threadgroup float gs[BONSAI_MAXCH / 16];
    threadgroup float red[MAX_SG];
    mv_impl<MODE_PLAIN, FMT_PTQ1>(a, in0, in1, xout, gain, signs, w0, w1, w2, y0, y1, y2, hout, convw, conv, xs4, gs, red,
                        tg, ntg, tid, nt, lane, sg, nsg);
}

kernel void mv_fwht_t1(constant MVArgs& a [[buffer(0)]],
                       device const float* in0 [[buffer(1)]],
                       device const float* in1 [[buffer(2)]],
                       device float* xout [[buffer(3)]],
                       device const float* gain [[buffer(4)]],
                       device const float* signs [[buffer(5)]],
                       device const ushort* w0 [[buffer(6)]],
                       device const ushort* w1 [[buffer(7)]],
                       device const ushort* w2 [[buffer(8)]],
                       device float* y0 [[buffer(9)]],
                       device float* y1 [[buffer(10)]],
                       device float* y2 [[buffer(11)]],
                       device float* hout [[buffer(12)]],
                       device const float* convw [[buffer(13)]],
                       device float* conv [[buffer(14)]],
                       uint tg [[threadgroup_position_in_grid]],
                       uint ntg [[threadgroups_per_grid]],
                       uint tid [[thread_index_in_threadgroup]],
                       uint nt [[threads_per_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]],
                       uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float4 xs4[BONSAI_MAXCH / 4];
    threadgroup float gs[BONSAI_MAXCH / 16];
    threadgroup float red[MAX_SG];
    mv_impl<MODE_FWHT, FMT_PTQ1>(a, in0, in1, xout, gain, signs, w0, w1, w2, y0, y1, y2, hout, convw, conv, xs4, gs, red,
                       tg, ntg, tid, nt, lane, sg, nsg);
}

kernel void mv_norm_t1(constant MVArgs& a [[buffer(0)]],
                       device const float* in0 [[buffer(1)]],
                       device const float* in1 [[buffer(2)]],
                       device float* xout [[buffer(3)]],
                       device const float* gain [[buffer(4)]],
                       device const float* signs [[buffer(5)]],
                       device const ushort* w0 [[buffer(6)]],
                       device const ushort* w1 [[buffer(7)]],
                       device const ushort* w2 [[buffer(8)]],
                       device float* y0 [[buffer(9)]],
                       device float* y1 [[buffer(10)]],
                       device float* y2 [[buffer(11)]],
                       device float* hout [[buffer(12)]],
                       device const float* convw [[buffer(13)]],
                       device float* conv [[buffer(14)]],
                       uint tg [[threadgroup_position_in_grid]],
                       uint ntg [[threadgroups_per_grid]],
                       uint tid [[thread_index_in_threadgroup]],
                       uint nt [[threads_per_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]],
                       uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float4 xs4[BONSAI_MAXCH / 4];
    threadgroup float gs[BONSAI_MAXCH / 16];
    threadgroup float red[MAX_SG];
    mv_impl<MODE_NORM, FMT_PTQ1>(a, in0, in1, xout, gain, signs, w0, w1, w2, y0, y1, y2, hout, convw, conv, xs4, gs, red,
                       tg, ntg, tid, nt, lane, sg, nsg);
}

kernel void mv_swiglu_t1(constant MVArgs& a [[buffer(0)]],
                         device const float* in0 [[buffer(1)]],
                         device const float* in1 [[buffer(2)]],
                         device float* xout [[buffer(3)]],
                         device const float* gain [[buffer(4)]],
                         device const float* signs [[buffer(5)]],
                         device const ushort* w0 [[buffer(6)]],
                         device const ushort* w1 [[buffer(7)]],
                         device const ushort* w2 [[buffer(8)]],
                         device float* y0 [[buffer(9)]],
                         device float* y1 [[buffer(10)]],
                         device float* y2 [[buffer(11)]],
                         device float* hout [[buffer(12)]],
                         device const float* convw [[buffer(13)]],
                         device float* conv [[buffer(14)]],
                         uint tg [[threadgroup_position_in_grid]],
                         uint ntg [[threadgroups_per_grid]],
                         uint tid [[thread_index_in_threadgroup]],
                         uint nt [[threads_per_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]],
                         uint sg [[simdgroup_index_in_threadgroup]],
                         uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float4 xs4[BONSAI_MAXCH / 4];
    threadgroup float gs[BONSAI_MAXCH / 16];
    threadgroup float red[MAX_SG];
    mv_impl<MODE_SWIGLU, FMT_PTQ1>(a, in0, in1, xout, gain, signs, w0, w1, w2, y0, y1, y2, hout, convw, conv, xs4, gs, red,
                         tg, ntg, tid, nt, lane, sg, nsg);
}
