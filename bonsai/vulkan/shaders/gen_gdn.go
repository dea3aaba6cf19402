package shaders

// The Gated DeltaNet core (gdn.comp): gdn_seq and gdn_chunk (prefill), gdn_decode (the
// fused decode step, attn_qkv/attn_gate PQ2_0) and gdn_decode_t1 (PTQ1_0).

//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_GDN_SEQ gdn.comp -o gdn_seq.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_GDN_CHUNK gdn.comp -o gdn_chunk.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_GDN_DECODE -DFMT=0 gdn.comp -o gdn_decode.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_GDN_DECODE -DFMT=1 gdn.comp -o gdn_decode_t1.spv
