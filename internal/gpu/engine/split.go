package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// The GPU watchdog. macOS stops a command buffer that keeps a GPU driving a display
// busy for too long (kIOGPUCommandBufferCallbackErrorImpactingInteractivity, or
// MTLCommandBufferErrorTimeout), and a 64-token prefill chunk of the 27B model is about
// 3.3 TFLOP: seconds on a small GPU. So a prefill chunk is split into command buffers
// of a few layers each (cbSplitter), committed as soon as they are encoded, so that the
// GPU runs one while the host encodes the next; Wait waits for them in order. Command
// buffers of one queue run in commit order and Metal tracks the hazards between them,
// so the split changes no result.
//
// How many layers go into one command buffer is measured: the first chunks use
// Layers/16 (4 for the 27B model); after each chunk the engine knows the time per layer
// and token and sizes the next so that one command buffer takes about
// WithCommandBufferTime (default 100 ms). A decode step (one token, ~35 ms of weight
// reads for the 27B on an M4 Pro) stays one command buffer.

// defaultCBTime is the GPU time one prefill command buffer aims at.
const defaultCBTime = 100 * time.Millisecond

// cbSplitter is a gpu.CommandBuffer that commits its work every `every` layers
// (layerDone marks the layer ends) and waits for all of it in Wait.
type cbSplitter struct {
	dev       gpu.Device
	cur       gpu.CommandBuffer
	committed []gpu.CommandBuffer
	every     int // layers per command buffer; 0: never split
	inCur     int // layers in cur
	layers    int // layers encoded in all
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

func (s *cbSplitter) flush() {
	if s.cur == nil {
		return
	}
	if s.started.IsZero() {
		s.started = time.Now()
	}
	s.cur.Commit()
	s.committed = append(s.committed, s.cur)
	s.cur, s.inCur = nil, 0
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

// cbBudget sizes the prefill command buffers from the time of the chunks before.
type cbBudget struct {
	target   time.Duration
	perLayer float64 // seconds per layer and token, 0 until measured
	layers   int     // the model's layers
	cap      int     // an upper bound on layers per command buffer after a watchdog error, 0: none
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

// watchdog reacts to a command buffer the GPU stopped: the next chunks commit half as
// many layers per command buffer, and the error says what happened and what to change.
func (b *cbBudget) watchdog(err error, T, every int) error {
	b.cap = max(every/2, 1)
	if b.perLayer > 0 {
		b.perLayer *= 2
	}
	next := b.cap
	return fmt.Errorf("macOS stopped a command buffer of %d layers × %d tokens that ran too long (the GPU watchdog; the GPU drives a display): "+
		"the backend now commits every %d layers; the sequence's state is undefined — Reset it or restore a snapshot, then run the request again; "+
		"if it happens again, lower WithCommandBufferTime (now %v) or feed shorter prompts per call: %w", every, T, next, b.target, err)
}

// outOfMemory explains a command buffer the GPU could not make resident.
func outOfMemory(err error) error {
	return fmt.Errorf("the GPU ran out of memory for a command buffer (status 5): the model and its sequences exceed what this Mac lets the GPU hold; "+
		"use a smaller context size or an int8 KV cache (StateOptions), open fewer sequences, or quit other GPU programs: %w", err)
}

// commandBufferError turns a failed Wait into the error runChunk returns.
func (e *engine) commandBufferError(err error, T, every int) error {
	switch {
	case errors.Is(err, gpu.ErrTimeout):
		return e.budget.watchdog(err, T, every)
	case errors.Is(err, gpu.ErrOutOfMemory):
		return outOfMemory(err)
	}
	return fmt.Errorf("command buffer: %w", err)
}
