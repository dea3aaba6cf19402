// Shared declarations of the Bonsai kernels: sizes, argument structs and the helpers
// every kernel uses (threadgroup reductions, the blockwise signed FWHT, the activation
// functions). The host joins this header in front of the .metal files into one program.
//
// Conventions:
//   - every kernel works in float32; only the KV cache may be half;
//   - argument structs hold 32-bit fields only, so the Go side lays them out as a plain
//     sequence of little-endian words (see kernels.go);
//   - threadgroup arrays are declared at kernel scope with sizes from the macros below,
//     which the host sets from the model's configuration when it compiles the library;
//   - control flow around barriers is uniform across a threadgroup.

#ifndef BONSAI_COMMON_H
#define BONSAI_COMMON_H

#include <metal_stdlib>
using namespace metal;

// The activation values a matrix-vector kernel holds in threadgroup memory at once (its
// chunk). The host compiles the kernels once per chunk size its products use (the input
// width when it fits, at most 6144: 24 KiB of the 32 KiB Apple GPUs give a threadgroup;
// wider inputs are streamed in chunks of whole Hadamard blocks), so that no variant
// holds more than its products need: a GPU core keeps fewer threadgroups resident the
// more threadgroup memory each declares.
#ifndef BONSAI_MAXCH
#define BONSAI_MAXCH 6144
#endif
// GDN head dimension (ssm.state_size) and V heads per q/k head.
#ifndef BONSAI_GDN_D
#define BONSAI_GDN_D 128
#endif
#ifndef BONSAI_GDN_REP
#define BONSAI_GDN_REP 3
#endif
// Attention head dimension.
#ifndef BONSAI_HD
#define BONSAI_HD 256
#endif

// Rows of a matrix-vector product each SIMD-group computes per pass.
#define MV_R 4
// Most SIMD-groups in a threadgroup (1024 threads).
#define MAX_SG 32

// ---- argument structs (mirrored in kernels.go) ----

struct MVArgs {
    uint K;        // input width
    uint n0;       // rows of weight set 0
    uint n1;       // rows of weight set 1 (0 when unused)
    uint n2;       // rows of weight set 2 (0 when unused)
    uint convK;    // MVF_CONV: the convolution's taps
    uint ngroups;  // row groups of (SIMD-groups × MV_R) rows
    uint blk;      // Hadamard block size
    uint chunk;    // activation values per chunk: a multiple of blk, ≤ BONSAI_MAXCH
    float scale;   // 1/√blk
    float eps;     // RMSNorm epsilon
    uint flags;    // MVF_* bits
};

#define MVF_DELTA 1u   // NORM: add in1 (the residual delta) to in0
#define MVF_XOUT  2u   // NORM: threadgroup 0 writes in0 (+ in1) to xout
#define MVF_HOUT  4u   // NORM: threadgroup 0 writes the normed vector, before rotation, to hout
#define MVF_CONV  8u   // NORM: set 0's rows (a GDN layer's attn_qkv channels) go through their
                       // causal convolution and SiLU as they are written (conv_step)

struct SiteArgs {
    uint W;        // row width
    uint blk;      // Hadamard block size
    float scale;   // 1/√blk
    float eps;
    uint flags;    // SITE_* bits
    uint rowBytes; // embedding: bytes per table row
    uint T;        // rows
    uint pad;
};

#define SITE_DELTA 1u  // site_norm: x += delta (written back)
#define SITE_H     2u  // site_norm: write the un-rotated normed row
#define SITE_PTQ1  4u  // embed: the table is PTQ1_0 (else PQ2_0)

struct GemmArgs {
    uint K;
    uint N;
    uint T;
    uint pad;
};

struct GDNArgs {
    uint E;        // embedding width
    uint QKV;      // attn_qkv rows: 2·KH·d + VH·d
    uint inner;    // VH·d
    uint KH;       // q/k heads
    uint VH;       // V heads
    uint convK;    // conv taps
    uint T;        // tokens (gdn_seq)
    uint flags;    // unused (0)
    float eps;     // RMSNorm / L2 epsilon
    float qscale;  // 1/√d
    uint blk;      // Hadamard block (unused)
    float scale;   // 1/√blk (unused)
};

struct AttnArgs {
    uint H;        // query heads
    uint KV;       // KV heads
    uint HD;       // head dim
    uint ropeHalf; // RopeDims/2
    uint T;        // tokens
    uint pos0;     // position of token 0
    uint cap;      // positions the cache holds
    uint fused;    // 1: decode (T = 1): append the token's key/value and attend it locally
    float eps;
    float scale;   // 1/√HD
    uint span;     // attn_*, attn_merge: positions per block
    uint nb;       // blocks over positions 0..pos0+T−1 (the partials' stride)
    uint b0;       // attn_*: the dispatch's first block
    uint y0;       // attn_*: the dispatch's first token tile
    uint tt;       // attn_*: tokens per tile
    uint pad0;
};

struct ArgmaxArgs {
    uint N;
    uint pad0, pad1, pad2;
};

struct StreamArgs {
    uint N;      // float4s to read
    uint groups; // threadgroups of the grid
    uint pad0, pad1;
};

struct CopyArgs {
    uint N;      // floats to copy
    uint groups; // threadgroups of the grid
    uint pad0, pad1;
};

// ---- helpers ----

// A finite stand-in for −∞, so that a running maximum's rescale exp(m − m′) never meets −∞ − (−∞) = NaN
// (infinities themselves would be safe: the kernels compile with fast math off, metal/device_darwin.go).
#define NEG_BIG (-3.0e38f)

inline float silu(float x) { return x / (1.0f + exp(-x)); }
inline float sigmoid1(float x) { return 1.0f / (1.0f + exp(-x)); }
// softplus with llama.cpp's threshold; the small-x branch keeps log(1+e^x) accurate.
inline float softplus1(float x) {
    if (x > 20.0f) return x;
    if (x < -15.0f) return exp(x);
    return log(1.0f + exp(x));
}
// e^x for x ≤ 0, flushed to zero below e^-50 (qwen35's decayWeight).
inline float decay_weight(float x) { return x < -50.0f ? 0.0f : exp(x); }

inline float bf16_to_float(ushort u) { return as_type<float>(uint(u) << 16); }
inline float half_bits(ushort u) { return float(as_type<half>(u)); }

// Sum of v over the threadgroup; every thread gets the same value. red holds MAX_SG
// floats. Control flow must be uniform.
inline float tg_sum(float v, threadgroup float* red, uint lane, uint sg, uint nsg) {
    v = simd_sum(v);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lane == 0) red[sg] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = 0.0f;
    for (uint i = 0; i < nsg; i++) s += red[i];
    return s;
}

// One token through channel c's causal depthwise convolution and SiLU: the raw inputs
// of the last K−1 tokens in conv (tap t at conv[t·stride + c], tap 0 the oldest), then
// cur; the window slides to take cur. gdn_token and the matrix-vector kernels' MVF_CONV
// epilogue share it, so that the decode's two forms compute the same bits.
inline float conv_step(uint c, float cur, uint K, uint stride, device const float* convw, device float* conv) {
    device const float* wc = convw + c * K;
    float s = 0.0f;
    for (uint tap = 0; tap + 1u < K; tap++) s += wc[tap] * conv[tap * stride + c];
    s += wc[K - 1u] * cur;
    for (uint tap = 0; tap + 2u < K; tap++) conv[tap * stride + c] = conv[(tap + 1u) * stride + c];
    conv[(K - 2u) * stride + c] = cur;
    return silu(s);
}

// In-place Walsh–Hadamard transform of each block of blk values of x[0, n) (n a multiple
// of blk): the textbook radix-2 butterflies (a+b, a−b), stage by stage, which hadamard's
// Go transform matches bit for bit. Begins and ends with a barrier.
inline void tg_fwht(threadgroup float* x, uint n, uint blk, uint tid, uint nt) {
    uint half_n = n >> 1;
    for (uint h = 1; h < blk; h <<= 1) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint p = tid; p < half_n; p += nt) {
            uint i = ((p & ~(h - 1)) << 1) | (p & (h - 1));
            float a = x[i];
            float b = x[i + h];
            x[i] = a + b;
            x[i + h] = a - b;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

// The PQ2_0 layout, seen as 16-bit words: a block of 128 weights is 17 ushorts, the fp16
// scale then 16 ushorts of codes (two per 32-bit word of 16 codes). Row r of a K-wide
// matrix starts at ushort r·(K/128)·17.
#define PQ_US 17u

#endif  // BONSAI_COMMON_H
