package shaders

// The ternary GEMM (gemm.comp): gemm reads PQ2_0 matrices, gemm_t1 PTQ1_0.

//go:generate glslc --target-env=vulkan1.2 -O -DFMT=0 gemm.comp -o gemm.spv
//go:generate glslc --target-env=vulkan1.2 -O -DFMT=1 gemm.comp -o gemm_t1.spv
