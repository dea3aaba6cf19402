#version 450
// RMSNorm of rows: y = x / sqrt(mean(x²) + eps) · w, one workgroup per row of n.
// Size-agnostic: the workgroup size is specialization constant 0 and the reduction
// works for any subgroup size the device runs it with.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint n;
    float eps;
} p;

shared float partial[gl_WorkGroupSize.x];

void main() {
    const uint base = gl_WorkGroupID.x * p.n;
    float s = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
        const float v = x[base + i];
        s += v * v;
    }
    s = subgroupAdd(s);
    if (subgroupElect()) {
        partial[gl_SubgroupID] = s;
    }
    barrier();
    if (gl_SubgroupID == 0) {
        float t = 0.0;
        for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) {
            t += partial[i];
        }
        t = subgroupAdd(t);
        if (subgroupElect()) {
            partial[0] = t;
        }
    }
    barrier();
    const float scale = inversesqrt(partial[0] / float(p.n) + p.eps);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
        y[base + i] = x[base + i] * scale * w[i];
    }
}
