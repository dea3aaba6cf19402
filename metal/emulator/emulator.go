// Package emulator is the Metal backend over the MSL-on-CPU emulator: the same host
// logic and the same MSL kernels as metal.New, compiled by clang against a shim and run
// on the CPU with Metal's threadgroup, barrier and SIMD-group semantics. It runs on
// linux/amd64 and linux/arm64 with clang++ installed, and it is slow — it exists to test
// the backend where there is no Mac.
//
// It is a package of its own so that Metal programs do not carry the emulator: package
// metal does not import it (a test in package metal checks its dependencies on darwin
// and linux).
package emulator

import (
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/gpu/mslemu"
	"github.com/bonsai-go/sdk/metal"
)

// Name is the name of the emulator backend.
const Name = "metal-emulator"

// New returns the Metal backend over the emulator (name "metal-emulator"). Where the
// emulator cannot run, Load fails with an error wrapping metal.ErrUnavailable; options
// are metal's.
func New(opts ...metal.Option) backend.Backend {
	return metal.New(append([]metal.Option{metal.WithDevice(Name, open)}, opts...)...)
}

func open() (gpu.Device, error) { return mslemu.New() }

// Available reports why the emulator cannot run on this machine (no clang++, another
// platform), or nil when it can. The error wraps metal.ErrUnavailable.
func Available() error {
	d, err := mslemu.New()
	if err != nil {
		return err
	}
	return d.Close()
}

// WithDeviceHooks runs the backend on emulated devices that call opened when one is
// opened and closed when it is closed: for tests that watch how many devices a program
// holds at once. Either may be nil.
func WithDeviceHooks(opened, closed func()) metal.Option {
	return metal.WithDevice(Name, func() (gpu.Device, error) {
		d, err := mslemu.New()
		if err != nil {
			return nil, err
		}
		if opened != nil {
			opened()
		}
		return hooked{d, closed}, nil
	})
}

type hooked struct {
	gpu.Device
	closed func()
}

func (d hooked) Close() error {
	if d.closed != nil {
		d.closed()
	}
	return d.Device.Close()
}
