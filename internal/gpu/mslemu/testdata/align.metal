#include <metal_stdlib>
using namespace metal;

// Alignment: Apple's compiler aligns a threadgroup variable to its own type only, so a
// store of a wider type through a cast pointer is undefined behaviour there. The strict
// mode (WithStrictAlignment, the default) places each threadgroup variable where it is
// misaligned for anything wider and checks every access with clang's alignment sanitizer;
// these kernels are its negative (tg_float4_into_float, tg_float2_into_float,
// device_uint_at_odd) and positive (tg_float_view_of_float4) cases.

// NEGATIVE: 16 float4s stored into `threadgroup float xs[64]` through a float4 pointer
// (gemm.metal's defect of issue 24), then read back as floats.
kernel void tg_float4_into_float(device const float4* src [[buffer(0)]],
                                 device float* dst [[buffer(1)]],
                                 uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float xs[64];
  threadgroup float4* x4 = (threadgroup float4*)xs;
  x4[tid] = src[tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint i = 0; i < 4; i++) dst[4 * tid + i] = xs[4 * tid + i];
}

// NEGATIVE: the same with float2 (8-byte) stores into a float array.
kernel void tg_float2_into_float(device const float2* src [[buffer(0)]],
                                 device float* dst [[buffer(1)]],
                                 uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float xs[32];
  threadgroup float2* x2 = (threadgroup float2*)xs;
  x2[tid] = src[tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint i = 0; i < 2; i++) dst[2 * tid + i] = xs[2 * tid + i];
}

// NEGATIVE: a uint read one byte into a device buffer (misaligned for uint).
kernel void device_uint_at_odd(device const uchar* src [[buffer(0)]],
                               device uint* dst [[buffer(1)]],
                               uint tid [[thread_index_in_threadgroup]]) {
  dst[tid] = *(device const uint*)(src + 4 * tid + 1);
}

// POSITIVE: the other direction is fine: a float4 array read and written as floats
// (matvec.metal's xs4), each float aligned.
kernel void tg_float_view_of_float4(device const float* src [[buffer(0)]],
                                    device float* dst [[buffer(1)]],
                                    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float4 xs4[16];
  threadgroup float* xs = (threadgroup float*)xs4;
  for (uint i = 0; i < 4; i++) xs[4 * tid + i] = src[4 * tid + i];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  dst[tid] = dot(xs4[tid], float4(1.0f, 2.0f, 3.0f, 4.0f));
}

// The placement of threadgroup variables of alignment 1, 2, 4, 8 and 16 (in declaration
// order, a uchar first so that the next would be misaligned): each one's address modulo
// 32. Emulator-only: MSL has no conversion of a pointer to an integer.
kernel void tg_placement(device uint* out [[buffer(0)]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup uchar c[3];
  threadgroup half h[3];
  threadgroup float f[3];
  threadgroup float2 f2[3];
  threadgroup float4 f4[3];
  if (tid == 0) {
    out[0] = uint((uintptr_t)&c[0] % 32);
    out[1] = uint((uintptr_t)&h[0] % 32);
    out[2] = uint((uintptr_t)&f[0] % 32);
    out[3] = uint((uintptr_t)&f2[0] % 32);
    out[4] = uint((uintptr_t)&f4[0] % 32);
    c[0] = 1;
    h[0] = 1.0h;
    f[0] = 1.0f;
    f2[0] = float2(1.0f);
    f4[0] = float4(1.0f);
  }
}
