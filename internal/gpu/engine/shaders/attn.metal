// Gated full attention over the KV cache (GQA: query head h reads KV head h / rep), split
// over blocks of positions (flash-decoding).
//
// The cache of one layer is two buffers, keys and values, laid out [KV head][position]
// [HeadDim] at the cache precision — half, float or int8 codes: the _f16, _f32 and _i8
// kernels — so that a block of positions is one contiguous run per KV head. An int8
// cache has two more buffers, a float scale per 32 values ([KV head][position][HD/32]),
// quantised as qwen35's KV cache does: scale absmax/127, codes round(x·127/absmax)
// clamped to ±127.
//
//   attn_append_*: prefill, grid (KV, T): k ← RMSNorm(k)·k_norm, RoPE; stores k and v at
//                  positions pos0 + t.
//   attn_*:        the partial softmaxes. The positions 0..pos0+T−1 are cut into nb
//                  blocks of span positions; a threadgroup takes one KV head g, one block
//                  b and one tile of tt tokens, and handles every query that reads g
//                  there — the rep query heads of the group times the tile's tokens —
//                  together, so that each key and value row of the block is read from
//                  the cache once for all of them (a tile of ATT_NP rows at a time,
//                  widened to float in threadgroup memory). Grid (blocks, tiles, KV) of a
//                  dispatch, which covers blocks b0.. and tiles y0.. (the host cuts a
//                  long attention into several dispatches, each small enough for one
//                  command buffer). Each SIMD-group owns up to ATT_QPS queries: q ←
//                  RMSNorm(q)·q_norm, RoPE, ·1/√HD in registers, an online softmax over
//                  the block's positions up to its token's own, and writes the partial
//                  result of (token, head, block): the running max m, the sum l of
//                  e^(s − m) and the weighted values Σ e^(s − m)·v.
//                  With args.fused (a decode step, T = 1) the threadgroup whose block
//                  holds position pos0 also forms the token's own key and value
//                  (rounded to the cache precision), appends them to the cache and
//                  attends them from threadgroup memory: no attn_append.
//   attn_merge:    grid (H, T): merges the blocks a token sees exactly — each partial
//                  weighted by e^(m_b − max m) — and writes out = o ⊙ sigmoid(gate).
//
// RoPE is NeoX-style on the first 2·ropeHalf dims (pairs i, i + ropeHalf), with the
// cos/sin of each position from a table the host fills in float64 arithmetic
// (rope[t][i] = cos, rope[t][ropeHalf + i] = sin).

#include "common.h"

// SIMD-groups of attn_* (at most; the host sends fewer for fewer queries).
#define ATT_SG 8u
#define ATT_DPL ((BONSAI_HD + 31u) / 32u)
// Queries a SIMD-group holds in registers (q and the accumulator, 2·ATT_DPL floats a
// lane each): 4 up to HD 256, 2 beyond, so that a lane holds at most 64 such floats.
#define ATT_QPS (BONSAI_HD > 256u ? 2u : 4u)
// Positions of a cache tile: keys and values of ATT_NP positions as float take 16 KiB
// (at most 32 positions; at least 4 up to HD 512, so that the tile also holds the
// SIMD-groups' query scratch, ATT_SG·HD floats).
#define ATT_NP (BONSAI_HD >= 2048u ? 1u : (2048u / BONSAI_HD > 32u ? 32u : 2048u / BONSAI_HD))
// The most blocks a token's positions are cut into (kernels.go: attnMaxBlocks).
#define ATT_MAXB 64u

// RMSNorm·gain then RoPE of one head held in threadgroup memory (HD values).
inline void att_norm_rope(threadgroup float* v, device const float* gain, device const float* rope,
                          constant AttnArgs& a, threadgroup float* red,
                          uint tid, uint nt, uint lane, uint sg, uint nsg) {
    float s = 0.0f;
    for (uint i = tid; i < a.HD; i += nt) s += v[i] * v[i];
    s = tg_sum(s, red, lane, sg, nsg);
    float inv = 1.0f / sqrt(s / float(a.HD) + a.eps);
    for (uint i = tid; i < a.HD; i += nt) {
        float x = v[i] * inv;
        v[i] = x * gain[i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = tid; i < a.ropeHalf; i += nt) {
        float c = rope[i], sn = rope[a.ropeHalf + i];
        float x0 = v[i], x1 = v[i + a.ropeHalf];
        v[i] = x0 * c - x1 * sn;
        v[i + a.ropeHalf] = x0 * sn + x1 * c;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

#define KV_F16 0
#define KV_F32 1
#define KV_I8 2

// Element idx of a cache buffer as float.
template <int P>
inline float kv_get(device const uchar* c, device const float* sc, uint idx) {
    if (P == KV_F16) return float(((device const half*)c)[idx]);
    if (P == KV_F32) return ((device const float*)c)[idx];
    return float(((device const char*)c)[idx]) * sc[idx / 32u];
}

// Rounds x to the cache precision at element idx, stores it when store, and returns the
// value the cache gives back. For int8 the calling SIMD-group's 32 lanes hold one block
// of 32 values (idx = 32·b + lane), all calling together.
template <int P>
inline float kv_put(device uchar* c, device float* sc, uint idx, float x, bool store) {
    if (P == KV_F16) {
        half hq = half(x);
        if (store) ((device half*)c)[idx] = hq;
        return float(hq);
    }
    if (P == KV_F32) {
        if (store) ((device float*)c)[idx] = x;
        return x;
    }
    float amax = simd_max(fabs(x));
    float scale = amax / 127.0f;
    int q = 0;
    if (amax != 0.0f) {
        float inv = 127.0f / amax;
        q = int(clamp(round(x * inv), -127.0f, 127.0f));
    }
    if (store) {
        ((device char*)c)[idx] = char(q);
        if (idx % 32u == 0u) sc[idx / 32u] = scale;
    }
    return float(q) * scale;
}

template <int P>
inline void att_append(constant AttnArgs& a, device const float* k, device const float* v,
                       device const float* knorm, device const float* rope,
                       device uchar* kc, device uchar* vc, device float* ksc, device float* vsc,
                       threadgroup float* ks, threadgroup float* red,
                       uint2 tgp, uint tid, uint nt, uint lane, uint sg, uint nsg) {
    uint g = tgp.x, t = tgp.y;
    uint pos = a.pos0 + t;
    for (uint i = tid; i < a.HD; i += nt) ks[i] = k[(t * a.KV + g) * a.HD + i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    att_norm_rope(ks, knorm, rope + t * 2u * a.ropeHalf, a, red, tid, nt, lane, sg, nsg);
    for (uint i = tid; i < a.HD; i += nt) {
        uint c = (g * a.cap + pos) * a.HD + i;
        kv_put<P>(kc, ksc, c, ks[i], true);
        kv_put<P>(vc, vsc, c, v[(t * a.KV + g) * a.HD + i], true);
    }
}

// The partial softmaxes of one threadgroup: KV head g = tgp.z, block b = b0 + tgp.x,
// tokens t0 = (y0 + tgp.y)·tt .. t0 + ntok − 1 (see the file's comment). Threadgroup
// scratch: tile (2·ATT_NP·HD: keys then values; before the position loop the
// SIMD-groups' query rows), ks and vs (HD each: a fused step's own key and value), red
// (MAX_SG). Partial results go to pacc[e·HD..] and pml[2e], pml[2e + 1] with
// e = (t·H + h)·nb + b.
template <int P>
inline void att_part(constant AttnArgs& a, device const float* qg, device const float* k,
                     device const float* v, device const float* qnorm, device const float* knorm,
                     device const float* rope, device uchar* kc, device uchar* vc,
                     device float* ksc, device float* vsc, device float* pacc, device float* pml,
                     threadgroup float* tile, threadgroup float* ks, threadgroup float* vs,
                     threadgroup float* red,
                     uint3 tgp, uint tid, uint nt, uint lane, uint sg, uint nsg) {
    const uint HD = a.HD, H = a.H, rh = a.ropeHalf;
    const uint rep = H / a.KV;
    const uint g = tgp.z, b = a.b0 + tgp.x;
    const uint t0 = (a.y0 + tgp.y) * a.tt;
    const uint ntok = min(a.tt, a.T - t0);
    const uint Q = rep * ntok;               // queries: j → token t0 + j / rep, head g·rep + j % rep
    const uint nq = (Q + nsg - 1u) / nsg;    // query slots per SIMD-group (≤ ATT_QPS)
    const uint lo = b * a.span;
    // Positions this threadgroup reads: the block, up to the last token's own position.
    const uint hi = min(lo + a.span, a.pos0 + t0 + ntok);
    if (hi <= lo) return;  // no token of the tile sees the block; attn_merge skips it
    // A fused step: the block holding the token's position forms its key and value.
    const bool own = a.fused != 0u && a.pos0 >= lo;
    const uint ncache = own ? a.pos0 : hi;   // positions read from the cache
    if (own) {
        for (uint i = tid; i < HD; i += nt) ks[i] = k[g * HD + i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        att_norm_rope(ks, knorm, rope, a, red, tid, nt, lane, sg, nsg);
        for (uint i = tid; i < HD; i += nt) {
            uint c = (g * a.cap + a.pos0) * HD + i;
            ks[i] = kv_put<P>(kc, ksc, c, ks[i], true);
            vs[i] = kv_put<P>(vc, vsc, c, v[g * HD + i], true);
        }
    }

    // The SIMD-group's queries into registers: RMSNorm·q_norm, RoPE (through the
    // SIMD-group's row of scratch, the pairs lying in other lanes), ·scale.
    float qv[ATT_QPS][ATT_DPL];
    float acc[ATT_QPS][ATT_DPL];
    float m[ATT_QPS], l[ATT_QPS];
    threadgroup float* qs = tile + sg * HD;
    for (uint i = 0; i < ATT_QPS; i++) {
        m[i] = NEG_BIG;
        l[i] = 0.0f;
        for (uint u = 0; u < ATT_DPL; u++) {
            qv[i][u] = 0.0f;
            acc[i][u] = 0.0f;
        }
        uint j = sg + nsg * i;
        if (i >= nq || j >= Q) continue;
        uint t = t0 + j / rep, h = g * rep + j % rep;
        device const float* qrow = qg + (t * H + h) * 2u * HD;
        device const float* rp = rope + t * 2u * rh;
        float ss = 0.0f;
        for (uint u = 0; u < ATT_DPL; u++) {
            uint d = lane + 32u * u;
            float x = d < HD ? qrow[d] : 0.0f;
            qv[i][u] = x;
            ss += x * x;
        }
        ss = simd_sum(ss);
        float inv = 1.0f / sqrt(ss / float(HD) + a.eps);
        for (uint u = 0; u < ATT_DPL; u++) {
            uint d = lane + 32u * u;
            if (d < HD) {
                float x = qv[i][u] * inv;
                qs[d] = x * qnorm[d];
            }
        }
        simdgroup_barrier(mem_flags::mem_threadgroup);
        for (uint u = 0; u < ATT_DPL; u++) {
            uint d = lane + 32u * u;
            float x = 0.0f;
            if (d < rh) {
                x = qs[d] * rp[d] - qs[d + rh] * rp[rh + d];  // x0·cos − x1·sin
            } else if (d < 2u * rh) {
                x = qs[d - rh] * rp[d] + qs[d] * rp[d - rh];  // x0·sin + x1·cos
            } else if (d < HD) {
                x = qs[d];
            }
            qv[i][u] = x * a.scale;
        }
        simdgroup_barrier(mem_flags::mem_threadgroup);
    }

    const uint base = g * a.cap * HD;
    threadgroup float* tk = tile;
    threadgroup float* tv = tile + ATT_NP * HD;
    for (uint p0 = lo; p0 < hi; p0 += ATT_NP) {
        const uint np = min(ATT_NP, hi - p0);
        threadgroup_barrier(mem_flags::mem_threadgroup);  // the scratch or the last tile is done with
        for (uint e = tid; e < np * HD; e += nt) {
            uint p = p0 + e / HD, d = e % HD;
            bool local = p >= ncache;
            tk[e] = local ? ks[d] : kv_get<P>(kc, ksc, base + p0 * HD + e);
            tv[e] = local ? vs[d] : kv_get<P>(vc, vsc, base + p0 * HD + e);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint i = 0; i < ATT_QPS; i++) {
            uint j = sg + nsg * i;
            if (i >= nq || j >= Q) continue;
            // Token t0 + j/rep sees the positions below lim.
            uint lim = a.pos0 + t0 + j / rep + 1u;
            uint pe = lim > p0 ? min(np, lim - p0) : 0u;
            for (uint p = 0; p < pe; p++) {
                float s = 0.0f;
                for (uint u = 0; u < ATT_DPL; u++) {
                    uint d = lane + 32u * u;
                    if (d < HD) s += qv[i][u] * tk[p * HD + d];
                }
                s = simd_sum(s);
                // The running max moves only when a score exceeds it: then the sums so
                // far are rescaled by e^(old − new).
                if (s > m[i]) {
                    float corr = exp(m[i] - s);
                    l[i] *= corr;
                    for (uint u = 0; u < ATT_DPL; u++) acc[i][u] *= corr;
                    m[i] = s;
                }
                float w = exp(s - m[i]);
                l[i] += w;
                for (uint u = 0; u < ATT_DPL; u++) {
                    uint d = lane + 32u * u;
                    if (d < HD) acc[i][u] += w * tv[p * HD + d];
                }
            }
        }
    }

    for (uint i = 0; i < ATT_QPS; i++) {
        uint j = sg + nsg * i;
        if (i >= nq || j >= Q) continue;
        uint t = t0 + j / rep, h = g * rep + j % rep;
        uint e = (t * H + h) * a.nb + b;
        if (lane == 0u) {
            pml[2u * e] = m[i];
            pml[2u * e + 1u] = l[i];
        }
        for (uint u = 0; u < ATT_DPL; u++) {
            uint d = lane + 32u * u;
            if (d < HD) pacc[e * HD + d] = acc[i][u];
        }
    }
}

kernel void attn_append_f16(constant AttnArgs& a [[buffer(0)]],
                            device const float* k [[buffer(1)]],
                            device const float* v [[buffer(2)]],
                            device const float* knorm [[buffer(3)]],
                            device const float* rope [[buffer(4)]],
                            device uchar* kc [[buffer(5)]],
                            device uchar* vc [[buffer(6)]],
                            device float* ksc [[buffer(7)]],
                            device float* vsc [[buffer(8)]],
                            uint2 tgp [[threadgroup_position_in_grid]],
                            uint tid [[thread_index_in_threadgroup]],
                            uint2 tptg [[threads_per_threadgroup]],
                            uint lane [[thread_index_in_simdgroup]],
                            uint sg [[simdgroup_index_in_threadgroup]],
                            uint nsg [[simdgroups_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float ks[BONSAI_HD];
    threadgroup float red[MAX_SG];
    att_append<KV_F16>(a, k, v, knorm, rope, kc, vc, ksc, vsc, ks, red, tgp, tid, nt, lane, sg, nsg);
}

kernel void attn_append_f32(constant AttnArgs& a [[buffer(0)]],
                            device const float* k [[buffer(1)]],
                            device const float* v [[buffer(2)]],
                            device const float* knorm [[buffer(3)]],
                            device const float* rope [[buffer(4)]],
                            device uchar* kc [[buffer(5)]],
                            device uchar* vc [[buffer(6)]],
                            device float* ksc [[buffer(7)]],
                            device float* vsc [[buffer(8)]],
                            uint2 tgp [[threadgroup_position_in_grid]],
                            uint tid [[thread_index_in_threadgroup]],
                            uint2 tptg [[threads_per_threadgroup]],
                            uint lane [[thread_index_in_simdgroup]],
                            uint sg [[simdgroup_index_in_threadgroup]],
                            uint nsg [[simdgroups_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float ks[BONSAI_HD];
    threadgroup float red[MAX_SG];
    att_append<KV_F32>(a, k, v, knorm, rope, kc, vc, ksc, vsc, ks, red, tgp, tid, nt, lane, sg, nsg);
}

kernel void attn_append_i8(constant AttnArgs& a [[buffer(0)]],
                            device const float* k [[buffer(1)]],
                            device const float* v [[buffer(2)]],
                            device const float* knorm [[buffer(3)]],
                            device const float* rope [[buffer(4)]],
                            device uchar* kc [[buffer(5)]],
                            device uchar* vc [[buffer(6)]],
                            device float* ksc [[buffer(7)]],
                            device float* vsc [[buffer(8)]],
                            uint2 tgp [[threadgroup_position_in_grid]],
                            uint tid [[thread_index_in_threadgroup]],
                            uint2 tptg [[threads_per_threadgroup]],
                            uint lane [[thread_index_in_simdgroup]],
                            uint sg [[simdgroup_index_in_threadgroup]],
                            uint nsg [[simdgroups_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float ks[BONSAI_HD];
    threadgroup float red[MAX_SG];
    att_append<KV_I8>(a, k, v, knorm, rope, kc, vc, ksc, vsc, ks, red, tgp, tid, nt, lane, sg, nsg);
}

kernel void attn_f16(constant AttnArgs& a [[buffer(0)]],
                     device const float* qg [[buffer(1)]],
                     device const float* k [[buffer(2)]],
                     device const float* v [[buffer(3)]],
                     device const float* qnorm [[buffer(4)]],
                     device const float* knorm [[buffer(5)]],
                     device const float* rope [[buffer(6)]],
                     device uchar* kc [[buffer(7)]],
                     device uchar* vc [[buffer(8)]],
                     device float* pacc [[buffer(9)]],
                     device float* ksc [[buffer(10)]],
                     device float* vsc [[buffer(11)]],
                     device float* pml [[buffer(12)]],
                     uint3 tgp [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint3 tptg [[threads_per_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]],
                     uint nsg [[simdgroups_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float tile[2u * ATT_NP * BONSAI_HD];
    threadgroup float ks[BONSAI_HD];
    threadgroup float vs[BONSAI_HD];
    threadgroup float red[MAX_SG];
    att_part<KV_F16>(a, qg, k, v, qnorm, knorm, rope, kc, vc, ksc, vsc, pacc, pml, tile, ks, vs, red,
                  tgp, tid, nt, lane, sg, nsg);
}

kernel void attn_f32(constant AttnArgs& a [[buffer(0)]],
                     device const float* qg [[buffer(1)]],
                     device const float* k [[buffer(2)]],
                     device const float* v [[buffer(3)]],
                     device const float* qnorm [[buffer(4)]],
                     device const float* knorm [[buffer(5)]],
                     device const float* rope [[buffer(6)]],
                     device uchar* kc [[buffer(7)]],
                     device uchar* vc [[buffer(8)]],
                     device float* pacc [[buffer(9)]],
                     device float* ksc [[buffer(10)]],
                     device float* vsc [[buffer(11)]],
                     device float* pml [[buffer(12)]],
                     uint3 tgp [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint3 tptg [[threads_per_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]],
                     uint nsg [[simdgroups_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float tile[2u * ATT_NP * BONSAI_HD];
    threadgroup float ks[BONSAI_HD];
    threadgroup float vs[BONSAI_HD];
    threadgroup float red[MAX_SG];
    att_part<KV_F32>(a, qg, k, v, qnorm, knorm, rope, kc, vc, ksc, vsc, pacc, pml, tile, ks, vs, red,
                  tgp, tid, nt, lane, sg, nsg);
}

kernel void attn_i8(constant AttnArgs& a [[buffer(0)]],
                     device const float* qg [[buffer(1)]],
                     device const float* k [[buffer(2)]],
                     device const float* v [[buffer(3)]],
                     device const float* qnorm [[buffer(4)]],
                     device const float* knorm [[buffer(5)]],
                     device const float* rope [[buffer(6)]],
                     device uchar* kc [[buffer(7)]],
                     device uchar* vc [[buffer(8)]],
                     device float* pacc [[buffer(9)]],
                     device float* ksc [[buffer(10)]],
                     device float* vsc [[buffer(11)]],
                     device float* pml [[buffer(12)]],
                     uint3 tgp [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint3 tptg [[threads_per_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]],
                     uint nsg [[simdgroups_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float tile[2u * ATT_NP * BONSAI_HD];
    threadgroup float ks[BONSAI_HD];
    threadgroup float vs[BONSAI_HD];
    threadgroup float red[MAX_SG];
    att_part<KV_I8>(a, qg, k, v, qnorm, knorm, rope, kc, vc, ksc, vsc, pacc, pml, tile, ks, vs, red,
                  tgp, tid, nt, lane, sg, nsg);
}

// Merges the partial softmaxes of (token t, head h) over the blocks holding positions
// 0..pos0+t and writes the gated output. Grid (H, T); buffers 1 q|gate, 2 pacc, 3 pml,
// 4 out.
kernel void attn_merge(constant AttnArgs& a [[buffer(0)]],
                       device const float* qg [[buffer(1)]],
                       device const float* pacc [[buffer(2)]],
                       device const float* pml [[buffer(3)]],
                       device float* out [[buffer(4)]],
                       uint2 tgp [[threadgroup_position_in_grid]],
                       uint tid [[thread_index_in_threadgroup]],
                       uint2 tptg [[threads_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float wb[ATT_MAXB];
    const uint HD = a.HD, H = a.H;
    uint h = tgp.x, t = tgp.y;
    // The blocks token t sees: those starting at or before its position pos0 + t.
    uint nb = min(a.nb, (a.pos0 + t) / a.span + 1u);
    uint e0 = (t * H + h) * a.nb;
    float M = NEG_BIG;
    for (uint b = 0; b < nb; b++) M = max(M, pml[2u * (e0 + b)]);
    float L = 0.0f;
    for (uint b = 0; b < nb; b++) L += pml[2u * (e0 + b) + 1u] * exp(pml[2u * (e0 + b)] - M);
    for (uint b = tid; b < nb; b += nt) wb[b] = exp(pml[2u * (e0 + b)] - M);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float inv = 1.0f / L;
    device const float* grow = qg + (t * H + h) * 2u * HD + HD;
    for (uint d = tid; d < HD; d += nt) {
        float o = 0.0f;
        for (uint b = 0; b < nb; b++) o += pacc[(e0 + b) * HD + d] * wb[b];
        out[(t * H + h) * HD + d] = o * inv * sigmoid1(grow[d]);
    }
}
