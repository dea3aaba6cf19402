// coverage.metal: uses most of the shim once, so that every builtin is compiled by the
// tests (TestShimCoverage runs it and checks a few values).
#include <metal_stdlib>
#include <metal_math>
using namespace metal;

constant float kTable[4] = {1.0, 2.0, 4.0, 8.0};
constexpr constant uint kN = 4;

struct Packed {
  packed_float3 p;
  float w;
};
static_assert(sizeof(Packed) == 16, "packed_float3 + float is 16 bytes");

template <typename T> T twice(T x) { return x + x; }

kernel void coverage(device float* out [[buffer(0)]],
                     device atomic_uint* au [[buffer(1)]],
                     device atomic_int* ai [[buffer(2)]],
                     device atomic_float* af [[buffer(3)]],
                     device const Packed* pk [[buffer(4)]],
                     uint2 gid2 [[thread_position_in_grid]],
                     ushort lane [[thread_index_in_simdgroup]],
                     uint quad_lane [[thread_index_in_quadgroup]],
                     uint quad [[quadgroup_index_in_threadgroup]],
                     uint2 tg2 [[threadgroup_position_in_grid]]) {
  uint gid = gid2.x;  float x = float(gid) * 0.25f + 0.5f;
  half h = half(x);
  bfloat bf = bfloat(x);
  float4 v = float4(x, 2.0, 3.0, 4.0);
  half4 hv = half4(v);
  int3 iv = int3(1, -2, 3);
  uint2 uv = uint2(7u, 9u);
  float acc = 0.0f;
  // math, scalar, half and vector
  acc += exp(x) + exp2(x) + exp10(0.5f) + log(x) + log2(x) + log10(x) + pow(x, 1.5f) + powr(x, 2.0f);
  acc += sqrt(x) + rsqrt(x) + cbrt(x) + sin(x) + cos(x) + tan(x) + asin(0.5f) + acos(0.5f) + atan(x) + atan2(x, 2.0f);
  acc += sinh(0.5f) + cosh(0.5f) + tanh(x) + asinh(x) + acosh(x + 1.0f) + atanh(0.5f) + sinpi(x) + cospi(x);
  acc += floor(x) + ceil(x) + round(x) + rint(x) + trunc(x) + fract(x) + fmod(x, 0.3f) + fabs(-x) + abs(-x);
  acc += min(x, 1.0f) + max(x, 1.0f) + fmin(x, 1.0f) + fmax(x, 1.0f) + clamp(x, 0.0f, 1.0f) + saturate(x);
  acc += mix(1.0f, 2.0f, 0.5f) + step(0.5f, x) + smoothstep(0.0f, 2.0f, x) + sign(-x) + fma(x, x, 1.0f) + mad(x, 2.0f, 1.0f);
  acc += copysign(x, -1.0f) + fdim(x, 0.1f) + hypot(x, 1.0f) + ldexp(x, 2) + divide(x, 3.0f);
  acc += precise::sqrt(x) + fast::exp(x) + metal::precise::divide(x, 2.0f);
  int e;
  float fr = frexp(x, e);
  float ip;
  acc += fr + float(e) + modf(x, ip) + ip;
  acc += float(exp(h)) + float(sqrt(h)) + float(min(h, half(1))) + float(clamp(h, 0.0h, 1.0h)) + float(abs(-h)) + float(fma(h, h, h));
  acc += float(bf + bf) + float(bf * 2) + float(max(bf, bfloat(1.0f)));
  float4 m = exp(v) + sqrt(v) + abs(-v) + min(v, 2.0f) + max(v, v) + clamp(v, 0.0f, 3.0f) + mix(v, v * 2.0f, 0.5f) + fma(v, v, v);
  acc += dot(m, float4(1.0f)) * 0.0f;
  half4 hm = sqrt(hv) + min(hv, hv) + clamp(hv, half4(0.0h), half4(2.0h));
  acc += float(hm.x) * 0.0f;
  // geometric, relational
  float3 c = cross(v.xyz, float3(1, 0, 0));
  acc += length(v) + length_squared(v) + distance(v, float4(0)) + normalize(v).x + c.y;
  acc += (isnan(x) ? 1.0f : 0.0f) + (isinf(x) ? 1.0f : 0.0f) + (isfinite(x) ? 1.0f : 0.0f) + (signbit(-x) ? 1.0f : 0.0f);
  acc += all(v > 0.0f) ? 1.0f : 0.0f;
  acc += any(isnan(v)) ? 1.0f : 0.0f;
  acc += select(v, -v, v > 2.5f).w;
  bool4 bv = v >= float4(2.0f) && v <= float4(3.0f);
  acc += float(bv.y) + float(!bv.x);
  // integers
  acc += float(popcount(uv.x) + clz(uv.y) + ctz(uv.y) + reverse_bits(1u) / 0x80000000u);
  acc += float(extract_bits(0xf0u, 4u, 4u) + insert_bits(0u, 3u, 8u, 2u) + mulhi(0x80000000u, 4u) + rotate(1u, 33u));
  acc += float(abs(iv).y + min(iv, int3(0)).y + max(iv.x, iv.z) + absdiff(3, -4));
  acc += float((iv << 1).z + (iv >> 1).z + (iv & 1).x + (iv | 4).x + (iv ^ 1).x + (iv % 2).z + (~iv).x);
  // conversions, packing
  acc += as_type<float>(as_type<uint>(x)) + float(as_type<half2>(0x3c003c00u).x) + float(static_cast<int>(x));
  float4 un = unpack_unorm4x8_to_float(0xff00ff00u) + unpack_snorm4x8_to_float(0x7f81007fu);
  float2 un2 = unpack_unorm2x16_to_float(0xffff0000u) + unpack_snorm2x16_to_float(0x7fff8001u);
  acc += un.x + un2.y + float(unpack_unorm4x8_to_half(0x80808080u).x);
  acc += float(pack_float_to_unorm4x8(un) & 1u) + float(pack_float_to_snorm4x8(un) & 1u) + float(pack_float_to_unorm2x16(un2) & 1u) +
         float(pack_float_to_snorm2x16(un2) & 1u) + float(pack_half_to_unorm4x8(hv) & 1u);
  // swizzles
  float4 sw = v.wzyx;
  sw.xz = sw.zx;
  sw.rgb = sw.bgr;
  sw.w += 1.0f;
  acc += sw.x + v.xxyy.w + v.rgba.a + float3(v.xy, 1.0f).z + float4(v.xy, v.zw).y + float4(1.0f, v.yzw).x;
  // packed vectors, constants, templates, arrays
  Packed P = pk[0];
  float3 pf = P.p;
  acc += pf.x + P.p.y + P.p[2] + (P.p * 2.0f).x + P.w + kTable[gid % kN] + twice(x) + float(twice(h));
  metal::array<float, 3> arr = {{1.0f, 2.0f, 3.0f}};
  acc += arr[1] + float(arr.size());
  acc += FLT_MAX * 0.0f + FLT_EPSILON * 0.0f + M_PI_F * 0.0f + float(HALF_MAX) * 0.0f + float(INT_MAX) * 0.0f;
  acc += numeric_limits<float>::epsilon() * 0.0f + float(numeric_limits<half>::max()) * 0.0f;
  // atomics
  atomic_fetch_add_explicit(au, 1u, memory_order_relaxed);
  atomic_fetch_sub_explicit(au, 1u, memory_order_relaxed);
  atomic_fetch_or_explicit(au, 0u, memory_order_relaxed);
  atomic_fetch_and_explicit(au, 0xffffffffu, memory_order_relaxed);
  atomic_fetch_xor_explicit(au, 0u, memory_order_relaxed);
  atomic_fetch_min_explicit(ai, -int(gid), memory_order_relaxed);
  atomic_fetch_add_explicit(af, 0.5f, memory_order_relaxed);
  uint expected = atomic_load_explicit(au, memory_order_relaxed);
  atomic_compare_exchange_weak_explicit(au, &expected, expected + 1u, memory_order_relaxed, memory_order_relaxed);
  atomic_fetch_sub_explicit(au, 1u, memory_order_relaxed);
  (void)atomic_exchange_explicit(ai, atomic_load_explicit(ai, memory_order_relaxed), memory_order_relaxed);
  // SIMD and quad functions, barriers
  acc += simd_product(1.0f) + simd_and(1u) + simd_xor(0u) + simd_prefix_inclusive_product(1.0f) + simd_prefix_exclusive_product(1.0f);
  acc += simd_shuffle_rotate_down(x, 1) * 0.0f + simd_shuffle_rotate_up(x, 1) * 0.0f;
  acc += quad_sum(1.0f) + quad_max(x) * 0.0f + quad_min(x) * 0.0f + quad_prefix_inclusive_sum(1.0f) + quad_prefix_exclusive_sum(1.0f);
  acc += quad_shuffle(x, 0) * 0.0f + quad_shuffle_up(x, 1) * 0.0f + quad_shuffle_down(x, 1) * 0.0f + quad_broadcast(x, 0) * 0.0f;
  acc += (quad_all(true) ? 1.0f : 0.0f) + (quad_any(false) ? 1.0f : 0.0f) + float(quad_lane < 4) + float(quad == gid / 4);
  simd_vote vote = simd_active_threads_mask();
  acc += float(vote.all()) + float(static_cast<simd_vote::vote_t>(vote) == 0xffffffffull);
  acc += float(simd_sum(hv).x) * 0.0f + simd_max(v).x * 0.0f + float(simd_sum(uint2(1, 2)).y);
  simdgroup_barrier(mem_flags::mem_none);
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  out[gid + 32 * tg2.y] = acc + float(lane) * 0.0f + float(tg2.y);
}
