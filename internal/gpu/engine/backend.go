// Package engine is the GPU backends' engine: the host logic that lays out a model's
// weights and states in device buffers and records its forward passes as command
// buffers of the library's kernels (kernels.go, shaders/), over any gpu.Device. Package
// metal is its public face (New, the options, the system's device); package
// metal/emulator runs it on the MSL emulator; the kernel checks, which drive its
// dispatch helpers directly, run here for package metal/kernelcheck. Nothing in it
// runs unless one of those calls it.
package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
)

// Config is a backend's settings: package metal's options set them.
type Config struct {
	// MaxGroups caps the threadgroups of a matrix-vector product whose input fits one
	// chunk: each threadgroup builds the transformed input once and walks row groups.
	MaxGroups int
	// Unfused makes decode steps run the prefill kernels (site kernels, GEMMs, gdn_seq,
	// attn_append + attn) instead of the fused decode kernels.
	Unfused bool
	// SplitGDN makes decode steps run each GDN layer's recurrence as gdn_seq's one-token
	// step (one threadgroup per q/k head group, the convolution inside) after the In
	// site's mv_norm, instead of gdn_decode (one per V head, the convolution done by the
	// mv_norm as it writes the attn_qkv rows): the same dispatches, the same bits.
	SplitGDN bool
	// StepGDN makes prefill run the GDN recurrence token by token (gdn_seq) instead of
	// in the chunked form (gdn_chunk).
	StepGDN bool
	// CBTime is the GPU time a prefill command buffer aims at (split.go).
	CBTime time.Duration
	// Name names the backend; Device opens its device at each Load (nil: there is none).
	Name   string
	Device func() (gpu.Device, error)
}

// NewConfig returns the default settings of a backend named name on the devices open
// returns.
func NewConfig(name string, open func() (gpu.Device, error)) Config {
	return Config{MaxGroups: 128, CBTime: defaultCBTime, Name: name, Device: open}
}

// Backend is a Metal backend of one Config.
type Backend struct {
	cfg Config
}

var _ backend.Backend = (*Backend)(nil)

// New returns the backend of cfg.
func New(cfg Config) *Backend { return &Backend{cfg: cfg} }

// Name returns the Config's name.
func (b *Backend) Name() string { return b.cfg.Name }

// Load opens a device and returns the engine of m, a *qwen35.Weights (metal.New's doc
// says what it does).
func (b *Backend) Load(ctx context.Context, m backend.Model, opt backend.LoadOptions) (backend.Engine, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, ok := m.(*qwen35.Weights)
	switch {
	case m == nil || ok && w == nil:
		return nil, errors.New("no model to load")
	case !ok:
		return nil, fmt.Errorf("the %s backend runs the %s architecture, not %s", b.cfg.Name, qwen35.Architecture, m.Architecture())
	}
	if b.cfg.Device == nil {
		return nil, fmt.Errorf("no device: %w", gpu.ErrUnavailable)
	}
	dev, err := b.cfg.Device()
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
