// The ternary dot-product cores shared by the matrix-vector kernels (matvec.comp) and the
// fused GDN decode kernel (gdn.comp): pq2.h of the Metal library. The activation layout
// in shared memory and the per-lane dots — PQ2_0 over 16-code words with the unorm
// unpack and the −1 fold, PTQ1_0 over the 32-bit words of its base-3 bytes.
//
// Contract: the including file includes common.glsl, then declares, BEFORE including
// this file,
//     shared float xs[...];   // the activation chunk: at least n floats (MSL's xs4/xs)
//     shared float gs[...];   // its group sums: at least n/16 floats
// (e.g. xs[BONSAI_MAXCH] and gs[BONSAI_MAXCH / 16u]). This file includes fwht.glsl
// (tg_fwht_xs over the same xs). Where the MSL passes pointers these functions take:
//   - signs: an F32 reference (the signs buffer, indexed from 0; mv_finish adds k0);
//   - rows: uint64_t device addresses of each row's first 16-bit word (MSL's
//     `device const ushort* rows[MV_R]`), read through U16; a row with !ok[r] is skipped
//     and its address unused;
//   - ptq1_word_dot's xb: an index into xs (MSL's pointer xb = x + xb).
// mv_finish begins and ends with barrier(): call it in workgroup-uniform control flow.
// mv_dot / mv_dot_t1 contain no barrier and no sg_* call (per-lane loops): the caller
// reduces acc over the virtual SIMD-group with sg_sum, in uniform control flow.

#ifndef BONSAI_PQ2_GLSL
#define BONSAI_PQ2_GLSL

#include "fwht.glsl"

// Rows of a matrix-vector product each SIMD-group computes per pass.
#define MV_R 4

// Rotation (when rotate: signs, FWHT per block, 1/√blk) of xs[0, n), which the calling
// thread filled at indices TID, TID+NT, ...; then, for PQ2_0 (pq2), the dot layout: each
// group of 16 values permuted so that float4 j holds elements j, j+4, j+8, j+12, and the
// group sums in gs. PTQ1_0's dot reads the values in natural order; gs then holds, per
// 128-value block, the sums of the values each of its seven 32-bit words covers
// (ptq1_word_dot), for the −1 fold.
void mv_finish(uint k0, uint n, bool rotate, bool pq2, F32 signs, uint blk, float scale) {
    if (rotate) {
        for (uint i = TID; i < n; i += NT) xs[i] = xs[i] * signs.v[k0 + i];
        tg_fwht_xs(n, blk);
    } else {
        barrier();
    }
    if (!pq2) {
        if (rotate) {
            for (uint i = TID; i < n; i += NT) xs[i] = xs[i] * scale;
            barrier();
        }
        for (uint g = TID; g < (n / 128u) * 7u; g += NT) {
            uint xb = 128u * (g / 7u);
            uint u = g % 7u;
            float s = 0.0;
            if (u < 6u) {
                uint off = u < 4u ? 4u * u : 80u + 4u * (u - 4u);
                uint st = u < 4u ? 16u : 8u;
                for (uint m = 0u; m < 5u; m++) {
                    for (uint i = 0u; i < 4u; i++) s += xs[xb + off + st * m + i];
                }
            } else {
                for (uint i = 120u; i < 128u; i++) s += xs[xb + i];
            }
            gs[g] = s;
        }
        barrier();
        return;
    }
    for (uint g = TID; g < n / 16u; g += NT) {
        float t[16];
        float s = 0.0;
        for (uint j = 0u; j < 16u; j++) {
            float v = xs[16u * g + j];
            if (rotate) v = v * scale;
            t[j] = v;
            s += v;
        }
        for (uint j = 0u; j < 4u; j++) {
            for (uint m = 0u; m < 4u; m++) {
                xs[16u * g + 4u * j + m] = t[4u * m + j];
            }
        }
        gs[g] = s;
    }
    barrier();
}

// The float4 of xs at index i (a multiple of 4): MSL's threadgroup float4 view.
vec4 xs4_at(uint i) { return vec4(xs[i], xs[i + 1u], xs[i + 2u], xs[i + 3u]); }

// Which weight set a row of the concatenation belongs to, and its row within the set.
uint mv_set(uint row, uint n0, uint n1) { return row < n0 ? 0u : (row < n0 + n1 ? 1u : 2u); }
uint mv_local(uint row, uint set, uint n0, uint n1) {
    return set == 0u ? row : (set == 1u ? row - n0 : row - n0 - n1);
}

// Adds this lane's share of MV_R rows' dot products over one chunk (PQ2_0 blocks kb0..,
// nw 16-code words, xs in mv_finish's dot layout from index 0) to acc. rows[r] is row
// r's address, unused when !ok[r].
void mv_dot(inout float acc[MV_R], uint64_t rows[MV_R], bool ok[MV_R], uint kb0, uint nw) {
    for (uint w = LANE; w < nw; w += 32u) {
        vec4 xa = xs4_at(16u * w);
        vec4 xb = xs4_at(16u * w + 4u);
        vec4 xc = xs4_at(16u * w + 8u);
        vec4 xd = xs4_at(16u * w + 12u);
        float g = gs[w];
        uint boff = (kb0 + (w >> 3)) * PQ_US;
        uint wo = boff + (w & 7u) * 2u + 1u;
        for (uint r = 0u; r < MV_R; r++) {
            if (!ok[r]) continue;
            U16 p = U16(rows[r]);
            float d = half_bits(uint(p.v[boff]));
            uint q = uint(p.v[wo]) | (uint(p.v[wo + 1u]) << 16);
            float s = dot(unpackUnorm4x8(q & 0x03030303u), xa);
            s += dot(unpackUnorm4x8((q >> 2) & 0x03030303u), xb);
            s += dot(unpackUnorm4x8((q >> 4) & 0x03030303u), xc);
            s += dot(unpackUnorm4x8((q >> 6) & 0x03030303u), xd);
            acc[r] += d * (255.0 * s - g);
        }
    }
}

// Σ x·(t−1) over the trits of one 32-bit word of a PTQ1_0 block, x the block's 128
// values in natural order from xs[xb] and g their sum over the word's elements. Word u
// (0..6) of a block holds qs[4u..4u+3] for u < 6 — for u < 4 the trits n of bytes
// m = 4u..4u+3 are elements 16n + m, for u = 4, 5 those of bytes 16 + m
// (m = 4(u−4)..+3) elements 80 + 8n + m — and for u = 6 qh[0], qh[1] (trit n of qh[h] is
// element 120 + 2n + h) and the scale. Four bytes are decoded at once in two 16-bit
// lanes: trit n of b is (uint8(b·3ⁿ)·3) >> 8, uint8(b·3ⁿ) reached by multiplying by 3 (a
// shift and an add) and truncating n times. The four trits go back into the bytes they
// came from, so that one unorm unpack converts them and the −1 folds into one
// subtraction per word: Σ x·(t−1) = 255·Σ x·(t/255) − g.
float ptq1_word_dot(uint q, uint u, uint xb, float g) {
    float s = 0.0;
    if (u < 6u) {
        uint off = u < 4u ? 4u * u : 80u + 4u * (u - 4u);
        uint st = u < 4u ? 16u : 8u;
        uint lo = q & 0x00FF00FFu;         // bytes 0 and 2
        uint hi = (q >> 8) & 0x00FF00FFu;  // bytes 1 and 3
        for (uint n = 0u; n < 5u; n++) {
            uint l3 = lo + (lo << 1);
            uint h3 = hi + (hi << 1);
            uint t = ((l3 >> 8) & 0x00030003u) | ((h3 & 0x03000300u));
            s += dot(unpackUnorm4x8(t), xs4_at(xb + off + st * n));
            lo = l3 & 0x00FF00FFu;
            hi = h3 & 0x00FF00FFu;
        }
    } else {
        // qh[0], qh[1] in the two lanes; trits n and n+1 of both make elements
        // 120 + 2n .. 123 + 2n.
        uint v = (q & 0xFFu) | ((q & 0xFF00u) << 8);
        for (uint n = 0u; n < 4u; n += 2u) {
            uint v3 = v + (v << 1);
            uint a = (v3 >> 8) & 0x00030003u;  // trit n: qh[0] in bits 0–1, qh[1] in 16–17
            v = v3 & 0x00FF00FFu;
            v3 = v + (v << 1);
            uint b = (v3 >> 8) & 0x00030003u;  // trit n + 1
            v = v3 & 0x00FF00FFu;
            uint t = (a & 3u) | ((a >> 8) & 0x300u) | ((b & 3u) << 16) | ((b & 0x30000u) << 8);
            s += dot(unpackUnorm4x8(t), xs4_at(xb + 120u + 2u * n));
        }
    }
    return 255.0 * s - g;
}

// mv_dot for PTQ1_0: adds this lane's share of MV_R rows' dot products over nb blocks
// from block kb0 (xs holds their values from index 0, natural order; gs their word sums,
// mv_finish). A row is 14 ushorts per block; lane w takes word w % 7 of block w / 7.
void mv_dot_t1(inout float acc[MV_R], uint64_t rows[MV_R], bool ok[MV_R], uint kb0, uint nb) {
    const uint nw = nb * 7u;
    for (uint w = LANE; w < nw; w += 32u) {
        uint blk = w / 7u;
        uint u = w % 7u;
        uint xb = 128u * blk;
        float g = gs[w];
        uint bo = (kb0 + blk) * PTQ1_US;
        for (uint r = 0u; r < MV_R; r++) {
            if (!ok[r]) continue;
            U16 p = U16(rows[r]);
            float d = half_bits(uint(p.v[bo + 13u]));
            uint q = uint(p.v[bo + 2u * u]) | (uint(p.v[bo + 2u * u + 1u]) << 16);
            acc[r] += d * ptq1_word_dot(q, u, xb, g);
        }
    }
}

#endif  // BONSAI_PQ2_GLSL
