// The Gated DeltaNet mixer core. gdn_seq and gdn_chunk run one threadgroup per q/k head
// group kh (KH threadgroups): the group's q and k channels, the REP V heads that read
// them (tiled heads r·KH + kh) and their conv channels, recurrent states and z rows
// belong to that threadgroup alone, so the convolution and recurrent states are updated
// without races. gdn_decode runs one threadgroup per V head (see there).
//
//   gdn_decode: one token of one V head, after the In site's mv_norm (which convolved
//               the attn_qkv rows as it wrote them): the BF16 alpha/beta projections on
//               the un-rotated normed vector, then the step.
//   gdn_seq:    T tokens of a prefill chunk, the step form token by token, reading the
//               attn_qkv/attn_gate outputs of the chunk's GEMMs and the normed rows h
//               for alpha/beta.
//   gdn_chunk:  the same over T ≤ 64 tokens in the chunked (parallel) form of the
//               recurrence, chunks of 32 tokens (see below).
//
// The step, per token and V head h (state S stored value-row-major, S[h][j][i] with i
// along the key): conv + SiLU over the window (tap 0 oldest); q, k ← x / max(‖x‖, eps),
// q ·= 1/√d; β = sigmoid(beta); g = softplus(alpha + dt_bias)·ssm_a; per value-row j:
// δ = (v_j − e^g·S_j·k)·β, S_j ← e^g·S_j + δ·k, o_j = S_j·q; then o ← RMSNorm(o)·ssm_norm
// ⊙ silu(z), written at the head's GROUPED place (kh·REP + r), ready for ssm_out's
// rotation.

#include "common.h"

#define GDN_C ((2u + BONSAI_GDN_REP) * BONSAI_GDN_D)   // q, k and the REP v channels
#define GDN_V (BONSAI_GDN_REP * BONSAI_GDN_D)          // the REP heads' values (and z)
#define GDN_DPL ((BONSAI_GDN_D + 31u) / 32u)          // state values per lane of a row

// The attn_qkv channel of local channel lc of group kh: q (d), k (d), then the REP
// heads' v (d each, head r·KH + kh).
inline uint gdn_channel(uint lc, uint kh, uint KH) {
    const uint d = BONSAI_GDN_D;
    if (lc < d) return kh * d + lc;
    if (lc < 2u * d) return KH * d + kh * d + (lc - d);
    uint r = (lc - 2u * d) / d;
    uint i = (lc - 2u * d) % d;
    return 2u * KH * d + (r * KH + kh) * d + i;
}

// One token of group kh. act holds the raw attn_qkv outputs of the group's channels,
// zl the attn_gate outputs of its heads, ab the raw alpha (REP) then beta (REP)
// projections. act is overwritten (its v part ends as the heads' o).
inline void gdn_token(constant GDNArgs& a, uint kh,
                      threadgroup float* act, threadgroup const float* zl, threadgroup const float* ab,
                      threadgroup float* red, threadgroup float* hs,
                      device const float* convw, device const float* dtb, device const float* A,
                      device const float* snorm, device float* conv, device float* S, device float* out,
                      uint tid, uint nt, uint lane, uint sg, uint nsg) {
    const uint d = BONSAI_GDN_D;
    const uint rep = BONSAI_GDN_REP;
    const uint K = a.convK;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // Causal depthwise convolution and SiLU; the window slides (the state keeps the raw
    // inputs of the last K−1 tokens, row 0 the oldest).
    for (uint lc = tid; lc < GDN_C; lc += nt) act[lc] = conv_step(gdn_channel(lc, kh, a.KH), act[lc], K, a.QKV, convw, conv);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // L2 norms of q and k; q also scaled by 1/√d.
    float sq = 0.0f, sk = 0.0f;
    for (uint i = tid; i < d; i += nt) {
        float q = act[i], k = act[d + i];
        sq += q * q;
        sk += k * k;
    }
    sq = tg_sum(sq, red, lane, sg, nsg);
    sk = tg_sum(sk, red, lane, sg, nsg);
    float iq = 1.0f / max(sqrt(sq), a.eps);
    float ik = 1.0f / max(sqrt(sk), a.eps);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = tid; i < d; i += nt) {
        float q = act[i] * iq;
        act[i] = q * a.qscale;
        act[d + i] = act[d + i] * ik;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // The delta rule, one value-row per SIMD-group pass; o_j replaces v_j.
    threadgroup const float* q = act;
    threadgroup const float* k = act + d;
    for (uint row = sg; row < rep * d; row += nsg) {
        uint r = row / d, j = row % d;
        uint h = r * a.KH + kh;
        float beta = sigmoid1(ab[rep + r]);
        float g = softplus1(ab[r] + dtb[h]) * A[h];
        float decay = decay_weight(g);
        device float* Sr = S + (h * d + j) * d;
        float sv[GDN_DPL];
        float dk = 0.0f;
        for (uint u = 0; u < GDN_DPL; u++) {
            uint i = lane + 32u * u;
            sv[u] = 0.0f;
            if (i < d) {
                sv[u] = Sr[i];
                dk += sv[u] * k[i];
            }
        }
        dk = simd_sum(dk);
        float vj = act[2u * d + row];
        float dl = (vj - decay * dk) * beta;
        float dq = 0.0f;
        for (uint u = 0; u < GDN_DPL; u++) {
            uint i = lane + 32u * u;
            if (i < d) {
                float s = decay * sv[u] + dl * k[i];
                Sr[i] = s;
                dq += s * q[i];
            }
        }
        dq = simd_sum(dq);
        if (lane == 0u) act[2u * d + row] = dq;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // Gated RMSNorm per head, written at the grouped place.
    for (uint r = sg; r < rep; r += nsg) {
        float s = 0.0f;
        for (uint j = lane; j < d; j += 32u) {
            float o = act[2u * d + r * d + j];
            s += o * o;
        }
        s = simd_sum(s);
        if (lane == 0u) hs[r] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint idx = tid; idx < rep * d; idx += nt) {
        uint r = idx / d, j = idx % d;
        float inv = 1.0f / sqrt(hs[r] / float(d) + a.eps);
        float o = act[2u * d + idx] * inv;
        o = o * snorm[j];
        out[(kh * rep + r) * d + j] = silu(zl[idx]) * o;
    }
}

// The raw alpha (rows 0..REP−1) and beta (REP..2·REP−1) projections of group kh on a
// normed row x (threadgroup or device memory through the template), BF16 rows of E.
template <typename P>
inline void gdn_ab(P x, uint E, uint kh, uint KH, device const ushort* wa, device const ushort* wb,
                   threadgroup float* ab, uint lane, uint sg, uint nsg) {
    const uint rep = BONSAI_GDN_REP;
    for (uint q = sg; q < 2u * rep; q += nsg) {
        uint h = (q % rep) * KH + kh;
        device const ushort* row = (q < rep ? wa : wb) + h * E;
        float s = 0.0f;
        for (uint k = lane; k < E; k += 32u) s += bf16_to_float(row[k]) * x[k];
        s = simd_sum(s);
        if (lane == 0u) ab[q] = s;
    }
}

// gdn_decode: one decode token of V head h = r·KH + kh (grid: VH threadgroups, 48 for
// the 27B model). The dispatch before it — mv_norm over the In site's products, spread
// over up to MaxGroups threadgroups like every other product — did the norm site
// (residual add, RMSNorm·attn_norm, the signed FWHT), attn_qkv and attn_gate, put each
// attn_qkv channel through its causal convolution and SiLU as it wrote it (MVF_CONV) and
// kept the normed vector (hout). Here, for head h: alpha and beta (two BF16 rows · hout),
// the L2 norms of its group's q and k (read by the REP heads of the group, normed by
// each: 2·d values), the delta rule over its d value-rows, the gated RMSNorm. A head's
// state rows and outputs are its threadgroup's alone; q, k, v, z and hout are only
// read. Bit for bit, the same arithmetic as gdn_token's one-token step (the split form,
// mv_norm then gdn_seq), in the same orders.
//
// Why two dispatches, at the 27B sizes (E 5120, KH 16, REP 3, d 128; PQ2_0 at 2.125
// bits): the layer reads attn_qkv (10,240 rows) and attn_gate (6,144 rows) of 5120
// inputs — 22.3 MB — and the state, 48 heads × 64 KiB read and written — 6.3 MB.
//   - The fused kernel this replaces ran everything in KH = 16 threadgroups, one per q/k
//     head group: on a 20-core M4 Pro 4 cores idle, on a 40-core M4 Max 24, and each
//     busy core crossed a serial prologue (norm, FWHT, the alpha/beta rows) before its
//     first weight read, alone on its core. At an even share of the device's bandwidth
//     per core (546 GB/s / 40 = 13.7 GB/s on an M4 Max) its 1.4 MB per threadgroup takes
//     ~100 µs where 40 cores would read the 22.3 MB in ~41 µs; 16 threadgroups could
//     only do better by each pulling 2.5× its share through one core.
//   - Splitting the fused kernel per V head (48 threadgroups) would have each read its
//     group's q and k rows again: 3 × 4096 instead of 4096 rows, +50% of the layer's
//     product bytes (+11 MB a layer, +0.5 GB a token) — and the REP heads of a group
//     would race on the q/k convolution state.
//   - Splitting the products over more threadgroups inside one dispatch needs every
//     group's rows finished before its recurrence starts: a grid-wide wait (a spin on a
//     device counter), which Metal does not order between threadgroups before MSL 3.2's
//     device-scope fences and which the emulator, running threadgroups one at a time,
//     cannot run at all.
//   So the products run as mv_norm (128 threadgroups: every core), and the recurrence,
//   with nothing left of the products but a 64 KiB write and read of qkv and z through
//   the cache, runs here per V head: 48 threadgroups of ~150 KB (the head's state both
//   ways and its alpha/beta rows), ~11 µs each at 13.7 GB/s, two rounds on the 8 cores
//   of a 40-core GPU that get two (~22 µs); against the fused kernel's ~100 + 33 µs, the
//   pair's ~41 + 22 µs, for one more dispatch a layer (a few µs). Estimates from the
//   sizes and the bandwidth only; what they come to on a GPU only a Mac can measure.
kernel void gdn_decode(constant GDNArgs& a [[buffer(0)]],
                       device const float* qkv [[buffer(1)]],
                       device const float* z [[buffer(2)]],
                       device const float* hn [[buffer(3)]],
                       device const ushort* walpha [[buffer(4)]],
                       device const ushort* wbeta [[buffer(5)]],
                       device const float* dtb [[buffer(7)]],
                       device const float* A [[buffer(8)]],
                       device const float* snorm [[buffer(9)]],
                       device float* S [[buffer(11)]],
                       device float* out [[buffer(12)]],
                       uint h [[threadgroup_position_in_grid]],
                       uint tid [[thread_index_in_threadgroup]],
                       uint nt [[threads_per_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]],
                       uint sg [[simdgroup_index_in_threadgroup]],
                       uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float qk[2 * BONSAI_GDN_D];  // q, then k
    threadgroup float o[BONSAI_GDN_D];
    threadgroup float ab[2];                 // alpha, beta
    threadgroup float red[MAX_SG];
    threadgroup float hs[1];
    const uint d = BONSAI_GDN_D;
    const uint rep = BONSAI_GDN_REP;
    const uint kh = h % a.KH, r = h / a.KH;
    for (uint i = tid; i < d; i += nt) {
        qk[i] = qkv[kh * d + i];
        qk[d + i] = qkv[a.KH * d + kh * d + i];
    }
    for (uint q = sg; q < 2u; q += nsg) {
        device const ushort* row = (q == 0u ? walpha : wbeta) + h * a.E;
        float s = 0.0f;
        for (uint k = lane; k < a.E; k += 32u) s += bf16_to_float(row[k]) * hn[k];
        s = simd_sum(s);
        if (lane == 0u) ab[q] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // L2 norms of q and k; q also scaled by 1/√d (gdn_token's).
    float sq = 0.0f, sk = 0.0f;
    for (uint i = tid; i < d; i += nt) {
        float q = qk[i], k = qk[d + i];
        sq += q * q;
        sk += k * k;
    }
    sq = tg_sum(sq, red, lane, sg, nsg);
    sk = tg_sum(sk, red, lane, sg, nsg);
    float iq = 1.0f / max(sqrt(sq), a.eps);
    float ik = 1.0f / max(sqrt(sk), a.eps);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = tid; i < d; i += nt) {
        float q = qk[i] * iq;
        qk[i] = q * a.qscale;
        qk[d + i] = qk[d + i] * ik;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // The delta rule, one value-row per SIMD-group pass.
    threadgroup const float* q = qk;
    threadgroup const float* k = qk + d;
    float beta = sigmoid1(ab[1]);
    float g = softplus1(ab[0] + dtb[h]) * A[h];
    float decay = decay_weight(g);
    for (uint j = sg; j < d; j += nsg) {
        device float* Sr = S + (h * d + j) * d;
        float sv[GDN_DPL];
        float dk = 0.0f;
        for (uint u = 0; u < GDN_DPL; u++) {
            uint i = lane + 32u * u;
            sv[u] = 0.0f;
            if (i < d) {
                sv[u] = Sr[i];
                dk += sv[u] * k[i];
            }
        }
        dk = simd_sum(dk);
        float vj = qkv[2u * a.KH * d + h * d + j];
        float dl = (vj - decay * dk) * beta;
        float dq = 0.0f;
        for (uint u = 0; u < GDN_DPL; u++) {
            uint i = lane + 32u * u;
            if (i < d) {
                float s = decay * sv[u] + dl * k[i];
                Sr[i] = s;
                dq += s * q[i];
            }
        }
        dq = simd_sum(dq);
        if (lane == 0u) o[j] = dq;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // Gated RMSNorm, written at the head's grouped place.
    if (sg == 0u) {
        float s = 0.0f;
        for (uint j = lane; j < d; j += 32u) s += o[j] * o[j];
        s = simd_sum(s);
        if (lane == 0u) hs[0] = s;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float inv = 1.0f / sqrt(hs[0] / float(d) + a.eps);
    for (uint j = tid; j < d; j += nt) {
        float v = o[j] * inv;
        v = v * snorm[j];
        out[(kh * rep + r) * d + j] = silu(z[h * d + j]) * v;
    }
}

kernel void gdn_seq(constant GDNArgs& a [[buffer(0)]],
                    device const float* qkv [[buffer(1)]],
                    device const float* z [[buffer(2)]],
                    device const float* hn [[buffer(3)]],
                    device const ushort* walpha [[buffer(4)]],
                    device const ushort* wbeta [[buffer(5)]],
                    device const float* convw [[buffer(6)]],
                    device const float* dtb [[buffer(7)]],
                    device const float* A [[buffer(8)]],
                    device const float* snorm [[buffer(9)]],
                    device float* conv [[buffer(10)]],
                    device float* S [[buffer(11)]],
                    device float* out [[buffer(12)]],
                    uint kh [[threadgroup_position_in_grid]],
                    uint tid [[thread_index_in_threadgroup]],
                    uint nt [[threads_per_threadgroup]],
                    uint lane [[thread_index_in_simdgroup]],
                    uint sg [[simdgroup_index_in_threadgroup]],
                    uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float act[GDN_C];
    threadgroup float zl[GDN_V];
    threadgroup float ab[2 * BONSAI_GDN_REP];
    threadgroup float red[MAX_SG];
    threadgroup float hs[BONSAI_GDN_REP];
    const uint d = BONSAI_GDN_D;
    for (uint t = 0; t < a.T; t++) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint lc = tid; lc < GDN_C; lc += nt) act[lc] = qkv[t * a.QKV + gdn_channel(lc, kh, a.KH)];
        for (uint idx = tid; idx < GDN_V; idx += nt) {
            uint h = (idx / d) * a.KH + kh;
            zl[idx] = z[t * a.inner + h * d + idx % d];
        }
        gdn_ab(hn + t * a.E, a.E, kh, a.KH, walpha, wbeta, ab, lane, sg, nsg);
        gdn_token(a, kh, act, zl, ab, red, hs, convw, dtb, A, snorm, conv, S, out + t * a.inner,
                  tid, nt, lane, sg, nsg);
    }
}

// ---- The chunked form (prefill) ----
//
// gdn_chunk runs T ≤ GDN_TMAX tokens of group kh in chunks of GDN_CC = 32 tokens, the
// SIMD width: lane t of a SIMD-group holds token t of the chunk. With G the cumulative
// log decay within the chunk, S₀ the state at its start, and per value-row j:
//   δ_t = β_t (v_t − e^{G_t} S₀ᵀk_t) − Σ_{s<t} β_t e^{G_t−G_s} (k_t·k_s) δ_s
//   o_t = e^{G_t} S₀ᵀq_t + Σ_{s≤t} e^{G_t−G_s} (q_t·k_s) δ_s
//   S   ← e^{G_n} S₀ + Σ_s e^{G_n−G_s} δ_s k_s
// (qwen35's GDN.chunk, which the step form unrolls to). The decay differences G_t − G_s
// are summed directly over the tokens between, not subtracted, so that they stay exact
// in float32 however long the decay has run. The convolution runs first over all T
// tokens, in place on the qkv rows (each channel one thread's); then the q/k norms and
// the gates; then the chunks.

#define GDN_CC 32u
#define GDN_TMAX 64u
#define GDN_MAXK 8u

kernel void gdn_chunk(constant GDNArgs& a [[buffer(0)]],
                      device float* qkv [[buffer(1)]],
                      device const float* z [[buffer(2)]],
                      device const float* hn [[buffer(3)]],
                      device const ushort* walpha [[buffer(4)]],
                      device const ushort* wbeta [[buffer(5)]],
                      device const float* convw [[buffer(6)]],
                      device const float* dtb [[buffer(7)]],
                      device const float* A [[buffer(8)]],
                      device const float* snorm [[buffer(9)]],
                      device float* conv [[buffer(10)]],
                      device float* S [[buffer(11)]],
                      device float* out [[buffer(12)]],
                      uint kh [[threadgroup_position_in_grid]],
                      uint tid [[thread_index_in_threadgroup]],
                      uint nt [[threads_per_threadgroup]],
                      uint lane [[thread_index_in_simdgroup]],
                      uint sg [[simdgroup_index_in_threadgroup]],
                      uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float logd[GDN_TMAX * BONSAI_GDN_REP];
    threadgroup float bet[GDN_TMAX * BONSAI_GDN_REP];
    threadgroup float kk[GDN_CC * GDN_CC];
    threadgroup float qk[GDN_CC * GDN_CC];
    threadgroup float am[GDN_CC * GDN_CC];
    threadgroup float qm[GDN_CC * GDN_CC];
    threadgroup float gam[GDN_CC];
    threadgroup float tail[GDN_CC];
    threadgroup float dl[MAX_SG * GDN_CC];
    const uint d = BONSAI_GDN_D;
    const uint rep = BONSAI_GDN_REP;
    const uint K = a.convK;
    const uint T = a.T;
    const uint QKV = a.QKV;
    const uint qoff = kh * d, koff = a.KH * d + kh * d;

    // Convolution + SiLU over all T tokens, in place; the window slides in registers.
    for (uint lc = tid; lc < GDN_C; lc += nt) {
        uint gc = gdn_channel(lc, kh, a.KH);
        device const float* wc = convw + gc * K;
        float win[GDN_MAXK];
        for (uint tap = 0; tap + 1u < K; tap++) win[tap] = conv[tap * QKV + gc];
        for (uint t = 0; t < T; t++) {
            float cur = qkv[t * QKV + gc];
            float s = 0.0f;
            for (uint tap = 0; tap + 1u < K; tap++) s += wc[tap] * win[tap];
            s += wc[K - 1u] * cur;
            for (uint tap = 0; tap + 2u < K; tap++) win[tap] = win[tap + 1u];
            win[K - 2u] = cur;
            qkv[t * QKV + gc] = silu(s);
        }
        for (uint tap = 0; tap + 1u < K; tap++) conv[tap * QKV + gc] = win[tap];
    }
    // The gates: log decay and β per token and head, from the un-rotated normed rows.
    for (uint p = sg; p < T * 2u * rep; p += nsg) {
        uint t = p / (2u * rep), q = p % (2u * rep);
        uint r = q % rep;
        uint h = r * a.KH + kh;
        device const ushort* row = (q < rep ? walpha : wbeta) + h * a.E;
        device const float* x = hn + t * a.E;
        float s = 0.0f;
        for (uint k = lane; k < a.E; k += 32u) s += bf16_to_float(row[k]) * x[k];
        s = simd_sum(s);
        if (lane == 0u) {
            if (q < rep) logd[t * rep + r] = softplus1(s + dtb[h]) * A[h];
            else bet[t * rep + r] = sigmoid1(s);
        }
    }
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    // L2 norms of each token's q and k (q also ·1/√d), in place.
    for (uint t = sg; t < T; t += nsg) {
        device float* q = qkv + t * QKV + qoff;
        device float* k = qkv + t * QKV + koff;
        float sq = 0.0f, sk = 0.0f;
        for (uint i = lane; i < d; i += 32u) {
            sq += q[i] * q[i];
            sk += k[i] * k[i];
        }
        sq = simd_sum(sq);
        sk = simd_sum(sk);
        float iq = 1.0f / max(sqrt(sq), a.eps);
        float ik = 1.0f / max(sqrt(sk), a.eps);
        for (uint i = lane; i < d; i += 32u) {
            float x = q[i] * iq;
            q[i] = x * a.qscale;
            k[i] = k[i] * ik;
        }
    }
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);

    for (uint c0 = 0; c0 < T; c0 += GDN_CC) {
        uint n = min(GDN_CC, T - c0);
        // The chunk's q·k and k·k (shared by the group's heads).
        for (uint p = sg; p < n * n; p += nsg) {
            uint t = p / n, s = p % n;
            float dq = 0.0f, dk = 0.0f;
            if (s <= t) {
                device const float* kt = qkv + (c0 + t) * QKV + koff;
                device const float* qt = qkv + (c0 + t) * QKV + qoff;
                device const float* ks = qkv + (c0 + s) * QKV + koff;
                for (uint i = lane; i < d; i += 32u) {
                    dq += qt[i] * ks[i];
                    dk += kt[i] * ks[i];
                }
            }
            dq = simd_sum(dq);
            dk = simd_sum(dk);
            if (lane == 0u) {
                qk[t * GDN_CC + s] = s <= t ? dq : 0.0f;
                kk[t * GDN_CC + s] = s < t ? dk : 0.0f;
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint r = 0; r < rep; r++) {
            uint h = r * a.KH + kh;
            // Decays: γ_t = e^{G_t}, tail_s = e^{G_n − G_s}, and the weighted matrices.
            for (uint t = tid; t < n; t += nt) {
                float g = 0.0f;
                for (uint u = 0; u <= t; u++) g += logd[(c0 + u) * rep + r];
                gam[t] = decay_weight(g);
                float tl = 0.0f;
                for (uint u = t + 1u; u < n; u++) tl += logd[(c0 + u) * rep + r];
                tail[t] = decay_weight(tl);
            }
            for (uint p = tid; p < GDN_CC * GDN_CC; p += nt) {
                uint t = p / GDN_CC, s = p % GDN_CC;
                float qv = 0.0f, av = 0.0f;
                if (t < n && s <= t) {
                    float dg = 0.0f;
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
            threadgroup_barrier(mem_flags::mem_threadgroup);
            float gl = gam[n - 1u];
            for (uint j = sg; j < d; j += nsg) {
                device float* Sr = S + (h * d + j) * d;
                float sv[GDN_DPL];
                for (uint u = 0; u < GDN_DPL; u++) {
                    uint i = lane + 32u * u;
                    sv[u] = i < d ? Sr[i] : 0.0f;
                }
                // Lane t: U_t = (S₀ᵀk_t)_j and W_t = (S₀ᵀq_t)_j.
                float myU = 0.0f, myW = 0.0f;
                for (uint t = 0; t < n; t++) {
                    device const float* kt = qkv + (c0 + t) * QKV + koff;
                    device const float* qt = qkv + (c0 + t) * QKV + qoff;
                    float u1 = 0.0f, w1 = 0.0f;
                    for (uint u = 0; u < GDN_DPL; u++) {
                        uint i = lane + 32u * u;
                        if (i < d) {
                            u1 += sv[u] * kt[i];
                            w1 += sv[u] * qt[i];
                        }
                    }
                    u1 = simd_sum(u1);
                    w1 = simd_sum(w1);
                    if (lane == t) {
                        myU = u1;
                        myW = w1;
                    }
                }
                float vj = lane < n ? qkv[(c0 + lane) * QKV + 2u * a.KH * d + h * d + j] : 0.0f;
                float bt = lane < n ? bet[(c0 + lane) * rep + r] : 0.0f;
                float gt = lane < n ? gam[lane] : 0.0f;
                // Forward substitution, token by token.
                float del = 0.0f;
                for (uint t = 0; t < n; t++) {
                    float part = lane < t ? am[t * GDN_CC + lane] * del : 0.0f;
                    float sum = simd_sum(part);
                    if (lane == t) del = bt * (vj - gt * myU) - sum;
                }
                threadgroup float* dls = dl + sg * GDN_CC;
                dls[lane] = del;
                simdgroup_barrier(mem_flags::mem_threadgroup);
                if (lane < n) {
                    float o = 0.0f;
                    for (uint s = 0; s <= lane; s++) o += qm[lane * GDN_CC + s] * dls[s];
                    o = gt * myW + o;
                    out[(c0 + lane) * a.inner + (kh * rep + r) * d + j] = o;
                }
                // S ← e^{G_n}·S + Σ_s tail_s δ_s k_s.
                for (uint u = 0; u < GDN_DPL; u++) {
                    uint i = lane + 32u * u;
                    if (i >= d) continue;
                    float y = gl * sv[u];
                    for (uint s = 0; s < n; s++) {
                        float c = tail[s] * dls[s];
                        y += c * qkv[(c0 + s) * QKV + koff + i];
                    }
                    Sr[i] = y;
                }
                simdgroup_barrier(mem_flags::mem_threadgroup);
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
        // Gated RMSNorm of the chunk's outputs, in place.
        for (uint p = sg; p < n * rep; p += nsg) {
            uint t = p / rep, r = p % rep;
            device float* o = out + (c0 + t) * a.inner + (kh * rep + r) * d;
            device const float* zr = z + (c0 + t) * a.inner + (r * a.KH + kh) * d;
            float s = 0.0f;
            for (uint j = lane; j < d; j += 32u) s += o[j] * o[j];
            s = simd_sum(s);
            float inv = 1.0f / sqrt(s / float(d) + a.eps);
            for (uint j = lane; j < d; j += 32u) {
                float x = o[j] * inv;
                x = x * snorm[j];
                o[j] = silu(zr[j]) * x;
            }
        }
        threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    }
}
