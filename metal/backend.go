package metal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/metal/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
)

// Option configures a backend.
type Option func(*config)

type config struct {
	// maxGroups caps the threadgroups of a matrix-vector product whose input fits one
	// chunk: each threadgroup builds the transformed input once and walks row groups.
	maxGroups int
	// unfused makes decode steps run the prefill kernels (site kernels, GEMMs, gdn_seq,
	// attn_append + attn) instead of the fused decode kernels.
	unfused bool
	// splitGDN makes decode steps run each GDN layer's products as a paired mv_norm and
	// the recurrence as gdn_seq, instead of the fused gdn_decode.
	splitGDN bool
	// stepGDN makes prefill run the GDN recurrence token by token (gdn_seq) instead of
	// in the chunked form (gdn_chunk).
	stepGDN bool
	// cbTime is the GPU time a prefill command buffer aims at (backend_split.go).
	cbTime time.Duration
	// device opens the device; nil means the system's Metal device.
	device func() (gpu.Device, error)
	name   string
}

// WithMaxThreadgroups caps the threadgroups of a matrix-vector product whose input fits
// in threadgroup memory (default 128): more spreads the weight stream over more cores,
// fewer repeats the input's norm and transform less often.
func WithMaxThreadgroups(n int) Option { return func(c *config) { c.maxGroups = max(n, 1) } }

// WithUnfusedDecode makes decode steps run the prefill kernels instead of the fused
// decode kernels (about 2.5 times the dispatches), for comparison.
func WithUnfusedDecode(on bool) Option { return func(c *config) { c.unfused = on } }

// WithSplitGDNDecode makes decode steps run each GDN layer as two dispatches — the
// attn_qkv + attn_gate product over all rows (mv_norm, paired) and the recurrence
// (gdn_seq) — instead of the fused gdn_decode, whose grid is one threadgroup per q/k
// head group (16 for the 27B model): 323 dispatches per 27B step instead of 275, in
// exchange for spreading the products over the whole GPU. Which is faster is for a Mac
// to say (examples/metalcheck measures both).
func WithSplitGDNDecode(on bool) Option { return func(c *config) { c.splitGDN = on } }

// WithStepGDN makes prefill run the GDN recurrence in its step form, token by token, as
// a decode step does, instead of the chunked (parallel) form (the default for chunks of
// more than one token). The two agree to float32 rounding.
func WithStepGDN(on bool) Option { return func(c *config) { c.stepGDN = on } }

// WithCommandBufferTime sets the GPU time one prefill command buffer aims at (default
// 100 ms). macOS stops a command buffer that occupies a GPU driving a display for too
// long; the backend splits each prefill chunk into command buffers of whole layers,
// sized from the measured time of the chunks before, and halves them by itself after
// such an error. Lower it if the error still comes; raise it on a headless Mac for a
// little less overhead.
func WithCommandBufferTime(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.cbTime = d
		}
	}
}

// WithDevice runs the backend on the devices open returns, under the given name: a test
// double, or a device of this module's own (metal/internal/gpu, as metal/emulator's).
// Each engine opens its device at Load and closes it with the engine.
func WithDevice(name string, open func() (gpu.Device, error)) Option {
	return func(c *config) { c.name, c.device = name, open }
}

// Backend is the Metal backend. Use New (the system's GPU) or emulator.New (package
// metal/emulator: the MSL-on-CPU emulator) and pass it to bonsai.WithBackend.
type Backend struct {
	cfg config
}

var _ backend.Backend = (*Backend)(nil)

// New returns the Metal backend on the system's default GPU. On a machine without Metal
// (anything but macOS on Apple silicon) Load fails with an error wrapping
// ErrUnavailable.
func New(opts ...Option) backend.Backend { return newBackend("metal", newDevice, opts) }

func newBackend(name string, dev func() (gpu.Device, error), opts []Option) *Backend {
	b := &Backend{cfg: config{maxGroups: 128, device: dev, name: name, cbTime: defaultCBTime}}
	for _, o := range opts {
		o(&b.cfg)
	}
	return b
}

// Name returns "metal", "metal-emulator", or the name given WithDevice.
func (b *Backend) Name() string { return b.cfg.name }

// Load opens the device, compiles the kernels for the model's sizes, wraps the mapped
// weights without copying them and returns the engine. It runs the qwen35 architecture
// (m a *qwen35.Weights) and refuses any other.
func (b *Backend) Load(ctx context.Context, m backend.Model, opt backend.LoadOptions) (backend.Engine, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, ok := m.(*qwen35.Weights)
	switch {
	case m == nil || ok && w == nil:
		return nil, errors.New("no model to load")
	case !ok:
		return nil, fmt.Errorf("the %s backend runs the %s architecture, not %s", b.cfg.name, qwen35.Architecture, m.Architecture())
	}
	if b.cfg.device == nil {
		return nil, fmt.Errorf("no device: %w", ErrUnavailable)
	}
	dev, err := b.cfg.device()
	if err != nil {
		return nil, err
	}
	e, err := newEngine(ctx, b, dev, w, opt)
	if err != nil {
		dev.Close()
		return nil, err
	}
	return e, nil
}
