// Package gpu is the device interface the Metal backend's host logic is written against.
// Two devices implement it: the real Metal device (package metal, on darwin, through
// purego and the Objective-C runtime) and the CPU emulator (package internal/gpu/mslemu),
// which runs the very same MSL kernel sources with Metal's execution semantics, so that
// the host logic — buffer bindings, offsets, grid and threadgroup sizes, argument
// structs, the order of dispatches — is exercised on Linux exactly as it runs on a Mac.
//
// The interface is deliberately Metal-shaped and small: buffers in shared storage
// (host-visible, as on Apple silicon's unified memory), one library compiled from MSL
// sources, compute pipelines by kernel name, and command buffers that record dispatches
// and run when committed.
package gpu

import (
	"context"
	"errors"
)

// ErrUnavailable is wrapped when a device cannot be created on this machine.
var ErrUnavailable = errors.New("gpu: device unavailable")

// Errors a CommandBuffer's Wait wraps for failures the caller can act on.
var (
	// ErrTimeout: the GPU stopped the command buffer because it ran too long (macOS's
	// watchdog for a GPU that drives a display: MTLCommandBufferErrorTimeout, or
	// kIOGPUCommandBufferCallbackErrorImpactingInteractivity). Less work per command
	// buffer avoids it.
	ErrTimeout = errors.New("gpu: command buffer ran too long and was stopped")
	// ErrOutOfMemory: the GPU could not make the command buffer's memory resident.
	ErrOutOfMemory = errors.New("gpu: out of GPU memory")
)

// WorkingSet is implemented by a Device that knows how much memory its work may hold
// resident at once (Metal's recommendedMaxWorkingSetSize). Past it the GPU pages or
// fails; the Metal backend refuses a model or a sequence that would not fit.
type WorkingSet interface {
	// RecommendedWorkingSet is the budget in bytes; 0 means the device does not say.
	RecommendedWorkingSet() int64
}

// Uploader is implemented by a Device whose WrapNoCopy copies the memory into memory of
// its own (a discrete GPU's, which cannot read the mapped file): Upload does the same in
// pieces, stopping when ctx is cancelled and reporting the bytes copied so far, so that
// loading a large model shows progress and can be interrupted.
type Uploader interface {
	Upload(ctx context.Context, mem []byte, progress func(done int64)) (Buffer, error)
}

// DeviceLocal is implemented by a Device whose NewBuffer memory (host-visible) may be
// slower for the GPU to read than memory of its own: a discrete GPU's.
type DeviceLocal interface {
	// NewDeviceBuffer allocates size bytes that the GPU reads fastest; their contents
	// are undefined and the host cannot see them.
	NewDeviceBuffer(size int) (Buffer, error)
}

// Device is a compute device.
type Device interface {
	// Name describes the device ("Apple M4 Pro", "mslemu (CPU emulator)").
	Name() string
	// MaxBufferLength is the largest buffer the device can create or wrap.
	MaxBufferLength() int
	// PageSize is the alignment WrapNoCopy needs for the start and length of the memory.
	PageSize() int
	// NewBuffer allocates a zeroed buffer of size bytes in shared (host-visible) storage.
	NewBuffer(size int) (Buffer, error)
	// WrapNoCopy makes a buffer of existing host memory without copying it (Metal's
	// newBufferWithBytesNoCopy): the model's memory-mapped weights. The memory must stay
	// valid until the buffer is released; its start and length must be PageSize-aligned.
	WrapNoCopy(mem []byte) (Buffer, error)
	// Compile builds a library from MSL sources (file name → text) with the given
	// preprocessor macros, and returns the compute pipelines of the named kernels.
	Compile(sources map[string]string, macros map[string]string, kernels []string) (map[string]Pipeline, error)
	// NewCommandBuffer starts recording a batch of dispatches.
	NewCommandBuffer() (CommandBuffer, error)
	// Close releases the device.
	Close() error
}

// Buffer is device memory in shared storage.
type Buffer interface {
	// Len returns the buffer's length in bytes.
	Len() int
	// Contents returns the host view of the buffer's memory. Reading it while a command
	// buffer that writes it runs is a race; wait first.
	Contents() []byte
	// Release frees the buffer (a wrapped buffer leaves its host memory alone).
	Release()
}

// Pipeline is a compiled compute kernel.
type Pipeline interface {
	Name() string
	// MaxThreadsPerThreadgroup is the largest threadgroup the kernel can run with.
	MaxThreadsPerThreadgroup() int
	// ThreadExecutionWidth is the SIMD-group width (32 on Apple GPUs and in the emulator).
	ThreadExecutionWidth() int
}

// Arg binds one kernel argument: a buffer at an offset, inline bytes (Metal's
// setBytes, for small argument structs), or a threadgroup memory length.
type Arg struct {
	// Index is the [[buffer(i)]] or [[threadgroup(i)]] index.
	Index int
	// Buf and Offset bind a buffer.
	Buf    Buffer
	Offset int
	// Bytes binds inline constant data (at most 4 KiB).
	Bytes []byte
	// Threadgroup, when positive, sets the length of threadgroup memory argument Index.
	Threadgroup int
}

// Size is a three-dimensional count of threadgroups or threads.
type Size [3]int

// CommandBuffer records dispatches; nothing runs until Commit.
type CommandBuffer interface {
	// Dispatch records one kernel launch of grid threadgroups of threads threads each
	// (Metal's dispatchThreadgroups:threadsPerThreadgroup:).
	Dispatch(p Pipeline, grid, threads Size, args ...Arg)
	// Commit submits the recorded work.
	Commit()
	// Wait blocks until the work has run and returns its error, if any.
	Wait() error
	// Dispatches returns the number of dispatches recorded (for the dispatch budget).
	Dispatches() int
}
