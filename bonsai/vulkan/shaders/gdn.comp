#version 450
// The Gated DeltaNet mixer core (gdn.metal). gdn_seq and gdn_chunk run one workgroup
// per q/k head group kh (KH workgroups): the group's q and k channels, the REP V heads
// that read them (tiled heads r·KH + kh) and their conv channels, recurrent states and
// z rows belong to that workgroup alone, so the convolution and recurrent states are
// updated without races. gdn_decode runs one workgroup per V head. One module per
// kernel, selected by a define on the glslc line:
//
//   -DKERNEL_GDN_DECODE  gdn_decode: one token of one V head, after the In site's
//       mv_norm (which convolved the attn_qkv rows as it wrote them, MVF_CONV): the
//       BF16 alpha/beta projections on the un-rotated normed vector, then the step
//       (gdn.metal says why the products left this kernel).
//   -DKERNEL_GDN_SEQ     gdn_seq: T tokens, the step form token by token, reading the
//       attn_qkv/attn_gate outputs of the chunk's GEMMs and the normed rows h.
//   -DKERNEL_GDN_CHUNK   gdn_chunk: the same over T ≤ 64 tokens in the chunked form,
//       chunks of 32 tokens.
//
// Args (GDNArgs, words): 0 E, 1 QKV, 2 inner, 3 KH, 4 VH, 5 convK, 6 T, 7 flags, 8 eps,
// 9 qscale, 10 blk, 11 scale.
//
// The step, per token and V head h (state S stored value-row-major, S[h][j][i] with i
// along the key): conv + SiLU over the window (tap 0 oldest); q, k ← x / max(‖x‖, eps),
// q ·= 1/√d; β = sigmoid(beta); g = softplus(alpha + dt_bias)·ssm_a; per value-row j:
// δ = (v_j − e^g·S_j·k)·β, S_j ← e^g·S_j + δ·k, o_j = S_j·q; then o ← RMSNorm(o)·ssm_norm
// ⊙ silu(z), written at the head's GROUPED place (kh·REP + r).
//
// Differences from the MSL: every loop that the MSL runs per SIMD-group over a strided
// range (row = sg; row < n; row += nsg) runs here over a trip count uniform over the
// workgroup (base = 0; base < n; base += NSG, row = base + SG), masking the rows past
// the end (their contributions 0, their writes and out-of-range reads skipped), so that
// every thread reaches every sg_* call and barrier (common.glsl). gdn_chunk's per-SG
// δ scratch is indexed by TID. Device memory that threads of a workgroup hand to each other (gdn_chunk's qkv rows and
// outputs) is read and written through coherent references, with memoryBarrierBuffer()
// before the barrier (Metal's mem_device).

#include "common.glsl"

#define GDN_C ((2u + BONSAI_GDN_REP) * BONSAI_GDN_D)   // q, k and the REP v channels
#define GDN_V (BONSAI_GDN_REP * BONSAI_GDN_D)          // the REP heads' values (and z)
#define GDN_DPL ((BONSAI_GDN_D + 31u) / 32u)          // state values per lane of a row


#define A_E ARGU(0)
#define A_QKV ARGU(1)
#define A_INNER ARGU(2)
#define A_KH ARGU(3)
#define A_CONVK ARGU(5)
#define A_T ARGU(6)
#define A_EPS ARGF(8)
#define A_QSCALE ARGF(9)

// Device floats handed between threads of the workgroup (gdn_chunk).
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer F32C { float v[]; };

// The attn_qkv channel of local channel lc of group kh: q (d), k (d), then the REP
// heads' v (d each, head r·KH + kh).
uint gdn_channel(uint lc, uint kh, uint KH) {
    const uint d = BONSAI_GDN_D;
    if (lc < d) return kh * d + lc;
    if (lc < 2u * d) return KH * d + kh * d + (lc - d);
    uint r = (lc - 2u * d) / d;
    uint i = (lc - 2u * d) % d;
    return 2u * KH * d + (r * KH + kh) * d + i;
}

#ifdef KERNEL_GDN_SEQ

#define GDN_AB_X(k) hn.v[xb + (k)]

shared float act[GDN_C];
shared float zl[GDN_V];
shared float ab[2u * BONSAI_GDN_REP];
shared float hs[BONSAI_GDN_REP];

// The raw alpha (rows 0..REP−1) and beta (REP..2·REP−1) projections of group kh on a
// normed row (hn from float xb), BF16 rows of E, into ab.
void gdn_ab(uint kh, uint64_t wa, uint64_t wb, F32 hn, uint xb) {
    const uint rep = BONSAI_GDN_REP;
    const uint E = A_E;
    for (uint q0 = 0u; q0 < 2u * rep; q0 += NSG) {
        uint q = q0 + SG;
        bool ok = q < 2u * rep;
        float s = 0.0;
        if (ok) {
            uint h = (q % rep) * A_KH + kh;
            U16 row = U16(q < rep ? wa : wb);
            uint rb = h * E;
            for (uint k = LANE; k < E; k += 32u) s += bf16_to_float(uint(row.v[rb + k])) * GDN_AB_X(k);
        }
        s = sg_sum(s);
        if (ok && LANE == 0u) ab[q] = s;
    }
}

// One token of group kh. act holds the raw attn_qkv outputs of the group's channels,
// zl the attn_gate outputs of its heads, ab the raw alpha (REP) then beta (REP)
// projections. act is overwritten (its v part ends as the heads' o). The output goes
// to outp from float ob.
void gdn_token(uint kh, F32 convw, F32 dtb, F32 Av, F32 snorm, F32 conv, F32 S, F32 outp, uint ob) {
    const uint d = BONSAI_GDN_D;
    const uint rep = BONSAI_GDN_REP;
    const uint K = A_CONVK;
    const uint QKV = A_QKV;
    const uint KH = A_KH;
    const float eps = A_EPS;
    barrier();
    // Causal depthwise convolution and SiLU; the window slides (the state keeps the raw
    // inputs of the last K−1 tokens, row 0 the oldest).
    for (uint lc = TID; lc < GDN_C; lc += NT) act[lc] = conv_step(gdn_channel(lc, kh, KH), act[lc], K, QKV, convw, conv);
    barrier();
    // L2 norms of q and k; q also scaled by 1/√d.
    float sq = 0.0, sk = 0.0;
    for (uint i = TID; i < d; i += NT) {
        float q = act[i], k = act[d + i];
        sq += q * q;
        sk += k * k;
    }
    sq = tg_sum(sq);
    sk = tg_sum(sk);
    float iq = 1.0 / max(sqrt(sq), eps);
    float ik = 1.0 / max(sqrt(sk), eps);
    barrier();
    for (uint i = TID; i < d; i += NT) {
        float q = act[i] * iq;
        act[i] = q * A_QSCALE;
        act[d + i] = act[d + i] * ik;
    }
    barrier();
    // The delta rule, one value-row per SIMD-group pass; o_j replaces v_j (act[0, d) is
    // q, act[d, 2d) k).
    for (uint base = 0u; base < rep * d; base += NSG) {
        uint row = base + SG;
        bool ok = row < rep * d;
        uint rr = ok ? row : 0u;
        uint r = rr / d, j = rr % d;
        uint h = r * KH + kh;
        float beta = sigmoid1(ab[rep + r]);
        float g = softplus1(ab[r] + dtb.v[h]) * Av.v[h];
        float decay = decay_weight(g);
        uint sr = (h * d + j) * d;
        float sv[GDN_DPL];
        float dk = 0.0;
        for (uint u = 0u; u < GDN_DPL; u++) {
            uint i = LANE + 32u * u;
            sv[u] = 0.0;
            if (ok && i < d) {
                sv[u] = S.v[sr + i];
                dk += sv[u] * act[d + i];
            }
        }
        dk = sg_sum(dk);
        float vj = ok ? act[2u * d + row] : 0.0;
        float dl = (vj - decay * dk) * beta;
        float dq = 0.0;
        for (uint u = 0u; u < GDN_DPL; u++) {
            uint i = LANE + 32u * u;
            if (ok && i < d) {
                float s = decay * sv[u] + dl * act[d + i];
                S.v[sr + i] = s;
                dq += s * act[i];
            }
        }
        dq = sg_sum(dq);
        // Every lane read act[2d + row] (vj) above; lane 0 now overwrites it. Emulated,
        // sg_sum's barrier() orders the two; native, subgroupAdd does not (no memory
        // ordering between lanes), so a subgroup barrier does. Uniform control flow.
        if (SG_NATIVE) sg_barrier();
        if (ok && LANE == 0u) act[2u * d + row] = dq;
    }
    barrier();
    // Gated RMSNorm per head, written at the grouped place.
    for (uint r0 = 0u; r0 < rep; r0 += NSG) {
        uint r = r0 + SG;
        bool ok = r < rep;
        float s = 0.0;
        if (ok) {
            for (uint j = LANE; j < d; j += 32u) {
                float o = act[2u * d + r * d + j];
                s += o * o;
            }
        }
        s = sg_sum(s);
        if (ok && LANE == 0u) hs[r] = s;
    }
    barrier();
    for (uint idx = TID; idx < rep * d; idx += NT) {
        uint r = idx / d, j = idx % d;
        float inv = 1.0 / sqrt(hs[r] / float(d) + eps);
        float o = act[2u * d + idx] * inv;
        o = o * snorm.v[j];
        outp.v[ob + (kh * rep + r) * d + j] = silu(zl[idx]) * o;
    }
}

#endif  // KERNEL_GDN_SEQ

#ifdef KERNEL_GDN_DECODE

// gdn_decode: one decode token of V head h = r·KH + kh (grid: VH workgroups), on the
// rows the In site's mv_norm wrote: qkv (convolved), z and the normed vector. Buffers
// as gdn_seq's: 1 qkv, 2 z, 3 hn, 4 walpha, 5 wbeta, 7 dt_bias, 8 A, 9 ssm_norm, 11 S,
// 12 out. Head h's state rows and outputs are its workgroup's alone.

shared float qk[2u * BONSAI_GDN_D];  // q, then k
shared float o[BONSAI_GDN_D];
shared float ab[2];                  // alpha, beta
shared float hs[1];

void main() {
    const uint h = gl_WorkGroupID.x;
    const uint d = BONSAI_GDN_D;
    const uint rep = BONSAI_GDN_REP;
    const uint KH = A_KH;
    const uint E = A_E;
    const uint kh = h % KH, r = h / KH;
    const float eps = A_EPS;
    F32 qkv = F32(ADDR(1));
    F32 z = F32(ADDR(2));
    F32 hn = F32(ADDR(3));
    F32 S = F32(ADDR(11));
    F32 outp = F32(ADDR(12));
    for (uint i = TID; i < d; i += NT) {
        qk[i] = qkv.v[kh * d + i];
        qk[d + i] = qkv.v[KH * d + kh * d + i];
    }
    // alpha (0) and beta (1) of head h, over a trip count uniform in the workgroup.
    for (uint q0 = 0u; q0 < 2u; q0 += NSG) {
        uint q = q0 + SG;
        bool ok = q < 2u;
        float s = 0.0;
        if (ok) {
            U16 row = U16(q == 0u ? ADDR(4) : ADDR(5));
            uint rb = h * E;
            for (uint k = LANE; k < E; k += 32u) s += bf16_to_float(uint(row.v[rb + k])) * hn.v[k];
        }
        s = sg_sum(s);
        if (ok && LANE == 0u) ab[q] = s;
    }
    barrier();
    // L2 norms of q and k; q also scaled by 1/√d (gdn_token's).
    float sq = 0.0, sk = 0.0;
    for (uint i = TID; i < d; i += NT) {
        float q = qk[i], k = qk[d + i];
        sq += q * q;
        sk += k * k;
    }
    sq = tg_sum(sq);
    sk = tg_sum(sk);
    float iq = 1.0 / max(sqrt(sq), eps);
    float ik = 1.0 / max(sqrt(sk), eps);
    barrier();
    for (uint i = TID; i < d; i += NT) {
        float q = qk[i] * iq;
        qk[i] = q * A_QSCALE;
        qk[d + i] = qk[d + i] * ik;
    }
    barrier();
    // The delta rule, one value-row per virtual SIMD-group pass (uniform trip count,
    // rows past d masked).
    float beta = sigmoid1(ab[1]);
    float g = softplus1(ab[0] + F32(ADDR(7)).v[h]) * F32(ADDR(8)).v[h];
    float decay = decay_weight(g);
    for (uint j0 = 0u; j0 < d; j0 += NSG) {
        uint j = j0 + SG;
        bool ok = j < d;
        uint sr = (h * d + (ok ? j : 0u)) * d;
        float sv[GDN_DPL];
        float dk = 0.0;
        for (uint u = 0u; u < GDN_DPL; u++) {
            uint i = LANE + 32u * u;
            sv[u] = 0.0;
            if (ok && i < d) {
                sv[u] = S.v[sr + i];
                dk += sv[u] * qk[d + i];
            }
        }
        dk = sg_sum(dk);
        float vj = ok ? qkv.v[2u * KH * d + h * d + j] : 0.0;
        float dl = (vj - decay * dk) * beta;
        float dq = 0.0;
        for (uint u = 0u; u < GDN_DPL; u++) {
            uint i = LANE + 32u * u;
            if (ok && i < d) {
                float s = decay * sv[u] + dl * qk[d + i];
                S.v[sr + i] = s;
                dq += s * qk[i];
            }
        }
        dq = sg_sum(dq);
        if (ok && LANE == 0u) o[j] = dq;
    }
    barrier();
    // Gated RMSNorm, written at the head's grouped place: virtual SIMD-group 0 sums,
    // every group reaches the sg_sum.
    float s = 0.0;
    if (SG == 0u) {
        for (uint j = LANE; j < d; j += 32u) s += o[j] * o[j];
    }
    s = sg_sum(s);
    if (SG == 0u && LANE == 0u) hs[0] = s;
    barrier();
    float inv = 1.0 / sqrt(hs[0] / float(d) + eps);
    F32 snorm = F32(ADDR(9));
    for (uint j = TID; j < d; j += NT) {
        float v = o[j] * inv;
        v = v * snorm.v[j];
        outp.v[(kh * rep + r) * d + j] = silu(z.v[h * d + j]) * v;
    }
}

#endif  // KERNEL_GDN_DECODE

#ifdef KERNEL_GDN_SEQ

void main() {
    const uint kh = gl_WorkGroupID.x;
    const uint d = BONSAI_GDN_D;
    const uint T = A_T, QKV = A_QKV, inner = A_INNER, E = A_E, KH = A_KH;
    F32 qkv = F32(ADDR(1));
    F32 z = F32(ADDR(2));
    F32 hn = F32(ADDR(3));
    for (uint t = 0u; t < T; t++) {
        barrier();
        for (uint lc = TID; lc < GDN_C; lc += NT) act[lc] = qkv.v[t * QKV + gdn_channel(lc, kh, KH)];
        for (uint idx = TID; idx < GDN_V; idx += NT) {
            uint h = (idx / d) * KH + kh;
            zl[idx] = z.v[t * inner + h * d + idx % d];
        }
        gdn_ab(kh, ADDR(4), ADDR(5), hn, t * E);
        gdn_token(kh, F32(ADDR(6)), F32(ADDR(7)), F32(ADDR(8)), F32(ADDR(9)), F32(ADDR(10)), F32(ADDR(11)),
                  F32(ADDR(12)), t * inner);
    }
}

#endif  // KERNEL_GDN_SEQ

#ifdef KERNEL_GDN_CHUNK

// ---- The chunked form (prefill) ----
//
// gdn_chunk runs T ≤ GDN_TMAX tokens of group kh in chunks of GDN_CC = 32 tokens, the
// SIMD width: lane t of a SIMD-group holds token t of the chunk. With G the cumulative
// log decay within the chunk, S₀ the state at its start, and per value-row j:
//   δ_t = β_t (v_t − e^{G_t} S₀ᵀk_t) − Σ_{s<t} β_t e^{G_t−G_s} (k_t·k_s) δ_s
//   o_t = e^{G_t} S₀ᵀq_t + Σ_{s≤t} e^{G_t−G_s} (q_t·k_s) δ_s
//   S   ← e^{G_n} S₀ + Σ_s e^{G_n−G_s} δ_s k_s
// The decay differences G_t − G_s are summed directly over the tokens between. The
// convolution runs first over all T tokens, in place on the qkv rows (each channel one
// thread's); then the q/k norms and the gates; then the chunks.

#define GDN_CC 32u
#define GDN_TMAX 64u
#define GDN_MAXK 8u

shared float logd[GDN_TMAX * BONSAI_GDN_REP];
shared float bet[GDN_TMAX * BONSAI_GDN_REP];
shared float kk[GDN_CC * GDN_CC];
shared float qk[GDN_CC * GDN_CC];
shared float am[GDN_CC * GDN_CC];
shared float qm[GDN_CC * GDN_CC];
shared float gam[GDN_CC];
shared float tail[GDN_CC];
// Each SIMD-group's δ of the chunk's tokens: dl[32·SG + t] (the MSL's dl + sg·GDN_CC).
shared float dl[gl_WorkGroupSize.x];

// Metal's threadgroup_barrier(mem_device | mem_threadgroup).
void dev_barrier() {
    memoryBarrierBuffer();
    barrier();
}

void main() {
    const uint kh = gl_WorkGroupID.x;
    const uint d = BONSAI_GDN_D;
    const uint rep = BONSAI_GDN_REP;
    const uint K = A_CONVK;
    const uint T = A_T;
    const uint QKV = A_QKV;
    const uint KH = A_KH;
    const uint E = A_E;
    const uint inner = A_INNER;
    const float eps = A_EPS;
    F32C qkv = F32C(ADDR(1));
    F32 z = F32(ADDR(2));
    F32 hn = F32(ADDR(3));
    const uint64_t walpha = ADDR(4), wbeta = ADDR(5);
    F32 convw = F32(ADDR(6));
    F32 dtb = F32(ADDR(7));
    F32 Av = F32(ADDR(8));
    F32 snorm = F32(ADDR(9));
    F32 conv = F32(ADDR(10));
    F32 S = F32(ADDR(11));
    F32C outp = F32C(ADDR(12));
    const uint qoff = kh * d, koff = KH * d + kh * d;

    // Convolution + SiLU over all T tokens, in place; the window slides in registers.
    for (uint lc = TID; lc < GDN_C; lc += NT) {
        uint gc = gdn_channel(lc, kh, KH);
        uint wc = gc * K;
        float win[GDN_MAXK];
        for (uint tap = 0u; tap + 1u < K; tap++) win[tap] = conv.v[tap * QKV + gc];
        for (uint t = 0u; t < T; t++) {
            float cur = qkv.v[t * QKV + gc];
            float s = 0.0;
            for (uint tap = 0u; tap + 1u < K; tap++) s += convw.v[wc + tap] * win[tap];
            s += convw.v[wc + K - 1u] * cur;
            for (uint tap = 0u; tap + 2u < K; tap++) win[tap] = win[tap + 1u];
            win[K - 2u] = cur;
            qkv.v[t * QKV + gc] = silu(s);
        }
        for (uint tap = 0u; tap + 1u < K; tap++) conv.v[tap * QKV + gc] = win[tap];
    }
    // The gates: log decay and β per token and head, from the un-rotated normed rows.
    for (uint p0 = 0u; p0 < T * 2u * rep; p0 += NSG) {
        uint p = p0 + SG;
        bool ok = p < T * 2u * rep;
        uint t = p / (2u * rep), q = p % (2u * rep);
        uint r = q % rep;
        uint h = r * KH + kh;
        float s = 0.0;
        if (ok) {
            U16 row = U16(q < rep ? walpha : wbeta);
            uint rb = h * E, xb = t * E;
            for (uint k = LANE; k < E; k += 32u) s += bf16_to_float(uint(row.v[rb + k])) * hn.v[xb + k];
        }
        s = sg_sum(s);
        if (ok && LANE == 0u) {
            if (q < rep) logd[t * rep + r] = softplus1(s + dtb.v[h]) * Av.v[h];
            else bet[t * rep + r] = sigmoid1(s);
        }
    }
    dev_barrier();
    // L2 norms of each token's q and k (q also ·1/√d), in place.
    for (uint t0 = 0u; t0 < T; t0 += NSG) {
        uint t = t0 + SG;
        bool ok = t < T;
        uint qb = t * QKV + qoff, kb = t * QKV + koff;
        float sq = 0.0, sk = 0.0;
        if (ok) {
            for (uint i = LANE; i < d; i += 32u) {
                float q = qkv.v[qb + i], k = qkv.v[kb + i];
                sq += q * q;
                sk += k * k;
            }
        }
        sq = sg_sum(sq);
        sk = sg_sum(sk);
        float iq = 1.0 / max(sqrt(sq), eps);
        float ik = 1.0 / max(sqrt(sk), eps);
        if (ok) {
            for (uint i = LANE; i < d; i += 32u) {
                float x = qkv.v[qb + i] * iq;
                qkv.v[qb + i] = x * A_QSCALE;
                qkv.v[kb + i] = qkv.v[kb + i] * ik;
            }
        }
    }
    dev_barrier();

    for (uint c0 = 0u; c0 < T; c0 += GDN_CC) {
        uint n = min(GDN_CC, T - c0);
        // The chunk's q·k and k·k (shared by the group's heads).
        for (uint p0 = 0u; p0 < n * n; p0 += NSG) {
            uint p = p0 + SG;
            bool ok = p < n * n;
            uint t = p / n, s = p % n;
            float dq = 0.0, dk = 0.0;
            if (ok && s <= t) {
                uint kt = (c0 + t) * QKV + koff;
                uint qt = (c0 + t) * QKV + qoff;
                uint ks = (c0 + s) * QKV + koff;
                for (uint i = LANE; i < d; i += 32u) {
                    float kv = qkv.v[ks + i];
                    dq += qkv.v[qt + i] * kv;
                    dk += qkv.v[kt + i] * kv;
                }
            }
            dq = sg_sum(dq);
            dk = sg_sum(dk);
            if (ok && LANE == 0u) {
                qk[t * GDN_CC + s] = s <= t ? dq : 0.0;
                kk[t * GDN_CC + s] = s < t ? dk : 0.0;
            }
        }
        barrier();
        for (uint r = 0u; r < rep; r++) {
            uint h = r * KH + kh;
            // Decays: γ_t = e^{G_t}, tail_s = e^{G_n − G_s}, and the weighted matrices.
            for (uint t = TID; t < n; t += NT) {
                float g = 0.0;
                for (uint u = 0u; u <= t; u++) g += logd[(c0 + u) * rep + r];
                gam[t] = decay_weight(g);
                float tl = 0.0;
                for (uint u = t + 1u; u < n; u++) tl += logd[(c0 + u) * rep + r];
                tail[t] = decay_weight(tl);
            }
            for (uint p = TID; p < GDN_CC * GDN_CC; p += NT) {
                uint t = p / GDN_CC, s = p % GDN_CC;
                float qv = 0.0, av = 0.0;
                if (t < n && s <= t) {
                    float dg = 0.0;
                    for (uint u = s + 1u; u <= t; u++) dg += logd[(c0 + u) * rep + r];
                    float e = decay_weight(dg);
                    qv = e * qk[p];
                    if (s < t) {
                        float be = bet[(c0 + t) * rep + r] * e;
                        av = be * kk[p];
                    }
                }
                qm[p] = qv;
                am[p] = av;
            }
            barrier();
            float gl = gam[n - 1u];
            for (uint j0 = 0u; j0 < d; j0 += NSG) {
                uint j = j0 + SG;
                bool ok = j < d;
                uint sr = (h * d + j) * d;
                float sv[GDN_DPL];
                for (uint u = 0u; u < GDN_DPL; u++) {
                    uint i = LANE + 32u * u;
                    sv[u] = (ok && i < d) ? S.v[sr + i] : 0.0;
                }
                // Lane t: U_t = (S₀ᵀk_t)_j and W_t = (S₀ᵀq_t)_j.
                float myU = 0.0, myW = 0.0;
                for (uint t = 0u; t < n; t++) {
                    uint kt = (c0 + t) * QKV + koff;
                    uint qt = (c0 + t) * QKV + qoff;
                    float u1 = 0.0, w1 = 0.0;
                    for (uint u = 0u; u < GDN_DPL; u++) {
                        uint i = LANE + 32u * u;
                        if (ok && i < d) {
                            u1 += sv[u] * qkv.v[kt + i];
                            w1 += sv[u] * qkv.v[qt + i];
                        }
                    }
                    u1 = sg_sum(u1);
                    w1 = sg_sum(w1);
                    if (LANE == t) {
                        myU = u1;
                        myW = w1;
                    }
                }
                bool tok = LANE < n;
                float vj = (ok && tok) ? qkv.v[(c0 + LANE) * QKV + 2u * KH * d + h * d + j] : 0.0;
                float bt = tok ? bet[(c0 + LANE) * rep + r] : 0.0;
                float gt = tok ? gam[LANE] : 0.0;
                // Forward substitution, token by token.
                float del = 0.0;
                for (uint t = 0u; t < n; t++) {
                    float part = LANE < t ? am[t * GDN_CC + LANE] * del : 0.0;
                    float sum = sg_sum(part);
                    if (LANE == t) del = bt * (vj - gt * myU) - sum;
                }
                const uint dls = SG * GDN_CC;
                dl[TID] = del;
                sg_barrier();
                if (ok && tok) {
                    float o = 0.0;
                    for (uint s = 0u; s <= LANE; s++) o += qm[LANE * GDN_CC + s] * dl[dls + s];
                    o = gt * myW + o;
                    outp.v[(c0 + LANE) * inner + (kh * rep + r) * d + j] = o;
                }
                // S ← e^{G_n}·S + Σ_s tail_s δ_s k_s.
                for (uint u = 0u; u < GDN_DPL; u++) {
                    uint i = LANE + 32u * u;
                    if (!ok || i >= d) continue;
                    float y = gl * sv[u];
                    for (uint s = 0u; s < n; s++) {
                        float c = tail[s] * dl[dls + s];
                        y += c * qkv.v[(c0 + s) * QKV + koff + i];
                    }
                    S.v[sr + i] = y;
                }
                sg_barrier();
            }
            barrier();
        }
        dev_barrier();
        // Gated RMSNorm of the chunk's outputs, in place.
        for (uint p0 = 0u; p0 < n * rep; p0 += NSG) {
            uint p = p0 + SG;
            bool ok = p < n * rep;
            uint t = p / rep, r = p % rep;
            uint ob = (c0 + t) * inner + (kh * rep + r) * d;
            uint zb = (c0 + t) * inner + (r * KH + kh) * d;
            float s = 0.0;
            if (ok) {
                for (uint j = LANE; j < d; j += 32u) {
                    float o = outp.v[ob + j];
                    s += o * o;
                }
            }
            s = sg_sum(s);
            float inv = 1.0 / sqrt(s / float(d) + eps);
            if (ok) {
                for (uint j = LANE; j < d; j += 32u) {
                    float x = outp.v[ob + j] * inv;
                    x = x * snorm.v[j];
                    outp.v[ob + j] = silu(z.v[zb + j]) * x;
                }
            }
        }
        dev_barrier();
    }
}

#endif  // KERNEL_GDN_CHUNK
