package metal

import (
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/gpu/engine"
	"github.com/bonsai-go/sdk/qwen35"
)

// Option configures a backend.
type Option func(*engine.Config)

// WithMaxThreadgroups caps the threadgroups of a matrix-vector product whose input fits
// in threadgroup memory (default 128): more spreads the weight stream over more cores,
// fewer repeats the input's norm and transform less often.
func WithMaxThreadgroups(n int) Option { return func(c *engine.Config) { c.MaxGroups = max(n, 1) } }

// WithUnfusedDecode makes decode steps run the prefill kernels instead of the fused
// decode kernels (about 2.5 times the dispatches), for comparison.
func WithUnfusedDecode(on bool) Option { return func(c *engine.Config) { c.Unfused = on } }

// WithSplitGDNDecode makes decode steps run each GDN layer's recurrence as gdn_seq (one
// threadgroup per q/k head group, 16 for the 27B model) after the paired attn_qkv +
// attn_gate product (mv_norm), instead of gdn_decode (one threadgroup per V head, 48):
// the same dispatches and the same bits; which is faster is for a Mac to say
// (examples/metalcheck measures both).
func WithSplitGDNDecode(on bool) Option { return func(c *engine.Config) { c.SplitGDN = on } }

// WithStepGDN makes prefill run the GDN recurrence in its step form, token by token, as
// a decode step does, instead of the chunked (parallel) form (the default for chunks of
// more than one token). The two agree to float32 rounding.
func WithStepGDN(on bool) Option { return func(c *engine.Config) { c.StepGDN = on } }

// WithCommandBufferTime sets the GPU time one command buffer aims at (default 100 ms).
// macOS stops a command buffer that occupies a GPU driving a display for too long; the
// backend cuts each chunk's work, a decode step's too, into command buffers by a cost
// model — every dispatch's bytes and FLOPs at the sequence's position, timed on the
// slowest Apple GPU, at most half this time a command buffer — cutting inside a layer,
// inside one layer's attention at a long context, where that is needed; prefill
// command buffers are also sized from the measured time of the chunks before. After
// such an error it halves them by itself. Lower it if the error still comes; raise it
// on a headless Mac for a little less overhead.
func WithCommandBufferTime(d time.Duration) Option {
	return func(c *engine.Config) {
		if d > 0 {
			c.CBTime = d
		}
	}
}

// WithDevice runs the backend on the devices open returns, under the given name: a test
// double, or a device of this module's own (internal/gpu, as metal/emulator's).
// Each engine opens its device at Load and closes it with the engine.
func WithDevice(name string, open func() (gpu.Device, error)) Option {
	return func(c *engine.Config) { c.Name, c.Device = name, open }
}

// New returns the Metal backend on the system's default GPU (emulator.New, of package
// metal/emulator, returns it on the MSL-on-CPU emulator); pass it to
// bonsai.WithBackend. On a machine without Metal (anything but macOS on Apple silicon)
// Load fails with an error wrapping ErrUnavailable. Load opens the device, compiles the
// kernels for the model's sizes, wraps the mapped weights without copying them and
// returns the engine; it runs the qwen35 architecture and refuses any other.
func New(opts ...Option) backend.Backend {
	cfg := engine.NewConfig("metal", newDevice)
	for _, o := range opts {
		o(&cfg)
	}
	return engine.New(cfg)
}

// ErrWorkingSet is wrapped by the errors of Load and NewState when the model or a
// sequence does not fit the device's recommended working set.
var ErrWorkingSet = engine.ErrWorkingSet

// DecodeDispatches returns the kernel dispatches one decode step records with the fused
// kernels for a model of configuration c, below the command-buffer cost limit: the
// embedding; per GDN layer mv_norm (the products, convolved), gdn_decode, mv_fwht,
// mv_norm and mv_swiglu; per attention layer mv_norm, attn, attn_merge, mv_fwht, mv_norm
// and mv_swiglu; the head; and, for a greedy step, the argmax. For the 27B model: 339
// (338 when the logits are read back instead). At a long context attn is cut into
// several dispatches over ranges of positions.
func DecodeDispatches(c *qwen35.Config, greedy bool) int { return engine.DecodeDispatches(c, greedy) }

// KernelNames returns the names of the library's kernels.
func KernelNames() []string { return engine.KernelNames() }
