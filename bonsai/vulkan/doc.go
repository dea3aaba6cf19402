// Package vulkan is the foundation of a Vulkan compute backend (issue 23); it is not a
// backend yet: it does not implement backend.Backend and runs no model.
//
// What exists: Open chooses and opens a device (a discrete GPU, else an integrated one;
// a CPU implementation such as Mesa's lavapipe only when asked for by Options.Device or
// BONSAI_VULKAN_DEVICE), reports the choice and its reason (Context.Choice) and the
// compute limits (Context.Limits), and with Options.Validation collects the Khronos
// validation layer's reports (Context.Messages). One kernel, shaders.RMSNorm, runs end
// to end; the tests run it on lavapipe with the validation layer on, fail on any
// validation error, check that the layer catches a deliberately wrong dispatch, and
// that closing a context destroys every object it made. The loader is opened at run
// time (internal/vk, through purego, no cgo); without one, Open returns an error
// wrapping ErrUnavailable.
//
// What is next: device-local buffers and staging copies, the backend.Backend
// implementation, the ternary matmul and the other kernels of the list, and
// splitting tensors larger than Limits.MaxStorageBufferRange (128 MiB on lavapipe).
package vulkan
