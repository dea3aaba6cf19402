#version 450
// The subgroup layout probe: not an engine kernel but the device's own check
// (gpuDevice.subgroupLayout) that subgroup i is invocations S·i..S·i+S−1 in order, as
// the sg_* helpers take it to be with SG_NATIVE (S = 32), which Vulkan does not promise.
// One workgroup; invocation TID writes its gl_SubgroupSize, gl_SubgroupID and
// gl_SubgroupInvocationID at ADDR(1) words 3·TID, 3·TID+1, 3·TID+2.

#include "common.glsl"

void main() {
    U32 o = U32(ADDR(1));
    o.v[3u * TID] = gl_SubgroupSize;
    o.v[3u * TID + 1u] = gl_SubgroupID;
    o.v[3u * TID + 2u] = gl_SubgroupInvocationID;
}
