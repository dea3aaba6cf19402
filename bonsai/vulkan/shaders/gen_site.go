// The row-wise kernels of site.comp: the embedding, the prefill sites, argmax, the
// streaming read and the copy.

package shaders

//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_EMBED site.comp -o embed.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_SITE_NORM site.comp -o site_norm.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_SITE_FWHT site.comp -o site_fwht.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_SITE_SWIGLU site.comp -o site_swiglu.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_ARGMAX site.comp -o argmax.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_STREAM_READ site.comp -o stream_read.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_COPY_F32 site.comp -o copy_f32.spv
