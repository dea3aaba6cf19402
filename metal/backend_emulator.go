package metal

import (
	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/mslemu"
)

// NewEmulator returns the Metal backend over the MSL-on-CPU emulator (name
// "metal-emulator"): the same host logic and the same MSL kernels as New, compiled by
// clang against a shim and run on the CPU with Metal's threadgroup, barrier and
// SIMD-group semantics. It runs on linux/amd64 and linux/arm64 with clang++ installed
// (elsewhere Load fails with an error wrapping ErrUnavailable), and it is slow — it
// exists to test the backend where there is no Mac.
func NewEmulator(opts ...Option) bonsai.Backend {
	return newBackend("metal-emulator", func() (gpu.Device, error) { return mslemu.New() }, opts)
}
