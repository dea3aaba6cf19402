package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// The budget: Layers/16 before any measurement, then target / (time per layer·token × T).
func TestCommandBufferBudget(t *testing.T) {
	b := cbBudget{target: 100 * time.Millisecond, layers: 64}
	if got := b.every(64); got != 4 {
		t.Errorf("unmeasured: %d layers per command buffer, want 64/16 = 4", got)
	}
	// 64 tokens × 64 layers in 6.4 s: 1.5625 ms per layer·token; 100 ms is 1.0 layer of 64 tokens
	b.observe(64, 64, 6400*time.Millisecond)
	if got := b.every(64); got != 1 {
		t.Errorf("1.5625 ms per layer-token: %d, want 1", got)
	}
	// a fast GPU: 25 µs per layer·token → 100 ms / (25 µs × 64) = 62.5 → 62 layers
	b = cbBudget{target: 100 * time.Millisecond, layers: 64}
	b.observe(64, 64, 64*64*25*time.Microsecond)
	if got := b.every(64); got != 62 {
		t.Errorf("25 µs per layer-token: %d, want 62", got)
	}
	if got := b.every(8); got != 64 {
		t.Errorf("8 tokens: %d, want all 64 layers", got)
	}
	// the moving average: one chunk twice as slow moves the estimate by a quarter
	b.observe(64, 64, 2*64*64*25*time.Microsecond)
	if want := 25e-6 * 1.25; b.perLayer < want*0.999 || b.perLayer > want*1.001 {
		t.Errorf("after a slow chunk: %g s per layer-token, want %g", b.perLayer, want)
	}
	// a watchdog error halves the size and the cost limit, and caps the size from then on
	every := b.every(64)
	if got := b.costLimit(); got != 0.05 {
		t.Errorf("cost limit %g s, want half of 100 ms", got)
	}
	err := b.watchdog(gpu.ErrTimeout, 64, 3000, &cbSplitter{maxLayers: every, costs: []float64{0.02, 0.048}, committed: make([]gpu.CommandBuffer, 2)})
	for _, want := range []string{"GPU watchdog", "at position 3000", "2 command buffers held up to 48 ms", "the limit was 50 ms", "now cuts them at 25 ms", "Reset", "WithCommandBufferTime (now 100ms)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("watchdog error without %q: %v", want, err)
		}
	}
	if !errors.Is(err, gpu.ErrTimeout) {
		t.Errorf("watchdog error does not wrap gpu.ErrTimeout: %v", err)
	}
	if got := b.costLimit(); got != 0.025 {
		t.Errorf("cost limit after the watchdog: %g s, want 25 ms", got)
	}
	if got := b.every(64); got > every/2 || got < 1 {
		t.Errorf("after the watchdog: %d layers, was %d", got, every)
	}
	b.observe(64, 64, time.Microsecond) // even a very fast chunk stays under the cap
	if got := b.every(64); got > max(every/2, 1) {
		t.Errorf("the cap did not hold: %d", got)
	}
}

// A prefill chunk is split into command buffers of `every` layers; the dispatches are
// the same in all, and a decode step is one command buffer.
func TestPrefillSplit(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	dev := newCountingDevice(1 << 30)
	en, err := loadOn(t, path, dev, backend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer en.Close()
	e := en.(*engine)
	L := e.cfg.Layers
	if L != 4 {
		t.Fatalf("the tiny model has %d layers", L)
	}
	total := -1
	for every, wantCBs := range map[int]int{1: 5, 2: 3, 3: 2, 4: 2, 0: 1} {
		s, err := e.NewState(backend.StateOptions{ContextSize: 64, KVCache: backend.KVFloat16})
		if err != nil {
			t.Fatal(err)
		}
		sp := newSplitter(dev, every)
		e.encodeChunk(sp, s.(*state), make([]int32, 20), outLast)
		sp.Commit()
		if err := sp.Wait(); err != nil {
			t.Fatal(err)
		}
		// L layers in groups of every, then the head: with every | L the head is its own
		if sp.buffers() != wantCBs {
			t.Errorf("every %d: %d command buffers, want %d", every, sp.buffers(), wantCBs)
		}
		if total < 0 {
			total = sp.Dispatches()
		} else if sp.Dispatches() != total {
			t.Errorf("every %d: %d dispatches, want %d", every, sp.Dispatches(), total)
		}
		if sp.layers != L {
			t.Errorf("every %d: %d layers marked", every, sp.layers)
		}
		s.Close()
	}

	// Through Forward: a 20-token prompt without logits goes in Layers/16 = 1 layer per
	// command buffer (unmeasured), a decode step in one.
	s, err := e.NewState(backend.StateOptions{ContextSize: 64, KVCache: backend.KVFloat16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := dev.cbs
	if err := e.Forward(context.Background(), []backend.Sequence{{State: s, Tokens: make([]int32, 20)}}); err != nil {
		t.Fatal(err)
	}
	if got := dev.cbs - before; got != L {
		t.Errorf("prefill: %d command buffers, want %d", got, L)
	}
	if e.budget.perLayer <= 0 {
		t.Error("the prefill's time was not measured")
	}
	before = dev.cbs
	if err := e.ForwardGreedy(context.Background(), []backend.Sequence{{State: s, Tokens: []int32{3}}}, make([]int32, 1)); err != nil {
		t.Fatal(err)
	}
	if got := dev.cbs - before; got != 1 {
		t.Errorf("decode: %d command buffers, want 1", got)
	}

	// A watchdog error from the device comes back saying what to do, and the next
	// chunks are split finer. (The errors are the darwin device's, which package
	// metal's TestCommandBufferFailure checks it makes of Metal's.)
	dev.waitErr = fmt.Errorf("%w: command buffer failed (MTLCommandBufferError 14): Impacting Interactivity (0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity)", gpu.ErrTimeout)
	err = e.Forward(context.Background(), []backend.Sequence{{State: s, Tokens: make([]int32, 8)}})
	if !errors.Is(err, gpu.ErrTimeout) || !strings.Contains(err.Error(), "GPU watchdog") {
		t.Errorf("watchdog: %v", err)
	}
	dev.waitErr = fmt.Errorf("%w: command buffer failed (MTLCommandBufferError 8): Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)", gpu.ErrOutOfMemory)
	err = e.Forward(context.Background(), []backend.Sequence{{State: s, Tokens: make([]int32, 8)}})
	if !errors.Is(err, gpu.ErrOutOfMemory) || !strings.Contains(err.Error(), "int8 KV cache") {
		t.Errorf("out of memory: %v", err)
	}
	dev.waitErr = nil
}
