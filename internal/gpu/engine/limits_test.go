package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// loadOn binds the model at path and loads it on dev; the model file stays open until
// the test ends.
func loadOn(t *testing.T, path string, dev gpu.Device, opt backend.LoadOptions) (backend.Engine, error) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := qwen35.Bind(f)
	if err != nil {
		t.Fatal(err)
	}
	b := newBackend("counting", func() (gpu.Device, error) { return dev, nil }, nil)
	return b.Load(context.Background(), w, opt)
}

// Defect 7 of issue 12: a GPU whose SIMD-groups are not 32 wide is refused at compile.
func TestSIMDWidthChecked(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	for _, w := range []int{16, 64} {
		dev := newCountingDevice(1 << 30)
		dev.simdWidth = w
		e, err := loadOn(t, path, dev, backend.LoadOptions{})
		if err == nil {
			e.Close()
			t.Fatalf("width %d: loaded", w)
		}
		if !strings.Contains(err.Error(), "threadExecutionWidth") || !strings.Contains(err.Error(), "need 32") {
			t.Errorf("width %d: %v", w, err)
		}
	}
	dev := newCountingDevice(1 << 30)
	e, err := loadOn(t, path, dev, backend.LoadOptions{})
	if err != nil {
		t.Fatalf("width 32: %v", err)
	}
	e.Close()
}

// Defect 3 of issue 12: the working set is checked at Load, before anything is
// allocated, and at NewState, with the sizes and what would fit in the message.
func TestWorkingSet(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	// The weights' size as Load counts it: load once without a limit.
	dev := newCountingDevice(1 << 30)
	en, err := loadOn(t, path, dev, backend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := en.(*engine)
	weights := e.resident
	small := e.bytesFor(backend.ChunkRows, 1)
	st16 := e.bytesFor(1000, 2)
	if weights <= 0 || small <= 0 || st16 <= small {
		t.Fatalf("weights %d, smallest state %d, 1000 f16 %d", weights, small, st16)
	}
	// bytesFor is what NewState allocates: the counting device sees the same bytes.
	before := dev.allocated
	s, err := e.NewState(backend.StateOptions{ContextSize: 1000, KVCache: backend.KVFloat16})
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(dev.allocated - before); got > st16 || got < st16-16*64 {
		t.Errorf("NewState allocated %d bytes, bytesFor says %d", got, st16)
	}
	s.Close()
	en.Close()

	// Too small for the weights and one chunk: refused before any allocation. (The
	// weights' span may differ by a page between mappings, so stay two pages under.)
	dev = newCountingDevice(1 << 30)
	dev.workingSet = weights + small - 1 - 2*int64(dev.page)
	if en, err := loadOn(t, path, dev, backend.LoadOptions{}); err == nil {
		en.Close()
		t.Fatal("loaded past the working set")
	} else if !errors.Is(err, ErrWorkingSet) || !strings.Contains(err.Error(), "recommendedMaxWorkingSetSize") {
		t.Errorf("Load: %v", err)
	}
	if dev.allocated != 0 || len(dev.wrapped) != 0 {
		t.Errorf("a refused Load allocated %d bytes and wrapped %d views", dev.allocated, len(dev.wrapped))
	}

	// Room for the weights and one state of 1000 f16 positions (the weights' span may
	// differ by a page either way between mappings, the file's offset in a 16 KiB page
	// depending on where the OS maps it: the room is measured on the engine, and is one
	// page more than the state's, give or take one).
	dev = newCountingDevice(1 << 30)
	dev.workingSet = weights + st16 + int64(dev.page)
	en, err = loadOn(t, path, dev, backend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer en.Close()
	e = en.(*engine)
	room := dev.workingSet - e.resident
	if room < st16 || room > st16+2*int64(dev.page) {
		t.Fatalf("room %d for a state of %d", room, st16)
	}
	s1, err := e.NewState(backend.StateOptions{ContextSize: 1000, KVCache: backend.KVFloat16})
	if err != nil {
		t.Fatalf("a state that fits: %v", err)
	}
	_, err = e.NewState(backend.StateOptions{ContextSize: 16, KVCache: backend.KVFloat16})
	if !errors.Is(err, ErrWorkingSet) || !strings.Contains(err.Error(), "enough for a context of 0 tokens") {
		t.Errorf("a second state with no room: %v", err)
	}
	s1.Close() // gives its bytes back
	f16 := e.maxContext(room, 2)
	if f16 < 1000 || e.bytesFor(f16, 2) > room || e.bytesFor(f16+1, 2) <= room {
		t.Fatalf("f16: maxContext %d is not the largest that fits %d bytes", f16, room)
	}
	_, err = e.NewState(backend.StateOptions{ContextSize: f16 + 1, KVCache: backend.KVFloat16})
	if !errors.Is(err, ErrWorkingSet) {
		t.Fatalf("one position more than fits: %v", err)
	}
	// The message names the contexts that fit; each fits and one more does not.
	t.Log(err)
	for _, k := range e.kvChoices() {
		n := e.maxContext(room, k.elem)
		want := fmt.Sprintf("%d tokens with KV cache %v", n, k.p)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q", want)
		}
		if e.bytesFor(n, k.elem) > room || e.bytesFor(n+1, k.elem) <= room {
			t.Errorf("%v: maxContext %d is not the largest that fits", k.p, n)
		}
		s, err := e.NewState(backend.StateOptions{ContextSize: n, KVCache: k.p})
		if err != nil {
			t.Errorf("%v: the suggested context %d: %v", k.p, n, err)
			continue
		}
		s.Close()
	}
}
