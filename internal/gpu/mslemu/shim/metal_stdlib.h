// metal_stdlib.h — mslemu's stand-in for Metal's <metal_stdlib>.
//
// It lets clang compile unchanged MSL compute kernels as C++14 for the CPU: Metal's scalar
// and vector types, address-space keywords, math, conversion, atomic, barrier and
// SIMD-group functions. The generated translation unit includes this header first; the
// kernel sources follow, rewritten by the Go driver only where C++ cannot express MSL
// (attributes, threadgroup variables, unsuffixed float literals, `h` half literals).
//
// Every standard header is included before the keyword macros at the bottom (kernel,
// device, constant, thread, threadgroup), because those macros would break them.
// Math goes through clang builtins, so no C library function is declared in the global
// namespace to collide with metal::exp, metal::abs and friends.
#ifndef MSLEMU_METAL_STDLIB_H
#define MSLEMU_METAL_STDLIB_H

// The translation unit is C++14 with warnings fatal (MSL 3 is based on C++14: a kernel
// that needs C++17 fails here as it fails on Apple's compiler). This header, which is
// not MSL but the emulator's implementation of Metal's library, uses two C++17 features
// clang accepts in C++14 as extensions (if constexpr, fold expressions); they are
// allowed here only, between this push and the pop at the end.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc++17-extensions"

#include <stddef.h>
#include <stdint.h>

#include <limits>
#include <type_traits>

#include "mslemu_abi.h"

// ---------------------------------------------------------------------------------------
// Scalars
typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;

namespace mslemu_fp {
// float -> IEEE binary16, round to nearest even (matches F16C on all inputs).
constexpr uint16_t f2h(float f) {
  uint32_t x = __builtin_bit_cast(uint32_t, f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) {  // inf, nan
    return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? (0x200u | ((ax >> 13) & 0x3ffu)) : 0u));
  }
  if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to infinity
  if (ax < 0x38800000u) {                                  // half subnormal or zero
    if (ax < 0x33000000u) return uint16_t(sign);
    uint32_t e = ax >> 23;
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (q & 1u))) q++;
    return uint16_t(sign | q);
  }
  uint32_t r = ax - 0x38000000u;
  r += 0x0fffu + ((r >> 13) & 1u);
  return uint16_t(sign | (r >> 13));
}
constexpr float h2f(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0) {
    float v = float(m) * 5.9604644775390625e-08f;  // m * 2^-24, exact
    return sign ? -v : v;
  }
  if (e == 31) return __builtin_bit_cast(float, sign | 0x7f800000u | (m << 13));
  return __builtin_bit_cast(float, sign | ((e + 112u) << 23) | (m << 13));
}
// float -> bfloat16, round to nearest even; NaN stays a (quiet) NaN.
constexpr uint16_t f2bf(float f) {
  uint32_t x = __builtin_bit_cast(uint32_t, f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}
constexpr float bf2f(uint16_t b) { return __builtin_bit_cast(float, uint32_t(b) << 16); }
}  // namespace mslemu_fp

// The strict alignment mode (WithStrictAlignment) builds with clang's alignment
// sanitizer, which checks scalar loads and stores, member accesses and reference bindings
// but not the copy of a whole trivially copyable struct: `*(threadgroup float4*)p = v`
// would go unchecked. So there the vectors (and half, bfloat) copy through user-provided
// copy operations, which make every copy a member call on the destination and a
// reference binding of the source, both checked. (Only in that mode: they make the types
// non-trivially copyable, which costs a little elsewhere.)
#ifdef MSLEMU_STRICT_ALIGN
#define MSLEMU_STRICT_COPY(type, init, assign)        \
  constexpr type(const type& o) : init {}            \
  constexpr type& operator=(const type& o) {         \
    assign;                                          \
    return *this;                                    \
  }
#else
#define MSLEMU_STRICT_COPY(type, init, assign)
#endif
#define MSLEMU_COMMA ,

// half: IEEE binary16. Arithmetic is done in float and rounded once per operation, which
// is correctly rounded for + - * / and sqrt (float has more than 2*11+2 bits).
struct half {
  uint16_t bits;
  half() = default;
  constexpr half(float f) : bits(mslemu_fp::f2h(f)) {}
  constexpr half(double d) : bits(mslemu_fp::f2h(float(d))) {}
  template <class I, class = std::enable_if_t<std::is_integral<I>::value>>
  constexpr half(I i) : bits(mslemu_fp::f2h(float(i))) {}
  MSLEMU_STRICT_COPY(half, bits(o.bits), bits = o.bits)
  constexpr operator float() const { return mslemu_fp::h2f(bits); }
  static constexpr half from_bits(uint16_t b) {
    half h{};
    h.bits = b;
    return h;
  }
  constexpr half operator-() const { return from_bits(uint16_t(bits ^ 0x8000u)); }
  constexpr half operator+() const { return *this; }
  template <class B> constexpr half& operator+=(B b) { return *this = half(*this + b); }
  template <class B> constexpr half& operator-=(B b) { return *this = half(*this - b); }
  template <class B> constexpr half& operator*=(B b) { return *this = half(*this * b); }
  template <class B> constexpr half& operator/=(B b) { return *this = half(*this / b); }
  half& operator++() { return *this = half(float(*this) + 1.0f); }
  half& operator--() { return *this = half(float(*this) - 1.0f); }
  half operator++(int) { half o = *this; ++*this; return o; }
  half operator--(int) { half o = *this; --*this; return o; }
};

// bfloat: bfloat16 (MSL 3.1), arithmetic in float rounded once per operation.
struct bfloat {
  uint16_t bits;
  bfloat() = default;
  constexpr bfloat(float f) : bits(mslemu_fp::f2bf(f)) {}
  constexpr bfloat(double d) : bits(mslemu_fp::f2bf(float(d))) {}
  template <class I, class = std::enable_if_t<std::is_integral<I>::value>>
  constexpr bfloat(I i) : bits(mslemu_fp::f2bf(float(i))) {}
  MSLEMU_STRICT_COPY(bfloat, bits(o.bits), bits = o.bits)
  constexpr operator float() const { return mslemu_fp::bf2f(bits); }
  static constexpr bfloat from_bits(uint16_t b) {
    bfloat h{};
    h.bits = b;
    return h;
  }
  constexpr bfloat operator-() const { return from_bits(uint16_t(bits ^ 0x8000u)); }
  constexpr bfloat operator+() const { return *this; }
  template <class B> constexpr bfloat& operator+=(B b) { return *this = bfloat(*this + b); }
  template <class B> constexpr bfloat& operator-=(B b) { return *this = bfloat(*this - b); }
  template <class B> constexpr bfloat& operator*=(B b) { return *this = bfloat(*this * b); }
  template <class B> constexpr bfloat& operator/=(B b) { return *this = bfloat(*this / b); }
};

namespace mslemu_fp {
template <class T> struct is_f16 : std::integral_constant<bool, std::is_same<T, half>::value || std::is_same<T, bfloat>::value> {};
// The result of a binary operation with a 16-bit float operand: half op half -> half,
// half op integer -> half, half op float -> float (MSL's usual arithmetic conversions).
template <class A, class B,
          bool ok = (is_f16<A>::value || is_f16<B>::value) && (is_f16<A>::value || std::is_arithmetic<A>::value) &&
                    (is_f16<B>::value || std::is_arithmetic<B>::value) &&
                    !(is_f16<A>::value && is_f16<B>::value && !std::is_same<A, B>::value)>
struct res {};
template <class A, class B> struct res<A, B, true> {
  using type = std::conditional_t<std::is_floating_point<A>::value || std::is_floating_point<B>::value, float,
                                  std::conditional_t<is_f16<A>::value, A, B>>;
};
}  // namespace mslemu_fp

#define MSLEMU_F16_ARITH(op)                                                            \
  template <class A, class B, class R = typename mslemu_fp::res<A, B>::type>           \
  constexpr R operator op(A a, B b) {                                                   \
    return R(float(a) op float(b));                                                     \
  }
MSLEMU_F16_ARITH(+)
MSLEMU_F16_ARITH(-)
MSLEMU_F16_ARITH(*)
MSLEMU_F16_ARITH(/)
#undef MSLEMU_F16_ARITH
#define MSLEMU_F16_CMP(op)                                                              \
  template <class A, class B, class = typename mslemu_fp::res<A, B>::type>             \
  constexpr bool operator op(A a, B b) {                                                \
    return float(a) op float(b);                                                        \
  }
MSLEMU_F16_CMP(<)
MSLEMU_F16_CMP(>)
MSLEMU_F16_CMP(<=)
MSLEMU_F16_CMP(>=)
MSLEMU_F16_CMP(==)
MSLEMU_F16_CMP(!=)
#undef MSLEMU_F16_CMP

// ---------------------------------------------------------------------------------------
// Vectors: vec<T,N> with Metal's sizes and alignments (float3 is 16 bytes), swizzles as
// properties (.xy, .zyx, .rgba; writable when no component repeats), Metal constructors.
namespace metal {
using ::bfloat;
using ::half;

template <class T> struct is_scalar
    : std::integral_constant<bool, std::is_arithmetic<T>::value || mslemu_fp::is_f16<T>::value> {};
template <class T, int N> struct vec;
template <class T> struct is_vec : std::false_type {};
template <class T, int N> struct is_vec<vec<T, N>> : std::true_type {};
template <class T> struct type_identity { using type = T; };
template <class T> using type_identity_t = typename type_identity<T>::type;

#define MSLEMU_CX constexpr
#define MSLEMU_SCALAR_T(S) class S, class = std::enable_if_t<::metal::is_scalar<S>::value>

template <class R, class T, int N, class F> constexpr vec<R, N> vmap(const vec<T, N>& a, F f) {
  if constexpr (N == 2) return vec<R, 2>(f(a.x), f(a.y));
  else if constexpr (N == 3) return vec<R, 3>(f(a.x), f(a.y), f(a.z));
  else return vec<R, 4>(f(a.x), f(a.y), f(a.z), f(a.w));
}
template <class R, class T, class U, int N, class F> constexpr vec<R, N> vmap2(const vec<T, N>& a, const vec<U, N>& b, F f) {
  if constexpr (N == 2) return vec<R, 2>(f(a.x, b.x), f(a.y, b.y));
  else if constexpr (N == 3) return vec<R, 3>(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z));
  else return vec<R, 4>(f(a.x, b.x), f(a.y, b.y), f(a.z, b.z), f(a.w, b.w));
}
template <class R, class T, int N, class F>
constexpr vec<R, N> vmap3(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c, F f) {
  if constexpr (N == 2) return vec<R, 2>(f(a.x, b.x, c.x), f(a.y, b.y, c.y));
  else if constexpr (N == 3) return vec<R, 3>(f(a.x, b.x, c.x), f(a.y, b.y, c.y), f(a.z, b.z, c.z));
  else return vec<R, 4>(f(a.x, b.x, c.x), f(a.y, b.y, c.y), f(a.z, b.z, c.z), f(a.w, b.w, c.w));
}

#define MSLEMU_VEC_BINOP(op)                                                                          \
  friend constexpr vec operator op(const vec& a, const vec& b) {                                      \
    return ::metal::vmap2<T>(a, b, [](T p, T q) -> T { return T(p op q); });                          \
  }                                                                                                   \
  template <MSLEMU_SCALAR_T(S)> friend constexpr vec operator op(const vec& a, S b) { return a op vec(b); } \
  template <MSLEMU_SCALAR_T(S)> friend constexpr vec operator op(S a, const vec& b) { return vec(a) op b; } \
  template <class B> constexpr vec& operator op##=(const B & b) { return *this = *this op b; }
#define MSLEMU_VEC_CMPOP(op)                                                                          \
  friend constexpr vec<bool, N> operator op(const vec& a, const vec& b) {                             \
    return ::metal::vmap2<bool>(a, b, [](T p, T q) -> bool { return p op q; });                       \
  }                                                                                                   \
  template <MSLEMU_SCALAR_T(S)> friend constexpr vec<bool, N> operator op(const vec& a, S b) { return a op vec(b); } \
  template <MSLEMU_SCALAR_T(S)> friend constexpr vec<bool, N> operator op(S a, const vec& b) { return vec(a) op b; }

#define MSLEMU_VEC_COMMON                                                                             \
  using value_type = T;                                                                               \
  vec() = default;                                                                                    \
  template <class U, class = std::enable_if_t<!std::is_same<U, T>::value>>                            \
  explicit constexpr vec(const vec<U, N>& o) : vec(::metal::vmap<T>(o, [](U e) { return T(e); })) {}  \
  T& operator[](int i) { return (&x)[i]; }                                                            \
  const T& operator[](int i) const { return (&x)[i]; }                                                \
  MSLEMU_VEC_BINOP(+)                                                                                 \
  MSLEMU_VEC_BINOP(-)                                                                                 \
  MSLEMU_VEC_BINOP(*)                                                                                 \
  MSLEMU_VEC_BINOP(/)                                                                                 \
  MSLEMU_VEC_BINOP(%)                                                                                 \
  MSLEMU_VEC_BINOP(&)                                                                                 \
  MSLEMU_VEC_BINOP(|)                                                                                 \
  MSLEMU_VEC_BINOP(^)                                                                                 \
  MSLEMU_VEC_BINOP(<<)                                                                                \
  MSLEMU_VEC_BINOP(>>)                                                                                \
  MSLEMU_VEC_CMPOP(<)                                                                                 \
  MSLEMU_VEC_CMPOP(>)                                                                                 \
  MSLEMU_VEC_CMPOP(<=)                                                                                \
  MSLEMU_VEC_CMPOP(>=)                                                                                \
  MSLEMU_VEC_CMPOP(==)                                                                                \
  MSLEMU_VEC_CMPOP(!=)                                                                                \
  friend constexpr vec operator-(const vec& a) { return ::metal::vmap<T>(a, [](T e) -> T { return T(-e); }); } \
  friend constexpr vec operator+(const vec& a) { return a; }                                          \
  friend constexpr vec operator~(const vec& a) { return ::metal::vmap<T>(a, [](T e) -> T { return T(~e); }); } \
  friend constexpr vec<bool, N> operator!(const vec& a) { return ::metal::vmap<bool>(a, [](T e) -> bool { return !e; }); } \
  friend constexpr vec<bool, N> operator&&(const vec& a, const vec& b) {                              \
    return ::metal::vmap2<bool>(a, b, [](T p, T q) -> bool { return p && q; });                       \
  }                                                                                                   \
  friend constexpr vec<bool, N> operator||(const vec& a, const vec& b) {                              \
    return ::metal::vmap2<bool>(a, b, [](T p, T q) -> bool { return p || q; });                       \
  }

template <class T> struct alignas(2 * sizeof(T)) vec<T, 2> {
  static constexpr int N = 2;
  T x, y;
  template <MSLEMU_SCALAR_T(S)> constexpr vec(S s) : x(T(s)), y(T(s)) {}
  template <class A, class B, class = std::enable_if_t<is_scalar<A>::value && is_scalar<B>::value>>
  constexpr vec(A a, B b) : x(T(a)), y(T(b)) {}
  MSLEMU_STRICT_COPY(vec, x(o.x) MSLEMU_COMMA y(o.y), x = o.x; y = o.y)
  MSLEMU_VEC_COMMON
#define MSLEMU_SW_N 2
#include "swizzle.inc"
#undef MSLEMU_SW_N
};

template <class T> struct alignas(4 * sizeof(T)) vec<T, 3> {
  static constexpr int N = 3;
  T x, y, z;
  template <MSLEMU_SCALAR_T(S)> constexpr vec(S s) : x(T(s)), y(T(s)), z(T(s)) {}
  template <class A, class B, class C,
            class = std::enable_if_t<is_scalar<A>::value && is_scalar<B>::value && is_scalar<C>::value>>
  constexpr vec(A a, B b, C c) : x(T(a)), y(T(b)), z(T(c)) {}
  template <MSLEMU_SCALAR_T(S)> constexpr vec(const vec<T, 2>& a, S b) : x(a.x), y(a.y), z(T(b)) {}
  template <MSLEMU_SCALAR_T(S)> constexpr vec(S a, const vec<T, 2>& b) : x(T(a)), y(b.x), z(b.y) {}
  MSLEMU_STRICT_COPY(vec, x(o.x) MSLEMU_COMMA y(o.y) MSLEMU_COMMA z(o.z), x = o.x; y = o.y; z = o.z)
  MSLEMU_VEC_COMMON
#define MSLEMU_SW_N 3
#include "swizzle.inc"
#undef MSLEMU_SW_N
};

template <class T> struct alignas(4 * sizeof(T)) vec<T, 4> {
  static constexpr int N = 4;
  T x, y, z, w;
  template <MSLEMU_SCALAR_T(S)> constexpr vec(S s) : x(T(s)), y(T(s)), z(T(s)), w(T(s)) {}
  template <class A, class B, class C, class D,
            class = std::enable_if_t<is_scalar<A>::value && is_scalar<B>::value && is_scalar<C>::value &&
                                     is_scalar<D>::value>>
  constexpr vec(A a, B b, C c, D d) : x(T(a)), y(T(b)), z(T(c)), w(T(d)) {}
  template <class A, class B, class = std::enable_if_t<is_scalar<A>::value && is_scalar<B>::value>>
  constexpr vec(const vec<T, 2>& a, A b, B c) : x(a.x), y(a.y), z(T(b)), w(T(c)) {}
  template <class A, class B, class = std::enable_if_t<is_scalar<A>::value && is_scalar<B>::value>>
  constexpr vec(A a, const vec<T, 2>& b, B c) : x(T(a)), y(b.x), z(b.y), w(T(c)) {}
  template <class A, class B, class = std::enable_if_t<is_scalar<A>::value && is_scalar<B>::value>>
  constexpr vec(A a, B b, const vec<T, 2>& c) : x(T(a)), y(T(b)), z(c.x), w(c.y) {}
  constexpr vec(const vec<T, 2>& a, const vec<T, 2>& b) : x(a.x), y(a.y), z(b.x), w(b.y) {}
  template <MSLEMU_SCALAR_T(S)> constexpr vec(const vec<T, 3>& a, S b) : x(a.x), y(a.y), z(a.z), w(T(b)) {}
  template <MSLEMU_SCALAR_T(S)> constexpr vec(S a, const vec<T, 3>& b) : x(T(a)), y(b.x), z(b.y), w(b.z) {}
  MSLEMU_STRICT_COPY(vec, x(o.x) MSLEMU_COMMA y(o.y) MSLEMU_COMMA z(o.z) MSLEMU_COMMA w(o.w),
                     x = o.x; y = o.y; z = o.z; w = o.w)
  MSLEMU_VEC_COMMON
#define MSLEMU_SW_N 4
#include "swizzle.inc"
#undef MSLEMU_SW_N
};

#define MSLEMU_VEC_TYPEDEFS(name, T) \
  typedef vec<T, 2> name##2;         \
  typedef vec<T, 3> name##3;         \
  typedef vec<T, 4> name##4;
MSLEMU_VEC_TYPEDEFS(bool, bool)
MSLEMU_VEC_TYPEDEFS(char, signed char)
MSLEMU_VEC_TYPEDEFS(uchar, uchar)
MSLEMU_VEC_TYPEDEFS(short, short)
MSLEMU_VEC_TYPEDEFS(ushort, ushort)
MSLEMU_VEC_TYPEDEFS(int, int)
MSLEMU_VEC_TYPEDEFS(uint, uint)
MSLEMU_VEC_TYPEDEFS(long, long)
MSLEMU_VEC_TYPEDEFS(ulong, ulong)
MSLEMU_VEC_TYPEDEFS(half, half)
MSLEMU_VEC_TYPEDEFS(float, float)
MSLEMU_VEC_TYPEDEFS(bfloat, bfloat)

// Packed vectors: no padding, alignment of the element (packed_float3 is 12 bytes).
template <class T, int N> struct packed_vec {
  T e[N];
  packed_vec() = default;
  packed_vec(const vec<T, N>& v) {
    for (int i = 0; i < N; i++) e[i] = v[i];
  }
  template <class... A, class = std::enable_if_t<sizeof...(A) == N>> constexpr packed_vec(A... a) : e{T(a)...} {}
  operator vec<T, N>() const { return tov(*this); }
  static vec<T, N> tov(const packed_vec& p) {
    vec<T, N> v;
    for (int i = 0; i < N; i++) v[i] = p.e[i];
    return v;
  }
  T& operator[](int i) { return e[i]; }
  const T& operator[](int i) const { return e[i]; }
  T mslg_x() const { return e[0]; }
  void msls_x(T v) { e[0] = v; }
  T mslg_y() const { return e[1]; }
  void msls_y(T v) { e[1] = v; }
  T mslg_z() const { return e[2 < N ? 2 : 0]; }
  void msls_z(T v) { e[2 < N ? 2 : 0] = v; }
  T mslg_w() const { return e[3 < N ? 3 : 0]; }
  void msls_w(T v) { e[3 < N ? 3 : 0] = v; }
  __declspec(property(get = mslg_x, put = msls_x)) T x;
  __declspec(property(get = mslg_y, put = msls_y)) T y;
  __declspec(property(get = mslg_z, put = msls_z)) T z;
  __declspec(property(get = mslg_w, put = msls_w)) T w;
  vec<T, 2> mslg_xy() const { return vec<T, 2>(e[0], e[1]); }
  __declspec(property(get = mslg_xy)) vec<T, 2> xy;
  vec<T, 3> mslg_xyz() const { return vec<T, 3>(e[0], e[1], e[2 < N ? 2 : 0]); }
  __declspec(property(get = mslg_xyz)) vec<T, 3> xyz;
#define MSLEMU_PACKED_OP(op)                                                                                       \
  template <class B> friend vec<T, N> operator op(const packed_vec& a, const B& b) {                                 \
    return tov(a) op b;                    \
  }                                                                                                                  \
  template <class A, class = std::enable_if_t<!std::is_same<A, packed_vec>::value>>                                  \
  friend vec<T, N> operator op(const A& a, const packed_vec& b) {                                                    \
    return a op tov(b);                    \
  }
  MSLEMU_PACKED_OP(+)
  MSLEMU_PACKED_OP(-)
  MSLEMU_PACKED_OP(*)
  MSLEMU_PACKED_OP(/)
#undef MSLEMU_PACKED_OP
};
#define MSLEMU_PACKED_TYPEDEFS(name, T) \
  typedef packed_vec<T, 2> packed_##name##2; \
  typedef packed_vec<T, 3> packed_##name##3; \
  typedef packed_vec<T, 4> packed_##name##4;
MSLEMU_PACKED_TYPEDEFS(char, signed char)
MSLEMU_PACKED_TYPEDEFS(uchar, uchar)
MSLEMU_PACKED_TYPEDEFS(short, short)
MSLEMU_PACKED_TYPEDEFS(ushort, ushort)
MSLEMU_PACKED_TYPEDEFS(int, int)
MSLEMU_PACKED_TYPEDEFS(uint, uint)
MSLEMU_PACKED_TYPEDEFS(half, half)
MSLEMU_PACKED_TYPEDEFS(float, float)
MSLEMU_PACKED_TYPEDEFS(bfloat, bfloat)

// metal::array
template <class T, size_t N> struct array {
  T elems[N];
  T& operator[](size_t i) { return elems[i]; }
  const T& operator[](size_t i) const { return elems[i]; }
  constexpr size_t size() const { return N; }
};

template <class T> struct numeric_limits : std::numeric_limits<T> {};
template <> struct numeric_limits<half> {
  static constexpr bool is_specialized = true;
  static constexpr half min() { return half::from_bits(0x0400); }
  static constexpr half max() { return half::from_bits(0x7bff); }
  static constexpr half lowest() { return half::from_bits(0xfbff); }
  static constexpr half epsilon() { return half::from_bits(0x1400); }
  static constexpr half infinity() { return half::from_bits(0x7c00); }
  static constexpr half quiet_NaN() { return half::from_bits(0x7e00); }
  static constexpr half denorm_min() { return half::from_bits(0x0001); }
};

// -----------------------------------------------------------------------------------------
// Math. Scalar float functions use clang builtins (libm), half and bfloat compute in float
// and round, vectors apply the scalar function per component.
#define MSLEMU_F1(name, expr)                                                                     \
  inline float name(float x) { return (expr); }                                                  \
  inline half name(half x) { return half(name(float(x))); }                                      \
  inline bfloat name(bfloat x) { return bfloat(name(float(x))); }                                \
  template <class T, int N> inline vec<T, N> name(const vec<T, N>& v) {                          \
    return ::metal::vmap<T>(v, [](T e) -> T { return T(name(e)); });                             \
  }
#define MSLEMU_F2(name, expr)                                                                     \
  inline float name(float x, float y) { return (expr); }                                         \
  inline half name(half x, half y) { return half(name(float(x), float(y))); }                    \
  inline bfloat name(bfloat x, bfloat y) { return bfloat(name(float(x), float(y))); }            \
  template <class T, int N> inline vec<T, N> name(const vec<T, N>& a, const vec<T, N>& b) {      \
    return ::metal::vmap2<T>(a, b, [](T p, T q) -> T { return T(name(p, q)); });                 \
  }                                                                                               \
  template <class T, int N> inline vec<T, N> name(const vec<T, N>& a, type_identity_t<T> b) {    \
    return name(a, vec<T, N>(b));                                                                 \
  }
#define MSLEMU_F3(name, expr)                                                                          \
  inline float name(float x, float y, float z) { return (expr); }                                     \
  inline half name(half x, half y, half z) { return half(name(float(x), float(y), float(z))); }       \
  inline bfloat name(bfloat x, bfloat y, bfloat z) { return bfloat(name(float(x), float(y), float(z))); } \
  template <class T, int N> inline vec<T, N> name(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) { \
    return ::metal::vmap3<T>(a, b, c, [](T p, T q, T r) -> T { return T(name(p, q, r)); });          \
  }

MSLEMU_F1(exp, __builtin_expf(x))
MSLEMU_F1(exp2, __builtin_exp2f(x))
MSLEMU_F1(exp10, __builtin_powf(10.0f, x))
MSLEMU_F1(log, __builtin_logf(x))
MSLEMU_F1(log2, __builtin_log2f(x))
MSLEMU_F1(log10, __builtin_log10f(x))
MSLEMU_F1(sqrt, __builtin_sqrtf(x))
MSLEMU_F1(rsqrt, 1.0f / __builtin_sqrtf(x))
MSLEMU_F1(cbrt, __builtin_cbrtf(x))
MSLEMU_F1(sin, __builtin_sinf(x))
MSLEMU_F1(cos, __builtin_cosf(x))
MSLEMU_F1(tan, __builtin_tanf(x))
MSLEMU_F1(asin, __builtin_asinf(x))
MSLEMU_F1(acos, __builtin_acosf(x))
MSLEMU_F1(atan, __builtin_atanf(x))
MSLEMU_F1(sinh, __builtin_sinhf(x))
MSLEMU_F1(cosh, __builtin_coshf(x))
MSLEMU_F1(tanh, __builtin_tanhf(x))
MSLEMU_F1(asinh, __builtin_asinhf(x))
MSLEMU_F1(acosh, __builtin_acoshf(x))
MSLEMU_F1(atanh, __builtin_atanhf(x))
MSLEMU_F1(sinpi, __builtin_sinf(x * 3.14159265358979323846f))
MSLEMU_F1(cospi, __builtin_cosf(x * 3.14159265358979323846f))
MSLEMU_F1(floor, __builtin_floorf(x))
MSLEMU_F1(ceil, __builtin_ceilf(x))
MSLEMU_F1(round, __builtin_roundf(x))
MSLEMU_F1(rint, __builtin_rintf(x))
MSLEMU_F1(trunc, __builtin_truncf(x))
MSLEMU_F1(fabs, __builtin_fabsf(x))
MSLEMU_F1(fract, __builtin_fminf(x - __builtin_floorf(x), 0x1.fffffep-1f))
MSLEMU_F1(saturate, __builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f))
MSLEMU_F1(sign, x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x != x ? 0.0f : x)))
MSLEMU_F1(degrees, x * 57.295779513082320876798f)
MSLEMU_F1(radians, x * 0.017453292519943295769237f)
MSLEMU_F2(pow, __builtin_powf(x, y))
MSLEMU_F2(powr, __builtin_powf(x, y))
MSLEMU_F2(fmin, __builtin_fminf(x, y))
MSLEMU_F2(fmax, __builtin_fmaxf(x, y))
MSLEMU_F2(fmod, __builtin_fmodf(x, y))
MSLEMU_F2(atan2, __builtin_atan2f(x, y))
MSLEMU_F2(copysign, __builtin_copysignf(x, y))
MSLEMU_F2(fdim, __builtin_fdimf(x, y))
MSLEMU_F2(hypot, __builtin_hypotf(x, y))
MSLEMU_F2(step, y < x ? 0.0f : 1.0f)
MSLEMU_F2(divide, x / y)
// fma for half and bfloat: the exact product-sum rounded once to double, then to 16 bits.
inline float fma(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
inline half fma(half a, half b, half c) { return half(float(double(float(a)) * double(float(b)) + double(float(c)))); }
inline bfloat fma(bfloat a, bfloat b, bfloat c) { return bfloat(float(double(float(a)) * double(float(b)) + double(float(c)))); }
template <class T, int N> inline vec<T, N> fma(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) {
  return ::metal::vmap3<T>(a, b, c, [](T p, T q, T r) -> T { return T(fma(p, q, r)); });
}
inline float mad(float x, float y, float z) { return __builtin_fmaf(x, y, z); }
inline half mad(half a, half b, half c) { return fma(a, b, c); }
template <class T, int N> inline vec<T, N> mad(const vec<T, N>& a, const vec<T, N>& b, const vec<T, N>& c) { return fma(a, b, c); }
MSLEMU_F3(mix, x + (y - x) * z)
MSLEMU_F3(smoothstep, ([](float e0, float e1, float v) {
            float t = __builtin_fminf(__builtin_fmaxf((v - e0) / (e1 - e0), 0.0f), 1.0f);
            return t * t * (3.0f - 2.0f * t);
          })(x, y, z))

inline float ldexp(float x, int k) { return __builtin_ldexpf(x, k); }
inline half ldexp(half x, int k) { return half(__builtin_ldexpf(float(x), k)); }
inline float frexp(float x, int& e) { return __builtin_frexpf(x, &e); }
inline float modf(float x, float& i) { return __builtin_modff(x, &i); }


template <class T, int N> inline vec<T, N> mix(const vec<T, N>& a, const vec<T, N>& b, type_identity_t<T> t) {
  return mix(a, b, vec<T, N>(t));
}
template <class T, int N> inline vec<T, N> step(type_identity_t<T> e, const vec<T, N>& x) { return step(vec<T, N>(e), x); }
template <class T, int N> inline vec<T, N> smoothstep(type_identity_t<T> e0, type_identity_t<T> e1, const vec<T, N>& x) {
  return smoothstep(vec<T, N>(e0), vec<T, N>(e1), x);
}

// min, max, clamp, abs for every scalar type (both operands of one type, as in MSL).
template <class T, class = std::enable_if_t<is_scalar<T>::value>> constexpr T min(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) return __builtin_fminf(a, b);
  else if constexpr (mslemu_fp::is_f16<T>::value) return T(__builtin_fminf(float(a), float(b)));
  else return b < a ? b : a;
}
template <class T, class = std::enable_if_t<is_scalar<T>::value>> constexpr T max(T a, T b) {
  if constexpr (std::is_floating_point<T>::value) return __builtin_fmaxf(a, b);
  else if constexpr (mslemu_fp::is_f16<T>::value) return T(__builtin_fmaxf(float(a), float(b)));
  else return a < b ? b : a;
}
template <class T, class = std::enable_if_t<is_scalar<T>::value>> constexpr T clamp(T x, T lo, T hi) {
  return min(max(x, lo), hi);
}
template <class T, class = std::enable_if_t<is_scalar<T>::value>> constexpr T abs(T x) {
  if constexpr (std::is_floating_point<T>::value) return __builtin_fabsf(x);
  else if constexpr (mslemu_fp::is_f16<T>::value) return T::from_bits(uint16_t(x.bits & 0x7fffu));
  else if constexpr (std::is_signed<T>::value) return x < 0 ? T(-x) : x;
  else return x;
}
template <class T, int N> constexpr vec<T, N> min(const vec<T, N>& a, const vec<T, N>& b) {
  return vmap2<T>(a, b, [](T p, T q) { return min(p, q); });
}
template <class T, int N> constexpr vec<T, N> min(const vec<T, N>& a, type_identity_t<T> b) { return min(a, vec<T, N>(b)); }
template <class T, int N> constexpr vec<T, N> max(const vec<T, N>& a, const vec<T, N>& b) {
  return vmap2<T>(a, b, [](T p, T q) { return max(p, q); });
}
template <class T, int N> constexpr vec<T, N> max(const vec<T, N>& a, type_identity_t<T> b) { return max(a, vec<T, N>(b)); }
template <class T, int N> constexpr vec<T, N> clamp(const vec<T, N>& x, const vec<T, N>& lo, const vec<T, N>& hi) {
  return min(max(x, lo), hi);
}
template <class T, int N> constexpr vec<T, N> clamp(const vec<T, N>& x, type_identity_t<T> lo, type_identity_t<T> hi) {
  return clamp(x, vec<T, N>(lo), vec<T, N>(hi));
}
template <class T, int N> constexpr vec<T, N> abs(const vec<T, N>& a) { return vmap<T>(a, [](T p) { return abs(p); }); }

// select(a, b, c): c ? b : a
template <class T, class = std::enable_if_t<is_scalar<T>::value>> constexpr T select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N> constexpr vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, const vec<bool, N>& c) {
  vec<T, N> r = a;
  for (int i = 0; i < N; i++)
    if (c[i]) r[i] = b[i];
  return r;
}
template <class T, int N> constexpr vec<T, N> select(const vec<T, N>& a, const vec<T, N>& b, bool c) { return c ? b : a; }

// Relational
template <class T, class = std::enable_if_t<is_scalar<T>::value>> constexpr bool isnan(T x) { float f = float(x); return f != f; }
template <class T, class = std::enable_if_t<is_scalar<T>::value>> constexpr bool isinf(T x) { return __builtin_isinf(float(x)); }
template <class T, class = std::enable_if_t<is_scalar<T>::value>> constexpr bool isfinite(T x) { return __builtin_isfinite(float(x)); }
template <class T, class = std::enable_if_t<is_scalar<T>::value>> constexpr bool isnormal(T x) {
  if constexpr (std::is_same<T, half>::value) { uint32_t e = (x.bits >> 10) & 0x1f; return e != 0 && e != 31; }
  else return __builtin_isnormal(float(x));
}
template <class T, class = std::enable_if_t<is_scalar<T>::value>> constexpr bool signbit(T x) { return __builtin_signbit(float(x)); }
#define MSLEMU_REL_VEC(name)                                                                     \
  template <class T, int N> constexpr vec<bool, N> name(const vec<T, N>& a) {                    \
    return vmap<bool>(a, [](T p) -> bool { return name(p); });                                   \
  }
MSLEMU_REL_VEC(isnan)
MSLEMU_REL_VEC(isinf)
MSLEMU_REL_VEC(isfinite)
MSLEMU_REL_VEC(isnormal)
MSLEMU_REL_VEC(signbit)
constexpr bool all(bool b) { return b; }
constexpr bool any(bool b) { return b; }
template <class T, int N> constexpr bool all(const vec<T, N>& v) {
  for (int i = 0; i < N; i++)
    if (!v[i]) return false;
  return true;
}
template <class T, int N> constexpr bool any(const vec<T, N>& v) {
  for (int i = 0; i < N; i++)
    if (v[i]) return true;
  return false;
}

// Geometric
template <class T, int N> constexpr T dot(const vec<T, N>& a, const vec<T, N>& b) {
  T s = a[0] * b[0];
  for (int i = 1; i < N; i++) s = T(s + a[i] * b[i]);
  return s;
}
template <class T, int N> constexpr T length_squared(const vec<T, N>& a) { return dot(a, a); }
template <class T, int N> inline T length(const vec<T, N>& a) { return sqrt(dot(a, a)); }
template <class T, int N> inline T distance(const vec<T, N>& a, const vec<T, N>& b) { return length(a - b); }
template <class T, int N> inline T distance_squared(const vec<T, N>& a, const vec<T, N>& b) { return length_squared(a - b); }
template <class T, int N> inline vec<T, N> normalize(const vec<T, N>& a) { return a * rsqrt(dot(a, a)); }
template <class T> constexpr vec<T, 3> cross(const vec<T, 3>& a, const vec<T, 3>& b) {
  return vec<T, 3>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

// Integer functions
template <class T, class = std::enable_if_t<std::is_integral<T>::value>> constexpr T popcount(T x) {
  return T(__builtin_popcountll((unsigned long long)(std::make_unsigned_t<T>)x));
}
template <class T, class = std::enable_if_t<std::is_integral<T>::value>> constexpr T clz(T x) {
  using U = std::make_unsigned_t<T>;
  U u = U(x);
  if (u == 0) return T(sizeof(T) * 8);
  return T(__builtin_clzll((unsigned long long)u) - (64 - int(sizeof(T) * 8)));
}
template <class T, class = std::enable_if_t<std::is_integral<T>::value>> constexpr T ctz(T x) {
  using U = std::make_unsigned_t<T>;
  U u = U(x);
  if (u == 0) return T(sizeof(T) * 8);
  return T(__builtin_ctzll((unsigned long long)u));
}
template <class T, class = std::enable_if_t<std::is_integral<T>::value>> constexpr T reverse_bits(T x) {
  using U = std::make_unsigned_t<T>;
  U u = U(x), r = 0;
  for (unsigned i = 0; i < sizeof(T) * 8; i++) r = U((r << 1) | ((u >> i) & 1));
  return T(r);
}
template <class T, class = std::enable_if_t<std::is_integral<T>::value>> constexpr T extract_bits(T x, uint offset, uint bits) {
  using U = std::make_unsigned_t<T>;
  if (bits == 0) return 0;
  U u = U(U(x) >> offset);
  if (bits < sizeof(T) * 8) u = U(u & ((U(1) << bits) - 1));
  if (std::is_signed<T>::value && bits < sizeof(T) * 8 && ((u >> (bits - 1)) & 1)) u = U(u | ~((U(1) << bits) - 1));
  return T(u);
}
template <class T, class = std::enable_if_t<std::is_integral<T>::value>>
constexpr T insert_bits(T base, T ins, uint offset, uint bits) {
  using U = std::make_unsigned_t<T>;
  U mask = bits >= sizeof(T) * 8 ? U(~U(0)) : U((U(1) << bits) - 1);
  mask = U(mask << offset);
  return T((U(base) & ~mask) | ((U(ins) << offset) & mask));
}
template <class T, class = std::enable_if_t<std::is_integral<T>::value>> constexpr T mulhi(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    using W = std::conditional_t<std::is_signed<T>::value, __int128, unsigned __int128>;
    return T((W(a) * W(b)) >> 64);
  } else {
    return T((int64_t(a) * int64_t(b)) >> (sizeof(T) * 8));
  }
}
template <class T, class = std::enable_if_t<std::is_integral<T>::value>> constexpr T rotate(T v, T i) {
  using U = std::make_unsigned_t<T>;
  unsigned n = sizeof(T) * 8, s = unsigned(U(i)) % n;
  return s == 0 ? v : T((U(v) << s) | (U(v) >> (n - s)));
}
template <class T, class = std::enable_if_t<std::is_integral<T>::value>> constexpr std::make_unsigned_t<T> absdiff(T a, T b) {
  return std::make_unsigned_t<T>(a > b ? a - b : b - a);
}
#define MSLEMU_INT_VEC1(name)                                                              \
  template <class T, int N> constexpr vec<T, N> name(const vec<T, N>& a) {                 \
    return vmap<T>(a, [](T p) -> T { return name(p); });                                   \
  }
MSLEMU_INT_VEC1(popcount)
MSLEMU_INT_VEC1(clz)
MSLEMU_INT_VEC1(ctz)
MSLEMU_INT_VEC1(reverse_bits)

// -----------------------------------------------------------------------------------------
// Conversions
template <class T, class U> inline T as_type(const U& u) {
  static_assert(sizeof(T) == sizeof(U), "as_type: source and destination sizes differ");
  T t;
  __builtin_memcpy(&t, &u, sizeof(T));
  return t;
}
inline float4 unpack_unorm4x8_to_float(uint v) {
  return float4(float(v & 0xff) / 255.0f, float((v >> 8) & 0xff) / 255.0f, float((v >> 16) & 0xff) / 255.0f,
                float(v >> 24) / 255.0f);
}
inline float4 unpack_snorm4x8_to_float(uint v) {
  auto c = [](uint b) { return __builtin_fmaxf(float(int8_t(uint8_t(b))) / 127.0f, -1.0f); };
  return float4(c(v), c(v >> 8), c(v >> 16), c(v >> 24));
}
inline float2 unpack_unorm2x16_to_float(uint v) { return float2(float(v & 0xffff) / 65535.0f, float(v >> 16) / 65535.0f); }
inline float2 unpack_snorm2x16_to_float(uint v) {
  auto c = [](uint b) { return __builtin_fmaxf(float(int16_t(uint16_t(b))) / 32767.0f, -1.0f); };
  return float2(c(v), c(v >> 16));
}
inline half4 unpack_unorm4x8_to_half(uint v) { return half4(unpack_unorm4x8_to_float(v)); }
inline half4 unpack_snorm4x8_to_half(uint v) { return half4(unpack_snorm4x8_to_float(v)); }
inline half2 unpack_unorm2x16_to_half(uint v) { return half2(unpack_unorm2x16_to_float(v)); }
inline half2 unpack_snorm2x16_to_half(uint v) { return half2(unpack_snorm2x16_to_float(v)); }
inline uint pack_float_to_unorm4x8(float4 f) {
  auto c = [](float x) { return uint(__builtin_rintf(__builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f) * 255.0f)); };
  return c(f.x) | (c(f.y) << 8) | (c(f.z) << 16) | (c(f.w) << 24);
}
inline uint pack_float_to_snorm4x8(float4 f) {
  auto c = [](float x) {
    return uint(uint8_t(int8_t(__builtin_rintf(__builtin_fminf(__builtin_fmaxf(x, -1.0f), 1.0f) * 127.0f))));
  };
  return c(f.x) | (c(f.y) << 8) | (c(f.z) << 16) | (c(f.w) << 24);
}
inline uint pack_float_to_unorm2x16(float2 f) {
  auto c = [](float x) { return uint(__builtin_rintf(__builtin_fminf(__builtin_fmaxf(x, 0.0f), 1.0f) * 65535.0f)); };
  return c(f.x) | (c(f.y) << 16);
}
inline uint pack_float_to_snorm2x16(float2 f) {
  auto c = [](float x) {
    return uint(uint16_t(int16_t(__builtin_rintf(__builtin_fminf(__builtin_fmaxf(x, -1.0f), 1.0f) * 32767.0f))));
  };
  return c(f.x) | (c(f.y) << 16);
}
inline uint pack_half_to_unorm4x8(half4 h) { return pack_float_to_unorm4x8(float4(h)); }
inline uint pack_half_to_snorm4x8(half4 h) { return pack_float_to_snorm4x8(float4(h)); }

// precise:: and fast:: name the same (precise) functions.
namespace precise = ::metal;
namespace fast = ::metal;

// -----------------------------------------------------------------------------------------
// Atomics (real atomic instructions: threadgroups may run on several OS threads).
enum memory_order { memory_order_relaxed, memory_order_acquire, memory_order_release, memory_order_acq_rel, memory_order_seq_cst };
template <class T> struct atomic {
  T mslemu_v;
};
typedef atomic<int> atomic_int;
typedef atomic<uint> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<ulong> atomic_ulong;
typedef atomic<long> atomic_long;

template <class T> inline void atomic_store_explicit(volatile atomic<T>* o, type_identity_t<T> v, memory_order) {
  __atomic_store(&o->mslemu_v, &v, __ATOMIC_SEQ_CST);
}
template <class T> inline T atomic_load_explicit(const volatile atomic<T>* o, memory_order) {
  T v;
  __atomic_load(&o->mslemu_v, &v, __ATOMIC_SEQ_CST);
  return v;
}
template <class T> inline T atomic_exchange_explicit(volatile atomic<T>* o, type_identity_t<T> v, memory_order) {
  T r;
  __atomic_exchange(&o->mslemu_v, &v, &r, __ATOMIC_SEQ_CST);
  return r;
}
template <class T>
inline bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* o, T* expected, type_identity_t<T> desired, memory_order,
                                                  memory_order) {
  return __atomic_compare_exchange(&o->mslemu_v, expected, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}
template <class T>
inline bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* o, T* expected, type_identity_t<T> desired, memory_order,
                                                    memory_order) {
  return __atomic_compare_exchange(&o->mslemu_v, expected, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}
template <class T, class F> inline T mslemu_atomic_rmw(volatile atomic<T>* o, F f) {
  T old;
  __atomic_load(&o->mslemu_v, &old, __ATOMIC_SEQ_CST);
  for (;;) {
    T nv = f(old);
    if (__atomic_compare_exchange(&o->mslemu_v, &old, &nv, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return old;
  }
}
#define MSLEMU_ATOMIC_RMW(name, expr)                                                                              \
  template <class T> inline T atomic_fetch_##name##_explicit(volatile atomic<T>* o, type_identity_t<T> v, memory_order) { \
    return mslemu_atomic_rmw(o, [v](T a) -> T { return (expr); });                                                     \
  }
MSLEMU_ATOMIC_RMW(add, T(a + v))
MSLEMU_ATOMIC_RMW(sub, T(a - v))
MSLEMU_ATOMIC_RMW(and, T(a & v))
MSLEMU_ATOMIC_RMW(or, T(a | v))
MSLEMU_ATOMIC_RMW(xor, T(a ^ v))
MSLEMU_ATOMIC_RMW(min, (v < a ? v : a))
MSLEMU_ATOMIC_RMW(max, (a < v ? v : a))
#undef MSLEMU_ATOMIC_RMW
inline uint atomic_fetch_add_explicit(volatile atomic<uint>* o, uint v, memory_order) {
  return __atomic_fetch_add(&o->mslemu_v, v, __ATOMIC_SEQ_CST);
}
inline int atomic_fetch_add_explicit(volatile atomic<int>* o, int v, memory_order) {
  return int(__atomic_fetch_add((volatile uint*)&o->mslemu_v, uint(v), __ATOMIC_SEQ_CST));
}

// -----------------------------------------------------------------------------------------
// Barriers
enum class mem_flags : uint32_t {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(uint32_t(a) | uint32_t(b)); }
constexpr mem_flags operator&(mem_flags a, mem_flags b) { return mem_flags(uint32_t(a) & uint32_t(b)); }

#define MSLEMU_SITE \
  const char *mslemu_file = __builtin_FILE(), unsigned mslemu_line = __builtin_LINE(), unsigned mslemu_col = __builtin_COLUMN()
#define MSLEMU_SITE_ARGS mslemu_file, mslemu_line, mslemu_col

inline void threadgroup_barrier(mem_flags f, MSLEMU_SITE) { mslemu_barrier(int(f), MSLEMU_SITE_ARGS); }
inline void simdgroup_barrier(mem_flags f, MSLEMU_SITE);

}  // namespace metal

// -----------------------------------------------------------------------------------------
// SIMD-group and quad-group collectives. A lane blocks in mslemu_collective until the
// lanes of its SIMD group that execute the same call site have all arrived (see
// runtime.cpp for the rules); the combine function then computes every lane's result.
namespace mslemu {
using namespace ::metal;
template <class T> inline T poison() {
  T t;
  __builtin_memset((void*)&t, 0xff, sizeof t);
  return t;
}
template <class T> inline const T& val(const mslemu_group* g, int l) { return *(const T*)g->lane[l]->val; }
template <class T> inline T& res(const mslemu_group* g, int l) { return *(T*)g->lane[l]->res; }
inline uint32_t window(int W, int base) { return W == 32 ? 0xffffffffu : (((1u << W) - 1u) << base); }

template <class T> inline T add(T a, T b) {
  if constexpr (std::is_integral<T>::value) return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
  else return T(a + b);
}
template <class T> inline T mul(T a, T b) {
  if constexpr (std::is_integral<T>::value) return T(std::make_unsigned_t<T>(a) * std::make_unsigned_t<T>(b));
  else return T(a * b);
}
struct op_add { template <class T> T operator()(T a, T b) const { return add(a, b); } };
struct op_mul { template <class T> T operator()(T a, T b) const { return mul(a, b); } };
struct op_min { template <class T> T operator()(T a, T b) const { return ::metal::min(a, b); } };
struct op_max { template <class T> T operator()(T a, T b) const { return ::metal::max(a, b); } };
struct op_and { template <class T> T operator()(T a, T b) const { return T(a & b); } };
struct op_or { template <class T> T operator()(T a, T b) const { return T(a | b); } };
struct op_xor { template <class T> T operator()(T a, T b) const { return T(a ^ b); } };

// Reduction over each window of W lanes (W = 32: the SIMD group; W = 4: quads).
template <class T, class Op, int W> void comb_reduce(const mslemu_group* g) {
  for (int base = 0; base < 32; base += W) {
    uint32_t m = g->mask & window(W, base);
    if (!m) continue;
    T acc{};
    bool first = true;
    for (int l = base; l < base + W; l++)
      if (m >> l & 1) {
        acc = first ? val<T>(g, l) : Op()(acc, val<T>(g, l));
        first = false;
      }
    for (int l = base; l < base + W; l++)
      if (m >> l & 1) res<T>(g, l) = acc;
  }
}
// Prefix over the active lanes of each window in lane order.
template <class T, class Op, int W, bool Inclusive> void comb_prefix(const mslemu_group* g) {
  for (int base = 0; base < 32; base += W) {
    uint32_t m = g->mask & window(W, base);
    if (!m) continue;
    T acc = std::is_same<Op, op_mul>::value ? T(1) : T(0);
    for (int l = base; l < base + W; l++)
      if (m >> l & 1) {
        T v = val<T>(g, l);
        if (Inclusive) {
          acc = Op()(acc, v);
          res<T>(g, l) = acc;
        } else {
          res<T>(g, l) = acc;
          acc = Op()(acc, v);
        }
      }
  }
}
enum { SH_INDEX, SH_DOWN, SH_UP, SH_XOR, SH_ROT_DOWN, SH_ROT_UP, SH_FIRST };
// Shuffles: a source lane that is inactive or does not exist gives an undefined value,
// modelled as all-ones bits (NaN for floats). shuffle_down/up leave the lanes whose
// source falls outside the window unchanged, as Metal specifies.
template <class T, int W, int Kind> void comb_shuffle(const mslemu_group* g) {
  for (int l = 0; l < 32; l++) {
    if (!(g->mask >> l & 1)) continue;
    int64_t a = g->lane[l]->arg;
    int base = l & ~(W - 1), ll = l - base;
    int64_t src = -1;
    bool own = false;
    switch (Kind) {
      case SH_INDEX: src = (a >= 0 && a < W) ? a : -1; break;
      case SH_DOWN: src = ll + a; own = src >= W; break;
      case SH_UP: src = ll - a; own = src < 0; break;
      case SH_XOR: src = ll ^ a; if (src < 0 || src >= W) src = -1; break;
      case SH_ROT_DOWN: src = ((ll + a) % W + W) % W; break;
      case SH_ROT_UP: src = ((ll - a) % W + W) % W; break;
      case SH_FIRST: {
        uint32_t m = g->mask & window(W, base);
        src = __builtin_ctz(m) - base;
        break;
      }
    }
    if (own) {
      res<T>(g, l) = val<T>(g, l);
    } else if (src >= 0 && (g->mask >> (base + src) & 1)) {
      res<T>(g, l) = val<T>(g, int(base + src));
    } else {
      res<T>(g, l) = poison<T>();
    }
  }
}
template <int W> void comb_all(const mslemu_group* g) {
  for (int base = 0; base < 32; base += W) {
    uint32_t m = g->mask & window(W, base);
    if (!m) continue;
    bool all = true;
    for (int l = base; l < base + W; l++)
      if ((m >> l & 1) && !val<bool>(g, l)) all = false;
    for (int l = base; l < base + W; l++)
      if (m >> l & 1) res<bool>(g, l) = all;
  }
}
template <int W> void comb_any(const mslemu_group* g) {
  for (int base = 0; base < 32; base += W) {
    uint32_t m = g->mask & window(W, base);
    if (!m) continue;
    bool any = false;
    for (int l = base; l < base + W; l++)
      if ((m >> l & 1) && val<bool>(g, l)) any = true;
    for (int l = base; l < base + W; l++)
      if (m >> l & 1) res<bool>(g, l) = any;
  }
}
inline void comb_ballot(const mslemu_group* g) {
  uint64_t bits = 0;
  for (int l = 0; l < 32; l++)
    if ((g->mask >> l & 1) && val<bool>(g, l)) bits |= uint64_t(1) << l;
  for (int l = 0; l < 32; l++)
    if (g->mask >> l & 1) {
      uint64_t* r = (uint64_t*)g->lane[l]->res;
      r[0] = bits;
      r[1] = g->mask;
    }
}
inline void comb_mask(const mslemu_group* g) {
  for (int l = 0; l < 32; l++)
    if (g->mask >> l & 1) *(uint64_t*)g->lane[l]->res = g->mask;
}
inline void comb_none(const mslemu_group*) {}

template <class R, class T>
inline R coll(const T& x, int64_t arg, mslemu_combine_fn fn, const char* file, unsigned line, unsigned col) {
  R r;
  mslemu_lane me{&x, &r, arg};
  mslemu_collective(&me, fn, file, line, col);
  return r;
}
}  // namespace mslemu

namespace metal {
inline void simdgroup_barrier(mem_flags, const char* f, unsigned l, unsigned c) {
  int dummy = 0;
  (void)::mslemu::coll<int>(dummy, 0, &::mslemu::comb_none, f, l, c);
}

// simd_vote (simd_ballot, simd_active_threads_mask)
struct simd_vote {
  typedef uint64_t vote_t;
  vote_t v;
  vote_t active;
  constexpr explicit simd_vote(vote_t bits = 0) : v(bits), active(~vote_t(0)) {}
  constexpr explicit operator vote_t() const { return v; }
  constexpr bool all() const { return (v & active) == active; }
  constexpr bool any() const { return v != 0; }
};

#define MSLEMU_COLL(R, T, fn, arg) ::mslemu::coll<R>(x, int64_t(arg), fn, MSLEMU_SITE_ARGS)
#define MSLEMU_REDUCE(name, Op, W) \
  template <class T> inline T name(T x, MSLEMU_SITE) { return MSLEMU_COLL(T, T, (&::mslemu::comb_reduce<T, ::mslemu::Op, W>), 0); }
MSLEMU_REDUCE(simd_sum, op_add, 32)
MSLEMU_REDUCE(simd_product, op_mul, 32)
MSLEMU_REDUCE(simd_min, op_min, 32)
MSLEMU_REDUCE(simd_max, op_max, 32)
MSLEMU_REDUCE(simd_and, op_and, 32)
MSLEMU_REDUCE(simd_or, op_or, 32)
MSLEMU_REDUCE(simd_xor, op_xor, 32)
MSLEMU_REDUCE(quad_sum, op_add, 4)
MSLEMU_REDUCE(quad_product, op_mul, 4)
MSLEMU_REDUCE(quad_min, op_min, 4)
MSLEMU_REDUCE(quad_max, op_max, 4)
MSLEMU_REDUCE(quad_and, op_and, 4)
MSLEMU_REDUCE(quad_or, op_or, 4)
MSLEMU_REDUCE(quad_xor, op_xor, 4)
#define MSLEMU_PREFIX(name, Op, W, Inc) \
  template <class T> inline T name(T x, MSLEMU_SITE) { return MSLEMU_COLL(T, T, (&::mslemu::comb_prefix<T, ::mslemu::Op, W, Inc>), 0); }
MSLEMU_PREFIX(simd_prefix_inclusive_sum, op_add, 32, true)
MSLEMU_PREFIX(simd_prefix_exclusive_sum, op_add, 32, false)
MSLEMU_PREFIX(simd_prefix_inclusive_product, op_mul, 32, true)
MSLEMU_PREFIX(simd_prefix_exclusive_product, op_mul, 32, false)
MSLEMU_PREFIX(quad_prefix_inclusive_sum, op_add, 4, true)
MSLEMU_PREFIX(quad_prefix_exclusive_sum, op_add, 4, false)
MSLEMU_PREFIX(quad_prefix_inclusive_product, op_mul, 4, true)
MSLEMU_PREFIX(quad_prefix_exclusive_product, op_mul, 4, false)
#define MSLEMU_SHUFFLE(name, W, Kind, A)                                                              \
  template <class T> inline T name(T x, A a, MSLEMU_SITE) {                                          \
    return MSLEMU_COLL(T, T, (&::mslemu::comb_shuffle<T, W, ::mslemu::Kind>), a);                     \
  }
MSLEMU_SHUFFLE(simd_shuffle, 32, SH_INDEX, ushort)
MSLEMU_SHUFFLE(simd_broadcast, 32, SH_INDEX, ushort)
MSLEMU_SHUFFLE(simd_shuffle_down, 32, SH_DOWN, ushort)
MSLEMU_SHUFFLE(simd_shuffle_up, 32, SH_UP, ushort)
MSLEMU_SHUFFLE(simd_shuffle_xor, 32, SH_XOR, ushort)
MSLEMU_SHUFFLE(simd_shuffle_rotate_down, 32, SH_ROT_DOWN, ushort)
MSLEMU_SHUFFLE(simd_shuffle_rotate_up, 32, SH_ROT_UP, ushort)
MSLEMU_SHUFFLE(quad_shuffle, 4, SH_INDEX, ushort)
MSLEMU_SHUFFLE(quad_broadcast, 4, SH_INDEX, ushort)
MSLEMU_SHUFFLE(quad_shuffle_down, 4, SH_DOWN, ushort)
MSLEMU_SHUFFLE(quad_shuffle_up, 4, SH_UP, ushort)
MSLEMU_SHUFFLE(quad_shuffle_xor, 4, SH_XOR, ushort)
MSLEMU_SHUFFLE(quad_shuffle_rotate_down, 4, SH_ROT_DOWN, ushort)
MSLEMU_SHUFFLE(quad_shuffle_rotate_up, 4, SH_ROT_UP, ushort)
template <class T> inline T simd_broadcast_first(T x, MSLEMU_SITE) {
  return MSLEMU_COLL(T, T, (&::mslemu::comb_shuffle<T, 32, ::mslemu::SH_FIRST>), 0);
}
template <class T> inline T quad_broadcast_first(T x, MSLEMU_SITE) {
  return MSLEMU_COLL(T, T, (&::mslemu::comb_shuffle<T, 4, ::mslemu::SH_FIRST>), 0);
}
inline bool simd_all(bool x, MSLEMU_SITE) { return MSLEMU_COLL(bool, bool, &::mslemu::comb_all<32>, 0); }
inline bool simd_any(bool x, MSLEMU_SITE) { return MSLEMU_COLL(bool, bool, &::mslemu::comb_any<32>, 0); }
inline bool quad_all(bool x, MSLEMU_SITE) { return MSLEMU_COLL(bool, bool, &::mslemu::comb_all<4>, 0); }
inline bool quad_any(bool x, MSLEMU_SITE) { return MSLEMU_COLL(bool, bool, &::mslemu::comb_any<4>, 0); }
inline simd_vote simd_ballot(bool x, MSLEMU_SITE) {
  struct R { uint64_t bits, active; };
  R r = MSLEMU_COLL(R, bool, &::mslemu::comb_ballot, 0);
  simd_vote v(r.bits);
  v.active = r.active;
  return v;
}
inline simd_vote simd_active_threads_mask(MSLEMU_SITE) {
  bool x = true;
  uint64_t m = MSLEMU_COLL(uint64_t, bool, &::mslemu::comb_mask, 0);
  simd_vote v(m);
  v.active = m;
  return v;
}
inline bool simd_is_first(MSLEMU_SITE) {
  bool x = true;
  uint64_t m = MSLEMU_COLL(uint64_t, bool, &::mslemu::comb_mask, 0);
  return uint32_t(__builtin_ctzll(m)) == mslemu_cur_info()->tiisg;
}
inline bool simd_is_helper_thread() { return false; }
#undef MSLEMU_COLL
#undef MSLEMU_REDUCE
#undef MSLEMU_PREFIX
#undef MSLEMU_SHUFFLE
}  // namespace metal

// -----------------------------------------------------------------------------------------
// SIMD-group matrices (simdgroup_float8x8, simdgroup_half8x8, simdgroup_bfloat8x8). On a
// GPU the 64 elements are spread over the 32 lanes; here every lane holds the whole matrix,
// and the functions that make or change one are collectives that every lane of a full
// SIMD group must reach together with the same arguments (Metal's rule: anything else is
// undefined). They run once for the group and hand every lane the same result, so the
// copies never differ. A default-constructed matrix is poisoned (NaN), as an
// uninitialised register would be; thread_elements() is not modelled, since the lane
// layout is the hardware's.
//
// Coordinates: element (r, c) is row r, column c. simdgroup_load of a matrix from src with
// elements_per_row e and matrix_origin (x, y) (x a column, y a row of the source, as in
// Metal) reads element (r, c) from src[(y + r)·e + x + c], or, transposed, from
// src[(y + c)·e + x + r]; simdgroup_store writes the same places. multiply_accumulate(d,
// a, b, c) is d = a·b + c, each element a float sum over k = 0..7 in order, one fused
// multiply-add per term, rounded to d's element type at the end (the GPU's order and
// rounding may differ in the last bit; compare with tolerances).
namespace metal {
template <class T, int Cols, int Rows> struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "mslemu models 8x8 simdgroup matrices only (as Metal defines them)");
  static_assert(std::is_same<T, float>::value || std::is_same<T, half>::value || std::is_same<T, bfloat>::value,
                "simdgroup matrix elements are float, half or bfloat");
  typedef T element_type;
  T e[Rows][Cols];
  simdgroup_matrix() { __builtin_memset((void*)e, 0xff, sizeof e); }
  // Metal's diagonal constructor: dval on the diagonal, zero elsewhere.
  explicit simdgroup_matrix(T dval) {
    for (int r = 0; r < Rows; r++)
      for (int c = 0; c < Cols; c++) e[r][c] = r == c ? dval : T(0.0f);
  }
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;
}  // namespace metal

namespace mslemu {
template <class M> struct sgm_res {
  M m;
  const char* err;
};
// Every lane of the SIMD group must take part; the first active lane's arguments are
// the group's, and every lane's must equal them.
template <class V> inline const char* sgm_check(const mslemu_group* g, const char* what) {
  if (g->mask != 0xffffffffu) return what;
  const V& v0 = val<V>(g, 0);
  for (int l = 1; l < 32; l++)
    if (__builtin_memcmp(&val<V>(g, l), &v0, sizeof(V)) != 0) return "simdgroup matrix function: the lanes of the SIMD group pass different arguments (they must be uniform)";
  return nullptr;
}
#define MSLEMU_SGM_PARTIAL "simdgroup matrix function reached by only some lanes of the SIMD group (every one of its 32 lanes must execute it together)"
template <class M> inline void sgm_broadcast(const mslemu_group* g, const M& m, const char* err) {
  for (int l = 0; l < 32; l++)
    if (g->mask >> l & 1) {
      sgm_res<M>& r = res<sgm_res<M>>(g, l);
      if (!err) r.m = m;
      r.err = err;
    }
}
template <class T> struct sgm_fill_args {
  T v;
};
template <class M> void comb_sgm_fill(const mslemu_group* g) {
  typedef typename M::element_type T;
  const char* err = sgm_check<sgm_fill_args<T>>(g, MSLEMU_SGM_PARTIAL);
  M m;
  if (!err) {
    T v = val<sgm_fill_args<T>>(g, 0).v;
    for (int r = 0; r < 8; r++)
      for (int c = 0; c < 8; c++) m.e[r][c] = v;
  }
  sgm_broadcast(g, m, err);
}
struct sgm_mem_args {
  const void* p;
  uint64_t epr, x, y;
  uint64_t transpose;
  const void* m;  // store: the lane's matrix
};
template <class M> void comb_sgm_load(const mslemu_group* g) {
  typedef typename M::element_type T;
  sgm_mem_args a = val<sgm_mem_args>(g, __builtin_ctz(g->mask ? g->mask : 1));
  const char* err = sgm_check<sgm_mem_args>(g, MSLEMU_SGM_PARTIAL);
  M m;
  if (!err) {
    const T* src = (const T*)a.p;
    for (int r = 0; r < 8; r++)
      for (int c = 0; c < 8; c++)
        m.e[r][c] = a.transpose ? src[(a.y + c) * a.epr + a.x + r] : src[(a.y + r) * a.epr + a.x + c];
  }
  sgm_broadcast(g, m, err);
}
template <class M> void comb_sgm_store(const mslemu_group* g) {
  typedef typename M::element_type T;
  // The lanes' matrices are the same by construction; compare the other arguments only.
  const char* err = g->mask != 0xffffffffu ? MSLEMU_SGM_PARTIAL : nullptr;
  const sgm_mem_args& a = val<sgm_mem_args>(g, __builtin_ctz(g->mask ? g->mask : 1));
  for (int l = 0; !err && l < 32; l++) {
    const sgm_mem_args& b = val<sgm_mem_args>(g, l);
    if (b.p != a.p || b.epr != a.epr || b.x != a.x || b.y != a.y || b.transpose != a.transpose)
      err = "simdgroup_store: the lanes of the SIMD group pass different arguments (they must be uniform)";
  }
  if (!err) {
    const M& m = *(const M*)a.m;
    T* dst = (T*)a.p;
    for (int r = 0; r < 8; r++)
      for (int c = 0; c < 8; c++) {
        T v = m.e[r][c];
        if (a.transpose) dst[(a.y + c) * a.epr + a.x + r] = v;
        else dst[(a.y + r) * a.epr + a.x + c] = v;
      }
  }
  for (int l = 0; l < 32; l++)
    if (g->mask >> l & 1) res<const char*>(g, l) = err;
}
template <class MA, class MB, class MC> struct sgm_mac_args {
  const MA* a;
  const MB* b;
  const MC* c;  // null: simdgroup_multiply
};
template <class MD, class MA, class MB, class MC> void comb_sgm_mac(const mslemu_group* g) {
  typedef typename MD::element_type TD;
  const char* err = g->mask != 0xffffffffu ? MSLEMU_SGM_PARTIAL : nullptr;
  MD d;
  if (!err) {
    const sgm_mac_args<MA, MB, MC>& p = val<sgm_mac_args<MA, MB, MC>>(g, 0);
    for (int r = 0; r < 8; r++)
      for (int c = 0; c < 8; c++) {
        float s = p.c ? float(p.c->e[r][c]) : 0.0f;
        for (int k = 0; k < 8; k++) s = __builtin_fmaf(float(p.a->e[r][k]), float(p.b->e[k][c]), s);
        d.e[r][c] = TD(s);
      }
  }
  sgm_broadcast(g, d, err);
}
#undef MSLEMU_SGM_PARTIAL
template <class M> inline M sgm_take(const sgm_res<M>& r) {
  if (r.err) mslemu_fail(r.err);
  return r.m;
}
}  // namespace mslemu

namespace metal {
template <class T, int Cols, int Rows = Cols>
inline simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(const T value, MSLEMU_SITE) {
  typedef simdgroup_matrix<T, Cols, Rows> M;
  ::mslemu::sgm_fill_args<T> a{value};
  return ::mslemu::sgm_take(::mslemu::coll<::mslemu::sgm_res<M>>(a, 0, &::mslemu::comb_sgm_fill<M>, MSLEMU_SITE_ARGS));
}
template <class T, int Cols, int Rows>
inline void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, const T* src, ulong elements_per_row = Cols,
                           ulong2 matrix_origin = 0, bool transpose_matrix = false, MSLEMU_SITE) {
  typedef simdgroup_matrix<T, Cols, Rows> M;
  ::mslemu::sgm_mem_args a{src, elements_per_row, matrix_origin.x, matrix_origin.y, transpose_matrix ? 1u : 0u, nullptr};
  d = ::mslemu::sgm_take(::mslemu::coll<::mslemu::sgm_res<M>>(a, 0, &::mslemu::comb_sgm_load<M>, MSLEMU_SITE_ARGS));
}
template <class T, int Cols, int Rows>
inline void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& m, T* dst, ulong elements_per_row = Cols,
                            ulong2 matrix_origin = 0, bool transpose_matrix = false, MSLEMU_SITE) {
  typedef simdgroup_matrix<T, Cols, Rows> M;
  ::mslemu::sgm_mem_args a{dst, elements_per_row, matrix_origin.x, matrix_origin.y, transpose_matrix ? 1u : 0u, &m};
  const char* err = ::mslemu::coll<const char*>(a, 0, &::mslemu::comb_sgm_store<M>, MSLEMU_SITE_ARGS);
  if (err) mslemu_fail(err);
}
template <class TD, class TA, class TB, class TC, int N, int M, int K>
inline void simdgroup_multiply_accumulate(simdgroup_matrix<TD, N, M>& d, const simdgroup_matrix<TA, K, M>& a,
                                          const simdgroup_matrix<TB, N, K>& b, const simdgroup_matrix<TC, N, M>& c,
                                          MSLEMU_SITE) {
  typedef simdgroup_matrix<TD, N, M> MD;
  typedef simdgroup_matrix<TA, K, M> MA;
  typedef simdgroup_matrix<TB, N, K> MB;
  typedef simdgroup_matrix<TC, N, M> MC;
  ::mslemu::sgm_mac_args<MA, MB, MC> p{&a, &b, &c};
  d = ::mslemu::sgm_take(::mslemu::coll<::mslemu::sgm_res<MD>>(p, 0, &::mslemu::comb_sgm_mac<MD, MA, MB, MC>, MSLEMU_SITE_ARGS));
}
template <class TD, class TA, class TB, int N, int M, int K>
inline void simdgroup_multiply(simdgroup_matrix<TD, N, M>& d, const simdgroup_matrix<TA, K, M>& a,
                               const simdgroup_matrix<TB, N, K>& b, MSLEMU_SITE) {
  typedef simdgroup_matrix<TD, N, M> MD;
  typedef simdgroup_matrix<TA, K, M> MA;
  typedef simdgroup_matrix<TB, N, K> MB;
  ::mslemu::sgm_mac_args<MA, MB, MD> p{&a, &b, nullptr};
  d = ::mslemu::sgm_take(::mslemu::coll<::mslemu::sgm_res<MD>>(p, 0, &::mslemu::comb_sgm_mac<MD, MA, MB, MD>, MSLEMU_SITE_ARGS));
}
}  // namespace metal

// -----------------------------------------------------------------------------------------
// Kernel arguments, used by the generated entry points.
namespace mslemu {
enum builtin_kind {
  B_TPIG, B_TGPIG, B_TPITG, B_TPTG, B_TGPG, B_TPG, B_TIITG, B_TIISG, B_SGITG, B_SGPTG, B_WIDTH,
  B_QGITG, B_TIIQG, B_ZERO,
};
template <class P> inline P builtin(int kind) {
  const mslemu_thread_info* t = mslemu_cur_info();
  uint32_t v[3] = {0, 0, 0};
  auto c3 = [&](const uint32_t* s) { v[0] = s[0]; v[1] = s[1]; v[2] = s[2]; };
  switch (kind) {
    case B_TPIG: c3(t->tpig); break;
    case B_TGPIG: c3(t->tgpig); break;
    case B_TPITG: c3(t->tpitg); break;
    case B_TPTG: c3(t->tptg); break;
    case B_TGPG: c3(t->tgpg); break;
    case B_TPG: c3(t->tpg); break;
    case B_TIITG: v[0] = t->tiitg; break;
    case B_TIISG: v[0] = t->tiisg; break;
    case B_SGITG: v[0] = t->sgitg; break;
    case B_SGPTG: v[0] = t->sgptg; break;
    case B_WIDTH: v[0] = t->width; break;
    case B_QGITG: v[0] = t->tiitg / 4; break;
    case B_TIIQG: v[0] = t->tiitg % 4; break;
    default: break;
  }
  using D = std::remove_cv_t<std::remove_reference_t<P>>;
  using E = typename std::conditional_t<::metal::is_vec<D>::value, D, ::metal::vec<D, 2>>::value_type;
  static_assert(std::is_same<E, uint>::value || std::is_same<E, ushort>::value,
                "a compute builtin parameter must be uint or ushort (or a vector of them)");
  if constexpr (::metal::is_vec<D>::value) {
    if constexpr (D::N == 2) return D(v[0], v[1]);
    else if constexpr (D::N == 3) return D(v[0], v[1], v[2]);
    else return D(v[0], v[1], v[2], 0);
  } else {
    return D(v[0]);
  }
}
template <class P> inline P buffer_arg(int index) {
  void* p = mslemu_buffer_ptr(index);
  if constexpr (std::is_pointer<P>::value) {
    return (P)p;
  } else {
    static_assert(std::is_reference<P>::value, "a [[buffer(i)]] parameter must be a pointer or a reference");
    return *(std::remove_reference_t<P>*)p;
  }
}
template <class P> inline P threadgroup_arg(int index) {
  void* p = mslemu_tg_arg_ptr(index);
  if constexpr (std::is_pointer<P>::value) {
    return (P)p;
  } else {
    static_assert(std::is_reference<P>::value, "a [[threadgroup(i)]] parameter must be a pointer or a reference");
    return *(std::remove_reference_t<P>*)p;
  }
}
template <class P> constexpr int64_t arg_size() {
  using E = std::remove_cv_t<std::remove_pointer_t<std::remove_reference_t<P>>>;
  if constexpr (std::is_void<E>::value) return 1;
  else return int64_t(sizeof(E));
}
template <class P> constexpr int64_t arg_align() {
  using E = std::remove_cv_t<std::remove_pointer_t<std::remove_reference_t<P>>>;
  if constexpr (std::is_void<E>::value) return 1;
  else return int64_t(alignof(E));
}
template <class P> constexpr int64_t arg_is_ref() { return std::is_reference<P>::value ? 1 : 0; }
// The linter's threadgroup-memory check (lint.go): the type of a declaration, each
// variable rounded up to Metal's 16-byte granularity, and the limit; a failing tg_limit
// names the byte count in its instantiation.
template <class F> struct tg_type;
template <class T> struct tg_type<void(T*)> { using type = T; };
constexpr uint64_t tg_round(uint64_t n) { return (n + 15) / 16 * 16; }
template <uint64_t N, uint64_t Max> struct tg_limit {
  static_assert(N <= Max, "static threadgroup memory of a kernel over the limit");
  static constexpr bool ok = N <= Max;
};

template <class T> inline T& tg_static(const void* key) {
  return *(T*)mslemu_tg_static(key, sizeof(T), alignof(T));
}

// Parameter descriptors of the generated entry points: the parameter types come from
// the kernel's function type, only the bindings from the attributes.
struct buf_desc {
  int64_t idx;
};
struct tg_desc {
  int64_t idx;
};
template <int B> struct bi_desc {};
template <class P> inline P arg(buf_desc d) { return buffer_arg<P>((int)d.idx); }
template <class P> inline P arg(tg_desc d) { return threadgroup_arg<P>((int)d.idx); }
template <class P, int B> inline P arg(bi_desc<B>) { return builtin<P>(B); }
inline int64_t index_of(buf_desc d) { return d.idx; }
inline int64_t index_of(tg_desc d) { return d.idx; }
template <int B> inline int64_t index_of(bi_desc<B>) { return -1; }

template <class... P, class... D> inline void invoke(void (*f)(P...), D... d) {
  static_assert(sizeof...(P) == sizeof...(D), "kernel parameter count mismatch");
  f(arg<P>(d)...);
}
// Per parameter: its index (-1 for builtins), the size and alignment of what it points
// or refers to, and whether it is a reference.
template <class... P, class... D> inline void describe(void (*)(P...), int64_t* o, D... d) {
  static_assert(sizeof...(P) == sizeof...(D), "kernel parameter count mismatch");
  int64_t* p = o;
  ((p[0] = index_of(d), p[1] = arg_size<P>(), p[2] = arg_align<P>(), p[3] = arg_is_ref<P>(), p += 4), ...);
  (void)p;
}
}  // namespace mslemu

// Types in the global namespace too, as in MSL.
using metal::atomic_bool;
using metal::atomic_float;
using metal::atomic_int;
using metal::atomic_uint;
#define MSLEMU_GLOBAL_VEC(name) using metal::name##2; using metal::name##3; using metal::name##4;
MSLEMU_GLOBAL_VEC(bool)
MSLEMU_GLOBAL_VEC(char)
MSLEMU_GLOBAL_VEC(uchar)
MSLEMU_GLOBAL_VEC(short)
MSLEMU_GLOBAL_VEC(ushort)
MSLEMU_GLOBAL_VEC(int)
MSLEMU_GLOBAL_VEC(uint)
MSLEMU_GLOBAL_VEC(long)
MSLEMU_GLOBAL_VEC(ulong)
MSLEMU_GLOBAL_VEC(half)
MSLEMU_GLOBAL_VEC(float)
MSLEMU_GLOBAL_VEC(bfloat)
#undef MSLEMU_GLOBAL_VEC

// -----------------------------------------------------------------------------------------
// Constants
#define MAXFLOAT 0x1.fffffep+127f
#define HUGE_VALF __builtin_huge_valf()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define FLT_MAX 0x1.fffffep+127f
#define FLT_MIN 0x1p-126f
#define FLT_EPSILON 0x1p-23f
#define FLT_MANT_DIG 24
#define FLT_MAX_EXP 128
#define FLT_MIN_EXP -125
#define HALF_MAX (half::from_bits(0x7bff))
#define HALF_MIN (half::from_bits(0x0400))
#define HALF_EPSILON (half::from_bits(0x1400))
#define MAXHALF HALF_MAX
#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define UCHAR_MAX 255
#define CHAR_MAX SCHAR_MAX
#define CHAR_MIN SCHAR_MIN
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define USHRT_MAX 65535
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define UINT_MAX 0xffffffffu
#define LONG_MAX 0x7fffffffffffffffL
#define LONG_MIN (-0x7fffffffffffffffL - 1)
#define ULONG_MAX 0xffffffffffffffffUL
#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f
#define M_E_H half(M_E_F)
#define M_LOG2E_H half(M_LOG2E_F)
#define M_LN2_H half(M_LN2_F)
#define M_PI_H half(M_PI_F)
#define M_SQRT2_H half(M_SQRT2_F)

// -----------------------------------------------------------------------------------------
// Address spaces and function qualifiers. Threadgroup variable declarations are rewritten
// by the driver into per-threadgroup storage; what remains of `threadgroup` (pointer
// types, parameters) names ordinary memory.
#define kernel
#define device
#define constant const
#define thread
#define threadgroup
#define ray_data
#define object_data

#pragma clang diagnostic pop

#endif
