#version 450
// Gated full attention over the KV cache (GQA: query head h reads KV head h / rep), split
// over blocks of positions (flash-decoding): the translation of attn.metal.
//
// The cache of one layer is two buffers, keys and values, laid out [KV head][position]
// [HeadDim] at the cache precision — fp16 bits, float or int8 codes: the _f16, _f32 and
// _i8 kernels (-DKV=0, 1, 2) — so that a block of positions is one contiguous run per KV
// head. An int8 cache has two more buffers, a float scale per 32 values ([KV
// head][position][HD/32]), quantised as qwen35's KV cache does: scale absmax/127, codes
// round(x·127/absmax) clamped to ±127.
//
//   attn_append_* (-DKERNEL_APPEND): prefill, grid (KV, T): k ← RMSNorm(k)·k_norm, RoPE;
//                  stores k and v at positions pos0 + t.
//   attn_* (-DKERNEL_ATTN): the partial softmaxes. The positions 0..pos0+T−1 are cut into
//                  nb blocks of span positions; a workgroup takes one KV head g, one
//                  block b and one tile of tt tokens, and handles every query that reads
//                  g there — the rep query heads of the group times the tile's tokens —
//                  together, reading each key and value row of the block once for all
//                  of them (ATT_NP rows at a time, widened to float in shared memory).
//                  Grid (blocks, tiles, KV) of a dispatch, which covers blocks b0.. and
//                  tiles y0... Each SIMD-group owns up to ATT_QPS queries: q ←
//                  RMSNorm(q)·q_norm, RoPE, ·1/√HD in registers, an online softmax over
//                  the block's positions up to its token's own, and writes the partial
//                  result of (token, head, block): the running max m, the sum l of
//                  e^(s − m) and the weighted values. With args.fused (a decode step,
//                  T = 1) the workgroup whose block holds position pos0 also forms the
//                  token's own key and value (rounded to the cache precision), appends
//                  them to the cache and attends them from shared memory.
//   attn_merge (-DKERNEL_MERGE): grid (H, T): merges the blocks a token sees exactly —
//                  each partial weighted by e^(m_b − max m) — and writes out = o ⊙
//                  sigmoid(gate).
//
// RoPE is NeoX-style on the first 2·ropeHalf dims (pairs i, i + ropeHalf), with the
// cos/sin of each position from a table (rope[t][i] = cos, rope[t][ropeHalf + i] = sin).
//
// Unlike the MSL, every sg_* call sits in workgroup-uniform control flow: the cache
// stores loop to a uniform trip count (lanes past HD quantise a 0 and store nothing), and
// every SIMD-group runs the same query slots and positions, a slot without a query or a
// position its token does not see adding a 0 to the reduction and skipping the update.
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
#define A_SPAN ARGU(10)
#define A_NB ARGU(11)
#define A_B0 ARGU(12)
#define A_Y0 ARGU(13)
#define A_TT ARGU(14)

// attn.metal's sizes: the most SIMD-groups of attn_*, the head's dims per lane, the
// queries a SIMD-group holds, the positions of a cache tile (16 KiB of keys and values
// as float), the most blocks a token's positions are cut into.
#define ATT_SG 8u
#define ATT_DPL ((BONSAI_HD + 31u) / 32u)
#define ATT_QPS ((BONSAI_HD > 256u) ? 2u : 4u)
#define ATT_NP ((BONSAI_HD >= 2048u) ? 1u : ((2048u / BONSAI_HD > 32u) ? 32u : 2048u / BONSAI_HD))
#define ATT_MAXB 64u

#define KV_F16 0
#define KV_F32 1
#define KV_I8 2

#if !defined(KV) && !defined(KERNEL_MERGE)
#error KV must be defined
#endif

#if defined(KERNEL_APPEND) || defined(KERNEL_ATTN)
shared float ks[BONSAI_HD];
#endif
#ifdef KERNEL_ATTN
shared float vs[BONSAI_HD];
// Keys then values of ATT_NP positions; before the position loop, the SIMD-groups'
// query rows.
shared float tile[2u * ATT_NP * BONSAI_HD];
#endif

#if defined(KERNEL_APPEND) || defined(KERNEL_ATTN)
// RMSNorm·gain then RoPE of the head held in ks (HD values), the cos/sin at rope[rp..].
void att_norm_rope(uint64_t gainAddr, uint64_t ropeAddr, uint rp) {
    F32 gain = F32(gainAddr);
    F32 rope = F32(ropeAddr);
    uint HD = A_HD, rh = A_ROPEHALF;
    float s = 0.0;
    for (uint i = TID; i < HD; i += NT) s += ks[i] * ks[i];
    s = tg_sum(s);
    float inv = 1.0 / sqrt(s / float(HD) + A_EPS);
    for (uint i = TID; i < HD; i += NT) ks[i] = ks[i] * inv * gain.v[i];
    barrier();
    for (uint i = TID; i < rh; i += NT) {
        float c = rope.v[rp + i], sn = rope.v[rp + rh + i];
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
#endif

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
    att_norm_rope(ADDR(3), ADDR(4), t * 2u * A_ROPEHALF);
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
// The partial softmaxes of one workgroup: KV head g = z, block b = b0 + x, tokens
// t0 = (y0 + y)·tt .. t0 + ntok − 1. Buffers: 1 q|gate, 2 k, 3 v, 4 q_norm, 5 k_norm,
// 6 rope, 7 kc, 8 vc, 9 partial accumulators, 10 k scales, 11 v scales, 12 partial
// (m, l); the partial of (t, h, b) at e = (t·H + h)·nb + b.
void main() {
    const uint HD = A_HD, H = A_H, rh = A_ROPEHALF;
    const uint rep = H / A_KV;
    const uint g = gl_WorkGroupID.z, b = A_B0 + gl_WorkGroupID.x;
    const uint t0 = (A_Y0 + gl_WorkGroupID.y) * A_TT;
    const uint ntok = min(A_TT, A_T - t0);
    const uint Q = rep * ntok;             // queries: j → token t0 + j / rep, head g·rep + j % rep
    const uint nsg = NSG;
    const uint nq = (Q + nsg - 1u) / nsg;  // query slots per SIMD-group (≤ ATT_QPS)
    const uint lo = b * A_SPAN;
    // Positions this workgroup reads: the block, up to the last token's own position.
    const uint hi = min(lo + A_SPAN, A_POS0 + t0 + ntok);
    if (hi <= lo) return;  // no token of the tile sees the block; attn_merge skips it
    // A fused step: the block holding the token's position forms its key and value.
    const bool own = A_FUSED != 0u && A_POS0 >= lo;
    const uint ncache = own ? A_POS0 : hi;  // positions read from the cache
    uint64_t kc = ADDR(7), vc = ADDR(8), ksc = ADDR(10), vsc = ADDR(11);
    if (own) {
        F32 k = F32(ADDR(2));
        F32 v = F32(ADDR(3));
        for (uint i = TID; i < HD; i += NT) ks[i] = k.v[g * HD + i];
        barrier();
        att_norm_rope(ADDR(5), ADDR(6), 0u);
        // Uniform trip count: every thread reaches kv_put's sg_max.
        for (uint i0 = 0u; i0 < HD; i0 += NT) {
            uint i = i0 + TID;
            bool in_ = i < HD;
            uint c = (g * A_CAP + A_POS0) * HD + i;
            float kq = kv_put(kc, ksc, c, in_ ? ks[i] : 0.0, in_);
            float vq = kv_put(vc, vsc, c, in_ ? v.v[g * HD + i] : 0.0, in_);
            if (in_) {
                ks[i] = kq;
                vs[i] = vq;
            }
        }
    }

    // The SIMD-group's queries into registers: RMSNorm·q_norm, RoPE (through the
    // SIMD-group's row of scratch, the pairs lying in other lanes), ·scale.
    float qv[ATT_QPS * ATT_DPL];
    float acc[ATT_QPS * ATT_DPL];
    float m[ATT_QPS];
    float l[ATT_QPS];
    F32 qg = F32(ADDR(1));
    F32 qn = F32(ADDR(4));
    F32 rope = F32(ADDR(6));
    const uint qs = SG * HD;  // the SIMD-group's scratch row in tile
    for (uint i = 0u; i < ATT_QPS; i++) {
        m[i] = NEG_BIG;
        l[i] = 0.0;
        for (uint u = 0u; u < ATT_DPL; u++) {
            qv[i * ATT_DPL + u] = 0.0;
            acc[i * ATT_DPL + u] = 0.0;
        }
        if (i >= nq) continue;  // uniform: nq is the workgroup's
        uint j = SG + nsg * i;
        bool live = j < Q;
        uint t = live ? t0 + j / rep : t0;
        uint h = g * rep + (live ? j % rep : 0u);
        uint qrow = (t * H + h) * 2u * HD;
        uint rp = t * 2u * rh;
        float ss = 0.0;
        for (uint u = 0u; u < ATT_DPL; u++) {
            uint d = LANE + 32u * u;
            float x = (live && d < HD) ? qg.v[qrow + d] : 0.0;
            qv[i * ATT_DPL + u] = x;
            ss += x * x;
        }
        ss = sg_sum(ss);
        float inv = 1.0 / sqrt(ss / float(HD) + A_EPS);
        for (uint u = 0u; u < ATT_DPL; u++) {
            uint d = LANE + 32u * u;
            if (d < HD) {
                float x = qv[i * ATT_DPL + u] * inv;
                tile[qs + d] = x * qn.v[d];
            }
        }
        sg_barrier();
        for (uint u = 0u; u < ATT_DPL; u++) {
            uint d = LANE + 32u * u;
            float x = 0.0;
            if (d < rh) {
                x = tile[qs + d] * rope.v[rp + d] - tile[qs + d + rh] * rope.v[rp + rh + d];  // x0·cos − x1·sin
            } else if (d < 2u * rh) {
                x = tile[qs + d - rh] * rope.v[rp + d] + tile[qs + d] * rope.v[rp + d - rh];  // x0·sin + x1·cos
            } else if (d < HD) {
                x = tile[qs + d];
            }
            qv[i * ATT_DPL + u] = live ? x * A_SCALE : 0.0;
        }
        sg_barrier();
    }

    const uint base = g * A_CAP * HD;
    const uint tv = ATT_NP * HD;  // the values' offset in tile
    for (uint p0 = lo; p0 < hi; p0 += ATT_NP) {
        const uint np = min(ATT_NP, hi - p0);
        barrier();  // the scratch or the last tile is done with
        for (uint e = TID; e < np * HD; e += NT) {
            uint p = p0 + e / HD, d = e % HD;
            bool local = p >= ncache;
            tile[e] = local ? ks[d] : kv_get(kc, ksc, base + p0 * HD + e);
            tile[tv + e] = local ? vs[d] : kv_get(vc, vsc, base + p0 * HD + e);
        }
        barrier();
        for (uint i = 0u; i < ATT_QPS; i++) {
            if (i >= nq) break;  // uniform
            uint j = SG + nsg * i;
            // Token t0 + j/rep sees the positions below lim (none for a slot without a query).
            uint lim = j < Q ? A_POS0 + t0 + j / rep + 1u : 0u;
            for (uint p = 0u; p < np; p++) {
                float s = 0.0;
                for (uint u = 0u; u < ATT_DPL; u++) {
                    uint d = LANE + 32u * u;
                    if (d < HD) s += qv[i * ATT_DPL + u] * tile[p * HD + d];
                }
                s = sg_sum(s);
                if (p0 + p < lim) {
                    // The running max moves only when a score exceeds it: then the sums
                    // so far are rescaled by e^(old − new).
                    if (s > m[i]) {
                        float corr = exp(m[i] - s);
                        l[i] *= corr;
                        for (uint u = 0u; u < ATT_DPL; u++) acc[i * ATT_DPL + u] *= corr;
                        m[i] = s;
                    }
                    float w = exp(s - m[i]);
                    l[i] += w;
                    for (uint u = 0u; u < ATT_DPL; u++) {
                        uint d = LANE + 32u * u;
                        if (d < HD) acc[i * ATT_DPL + u] += w * tile[tv + p * HD + d];
                    }
                }
            }
        }
    }

    F32 pacc = F32(ADDR(9));
    F32 pml = F32(ADDR(12));
    for (uint i = 0u; i < ATT_QPS; i++) {
        uint j = SG + nsg * i;
        if (i >= nq || j >= Q) continue;
        uint t = t0 + j / rep, h = g * rep + j % rep;
        uint e = (t * H + h) * A_NB + b;
        if (LANE == 0u) {
            pml.v[2u * e] = m[i];
            pml.v[2u * e + 1u] = l[i];
        }
        for (uint u = 0u; u < ATT_DPL; u++) {
            uint d = LANE + 32u * u;
            if (d < HD) pacc.v[e * HD + d] = acc[i * ATT_DPL + u];
        }
    }
}
#endif

#ifdef KERNEL_MERGE
shared float wb[ATT_MAXB];
// Merges the partial softmaxes of (token t, head h) over the blocks holding positions
// 0..pos0+t and writes the gated output. Grid (H, T); buffers 1 q|gate, 2 partial
// accumulators, 3 partial (m, l), 4 out.
void main() {
    const uint HD = A_HD, H = A_H;
    uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    F32 qg = F32(ADDR(1));
    F32 pacc = F32(ADDR(2));
    F32 pml = F32(ADDR(3));
    F32 out_ = F32(ADDR(4));
    // The blocks token t sees: those starting at or before its position pos0 + t.
    uint nb = min(A_NB, (A_POS0 + t) / A_SPAN + 1u);
    uint e0 = (t * H + h) * A_NB;
    float M = NEG_BIG;
    for (uint b = 0u; b < nb; b++) M = max(M, pml.v[2u * (e0 + b)]);
    float L = 0.0;
    for (uint b = 0u; b < nb; b++) L += pml.v[2u * (e0 + b) + 1u] * exp(pml.v[2u * (e0 + b)] - M);
    for (uint b = TID; b < nb; b += NT) wb[b] = exp(pml.v[2u * (e0 + b)] - M);
    barrier();
    float inv = 1.0 / L;
    uint grow = (t * H + h) * 2u * HD + HD;
    for (uint d = TID; d < HD; d += NT) {
        float o = 0.0;
        for (uint b = 0u; b < nb; b++) o += pacc.v[(e0 + b) * HD + d] * wb[b];
        out_.v[(t * H + h) * HD + d] = o * inv * sigmoid1(qg.v[grow + d]);
    }
}
#endif
