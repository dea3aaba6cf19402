#include <metal_stdlib>
#include "common.h"
using namespace metal;

// Layout checks: these fail to compile if the shim's sizes differ from Metal's.
static_assert(sizeof(float3) == 16, "float3 is 16 bytes");
static_assert(alignof(float3) == 16, "float3 is 16-aligned");
static_assert(sizeof(half3) == 8, "half3 is 8 bytes");
static_assert(sizeof(packed_float3) == 12, "packed_float3 is 12 bytes");
static_assert(sizeof(uchar3) == 4, "uchar3 is 4 bytes");
static_assert(sizeof(half) == 2, "half is 2 bytes");
static_assert(sizeof(Params) == 16, "Params is 16 bytes");
static_assert(sizeof(atomic_uint) == 4, "atomic_uint is 4 bytes");

kernel void vadd(device const float* a [[buffer(0)]],
                 device const float* b [[buffer(1)]],
                 device float* c [[buffer(2)]],
                 uint gid [[thread_position_in_grid]]) {
  c[gid] = a[gid] + b[gid];
}

// Applies Params (bound with setBytes) to x; the first p.n elements only.
kernel void apply_params(device const float* x [[buffer(0)]],
                         device float* y [[buffer(1)]],
                         constant Params& p [[buffer(2)]],
                         uint gid [[thread_position_in_grid]]) {
  if (gid < p.n) y[gid] = axpb(x[gid], p);
}

// Sum of 256 values per threadgroup: a tree in threadgroup memory with barriers.
kernel void reduce_tg(device const float* a [[buffer(0)]],
                      device float* out [[buffer(1)]],
                      uint tid [[thread_index_in_threadgroup]],
                      uint tg [[threadgroup_position_in_grid]],
                      uint gid [[thread_position_in_grid]]) {
  threadgroup float sh[256];
  sh[tid] = a[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 128; s > 0; s >>= 1) {
    if (tid < s) sh[tid] += sh[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) out[tg] = sh[0];
}

// The same with dynamic threadgroup memory ([[threadgroup(0)]]) and any power-of-two size.
kernel void reduce_dyn(device const float* a [[buffer(0)]],
                       device float* out [[buffer(1)]],
                       threadgroup float* sh [[threadgroup(0)]],
                       ushort tid [[thread_index_in_threadgroup]],
                       ushort n [[threads_per_threadgroup]],
                       uint tg [[threadgroup_position_in_grid]],
                       uint gid [[thread_position_in_grid]]) {
  sh[tid] = a[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (ushort s = n / 2; s > 0; s >>= 1) {
    if (tid < s) sh[tid] += sh[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) out[tg] = sh[0];
}

// Reads its neighbour's threadgroup slot: with the barrier (race_fixed) every order
// agrees, without it (race) the result depends on the order.
kernel void race(device const float* a [[buffer(0)]],
                 device float* out [[buffer(1)]],
                 uint tid [[thread_index_in_threadgroup]],
                 uint gid [[thread_position_in_grid]]) {
  threadgroup float sh[64];
  sh[tid] = a[gid];
  out[gid] = sh[(tid + 1) % 64];
}
kernel void race_fixed(device const float* a [[buffer(0)]],
                       device float* out [[buffer(1)]],
                       uint tid [[thread_index_in_threadgroup]],
                       uint gid [[thread_position_in_grid]]) {
  threadgroup float sh[64];
  sh[tid] = a[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = sh[(tid + 1) % 64];
}

// Threads 16.. return before the barrier: a deadlock on a GPU.
kernel void deadlock_return(device float* out [[buffer(0)]],
                            uint tid [[thread_index_in_threadgroup]]) {
  if (tid >= 16) return;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = 1.0;
}
// Two halves of the threadgroup wait at different barriers.
kernel void deadlock_split(device float* out [[buffer(0)]],
                           uint tid [[thread_index_in_threadgroup]]) {
  if (tid < 16) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  } else {
    threadgroup_barrier(mem_flags::mem_device);
  }
  out[tid] = 1.0;
}

// Device and threadgroup atomics.
kernel void atomics(device atomic_uint* counter [[buffer(0)]],
                    device atomic_int* imax [[buffer(1)]],
                    device uint* per_group [[buffer(2)]],
                    device const int* vals [[buffer(3)]],
                    uint tid [[thread_index_in_threadgroup]],
                    uint tg [[threadgroup_position_in_grid]],
                    uint gid [[thread_position_in_grid]]) {
  threadgroup atomic_uint count;
  if (tid == 0) atomic_store_explicit(&count, 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(counter, 1u, memory_order_relaxed);
  atomic_fetch_max_explicit(imax, vals[gid], memory_order_relaxed);
  atomic_fetch_add_explicit(&count, tid, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) per_group[tg] = atomic_load_explicit(&count, memory_order_relaxed);
}

// Writes every builtin of every thread (12 uints per thread).
kernel void builtins(device uint* out [[buffer(0)]],
                     uint3 tpig [[thread_position_in_grid]],
                     uint3 tgpig [[threadgroup_position_in_grid]],
                     ushort3 tpitg [[thread_position_in_threadgroup]],
                     uint3 tptg [[threads_per_threadgroup]],
                     uint3 tgpg [[threadgroups_per_grid]],
                     uint tiitg [[thread_index_in_threadgroup]],
                     ushort lane [[thread_index_in_simdgroup]],
                     ushort sg [[simdgroup_index_in_threadgroup]],
                     uint nsg [[simdgroups_per_threadgroup]],
                     uint width [[thread_execution_width]],
                     uint3 tpg [[threads_per_grid]]) {
  uint linear = (tpig.z * tpg.y + tpig.y) * tpg.x + tpig.x;
  device uint* o = out + 12 * linear;
  o[0] = tgpig.x; o[1] = tgpig.y; o[2] = tgpig.z;
  o[3] = tpitg.x; o[4] = tpitg.y; o[5] = tpitg.z;
  o[6] = tiitg; o[7] = lane; o[8] = sg; o[9] = nsg; o[10] = width;
  o[11] = tptg.x * 1000000 + tgpg.y * 1000 + tptg.z;
}

// Out of bounds: every thread reads 64 elements past its own.
kernel void oob_read(device const float* a [[buffer(0)]],
                     device float* out [[buffer(1)]],
                     uint gid [[thread_position_in_grid]]) {
  out[gid] = a[gid + 64];
}

kernel void int_div(device const int* a [[buffer(0)]],
                    device int* out [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
  out[gid] = 100 / a[gid];
}

// A thread-private array larger than a fiber's stack.
kernel void stack_hog(device float* out [[buffer(0)]],
                      uint gid [[thread_position_in_grid]]) {
  float big[50000];
  for (uint i = 0; i < 50000; i++) big[i] = float(i * gid);
  out[gid] = big[gid % 50000 + 7];
}

// Naive matrix-vector product: one thread per row.
kernel void matvec(device const float* W [[buffer(0)]],
                   device const float* x [[buffer(1)]],
                   device float* y [[buffer(2)]],
                   constant uint& K [[buffer(3)]],
                   uint row [[thread_position_in_grid]]) {
  device const float* w = W + (ulong)row * K;
  float acc = 0.0f;
  for (uint k = 0; k < K; k++) acc += w[k] * x[k];
  y[row] = acc;
}

// A template kernel and its instantiations.
template <typename T>
kernel void scale_t(device const T* a [[buffer(0)]],
                    device T* b [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
  b[gid] = a[gid] * T(3);
}
template [[host_name("scale_f32")]] kernel void scale_t<float>(device const float* a [[buffer(0)]], device float* b [[buffer(1)]], uint gid [[thread_position_in_grid]]);
template [[host_name("scale_f16")]] kernel void scale_t<half>(device const half* a [[buffer(0)]], device half* b [[buffer(1)]], uint gid [[thread_position_in_grid]]);

[[max_total_threads_per_threadgroup(256)]]
kernel void limited(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  out[gid] = float(gid);
}

namespace ops {
namespace inner {
kernel void ns_fill(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) { out[gid] = 7.0; }
}  // namespace inner
namespace {
kernel void anon_fill(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) { out[gid] = 8.0; }
}  // namespace
}  // namespace ops

// llama.cpp-style instantiations through a typedef of the function type.
template <typename T>
kernel void add_one_t(device const T* a [[buffer(0)]],
                      device T* b [[buffer(1)]],
                      uint gid [[thread_position_in_grid]]) {
  b[gid] = a[gid] + T(1);
}
typedef decltype(add_one_t<float>) add_one_f32_t;
template [[host_name("add_one_f32")]] kernel add_one_f32_t add_one_t<float>;
template [[host_name("add_one_i32")]] kernel void add_one_t<int>(device const int*, device int*, uint);
