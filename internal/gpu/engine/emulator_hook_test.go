package engine

import (
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/gpu/mslemu"
)

// Option changes the Config of a test's backend, as package metal's options do (that
// package imports this one, so these tests cannot use its options).
type Option func(*Config)

// The settings of package metal's options the tests run with.
var (
	stepGDN  Option = func(c *Config) { c.StepGDN = true }
	unfused  Option = func(c *Config) { c.Unfused = true }
	splitGDN Option = func(c *Config) { c.SplitGDN = true }
)

// onDevice runs the backend on the devices open returns (metal.WithDevice).
func onDevice(name string, open func() (gpu.Device, error)) Option {
	return func(c *Config) { c.Name, c.Device = name, open }
}

// newBackend is a backend of the default Config, named name on the devices open
// returns, with opts applied.
func newBackend(name string, open func() (gpu.Device, error), opts []Option) *Backend {
	cfg := NewConfig(name, open)
	for _, o := range opts {
		o(&cfg)
	}
	return New(cfg)
}

// newEmulator is emulator.New for this package's own tests (package metal/emulator
// imports this one, through package metal, so these tests cannot import it).
func newEmulator(opts ...Option) backend.Backend {
	return newBackend("metal-emulator", func() (gpu.Device, error) { return mslemu.New() }, opts)
}
