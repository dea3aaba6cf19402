package vulkan

import (
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/gpu/engine"
)

// Option configures the backend New returns.
type Option func(*config)

type config struct {
	eng      engine.Config
	dev      Options
	choice   func(Choice)
	messages func(Message)
	onOpen   func(*gpuDevice) // tests: each device opened
}

// WithDevice picks the device by index or by a case-insensitive substring of its name
// (see Options.Device); a CPU implementation such as lavapipe runs only when named so.
func WithDevice(nameOrIndex string) Option { return func(c *config) { c.dev.Device = nameOrIndex } }

// WithChoice has each Load report the device it opened and why.
func WithChoice(report func(Choice)) Option { return func(c *config) { c.choice = report } }

// WithValidation turns on the Khronos validation layer: each of its messages goes to
// report, after the command buffer or call that caused it. Loading fails when the layer
// is not installed.
func WithValidation(report func(Message)) Option {
	return func(c *config) { c.dev.Validation, c.messages = true, report }
}

// WithMaxThreadgroups caps the workgroups of a matrix-vector product whose input fits
// in shared memory (default 128), as metal.WithMaxThreadgroups does.
func WithMaxThreadgroups(n int) Option { return func(c *config) { c.eng.MaxGroups = max(n, 1) } }

// WithUnfusedDecode makes decode steps run the prefill kernels instead of the fused
// decode kernels, for comparison.
func WithUnfusedDecode(on bool) Option { return func(c *config) { c.eng.Unfused = on } }

// New returns the Vulkan backend; pass it to bonsai.WithBackend. Load opens the device
// (Options.Device's rules: the first discrete GPU, else an integrated one; a CPU
// implementation only when named), builds the kernels for the model's sizes, copies the
// weights into device memory and returns the engine. It runs the qwen35 architecture.
// Where there is no Vulkan loader, no suitable device, or a device without the
// features the kernels need (bufferDeviceAddress, 8- and 16-bit storage buffers, 64-bit
// integers) or their limits (32 KiB of shared memory, workgroups of 256), Load fails
// with an error wrapping ErrUnavailable that names what is missing.
func New(opts ...Option) backend.Backend {
	c := &config{}
	c.eng = engine.NewConfig("vulkan", nil)
	for _, o := range opts {
		o(c)
	}
	c.eng.Device = func() (gpu.Device, error) { return c.open() }
	return engine.New(c.eng)
}

// open opens the device of one engine.
func (c *config) open() (gpu.Device, error) {
	d, err := openDevice(c.dev)
	if err != nil {
		return nil, err
	}
	if c.choice != nil {
		c.choice(d.c.Choice)
	}
	d.messages = c.messages
	if c.onOpen != nil {
		c.onOpen(d)
	}
	return d, nil
}

// ErrWorkingSet is wrapped by the errors of Load and NewState when the model or a
// sequence does not fit the device's largest device-local memory heap; the message
// gives the sizes and the largest context that would fit.
var ErrWorkingSet = engine.ErrWorkingSet

// Probe reports the device New would open under o, without loading anything: a program
// can say which GPU it will use, or fall back to another backend when there is none.
func Probe(o Options) (Choice, error) {
	ctx, err := Open(o)
	if err != nil {
		return Choice{}, err
	}
	defer ctx.Close()
	return ctx.Choice, ctx.unready()
}

// openDevice opens the device o names as the engine's device, refusing one that lacks
// what the kernels need.
func openDevice(o Options) (*gpuDevice, error) {
	ctx, err := Open(o)
	if err != nil {
		return nil, err
	}
	if err := ctx.unready(); err != nil {
		ctx.Close()
		return nil, err
	}
	d, err := newGPUDevice(ctx)
	if err != nil {
		ctx.Close()
		return nil, err
	}
	return d, nil
}

// unready says what the device lacks for the kernels, nil when nothing.
func (c *Context) unready() error {
	if c.gpuReady {
		return nil
	}
	return fmt.Errorf("vulkan: %s lacks what the kernels need (%s): %w", c.Choice.Name, c.missing, ErrUnavailable)
}
