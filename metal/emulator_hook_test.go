package metal

import (
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/metal/internal/gpu"
	"github.com/bonsai-go/sdk/metal/internal/mslemu"
)

// newEmulator is emulator.New for this package's own tests (package metal/emulator
// imports this one, so these tests cannot import it).
func newEmulator(opts ...Option) backend.Backend {
	return newBackend("metal-emulator", func() (gpu.Device, error) { return mslemu.New() }, opts)
}
