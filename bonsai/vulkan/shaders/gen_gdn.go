package shaders

// The Gated DeltaNet core (gdn.comp): gdn_seq and gdn_chunk (prefill) and gdn_decode
// (the decode step of one V head, after the In site's mv_norm).

//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_GDN_SEQ gdn.comp -o gdn_seq.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_GDN_CHUNK gdn.comp -o gdn_chunk.spv
//go:generate glslc --target-env=vulkan1.2 -O -DKERNEL_GDN_DECODE gdn.comp -o gdn_decode.spv
