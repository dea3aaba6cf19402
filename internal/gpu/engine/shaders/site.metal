// Row-wise kernels: the embedding lookup, the activation sites of a prefill chunk (norm,
// SwiGLU and plain transforms, each with the signed FWHT) and the greedy argmax.
//
// A site kernel runs one threadgroup per (Hadamard block, token) — or per token where a
// whole row is needed (the RMSNorm) — with up to 1024 threads looping over the block.

#include "common.h"
#include "formats.h"

// Largest Hadamard block a site threadgroup transforms.
#define SITE_MAXBLK 4096

// embed: x[t] = signs ⊙ (FWHT(dequant(token_embd row ids[t])) / √n), per block: the
// inverse rotation (transform first, then signs). grid (W/blk, T).
kernel void embed(constant SiteArgs& a [[buffer(0)]],
                  device const uint* ids [[buffer(1)]],
                  device const ushort* table [[buffer(2)]],
                  device const float* signs [[buffer(3)]],
                  device float* x [[buffer(4)]],
                  uint2 tgp [[threadgroup_position_in_grid]],
                  uint tid [[thread_index_in_threadgroup]],
                  uint2 tptg [[threads_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float xs[SITE_MAXBLK];
    uint t = tgp.y;
    uint e0 = tgp.x * a.blk;
    device const uchar* row = (device const uchar*)table + a.rowBytes * ids[t];
    const bool ptq1 = (a.flags & SITE_PTQ1) != 0u;
    for (uint i = tid; i < a.blk; i += nt) {
        uint e = e0 + i;
        xs[i] = ptq1 ? ternary_value<FMT_PTQ1>(row, e) : ternary_value<FMT_PQ2>(row, e);
    }
    tg_fwht(xs, a.blk, a.blk, tid, nt);
    for (uint i = tid; i < a.blk; i += nt) {
        uint e = e0 + i;
        x[t * a.W + e] = xs[i] * (signs[e] * a.scale);
    }
}

// site_norm: per token row t (grid T): x += delta (written back, with SITE_DELTA);
// h = RMSNorm(x)·gain (written with SITE_H); hr = signs ⊙ FWHT(h)/√n per block.
kernel void site_norm(constant SiteArgs& a [[buffer(0)]],
                      device float* x [[buffer(1)]],
                      device const float* delta [[buffer(2)]],
                      device const float* gain [[buffer(3)]],
                      device const float* signs [[buffer(4)]],
                      device float* h [[buffer(5)]],
                      device float* hr [[buffer(6)]],
                      uint t [[threadgroup_position_in_grid]],
                      uint tid [[thread_index_in_threadgroup]],
                      uint nt [[threads_per_threadgroup]],
                      uint lane [[thread_index_in_simdgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]],
                      uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float xs[SITE_MAXBLK];
    threadgroup float red[MAX_SG];
    const uint W = a.W;
    device float* xr = x + t * W;
    device const float* dr = delta + t * W;
    float s = 0.0f;
    for (uint k = tid; k < W; k += nt) {
        float v = xr[k];
        if ((a.flags & SITE_DELTA) != 0u) v += dr[k];
        s += v * v;
    }
    s = tg_sum(s, red, lane, sg, nsg);
    float inv = 1.0f / sqrt(s / float(W) + a.eps);
    for (uint b0 = 0; b0 < W; b0 += a.blk) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint i = tid; i < a.blk; i += nt) {
            uint k = b0 + i;
            float v = xr[k];
            if ((a.flags & SITE_DELTA) != 0u) {
                v += dr[k];
                xr[k] = v;
            }
            v = v * inv;
            v = v * gain[k];
            if ((a.flags & SITE_H) != 0u) h[t * W + k] = v;
            xs[i] = v * signs[k];
        }
        tg_fwht(xs, a.blk, a.blk, tid, nt);
        for (uint i = tid; i < a.blk; i += nt) hr[t * W + b0 + i] = xs[i] * a.scale;
    }
}

// site_fwht: out = signs ⊙ in → FWHT per block → /√n. grid (W/blk, T).
kernel void site_fwht(constant SiteArgs& a [[buffer(0)]],
                      device const float* in [[buffer(1)]],
                      device const float* signs [[buffer(2)]],
                      device float* out [[buffer(3)]],
                      uint2 tgp [[threadgroup_position_in_grid]],
                      uint tid [[thread_index_in_threadgroup]],
                      uint2 tptg [[threads_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float xs[SITE_MAXBLK];
    uint base = tgp.y * a.W + tgp.x * a.blk;
    uint s0 = tgp.x * a.blk;
    for (uint i = tid; i < a.blk; i += nt) xs[i] = in[base + i] * signs[s0 + i];
    tg_fwht(xs, a.blk, a.blk, tid, nt);
    for (uint i = tid; i < a.blk; i += nt) out[base + i] = xs[i] * a.scale;
}

// site_swiglu: out = signs ⊙ (silu(gate)·up) → FWHT per block → /√n. grid (W/blk, T).
kernel void site_swiglu(constant SiteArgs& a [[buffer(0)]],
                        device const float* gate [[buffer(1)]],
                        device const float* up [[buffer(2)]],
                        device const float* signs [[buffer(3)]],
                        device float* out [[buffer(4)]],
                        uint2 tgp [[threadgroup_position_in_grid]],
                        uint tid [[thread_index_in_threadgroup]],
                        uint2 tptg [[threads_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float xs[SITE_MAXBLK];
    uint base = tgp.y * a.W + tgp.x * a.blk;
    uint s0 = tgp.x * a.blk;
    for (uint i = tid; i < a.blk; i += nt) {
        float v = silu(gate[base + i]) * up[base + i];
        xs[i] = v * signs[s0 + i];
    }
    tg_fwht(xs, a.blk, a.blk, tid, nt);
    for (uint i = tid; i < a.blk; i += nt) out[base + i] = xs[i] * a.scale;
}

// argmax: the index of the largest of N values, the lowest index among equals, NaNs
// never chosen (bonsai's argmax32); 0 when nothing compares. One threadgroup.
kernel void argmax(constant ArgmaxArgs& a [[buffer(0)]],
                   device const float* v [[buffer(1)]],
                   device uint* out [[buffer(2)]],
                   uint tid [[thread_index_in_threadgroup]],
                   uint nt [[threads_per_threadgroup]],
                   uint lane [[thread_index_in_simdgroup]],
                   uint sg [[simdgroup_index_in_threadgroup]],
                   uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float bv[MAX_SG];
    threadgroup uint bi[MAX_SG];
    const uint none = 0xffffffffu;
    float best = NEG_BIG;
    uint idx = none;
    for (uint i = tid; i < a.N; i += nt) {
        float x = v[i];
        if (x > best || (idx == none && x == best)) {
            best = x;
            idx = i;
        }
    }
    float m = simd_max(best);
    uint c = simd_min((best == m && idx != none) ? idx : none);
    if (lane == 0u) {
        bv[sg] = m;
        bi[sg] = c;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0u) {
        float fb = NEG_BIG;
        uint fi = none;
        for (uint s = 0; s < nsg; s++) {
            if (bi[s] == none) continue;
            if (fi == none || bv[s] > fb || (bv[s] == fb && bi[s] < fi)) {
                fb = bv[s];
                fi = bi[s];
            }
        }
        out[0] = fi == none ? 0u : fi;
    }
}

// stream_read: reads N float4s, each threadgroup striding over the whole buffer, and
// writes each threadgroup's sum: the device's streaming read, which examples/metalcheck
// times the same way as the products to rate their bandwidth.
kernel void stream_read(constant StreamArgs& a [[buffer(0)]],
                        device const float4* v [[buffer(1)]],
                        device float* out [[buffer(2)]],
                        uint tid [[thread_index_in_threadgroup]],
                        uint nt [[threads_per_threadgroup]],
                        uint tg [[threadgroup_position_in_grid]],
                        uint lane [[thread_index_in_simdgroup]],
                        uint sg [[simdgroup_index_in_threadgroup]],
                        uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float part[MAX_SG];
    float4 s = float4(0.0f);
    const uint stride = a.groups * nt;
    for (uint i = tg * nt + tid; i < a.N; i += stride) {
        s += v[i];
    }
    float t = simd_sum(s.x + s.y + s.z + s.w);
    if (lane == 0u) {
        part[sg] = t;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0u) {
        float r = 0.0f;
        for (uint k = 0; k < nsg; k++) {
            r += part[k];
        }
        out[tg] = r;
    }
}

// copy_f32: dst[i] = src[i] for the N floats, each threadgroup striding over the whole
// range (a grid of `groups` threadgroups, so that a copy of any size keeps within every
// device's grid limits). The engine's kept passes (rewind.go) use it to save a GDN
// state and a kept row's recurrence inputs inside the command buffer that computes
// them, where the next layer would overwrite the rows.
kernel void copy_f32(constant CopyArgs& a [[buffer(0)]],
                     device const float* src [[buffer(1)]],
                     device float* dst [[buffer(2)]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint nt [[threads_per_threadgroup]],
                     uint tg [[threadgroup_position_in_grid]]) {
    const uint stride = a.groups * nt;
    for (uint i = tg * nt + tid; i < a.N; i += stride) {
        dst[i] = src[i];
    }
}
