// A compute shader declaring more shared memory than a device allows, for the Vulkan
// backend's negative test (limits_test.go, TestTooBigSharedMemory): its one shared array
// holds N floats, N the specialization constant 1 (the slot of BONSAI_MAXCH in the
// kernels), which the test sets to maxComputeSharedMemorySize/4 + 1. The workgroup size
// is constant 0, as in the kernels. toobig.spv is built without optimisation, so that
// the array stays, by the go:generate line of limits_test.go (in bonsai/vulkan):
//
//	glslc --target-env=vulkan1.2 testdata/toobig.comp -o testdata/toobig.spv
#version 450

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint N = 1;

shared float big[N];

void main() {
    for (uint i = gl_LocalInvocationIndex; i < N; i += gl_WorkGroupSize.x) {
        big[i] = float(i);
    }
    barrier();
}
