// common.h: included by the test kernels (a header of the source set).
#pragma once
#include <metal_stdlib>
using namespace metal;

struct Params {
  uint n;
  float scale;
  float2 offset;  // 8-byte aligned: the struct is 16 bytes
};

inline float axpb(float x, constant Params& p) { return x * p.scale + p.offset.x - p.offset.y; }
