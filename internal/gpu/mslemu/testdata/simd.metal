#include <metal_stdlib>
using namespace metal;

#define NOPS 20

// Every SIMD-group function on the same values; x holds small integers, so sums are exact.
kernel void simd_ops(device const float* x [[buffer(0)]],
                     device float* out [[buffer(1)]],
                     uint gid [[thread_position_in_grid]],
                     ushort lane [[thread_index_in_simdgroup]]) {
  float v = x[gid];
  device float* o = out + NOPS * gid;
  o[0] = simd_sum(v);
  o[1] = simd_max(v);
  o[2] = simd_min(v);
  o[3] = simd_prefix_inclusive_sum(v);
  o[4] = simd_prefix_exclusive_sum(v);
  o[5] = simd_shuffle(v, (lane + 3) % 32);
  o[6] = simd_shuffle_down(v, 1);
  o[7] = simd_shuffle_up(v, 2);
  o[8] = simd_shuffle_xor(v, 5);
  o[9] = simd_broadcast(v, 7);
  o[10] = simd_broadcast_first(v);
  o[11] = float(simd_or(uint(v)));
  o[12] = simd_all(v >= 1.0f) ? 1.0f : 0.0f;
  o[13] = simd_any(v > 98.0f) ? 1.0f : 0.0f;
  o[14] = as_type<float>(uint(static_cast<ulong>(simd_ballot(v > 50.0f))));
  o[15] = simd_is_first() ? 1.0f : 0.0f;
  o[16] = quad_sum(v);
  o[17] = quad_shuffle_xor(v, 1);
  float2 v2 = float2(v, -v);
  o[18] = simd_sum(v2).y;
  o[19] = float(simd_sum(int(v)));
}

// Diverged lanes: a collective executes with the lanes that reach it together.
kernel void simd_diverged(device const float* x [[buffer(0)]],
                          device float* out [[buffer(1)]],
                          uint gid [[thread_position_in_grid]],
                          ushort lane [[thread_index_in_simdgroup]]) {
  float v = x[gid];
  device float* o = out + 6 * gid;
  for (int i = 0; i < 6; i++) o[i] = -1.0f;
  // if/else: two collectives, each over its branch's lanes
  if (lane % 3 == 0) {
    o[0] = simd_sum(v);
  } else {
    o[0] = simd_max(v);
  }
  // a collective in a branch, then one after it that every lane executes
  float inner = 0.0f;
  if (lane < 10) {
    inner = simd_sum(v);
  }
  o[1] = inner;
  o[2] = simd_sum(v);
  // lane-dependent trip counts: iteration i runs with the lanes whose lane % 4 >= i
  float acc = 0.0f;
  for (uint i = 0; i < uint(lane % 4) + 1; i++) {
    acc += simd_sum(v);
  }
  o[3] = acc;
  o[4] = simd_sum(1.0f);
  // lanes 20.. return; the rest continue
  if (lane >= 20) return;
  o[5] = simd_sum(v);
}
