// Shared declarations of the Vulkan kernels: how a kernel finds its buffers and its
// argument words, the specialization constants, the SIMD-group helpers and the math
// helpers. Every .comp file includes it first, after #version 450.
//
// The kernels are GLSL translations of the Metal library (internal/gpu/engine/shaders),
// with the same names, the same buffer indices, the same argument structs (as words) and
// the same grid and threadgroup sizes, so that the GPU engine that records the Metal
// kernels records these unchanged. The conventions:
//
//   - Buffers: a dispatch's push constant is the device address of its record: 16
//     buffer addresses (24 slots: addr[i] is Metal's [[buffer(i)]], offset included; 0 when
//     unbound) and the argument struct's words (Metal's [[buffer(0)]] bytes, w[0..15]).
//     A kernel views an address through the typed references below (F32(ADDR(1)).v[k]).
//     Buffer device addresses need no descriptors and have no maxStorageBufferRange.
//   - Threadgroups: the workgroup is one-dimensional, its size specialization constant
//     0 (the host builds a pipeline per size it dispatches); the grid is the dispatch's.
//   - SIMD-groups: the kernels are written for Metal's 32-lane SIMD-groups. LANE, SG and
//     NSG number virtual 32-lane groups of the workgroup (the workgroup size is always a
//     multiple of 32). The sg_* helpers reduce over one virtual group: with SG_NATIVE
//     (the device runs subgroups of exactly 32 invocations in order) through subgroup
//     operations; otherwise through shared memory and barrier(), which makes them legal
//     only in control flow uniform over the whole workgroup — write every kernel so.
//   - Threadgroup arrays are sized from the specialization constants below, which the
//     host sets from the model's sizes (the Metal library's macros of the same names).
//   - Shared memory: at most 32 KiB per workgroup (what lavapipe and Apple give), the
//     scratch of the sg_* helpers (4 bytes a thread) included.

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0) in;

// The Metal library's macros (common.h), set by the host from the model. Constant 1 is
// the activation floats a matvec holds: the host builds the matvec kernels once per chunk
// size its products use. (Constant 2, once gdn_decode's embedding width, is free.)
layout(constant_id = 1) const uint BONSAI_MAXCH = 6144;
layout(constant_id = 3) const uint BONSAI_GDN_D = 128;   // GDN head dimension
layout(constant_id = 4) const uint BONSAI_GDN_REP = 3;   // V heads per q/k head
layout(constant_id = 5) const uint BONSAI_HD = 256;      // attention head dimension
// The device runs subgroups of exactly 32 invocations, subgroup i being invocations
// 32i..32i+31: the sg_* helpers use subgroup operations.
layout(constant_id = 6) const bool SG_NATIVE = false;

// ---- the dispatch's record ----

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Record {
    uint64_t addr[24];
    uint w[16];
};
layout(push_constant, std430) uniform Push { Record rec; } pc;

#define ADDR(i) pc.rec.addr[i]
#define ARGU(i) pc.rec.w[i]
#define ARGF(i) uintBitsToFloat(pc.rec.w[i])

// Typed views of a buffer address (the address must be aligned as the type).
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer U16 { uint16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer V4 { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer I8 { int8_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 1) buffer U8 { uint8_t v[]; };

// ---- threads ----

#define TID gl_LocalInvocationID.x
#define NT gl_WorkGroupSize.x
#define LANE (gl_LocalInvocationID.x & 31u)
#define SG (gl_LocalInvocationID.x >> 5u)
#define NSG (gl_WorkGroupSize.x >> 5u)
// Most virtual SIMD-groups in a workgroup (1024 threads).
#define MAX_SG 32

// Metal's threadgroup_barrier(mem_flags::mem_threadgroup).
#define tg_barrier() barrier()

shared float sg_scratch_f[gl_WorkGroupSize.x];
shared uint sg_scratch_u[gl_WorkGroupSize.x];

// Sum of v over this thread's virtual SIMD-group, in every lane (Metal's simd_sum).
float sg_sum(float v) {
    if (SG_NATIVE) return subgroupAdd(v);
    barrier();
    sg_scratch_f[TID] = v;
    barrier();
    uint b = TID & ~31u;
    float s = 0.0;
    for (uint i = 0u; i < 32u; i++) s += sg_scratch_f[b + i];
    return s;
}

// Largest v over the virtual SIMD-group (simd_max).
float sg_max(float v) {
    if (SG_NATIVE) return subgroupMax(v);
    barrier();
    sg_scratch_f[TID] = v;
    barrier();
    uint b = TID & ~31u;
    float m = sg_scratch_f[b];
    for (uint i = 1u; i < 32u; i++) m = max(m, sg_scratch_f[b + i]);
    return m;
}

// Smallest v over the virtual SIMD-group (simd_min of uints).
uint sg_min_u(uint v) {
    if (SG_NATIVE) return subgroupMin(v);
    barrier();
    sg_scratch_u[TID] = v;
    barrier();
    uint b = TID & ~31u;
    uint m = sg_scratch_u[b];
    for (uint i = 1u; i < 32u; i++) m = min(m, sg_scratch_u[b + i]);
    return m;
}

// Metal's simdgroup_barrier(mem_flags::mem_threadgroup): orders the shared-memory
// accesses of one virtual SIMD-group.
void sg_barrier() {
    if (SG_NATIVE) {
        subgroupMemoryBarrierShared();
        subgroupBarrier();
    } else {
        barrier();
    }
}

// Sum of v over the workgroup, in every thread (common.h's tg_sum); red holds MAX_SG
// floats.
shared float tg_red[MAX_SG];
float tg_sum(float v) {
    v = sg_sum(v);
    barrier();
    if (LANE == 0u) tg_red[SG] = v;
    barrier();
    float s = 0.0;
    for (uint i = 0u; i < NSG; i++) s += tg_red[i];
    return s;
}

// ---- math (common.h) ----

// A finite stand-in for −∞.
#define NEG_BIG (-3.0e38)

float silu(float x) { return x / (1.0 + exp(-x)); }
float sigmoid1(float x) { return 1.0 / (1.0 + exp(-x)); }
float softplus1(float x) {
    if (x > 20.0) return x;
    if (x < -15.0) return exp(x);
    return log(1.0 + exp(x));
}
float decay_weight(float x) { return x < -50.0 ? 0.0 : exp(x); }

float bf16_to_float(uint u) { return uintBitsToFloat(u << 16); }

// One token through channel c's causal depthwise convolution and SiLU (common.h's
// conv_step): the raw inputs of the last K−1 tokens in conv (tap t at conv[t·stride + c],
// tap 0 the oldest), then cur; the window slides to take cur. gdn_token and the matvec
// kernels' MVF_CONV epilogue share it.
float conv_step(uint c, float cur, uint K, uint stride, F32 convw, F32 conv) {
    uint wc = c * K;
    float s = 0.0;
    for (uint tap = 0u; tap + 1u < K; tap++) s += convw.v[wc + tap] * conv.v[tap * stride + c];
    s += convw.v[wc + K - 1u] * cur;
    for (uint tap = 0u; tap + 2u < K; tap++) conv.v[tap * stride + c] = conv.v[(tap + 1u) * stride + c];
    conv.v[(K - 2u) * stride + c] = cur;
    return silu(s);
}
float half_bits(uint u) { return unpackHalf2x16(u).x; }

// ---- the ternary formats (formats.h, pq2.h) ----

// PQ2_0 as 16-bit words: 17 per 128-weight block, the fp16 scale first.
#define PQ_US 17u
// PTQ1_0 as 16-bit words: 14 per block, the fp16 scale in word 13.
#define PTQ1_US 14u
#define PQ2_BLOCK 34u
#define PTQ1_BLOCK 28u
#define PTQ1_SCALE 26u
#define FMT_PQ2 0
#define FMT_PTQ1 1
