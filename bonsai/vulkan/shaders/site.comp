#version 450
// Row-wise kernels (site.metal): the embedding lookup, the activation sites of a prefill
// chunk (norm, SwiGLU and plain transforms, each with the signed FWHT), the greedy
// argmax and the streaming read. One source, one kernel per define:
//   KERNEL_EMBED, KERNEL_SITE_NORM, KERNEL_SITE_FWHT, KERNEL_SITE_SWIGLU,
//   KERNEL_ARGMAX, KERNEL_STREAM_READ, KERNEL_COPY_F32.
//
// A site kernel runs one workgroup per (Hadamard block, token) — or per token where a
// whole row is needed (the RMSNorm) — its threads looping over the block.

#include "common.glsl"

// SiteArgs words.
#define A_W ARGU(0)
#define A_BLK ARGU(1)
#define A_SCALE ARGF(2)
#define A_EPS ARGF(3)
#define A_FLAGS ARGU(4)
#define A_ROWBYTES ARGU(5)
#define A_T ARGU(6)

#define SITE_DELTA 1u
#define SITE_H 2u
#define SITE_PTQ1 4u

// Largest Hadamard block a site workgroup transforms.
#define SITE_MAXBLK 4096

#if defined(KERNEL_EMBED) || defined(KERNEL_SITE_NORM) || defined(KERNEL_SITE_FWHT) || defined(KERNEL_SITE_SWIGLU)
shared float xs[SITE_MAXBLK];
#include "fwht.glsl"
#endif

#ifdef KERNEL_EMBED
// formats.h: the fp16 scale at byte offset `at` of the block at address b (even).
float block_scale(uint64_t b, uint at) { return half_bits(uint(U16(b + uint64_t(at)).v[0])); }

// Trit n (0..4) of a PTQ1_0 byte: the byte times 3ⁿ truncated to 8 bits, times 3, over 256.
uint ptq1_trit(uint b, uint n) {
    uint p = 1u;
    for (uint i = 0u; i < n; i++) p *= 3u;
    return (((b * p) & 255u) * 3u) >> 8;
}

// The code (0..2; PQ2_0 may hold 3) of element j (0..127) of the block at b.
uint block_code(uint64_t b, uint j, bool ptq1) {
    U8 bb = U8(b);
    if (!ptq1) return (uint(bb.v[2u + j / 4u]) >> (2u * (j % 4u))) & 3u;
    // PTQ1_0: elements 0–79 are trit j/16 of qs[j%16]; 80–119 trit (j−80)/8 of
    // qs[16 + (j−80)%8]; 120–127 trit (j−120)/2 of qh[(j−120)%2].
    uint byte, n;
    if (j < 80u) {
        byte = j % 16u;
        n = j / 16u;
    } else if (j < 120u) {
        byte = 16u + (j - 80u) % 8u;
        n = (j - 80u) / 8u;
    } else {
        byte = 24u + (j - 120u) % 2u;
        n = (j - 120u) / 2u;
    }
    return ptq1_trit(uint(bb.v[byte]), n);
}

// The value of element e of the row of blocks at address row.
float ternary_value(uint64_t row, uint e, bool ptq1) {
    uint bsz = ptq1 ? PTQ1_BLOCK : PQ2_BLOCK;
    uint64_t b = row + uint64_t((e / 128u) * bsz);
    float d = block_scale(b, ptq1 ? PTQ1_SCALE : 0u);
    return float(int(block_code(b, e % 128u, ptq1)) - 1) * d;
}

// embed: x[t] = signs ⊙ (FWHT(dequant(token_embd row ids[t])) / √n), per block: the
// inverse rotation (transform first, then signs). grid (W/blk, T). Buffers: 1 ids
// (uint), 2 the table, 3 signs, 4 x.
void main() {
    const uint blk = A_BLK;
    uint t = gl_WorkGroupID.y;
    uint e0 = gl_WorkGroupID.x * blk;
    uint id = U32(ADDR(1)).v[t];
    uint64_t row = ADDR(2) + uint64_t(A_ROWBYTES) * uint64_t(id);
    const bool ptq1 = (A_FLAGS & SITE_PTQ1) != 0u;
    for (uint i = TID; i < blk; i += NT) {
        xs[i] = ternary_value(row, e0 + i, ptq1);
    }
    tg_fwht_xs(blk, blk);
    F32 signs = F32(ADDR(3));
    F32 x = F32(ADDR(4));
    for (uint i = TID; i < blk; i += NT) {
        uint e = e0 + i;
        x.v[t * A_W + e] = xs[i] * (signs.v[e] * A_SCALE);
    }
}
#endif

#ifdef KERNEL_SITE_NORM
// site_norm: per token row t (grid T): x += delta (written back, with SITE_DELTA);
// h = RMSNorm(x)·gain (written with SITE_H); hr = signs ⊙ FWHT(h)/√n per block.
// Buffers: 1 x, 2 delta, 3 gain, 4 signs, 5 h, 6 hr.
void main() {
    const uint W = A_W;
    const uint blk = A_BLK;
    const uint flags = A_FLAGS;
    uint t = gl_WorkGroupID.x;
    F32 x = F32(ADDR(1));
    F32 delta = F32(ADDR(2));
    F32 gain = F32(ADDR(3));
    F32 signs = F32(ADDR(4));
    F32 h = F32(ADDR(5));
    F32 hr = F32(ADDR(6));
    uint xr = t * W;
    float s = 0.0;
    for (uint k = TID; k < W; k += NT) {
        float v = x.v[xr + k];
        if ((flags & SITE_DELTA) != 0u) v += delta.v[xr + k];
        s += v * v;
    }
    s = tg_sum(s);
    float inv = 1.0 / sqrt(s / float(W) + A_EPS);
    for (uint b0 = 0u; b0 < W; b0 += blk) {
        barrier();
        for (uint i = TID; i < blk; i += NT) {
            uint k = b0 + i;
            float v = x.v[xr + k];
            if ((flags & SITE_DELTA) != 0u) {
                v += delta.v[xr + k];
                x.v[xr + k] = v;
            }
            v = v * inv;
            v = v * gain.v[k];
            if ((flags & SITE_H) != 0u) h.v[xr + k] = v;
            xs[i] = v * signs.v[k];
        }
        tg_fwht_xs(blk, blk);
        for (uint i = TID; i < blk; i += NT) hr.v[xr + b0 + i] = xs[i] * A_SCALE;
    }
}
#endif

#ifdef KERNEL_SITE_FWHT
// site_fwht: out = signs ⊙ in → FWHT per block → /√n. grid (W/blk, T). Buffers: 1 in,
// 2 signs, 3 out.
void main() {
    const uint blk = A_BLK;
    F32 inb = F32(ADDR(1));
    F32 signs = F32(ADDR(2));
    F32 outb = F32(ADDR(3));
    uint base = gl_WorkGroupID.y * A_W + gl_WorkGroupID.x * blk;
    uint s0 = gl_WorkGroupID.x * blk;
    for (uint i = TID; i < blk; i += NT) xs[i] = inb.v[base + i] * signs.v[s0 + i];
    tg_fwht_xs(blk, blk);
    for (uint i = TID; i < blk; i += NT) outb.v[base + i] = xs[i] * A_SCALE;
}
#endif

#ifdef KERNEL_SITE_SWIGLU
// site_swiglu: out = signs ⊙ (silu(gate)·up) → FWHT per block → /√n. grid (W/blk, T).
// Buffers: 1 gate, 2 up, 3 signs, 4 out.
void main() {
    const uint blk = A_BLK;
    F32 gate = F32(ADDR(1));
    F32 up = F32(ADDR(2));
    F32 signs = F32(ADDR(3));
    F32 outb = F32(ADDR(4));
    uint base = gl_WorkGroupID.y * A_W + gl_WorkGroupID.x * blk;
    uint s0 = gl_WorkGroupID.x * blk;
    for (uint i = TID; i < blk; i += NT) {
        float v = silu(gate.v[base + i]) * up.v[base + i];
        xs[i] = v * signs.v[s0 + i];
    }
    tg_fwht_xs(blk, blk);
    for (uint i = TID; i < blk; i += NT) outb.v[base + i] = xs[i] * A_SCALE;
}
#endif

#ifdef KERNEL_ARGMAX
// argmax: the index of the largest of N values, the lowest index among equals, NaNs
// never chosen (bonsai's argmax32); 0 when nothing compares. One workgroup. ArgmaxArgs
// word 0 is N; buffers: 1 v, 2 out (uint).
shared float bv[MAX_SG];
shared uint bi[MAX_SG];
void main() {
    const uint N = ARGU(0);
    const uint none = 0xffffffffu;
    F32 v = F32(ADDR(1));
    float best = NEG_BIG;
    uint idx = none;
    for (uint i = TID; i < N; i += NT) {
        float x = v.v[i];
        if (x > best || (idx == none && x == best)) {
            best = x;
            idx = i;
        }
    }
    float m = sg_max(best);
    uint c = sg_min_u((best == m && idx != none) ? idx : none);
    if (LANE == 0u) {
        bv[SG] = m;
        bi[SG] = c;
    }
    barrier();
    if (TID == 0u) {
        float fb = NEG_BIG;
        uint fi = none;
        for (uint s = 0u; s < NSG; s++) {
            if (bi[s] == none) continue;
            if (fi == none || bv[s] > fb || (bv[s] == fb && bi[s] < fi)) {
                fb = bv[s];
                fi = bi[s];
            }
        }
        U32(ADDR(2)).v[0] = fi == none ? 0u : fi;
    }
}
#endif

#ifdef KERNEL_STREAM_READ
// stream_read: reads N float4s, each workgroup striding over the whole buffer, and
// writes each workgroup's sum. StreamArgs words 0 N, 1 groups; buffers: 1 v (float4),
// 2 out.
shared float part[MAX_SG];
void main() {
    const uint N = ARGU(0);
    const uint groups = ARGU(1);
    const uint tg = gl_WorkGroupID.x;
    V4 v = V4(ADDR(1));
    vec4 s = vec4(0.0);
    const uint stride = groups * NT;
    for (uint i = tg * NT + TID; i < N; i += stride) {
        s += v.v[i];
    }
    float t = sg_sum(s.x + s.y + s.z + s.w);
    if (LANE == 0u) {
        part[SG] = t;
    }
    barrier();
    if (TID == 0u) {
        float r = 0.0;
        for (uint k = 0u; k < NSG; k++) {
            r += part[k];
        }
        F32(ADDR(2)).v[tg] = r;
    }
}
#endif

#ifdef KERNEL_COPY_F32
// copy_f32: dst[i] = src[i] for the N floats, each workgroup striding over the whole
// range. CopyArgs words 0 N, 1 groups; buffers: 1 src, 2 dst.
void main() {
    const uint N = ARGU(0);
    const uint groups = ARGU(1);
    F32 src = F32(ADDR(1));
    F32 dst = F32(ADDR(2));
    const uint stride = groups * NT;
    for (uint i = gl_WorkGroupID.x * NT + TID; i < N; i += stride) {
        dst.v[i] = src.v[i];
    }
}
#endif
