#version 450
// Gated full attention over the KV cache (GQA: query head h reads KV head h / rep), the
// translation of attn.metal.
//
// The cache of one layer is two buffers, keys and values, laid out [KV head][position]
// [HeadDim] at the cache precision — fp16 bits, float or int8 codes: the _f16, _f32 and
// _i8 kernels (-DKV=0, 1, 2) — so that a query head streams its KV head's positions
// contiguously. An int8 cache has two more buffers, a float scale per 32 values ([KV
// head][position][HD/32]), quantised as qwen35's KV cache does: scale absmax/127, codes
// round(x·127/absmax) clamped to ±127.
//
//   attn_append_* (-DKERNEL_APPEND): prefill, grid (KV, T): k ← RMSNorm(k)·k_norm, RoPE;
//                  stores k and v at positions pos0 + t.
//   attn_* (-DKERNEL_ATTN): grid (H, T), ATT_THREADS threads: q ← RMSNorm(q)·q_norm,
//                  RoPE, ·1/√HD; an online softmax over positions 0..pos0+t, the
//                  SIMD-groups taking positions in turn and merging at the end; out = o ⊙
//                  sigmoid(gate). With args.fused (a decode step, T = 1) the kernel also
//                  forms the token's own key and value (rounded to the cache precision),
//                  attends position pos0 from them, and the first query head of each KV
//                  group appends them to the cache — one dispatch for the whole attention.
//
// RoPE is NeoX-style on the first 2·ropeHalf dims (pairs i, i + ropeHalf), with the
// cos/sin of each position from a table (rope[t][i] = cos, rope[t][ropeHalf + i] = sin).
//
// Unlike the MSL, every sg_* call sits in workgroup-uniform control flow: the cache
// stores loop to a uniform trip count (lanes past HD quantise a 0 and store nothing), and
// the position loop runs ⌈npos/NSG⌉ rounds in every SIMD-group, a SIMD-group whose
// position is past the end adding a 0 to the reduction and skipping the update.
#include "common.glsl"

// AttnArgs (common.h)
#define A_H ARGU(0)
#define A_KV ARGU(1)
#define A_HD ARGU(2)
#define A_ROPEHALF ARGU(3)
#define A_T ARGU(4)
#define A_POS0 ARGU(5)
#define A_CAP ARGU(6)
#define A_FUSED ARGU(7)
#define A_EPS ARGF(8)
#define A_SCALE ARGF(9)

#define ATT_SG 8u  // ATT_THREADS / 32: the most SIMD-groups of attn_*
#define ATT_DPL ((BONSAI_HD + 31u) / 32u)

#define KV_F16 0
#define KV_F32 1
#define KV_I8 2

#ifndef KV
#error KV must be defined
#endif

shared float ks[BONSAI_HD];
#ifdef KERNEL_ATTN
shared float qs[BONSAI_HD];
shared float vs[BONSAI_HD];
shared float ms[ATT_SG];
shared float ls[ATT_SG];
shared float accs[ATT_SG * BONSAI_HD];
#endif

// RMSNorm·gain then RoPE of one head held in shared memory (HD values; which = 0: ks,
// 1: qs), the cos/sin at rope[rp..].
void att_norm_rope(uint which, uint64_t gainAddr, uint64_t ropeAddr, uint rp) {
    F32 gain = F32(gainAddr);
    F32 rope = F32(ropeAddr);
    uint HD = A_HD, rh = A_ROPEHALF;
    float s = 0.0;
    for (uint i = TID; i < HD; i += NT) {
#ifdef KERNEL_ATTN
        float x = which == 0u ? ks[i] : qs[i];
#else
        float x = ks[i];
#endif
        s += x * x;
    }
    s = tg_sum(s);
    float inv = 1.0 / sqrt(s / float(HD) + A_EPS);
    for (uint i = TID; i < HD; i += NT) {
#ifdef KERNEL_ATTN
        if (which == 0u) ks[i] = ks[i] * inv * gain.v[i];
        else qs[i] = qs[i] * inv * gain.v[i];
#else
        ks[i] = ks[i] * inv * gain.v[i];
#endif
    }
    barrier();
    for (uint i = TID; i < rh; i += NT) {
        float c = rope.v[rp + i], sn = rope.v[rp + rh + i];
#ifdef KERNEL_ATTN
        if (which != 0u) {
            float x0 = qs[i], x1 = qs[i + rh];
            qs[i] = x0 * c - x1 * sn;
            qs[i + rh] = x0 * sn + x1 * c;
            continue;
        }
#endif
        float x0 = ks[i], x1 = ks[i + rh];
        ks[i] = x0 * c - x1 * sn;
        ks[i + rh] = x0 * sn + x1 * c;
    }
    barrier();
}

// Element idx of a cache buffer as float.
float kv_get(uint64_t c, uint64_t sc, uint idx) {
#if KV == KV_F16
    return half_bits(uint(U16(c).v[idx]));
#elif KV == KV_F32
    return F32(c).v[idx];
#else
    return float(int(I8(c).v[idx])) * F32(sc).v[idx / 32u];
#endif
}

// round(): half away from zero, as Metal's round and Go's math.Round.
float round_away(float y) {
    float t = trunc(y);
    if (abs(y - t) >= 0.5) t += sign(y);
    return t;
}

// Rounds x to the cache precision at element idx, stores it when store, and returns the
// value the cache gives back. For int8 the calling SIMD-group's 32 lanes hold one block
// of 32 values (idx = 32·b + lane); the whole workgroup calls together (sg_max), lanes
// past the row with x = 0 and store false.
float kv_put(uint64_t c, uint64_t sc, uint idx, float x, bool store) {
#if KV == KV_F16
    uint hb = packHalf2x16(vec2(x, 0.0)) & 0xffffu;
    if (store) U16(c).v[idx] = uint16_t(hb);
    return half_bits(hb);
#elif KV == KV_F32
    if (store) F32(c).v[idx] = x;
    return x;
#else
    float amax = sg_max(abs(x));
    float scale = amax / 127.0;
    int q = 0;
    if (amax != 0.0) {
        float inv = 127.0 / amax;
        q = int(clamp(round_away(x * inv), -127.0, 127.0));
    }
    if (store) {
        I8(c).v[idx] = int8_t(q);
        if (idx % 32u == 0u) F32(sc).v[idx / 32u] = scale;
    }
    return float(q) * scale;
#endif
}

#ifdef KERNEL_APPEND
// Buffers: 1 k, 2 v, 3 k_norm, 4 rope, 5 kc, 6 vc, 7 k scales, 8 v scales.
void main() {
    uint g = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    uint HD = A_HD, KVh = A_KV;
    uint pos = A_POS0 + t;
    F32 k = F32(ADDR(1));
    F32 v = F32(ADDR(2));
    for (uint i = TID; i < HD; i += NT) ks[i] = k.v[(t * KVh + g) * HD + i];
    barrier();
    att_norm_rope(0u, ADDR(3), ADDR(4), t * 2u * A_ROPEHALF);
    // Uniform trip count: every thread reaches kv_put's sg_max.
    for (uint i0 = 0u; i0 < HD; i0 += NT) {
        uint i = i0 + TID;
        bool in_ = i < HD;
        uint c = (g * A_CAP + pos) * HD + i;
        kv_put(ADDR(5), ADDR(7), c, in_ ? ks[i] : 0.0, in_);
        kv_put(ADDR(6), ADDR(8), c, in_ ? v.v[(t * KVh + g) * HD + i] : 0.0, in_);
    }
}
#endif

#ifdef KERNEL_ATTN
// Buffers: 1 q|gate, 2 k, 3 v, 4 q_norm, 5 k_norm, 6 rope, 7 kc, 8 vc, 9 out,
// 10 k scales, 11 v scales.
void main() {
    const uint HD = A_HD;
    uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    uint H = A_H, KVh = A_KV;
    uint rep = H / KVh;
    uint g = h / rep;
    uint pos = A_POS0 + t;
    uint rp = t * 2u * A_ROPEHALF;
    F32 qg = F32(ADDR(1));
    uint qrow = (t * H + h) * 2u * HD;
    for (uint i = TID; i < HD; i += NT) qs[i] = qg.v[qrow + i];
    barrier();
    att_norm_rope(1u, ADDR(4), ADDR(6), rp);
    for (uint i = TID; i < HD; i += NT) qs[i] = qs[i] * A_SCALE;
    uint npos = pos + 1u;  // positions attended
    uint ncache = npos;    // of which read from the cache
    if (A_FUSED != 0u) {
        ncache = pos;
        F32 k = F32(ADDR(2));
        F32 v = F32(ADDR(3));
        for (uint i = TID; i < HD; i += NT) ks[i] = k.v[(t * KVh + g) * HD + i];
        barrier();
        att_norm_rope(0u, ADDR(5), ADDR(6), rp);
        bool store = h % rep == 0u;
        // Uniform trip count: every thread reaches kv_put's sg_max.
        for (uint i0 = 0u; i0 < HD; i0 += NT) {
            uint i = i0 + TID;
            bool in_ = i < HD;
            uint c = (g * A_CAP + pos) * HD + i;
            float kq = kv_put(ADDR(7), ADDR(10), c, in_ ? ks[i] : 0.0, in_ && store);
            float vq = kv_put(ADDR(8), ADDR(11), c, in_ ? v.v[(t * KVh + g) * HD + i] : 0.0, in_ && store);
            if (in_) {
                ks[i] = kq;
                vs[i] = vq;
            }
        }
    }
    barrier();
    float m = NEG_BIG, l = 0.0;
    float acc[ATT_DPL];
    float qv[ATT_DPL];
    for (uint u = 0u; u < ATT_DPL; u++) {
        uint i = LANE + 32u * u;
        acc[u] = 0.0;
        qv[u] = i < HD ? qs[i] : 0.0;
    }
    const uint base = g * A_CAP * HD;
    uint64_t kc = ADDR(7), vc = ADDR(8), ksc = ADDR(10), vsc = ADDR(11);
    // Every SIMD-group runs the same number of rounds (sg_sum is workgroup-uniform);
    // in round r SIMD-group sg takes position r·NSG + sg when there is one.
    for (uint p0 = 0u; p0 < npos; p0 += NSG) {
        uint p = p0 + SG;
        bool live = p < npos;
        bool local = p >= ncache;
        float sc = 0.0;
        if (live) {
            for (uint u = 0u; u < ATT_DPL; u++) {
                uint i = LANE + 32u * u;
                if (i < HD) sc += qv[u] * (local ? ks[i] : kv_get(kc, ksc, base + p * HD + i));
            }
        }
        sc = sg_sum(sc);
        if (live) {
            float mn = max(m, sc);
            float corr = exp(m - mn);
            float w = exp(sc - mn);
            l = l * corr + w;
            for (uint u = 0u; u < ATT_DPL; u++) {
                uint i = LANE + 32u * u;
                if (i < HD) acc[u] = acc[u] * corr + w * (local ? vs[i] : kv_get(vc, vsc, base + p * HD + i));
            }
            m = mn;
        }
    }
    if (LANE == 0u) {
        ms[SG] = m;
        ls[SG] = l;
    }
    for (uint u = 0u; u < ATT_DPL; u++) {
        uint i = LANE + 32u * u;
        if (i < HD) accs[SG * HD + i] = acc[u];
    }
    barrier();
    uint nsg = NSG;
    float M = NEG_BIG;
    for (uint s = 0u; s < nsg; s++) M = max(M, ms[s]);
    float L = 0.0;
    for (uint s = 0u; s < nsg; s++) L += ls[s] * exp(ms[s] - M);
    F32 out_ = F32(ADDR(9));
    uint grow = qrow + HD;
    for (uint i = TID; i < HD; i += NT) {
        float o = 0.0;
        for (uint s = 0u; s < nsg; s++) o += accs[s * HD + i] * exp(ms[s] - M);
        float inv = 1.0 / L;
        out_.v[(t * H + h) * HD + i] = o * inv * sigmoid1(qg.v[grow + i]);
    }
}
#endif
