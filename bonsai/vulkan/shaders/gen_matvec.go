// The matrix-vector kernels of matvec.comp: MODE 0 plain, 1 fwht, 2 norm, 3 swiglu;
// FMT 0 PQ2_0, 1 PTQ1_0 (the _t1 twins).

package shaders

//go:generate glslc --target-env=vulkan1.2 -O -DMODE=0 -DFMT=0 matvec.comp -o mv_plain.spv
//go:generate glslc --target-env=vulkan1.2 -O -DMODE=1 -DFMT=0 matvec.comp -o mv_fwht.spv
//go:generate glslc --target-env=vulkan1.2 -O -DMODE=2 -DFMT=0 matvec.comp -o mv_norm.spv
//go:generate glslc --target-env=vulkan1.2 -O -DMODE=3 -DFMT=0 matvec.comp -o mv_swiglu.spv
//go:generate glslc --target-env=vulkan1.2 -O -DMODE=0 -DFMT=1 matvec.comp -o mv_plain_t1.spv
//go:generate glslc --target-env=vulkan1.2 -O -DMODE=1 -DFMT=1 matvec.comp -o mv_fwht_t1.spv
//go:generate glslc --target-env=vulkan1.2 -O -DMODE=2 -DFMT=1 matvec.comp -o mv_norm_t1.spv
//go:generate glslc --target-env=vulkan1.2 -O -DMODE=3 -DFMT=1 matvec.comp -o mv_swiglu_t1.spv
