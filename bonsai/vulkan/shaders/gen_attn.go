// The attention kernels (attn.comp, the translation of attn.metal): the partial
// attention over blocks of the KV cache and the prefill append, per cache precision (KV:
// 0 f16, 1 f32, 2 int8), and the merge of the partials.

package shaders

//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_ATTN -DKV=0 attn.comp -o attn_f16.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_ATTN -DKV=1 attn.comp -o attn_f32.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_ATTN -DKV=2 attn.comp -o attn_i8.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_APPEND -DKV=0 attn.comp -o attn_append_f16.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_APPEND -DKV=1 attn.comp -o attn_append_f32.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_APPEND -DKV=2 attn.comp -o attn_append_i8.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_MERGE attn.comp -o attn_merge.spv
