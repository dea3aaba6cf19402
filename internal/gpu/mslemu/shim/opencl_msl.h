// opencl_msl.h — <metal_stdlib> for the address-space check (clcheck.go).
//
// The MSL sources are compiled a second time by clang as C++ for OpenCL 2021 with the
// generic address space disabled. MSL's address spaces become OpenCL's, which clang
// keeps apart in the type system exactly as Apple's compiler does: a pointer or
// reference in one space does not convert to another, an unqualified pointer is a
// thread (private) pointer. Only declarations are needed (-fsyntax-only); the emulator's
// own shim (metal_stdlib.h) gives the semantics.
#ifndef MSLEMU_OPENCL_MSL_H
#define MSLEMU_OPENCL_MSL_H

#pragma OPENCL EXTENSION cl_khr_fp16 : enable

#define device __global
#define threadgroup __local
#define constant __constant
#define thread __private

namespace metal {
namespace mem_flags {
constexpr uint mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4, mem_threadgroup_imageblock = 8;
}
void threadgroup_barrier(uint flags);
void simdgroup_barrier(uint flags);

// MSL's T(x) for a vector type T: a splat of a scalar, a conversion of a vector.
template <class T> struct mslcl_is_vec { static constexpr bool value = false; };
template <class T, int N> struct mslcl_is_vec<T __attribute__((ext_vector_type(N)))> {
  static constexpr bool value = true;
};
template <class T, class U> inline T mslcl_cvt(U u) {
  if constexpr (mslcl_is_vec<U>::value) return __builtin_convertvector(u, T);
  else return (T)(u);
}
template <class T, class U> inline T as_type(U u) {
  static_assert(sizeof(T) == sizeof(U), "as_type: sizes differ");
  return __builtin_bit_cast(T, u);
}

template <class T> T simd_sum(T);
template <class T> T simd_product(T);
template <class T> T simd_max(T);
template <class T> T simd_min(T);
template <class T> T simd_and(T);
template <class T> T simd_or(T);
template <class T> T simd_xor(T);
template <class T> T simd_prefix_exclusive_sum(T);
template <class T> T simd_prefix_inclusive_sum(T);
template <class T> T simd_broadcast(T, ushort);
template <class T> T simd_broadcast_first(T);
template <class T> T simd_shuffle(T, ushort);
template <class T> T simd_shuffle_xor(T, ushort);
template <class T> T simd_shuffle_up(T, ushort);
template <class T> T simd_shuffle_down(T, ushort);
template <class T> T quad_sum(T);
bool simd_all(bool);
bool simd_any(bool);
bool simd_is_first();

float4 unpack_unorm4x8_to_float(uint);
float4 unpack_snorm4x8_to_float(uint);
float2 unpack_unorm2x16_to_float(uint);
half4 unpack_unorm4x8_to_half(uint);
uint pack_float_to_unorm4x8(float4);

namespace fast {}
namespace precise {}

// simdgroup_matrix (MSL 2.3+): the types and the functions, declared with the address
// spaces Metal gives them, so that a GEMM loading from or storing to the wrong space
// fails here.
template <class T> struct mslcl_vec2 { typedef T type __attribute__((ext_vector_type(2))); };
template <class T, int Cols, int Rows> struct simdgroup_matrix {
  T storage[2];
  typename mslcl_vec2<T>::type thread_elements() const;
  // Matrices live in thread memory. With no generic address space the implicit
  // assignment cannot bind a temporary (make_filled_simdgroup_matrix's result), so
  // take the value.
  void operator=(simdgroup_matrix o) __private {
    storage[0] = o.storage[0];
    storage[1] = o.storage[1];
  }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
template <class T, int C, int R = C> simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(T value);
template <class T, int C, int R>
void simdgroup_load(simdgroup_matrix<T, C, R>& d, const __global T* src, ulong elements_per_row = C,
                    ulong2 matrix_origin = (ulong2)(0), bool transpose_matrix = false);
template <class T, int C, int R>
void simdgroup_load(simdgroup_matrix<T, C, R>& d, const __local T* src, ulong elements_per_row = C,
                    ulong2 matrix_origin = (ulong2)(0), bool transpose_matrix = false);
template <class T, int C, int R>
void simdgroup_store(const simdgroup_matrix<T, C, R>& a, __global T* dst, ulong elements_per_row = C,
                     ulong2 matrix_origin = (ulong2)(0), bool transpose_matrix = false);
template <class T, int C, int R>
void simdgroup_store(const simdgroup_matrix<T, C, R>& a, __local T* dst, ulong elements_per_row = C,
                     ulong2 matrix_origin = (ulong2)(0), bool transpose_matrix = false);
template <class D, class A, class B, class C>
void simdgroup_multiply_accumulate(D& d, const A& a, const B& b, const C& c);
template <class D, class A, class B> void simdgroup_multiply(D& d, const A& a, const B& b);
}  // namespace metal

#endif
