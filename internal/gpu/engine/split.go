package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
)

// The GPU watchdog. macOS stops a command buffer that keeps a GPU driving a display
// busy for too long (kIOGPUCommandBufferCallbackErrorImpactingInteractivity, or
// MTLCommandBufferErrorTimeout), and a 64-token prefill chunk of the 27B model is about
// 3.3 TFLOP: seconds on a small GPU. So the work of a chunk is cut into command buffers
// (cbSplitter), each committed as soon as it is encoded, so that the GPU runs one while
// the host encodes the next; Wait waits for them in order. Command buffers of one queue
// run in commit order and Metal tracks the hazards between them, so the split changes
// no result.
//
// Two bounds end a command buffer, whichever comes first:
//
//   - A cost model, for every chunk, decode steps included. Each dispatch is charged
//     its bytes and FLOPs at the current position (a site's weights and activations,
//     attention's cache reads at the sequence's length), timed at the rates of the
//     slowest Apple GPU the backend runs on (floorBandwidth, floorFLOPS); a command
//     buffer is committed before a charge would take its modelled time past half of
//     WithCommandBufferTime (50 ms by default: the rates are estimates, and half leaves
//     room for a GPU twice as slow as modelled). This cuts below one layer where a
//     layer needs it: attention at a long position is recorded as several dispatches
//     over blocks of positions, each under the bound (attn.go), and a GEMM over many
//     rows as several over fewer rows: however long the context, no command buffer
//     holds more than the bound as modelled, which whole layers could not promise.
//   - Measured time, for prefill: the first chunks commit every Layers/16 layers (4
//     for the 27B model); after each chunk the engine knows the time per layer and
//     token and sizes the next so that one command buffer takes about
//     WithCommandBufferTime (default 100 ms) on this GPU.

// defaultCBTime is the GPU time one prefill command buffer aims at.
const defaultCBTime = 100 * time.Millisecond

// The cost model's device: Apple M1 with 7 GPU cores (the MacBook Air of 2020, sold
// with 8 or 16 GB: a 27B model fits the 16 GB one), the slowest Apple GPU. Its
// LPDDR4X-4266 on a 128-bit bus peaks at 68.25 GB/s, of which a streaming read is
// assumed to reach 60; its 7 × 128 ALUs at 1.278 GHz peak at 2.29 TFLOPS in float32
// (an FMA being two), of which the kernels are assumed to reach 1.0 — the GEMM, on
// SIMD-group matrices, may do better; attention and the matrix-vector products, with
// their loads, reductions and exponentials, are float32 scalar code.
// A dispatch's modelled time is bytes/floorBandwidth + flops/floorFLOPS, reading and
// computing one after the other: an estimate from above. These are assumptions, not
// measurements (no Mac ran them); where a GPU runs slower than them by more than 2×,
// the measured bound (prefill) and the halving after a watchdog error are what is left.
const (
	floorBandwidth = 60e9   // bytes/s
	floorFLOPS     = 1.0e12 // float32 FLOP/s
)

// cost is a dispatch's work in the cost model.
type cost struct{ bytes, flops float64 }

func (c cost) add(o cost) cost { return cost{c.bytes + o.bytes, c.flops + o.flops} }

// seconds is c's modelled time on the slowest Apple GPU.
func (c cost) seconds() float64 { return c.bytes/floorBandwidth + c.flops/floorFLOPS }

// cbSplitter is a gpu.CommandBuffer that commits its work every `every` layers
// (layerDone marks the layer ends) and before a charge (charge marks the dispatches'
// costs) would take the command buffer's modelled time past limit, and waits for all of
// it in Wait.
type cbSplitter struct {
	dev       gpu.Device
	cur       gpu.CommandBuffer
	committed []gpu.CommandBuffer
	every     int     // layers per command buffer; 0: never split by layers
	limit     float64 // modelled seconds per command buffer; 0: never split by cost
	inCur     int     // layers in cur
	model     float64 // modelled seconds charged to cur
	maxLayers int     // the most layers a committed command buffer held
	layers    int     // layers encoded in all
	costs     []float64
	spent     cost // everything charged
	n         int
	err       error
	started   time.Time // the first commit
}

func newSplitter(dev gpu.Device, every int) *cbSplitter {
	return &cbSplitter{dev: dev, every: every}
}

func (s *cbSplitter) Dispatch(p gpu.Pipeline, grid, threads gpu.Size, args ...gpu.Arg) {
	if s.err != nil {
		return
	}
	if s.cur == nil {
		cb, err := s.dev.NewCommandBuffer()
		if err != nil {
			s.err = err
			return
		}
		s.cur = cb
	}
	s.cur.Dispatch(p, grid, threads, args...)
	s.n++
}

// layerDone ends a layer; every `every` layers the command buffer is committed.
func (s *cbSplitter) layerDone() {
	s.layers++
	s.inCur++
	if s.every > 0 && s.inCur >= s.every {
		s.flush()
	}
}

// charge counts the cost of the dispatches that follow, first committing the command
// buffer when they would take it past the limit. A charge over the limit on its own
// still goes into one command buffer: the callers cut their work so that none is.
func (s *cbSplitter) charge(c cost) {
	t := c.seconds()
	if s.limit > 0 && s.model > 0 && s.model+t > s.limit {
		s.flush()
	}
	s.model += t
	s.spent = s.spent.add(c)
}

func (s *cbSplitter) flush() {
	if s.cur == nil {
		return
	}
	if s.started.IsZero() {
		s.started = time.Now()
	}
	s.cur.Commit()
	s.committed = append(s.committed, s.cur)
	s.costs = append(s.costs, s.model)
	s.maxLayers = max(s.maxLayers, s.inCur)
	s.cur, s.inCur, s.model = nil, 0, 0
}

func (s *cbSplitter) Commit() { s.flush() }

// Wait waits for every committed command buffer, in order, and returns the first error.
func (s *cbSplitter) Wait() error {
	err := s.err
	for _, cb := range s.committed {
		if e := cb.Wait(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

func (s *cbSplitter) Dispatches() int { return s.n }

// buffers is the number of command buffers committed.
func (s *cbSplitter) buffers() int { return len(s.committed) }

// layerDone marks the end of a layer in cb, where a splitter may commit.
func layerDone(cb gpu.CommandBuffer) {
	if s, ok := cb.(*cbSplitter); ok {
		s.layerDone()
	}
}

// charge counts the cost of the dispatches that follow in cb, where a splitter may
// commit first.
func charge(cb gpu.CommandBuffer, c cost) {
	if s, ok := cb.(*cbSplitter); ok {
		s.charge(c)
	}
}

// costLimit is the modelled seconds a dispatch recorded into cb may cost: the
// splitter's limit, 0 (any) for a plain command buffer.
func costLimit(cb gpu.CommandBuffer) float64 {
	if s, ok := cb.(*cbSplitter); ok {
		return s.limit
	}
	return 0
}

// splitter returns the command buffer of a chunk of T rows: split by the measured
// budget when T > 1, by the cost model always.
func (e *engine) splitter(T int) *cbSplitter {
	every := 0
	if T > 1 {
		every = e.budget.every(T)
	}
	s := newSplitter(e.dev, every)
	s.limit = e.budget.costLimit()
	return s
}

// cbBudget sizes the command buffers: the cost model's limit, and the layers per
// prefill command buffer from the time of the chunks before.
type cbBudget struct {
	target   time.Duration
	perLayer float64 // seconds per layer and token, 0 until measured
	layers   int     // the model's layers
	cap      int     // an upper bound on layers per command buffer after a watchdog error, 0: none
	halvings int     // watchdog errors so far: each halves the cost model's limit
}

// costLimit is the modelled seconds a command buffer may hold: half the target, halved
// again after each watchdog error; 0 (no limit) without a target.
func (b *cbBudget) costLimit() float64 {
	if b.target <= 0 {
		return 0
	}
	return b.target.Seconds() / 2 / float64(uint64(1)<<min(b.halvings, 20))
}

// every returns the layers per command buffer for a chunk of T tokens.
func (b *cbBudget) every(T int) int {
	n := max(b.layers/16, 1)
	if b.perLayer > 0 {
		n = int(b.target.Seconds() / (b.perLayer * float64(T)))
	}
	if b.cap > 0 {
		n = min(n, b.cap)
	}
	return min(max(n, 1), b.layers)
}

// observe records a chunk of T tokens through `layers` layers that took d, from the
// first commit to the last completion (the GPU was kept busy in between): a moving
// average, so that one slow chunk (another app on the GPU) does not swing the size.
func (b *cbBudget) observe(T, layers int, d time.Duration) {
	if T <= 0 || layers <= 0 || d <= 0 {
		return
	}
	x := d.Seconds() / float64(T*layers)
	if b.perLayer == 0 {
		b.perLayer = x
	} else {
		b.perLayer = 0.75*b.perLayer + 0.25*x
	}
}

// watchdog reacts to a command buffer the GPU stopped, in a chunk of T tokens at
// position pos recorded into sp: the next chunks' command buffers hold half as much
// modelled work, and half as many layers, and the error says what happened and what
// helps.
func (b *cbBudget) watchdog(err error, T, pos int, sp *cbSplitter) error {
	was := b.costLimit()
	b.halvings++
	if sp.maxLayers > 0 {
		b.cap = max(sp.maxLayers/2, 1)
	}
	if b.perLayer > 0 {
		b.perLayer *= 2
	}
	most := 0.0
	for _, c := range sp.costs {
		most = max(most, c)
	}
	return fmt.Errorf("macOS stopped a command buffer that ran too long (the GPU watchdog: the GPU drives a display), in a chunk of %d tokens at position %d "+
		"whose %d command buffers held up to %.0f ms of work as modelled on the slowest Apple GPU (the limit was %.0f ms): "+
		"the backend now cuts them at %.0f ms; the sequence's state is undefined — Reset it or restore a snapshot, then run the request again; "+
		"if it happens again, lower WithCommandBufferTime (now %v), which bounds every command buffer, attention at long positions included: %w",
		T, pos, sp.buffers(), 1e3*most, 1e3*was, 1e3*b.costLimit(), b.target, err)
}

// outOfMemory explains a command buffer the GPU could not make resident.
func outOfMemory(err error) error {
	return fmt.Errorf("the GPU ran out of memory for a command buffer (status 5): the model and its sequences exceed what this Mac lets the GPU hold; "+
		"use a smaller context size or an int8 KV cache (StateOptions), open fewer sequences, or quit other GPU programs: %w", err)
}

// commandBufferError turns a failed Wait of sp, a chunk of T tokens at position pos,
// into the error runChunk returns.
func (e *engine) commandBufferError(err error, T, pos int, sp *cbSplitter) error {
	switch {
	case errors.Is(err, gpu.ErrTimeout):
		return e.budget.watchdog(err, T, pos, sp)
	case errors.Is(err, gpu.ErrOutOfMemory):
		return outOfMemory(err)
	}
	return fmt.Errorf("command buffer: %w", err)
}

// ---- the cost model's charges ----
//
// Each is what the dispatches it stands for move and compute at least: the weights
// they read, the activations they read and write, 2 FLOPs per weight and row. The
// embedding and the argmax, well under a millisecond even on the slowest GPU, are not
// charged.

// siteCost is the cost of a site's products over T rows as matrix-vector products
// (mv_*: the decode step, the head of a prompt's last row): every weight read once.
func (e *engine) siteCost(s *qwen35.Site, T int) cost {
	var c cost
	for _, m := range s.Products {
		c = c.add(cost{bytes: float64(len(m.Data)) + 4*float64(T*m.N), flops: 2 * float64(T) * float64(m.K) * float64(m.N)})
	}
	c = c.add(unrotatedCost(s, T))
	c.bytes += 4 * float64(T*s.Width) * 3 // the input, the residual's delta and its sum
	return c
}

// unrotatedCost is the cost of a site's bf16 products (a GDN layer's alpha and beta)
// over T rows.
func unrotatedCost(s *qwen35.Site, T int) cost {
	var c cost
	for _, m := range s.Unrotated {
		c = c.add(cost{bytes: float64(len(m.Data)) + 4*float64(T*m.N), flops: 2 * float64(T) * float64(m.K) * float64(m.N)})
	}
	return c
}

// gemmCost is the cost of the GEMM of T rows over `rows` of m's rows: the weights read
// once, the rows read and written, and the multiply-adds of every SIMD-group quarter
// of 32 tokens the kernel runs (gemm.metal), a partial quarter counting whole.
func gemmCost(m *qwen35.Matrix, rows, T int) cost {
	tokens := float64((T + 31) / 32 * 32)
	return cost{
		bytes: float64(rows*m.Format.RowBytes(m.K)) + 4*float64(T)*float64(m.K+rows),
		flops: 2 * tokens * float64(m.K) * float64(rows),
	}
}

// gdnCost is the cost of a GDN layer's recurrence over T tokens: its state read and
// written, the rows in and out, and per token and V head the state's decay, two
// products with it and its rank-one update (8·d² FLOPs).
func (e *engine) gdnCost(T int) cost {
	c := e.cfg
	d := float64(c.StateSize)
	state := float64(e.sizes.ssm+e.sizes.conv) * 4
	return cost{
		bytes: 2*state + 4*float64(T)*float64(c.QKVWidth()+2*c.InnerSize+2*c.VHeads),
		flops: float64(T) * float64(c.VHeads) * 8 * d * d,
	}
}

// rowsCost is the cost of a site kernel's passes over T rows of W floats.
func rowsCost(T, W, passes int) cost { return cost{bytes: 4 * float64(T*W*passes)} }
