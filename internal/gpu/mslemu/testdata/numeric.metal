#include <metal_stdlib>
using namespace metal;

kernel void half_convert(device const ushort* bits [[buffer(0)]],
                         device float* f [[buffer(1)]],
                         device const float* fin [[buffer(2)]],
                         device ushort* hout [[buffer(3)]],
                         uint gid [[thread_position_in_grid]]) {
  f[gid] = float(as_type<half>(bits[gid]));
  hout[gid] = as_type<ushort>(half(fin[gid]));
}

kernel void half_arith(device const half* a [[buffer(0)]],
                       device const half* b [[buffer(1)]],
                       device half* out [[buffer(2)]],
                       uint gid [[thread_position_in_grid]]) {
  half x = a[gid], y = b[gid];
  out[5 * gid + 0] = x + y;
  out[5 * gid + 1] = x * y;
  out[5 * gid + 2] = x / y;
  out[5 * gid + 3] = x - y;
  out[5 * gid + 4] = sqrt(x);
}

kernel void unpack(device const uint* in [[buffer(0)]],
                   device float4* out [[buffer(1)]],
                   device uint* repack [[buffer(2)]],
                   uint gid [[thread_position_in_grid]]) {
  float4 f = unpack_unorm4x8_to_float(in[gid]);
  out[gid] = f;
  repack[gid] = pack_float_to_unorm4x8(f);
}

// Unsuffixed literals are float in MSL: this must round like float arithmetic.
kernel void literals(device const float* x [[buffer(0)]],
                     device const float* y [[buffer(1)]],
                     device float* out [[buffer(2)]],
                     uint gid [[thread_position_in_grid]]) {
  out[2 * gid] = x[gid] * 0.1 + y[gid] * 0.2;
  out[2 * gid + 1] = float(1.5h * half(x[gid]));
}

kernel void vectors(device const float4* a [[buffer(0)]],
                    device float4* out [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
  float4 v = a[gid];
  float4 r;
  r.xy = v.yx;
  r.zw = v.zz * 2.0;
  out[3 * gid] = r;
  float3 c = cross(v.xyz, float3(0, 0, 1));
  out[3 * gid + 1] = float4(c, dot(v, v));
  half4 h = half4(v);
  int4 iv = int4(v);
  out[3 * gid + 2] = float4(float(h.w), float(iv.x), select(1.0f, 2.0f, v.x > v.y), clamp(v.x, 0.0f, 1.0f));
}
