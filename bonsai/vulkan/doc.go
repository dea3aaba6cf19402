// Package vulkan is the Vulkan backend: it runs Ternary Bonsai models on any GPU with a
// Vulkan 1.2 driver — NVIDIA, AMD and Intel on Linux and Windows, Android's, Apple's
// through MoltenVK — from Go without cgo. The loader (libvulkan.so.1, vulkan-1.dll,
// libvulkan.1.dylib or MoltenVK) is opened at run time through purego, so the package
// builds with CGO_ENABLED=0 everywhere; where there is no loader or no usable device,
// Load fails with an error wrapping ErrUnavailable that says what is missing.
// Calling C through purego makes the linker mark a Linux binary dynamic (it needs libc's
// dlopen); the build tag novulkan leaves the binding out, for a fully static binary that
// runs on an image without libc (examples/serve/deploy's), where Load always fails with
// ErrUnavailable.
//
//	m, err := bonsai.Open(path, bonsai.WithBackend(vulkan.New()))
//
// # Which device
//
// New opens, at each Load, the device Options.Device names (an index or a part of its
// name; BONSAI_VULKAN_DEVICE when empty), else the first discrete GPU, else an
// integrated one, else a virtual one. A CPU implementation such as Mesa's lavapipe is
// used when named, or when it is the only device: New is an explicit request for
// Vulkan. Probe says which device that would be without loading anything; with
// Options.GPUOnly it refuses a CPU implementation, which is what an automatic choice
// wants (internal/cli's -backend auto: Metal on Apple silicon, else a Vulkan GPU, else
// the CPU backend). WithChoice reports the device and the reason; the library prints
// nothing.
//
// A device must offer bufferDeviceAddress, 8- and 16-bit storage buffers and 64-bit
// integers (every desktop GPU of the last decade and lavapipe do), and the kernels'
// limits: 32 KiB of shared memory and 256 invocations per workgroup.
//
// # Design
//
// The backend is the GPU engine of internal/gpu/engine — the host logic the Metal
// backend runs: the layer plan walked into dispatches, fused decode kernels, batches of
// sequences through the prefill kernels, the states, the KV caches in f16, f32 or int8,
// greedy decoding with the argmax on the device, command buffers split to a time budget
// — over a Vulkan implementation of its device interface (gpu.go) and GLSL
// translations of its kernels (package shaders: the same names, buffer indices,
// argument words and grids, compiled by glslc to SPIR-V that is committed and
// embedded). What the device does:
//
//   - Every buffer has a device address. A dispatch writes a record of the addresses of
//     its buffer arguments (offsets included) and the words of its argument struct into
//     an arena of host-visible memory and pushes the record's address as its only push
//     constant: no descriptor sets, no offset alignment, and no maxStorageBufferRange
//     (128 MiB on lavapipe), so the two 0.34 GB vocabulary tables of the 27B model need
//     no splitting; only maxMemoryAllocationSize bounds a buffer, and the engine lays
//     the weights out in overlapping views of at most that size.
//   - Dispatches run in order, a compute-to-compute barrier after each, as Metal's
//     serial encoder runs them.
//   - The weights are copied once into device-local memory, through a staging buffer
//     where that memory is not host-visible, in pieces, with progress and cancellation
//     (gpu.Uploader). Buffers the host reads and writes — activations, states, logits —
//     are host-visible, device-local where the device maps such memory (resizable BAR,
//     integrated GPUs).
//   - Pipelines are specialised on the workgroup size, the model's sizes and the
//     subgroup mode, and built at first use.
//   - The kernels are written for 32-lane SIMD-groups, as Metal's are. By default the
//     SIMD-groups are emulated in shared memory, which is correct on any subgroup size
//     (lavapipe's is 8, AMD's 64); BONSAI_VULKAN_SUBGROUPS=native runs them as the
//     device's own subgroups where those are 32 wide (NVIDIA) and a probe kernel finds
//     them laid out in invocation order, which saves barriers but has not yet run on a
//     GPU. The device's name says which mode runs, and why.
//
// # Dispatches and speed
//
// A decode step records one command buffer (several at a long context, cut by the
// engine's cost model): the embedding; per Gated DeltaNet layer mv_norm (the norm site,
// the qkv and gate products, the convolution), gdn_decode (the recurrence, one
// workgroup per V head), mv_fwht (ssm_out), mv_norm (gate+up) and mv_swiglu (down); per attention layer mv_norm
// (q+k+v), attn (norms, RoPE, the cache append and attention over blocks of positions)
// and attn_merge (the blocks' partial softmaxes merged), mv_fwht, mv_norm and
// mv_swiglu; the head; and, when greedy, the argmax: 339 dispatches for the 27B model
// (metal.DecodeDispatches gives the count for any configuration). Decode reads every
// weight once per token, 6.8 GB for the 27B model, so its ceiling is the memory
// bandwidth over 6.8 GB. On paper:
//
//	GPU             bandwidth   ceiling     target (85%)   the vendor's runtime
//	RTX 4090        1008 GB/s   148 tok/s   ≥ 120 tok/s    85 tok/s (CUDA)
//	RX 7900 XTX      960 GB/s   141 tok/s   ≥ 120 tok/s    —
//
// At 120 tok/s a token has 8.3 ms: the 339 dispatches and barriers must cost well under
// a millisecond, and the products must stream the weights at the rate a read shader
// does. examples/bench -backend vulkan measures both in one run: the device's
// streaming read by the stream_read shader (Bandwidth), and decode against it. A report
// a user can paste back is its output, e.g.
//
//	go run ./examples/bench -backend vulkan -preset 27b -keep 27b.gguf -prompt-tokens 64 -gen-tokens 32
//
// What only a real GPU can show, and was not yet measured: those two figures; the
// native subgroup path; whether host-visible states cost time where the device has no
// resizable BAR (the 27B model's GDN state is 151 MB, read and written every token:
// over PCIe that would bound decode near 80 tok/s, and the states would then have to
// move to device-local memory with copies for snapshots); and the prefill GEMM's rate,
// which is plain float32 FMA (Debian's glslc compiles neither integer dot products nor
// cooperative matrices).
//
// # Verification
//
// The tests run on lavapipe with the Khronos validation layer on; any validation error
// fails the test that caused it, and a negative test proves the layer reports a wrong
// dispatch. Every kernel runs against the Go code that owns its math, at small odd
// shapes and at the 27B model's (the engine's kernel checks); the seam's conformance
// suite and the engine's session tests (package internal/gpu/enginetest) compare whole
// models with the CPU backend. Closing a model destroys every Vulkan object (a leak
// test counts them). BONSAI_VULKAN_REQUIRE=1, which CI sets, turns a missing loader,
// device, layer or tool from a skip into a failure.
package vulkan
