// Gated full attention over the KV cache (GQA: query head h reads KV head h / rep).
//
// The cache of one layer is two buffers, keys and values, laid out [KV head][position]
// [HeadDim] at the cache precision — half, float or int8 codes: the _f16, _f32 and _i8
// kernels — so that a query head streams its KV head's positions contiguously. An int8
// cache has two more buffers, a float scale per 32 values ([KV head][position][HD/32]),
// quantised as qwen35's KV cache does: scale absmax/127, codes round(x·127/absmax)
// clamped to ±127.
//
//   attn_append_*: prefill, grid (KV, T): k ← RMSNorm(k)·k_norm, RoPE; stores k and v at
//                  positions pos0 + t.
//   attn_*:        grid (H, T), ATT_THREADS threads: q ← RMSNorm(q)·q_norm, RoPE, ·1/√HD;
//                  an online softmax over positions 0..pos0+t, the SIMD-groups taking
//                  positions in turn and merging at the end; out = o ⊙ sigmoid(gate).
//                  With args.fused (a decode step, T = 1) the kernel also forms the
//                  token's own key and value (rounded to the cache precision), attends
//                  position pos0 from them, and the first query head of each KV group
//                  appends them to the cache — one dispatch for the whole attention.
//
// RoPE is NeoX-style on the first 2·ropeHalf dims (pairs i, i + ropeHalf), with the
// cos/sin of each position from a table the host fills in float64 arithmetic
// (rope[t][i] = cos, rope[t][ropeHalf + i] = sin).

#include "common.h"

#define ATT_THREADS 256
#define ATT_SG (ATT_THREADS / 32)
#define ATT_DPL ((BONSAI_HD + 31u) / 32u)

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

// The attention of query head h for token t over the cache of precision P.
// Threadgroup scratch: qs, ks, vs (HD each), red (MAX_SG), ms, ls (ATT_SG), accs
// (ATT_SG × HD).
template <int P>
inline void att_impl(constant AttnArgs& a, device const float* qg, device const float* k,
                     device const float* v, device const float* qnorm, device const float* knorm,
                     device const float* rope, device uchar* kc, device uchar* vc,
                     device float* ksc, device float* vsc, device float* out,
                     threadgroup float* qs, threadgroup float* ks, threadgroup float* vs,
                     threadgroup float* red, threadgroup float* ms, threadgroup float* ls,
                     threadgroup float* accs,
                     uint2 tgp, uint tid, uint nt, uint lane, uint sg, uint nsg) {
    const uint HD = a.HD;
    uint h = tgp.x, t = tgp.y;
    uint rep = a.H / a.KV;
    uint g = h / rep;
    uint pos = a.pos0 + t;
    device const float* rp = rope + t * 2u * a.ropeHalf;
    device const float* qrow = qg + (t * a.H + h) * 2u * HD;
    for (uint i = tid; i < HD; i += nt) qs[i] = qrow[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    att_norm_rope(qs, qnorm, rp, a, red, tid, nt, lane, sg, nsg);
    for (uint i = tid; i < HD; i += nt) qs[i] = qs[i] * a.scale;
    uint npos = pos + 1u;  // positions attended
    uint ncache = npos;    // of which read from the cache
    if (a.fused != 0u) {
        ncache = pos;
        for (uint i = tid; i < HD; i += nt) ks[i] = k[(t * a.KV + g) * HD + i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        att_norm_rope(ks, knorm, rp, a, red, tid, nt, lane, sg, nsg);
        bool store = h % rep == 0u;
        for (uint i = tid; i < HD; i += nt) {
            uint c = (g * a.cap + pos) * HD + i;
            ks[i] = kv_put<P>(kc, ksc, c, ks[i], store);
            vs[i] = kv_put<P>(vc, vsc, c, v[(t * a.KV + g) * HD + i], store);
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float m = NEG_BIG, l = 0.0f;
    float acc[ATT_DPL];
    float qv[ATT_DPL];
    for (uint u = 0; u < ATT_DPL; u++) {
        uint i = lane + 32u * u;
        acc[u] = 0.0f;
        qv[u] = i < HD ? qs[i] : 0.0f;
    }
    const uint base = g * a.cap * HD;
    for (uint p = sg; p < npos; p += nsg) {
        float sc = 0.0f;
        bool local = p >= ncache;
        for (uint u = 0; u < ATT_DPL; u++) {
            uint i = lane + 32u * u;
            if (i < HD) sc += qv[u] * (local ? ks[i] : kv_get<P>(kc, ksc, base + p * HD + i));
        }
        sc = simd_sum(sc);
        float mn = max(m, sc);
        float corr = exp(m - mn);
        float w = exp(sc - mn);
        l = l * corr + w;
        for (uint u = 0; u < ATT_DPL; u++) {
            uint i = lane + 32u * u;
            if (i < HD) acc[u] = acc[u] * corr + w * (local ? vs[i] : kv_get<P>(vc, vsc, base + p * HD + i));
        }
        m = mn;
    }
    if (lane == 0u) {
        ms[sg] = m;
        ls[sg] = l;
    }
    for (uint u = 0; u < ATT_DPL; u++) {
        uint i = lane + 32u * u;
        if (i < HD) accs[sg * HD + i] = acc[u];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float M = NEG_BIG;
    for (uint s = 0; s < nsg; s++) M = max(M, ms[s]);
    float L = 0.0f;
    for (uint s = 0; s < nsg; s++) L += ls[s] * exp(ms[s] - M);
    device const float* grow = qrow + HD;
    for (uint i = tid; i < HD; i += nt) {
        float o = 0.0f;
        for (uint s = 0; s < nsg; s++) o += accs[s * HD + i] * exp(ms[s] - M);
        float inv = 1.0f / L;
        out[(t * a.H + h) * HD + i] = o * inv * sigmoid1(grow[i]);
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
                     device float* out [[buffer(9)]],
                     device float* ksc [[buffer(10)]],
                     device float* vsc [[buffer(11)]],
                     uint2 tgp [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint2 tptg [[threads_per_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]],
                     uint nsg [[simdgroups_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float qs[BONSAI_HD];
    threadgroup float ks[BONSAI_HD];
    threadgroup float vs[BONSAI_HD];
    threadgroup float red[MAX_SG];
    threadgroup float ms[ATT_SG];
    threadgroup float ls[ATT_SG];
    threadgroup float accs[ATT_SG * BONSAI_HD];
    att_impl<KV_F16>(a, qg, k, v, qnorm, knorm, rope, kc, vc, ksc, vsc, out, qs, ks, vs, red, ms, ls, accs,
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
                     device float* out [[buffer(9)]],
                     device float* ksc [[buffer(10)]],
                     device float* vsc [[buffer(11)]],
                     uint2 tgp [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint2 tptg [[threads_per_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]],
                     uint nsg [[simdgroups_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float qs[BONSAI_HD];
    threadgroup float ks[BONSAI_HD];
    threadgroup float vs[BONSAI_HD];
    threadgroup float red[MAX_SG];
    threadgroup float ms[ATT_SG];
    threadgroup float ls[ATT_SG];
    threadgroup float accs[ATT_SG * BONSAI_HD];
    att_impl<KV_F32>(a, qg, k, v, qnorm, knorm, rope, kc, vc, ksc, vsc, out, qs, ks, vs, red, ms, ls, accs,
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
                     device float* out [[buffer(9)]],
                     device float* ksc [[buffer(10)]],
                     device float* vsc [[buffer(11)]],
                     uint2 tgp [[threadgroup_position_in_grid]],
                     uint tid [[thread_index_in_threadgroup]],
                     uint2 tptg [[threads_per_threadgroup]],
                     uint lane [[thread_index_in_simdgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]],
                     uint nsg [[simdgroups_per_threadgroup]]) {
    const uint nt = tptg.x; // one width for the position/size attributes (MSL)
    threadgroup float qs[BONSAI_HD];
    threadgroup float ks[BONSAI_HD];
    threadgroup float vs[BONSAI_HD];
    threadgroup float red[MAX_SG];
    threadgroup float ms[ATT_SG];
    threadgroup float ls[ATT_SG];
    threadgroup float accs[ATT_SG * BONSAI_HD];
    att_impl<KV_I8>(a, qg, k, v, qnorm, knorm, rope, kc, vc, ksc, vsc, out, qs, ks, vs, red, ms, ls, accs,
                 tgp, tid, nt, lane, sg, nsg);
}
