// The subgroup layout probe (sgprobe.comp): a module of the device's own, not an engine
// kernel, run before the SIMD-groups are taken to be the device's subgroups.

package shaders

//go:generate glslc --target-env=vulkan1.2 -O sgprobe.comp -o sgprobe.spv
