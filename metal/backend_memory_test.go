package metal

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/metal/internal/gpu"
	"github.com/bonsai-go/sdk/metal/internal/mslemu"
	"github.com/bonsai-go/sdk/qwen35"
)

// Defect 6 of issue 12: weights read into memory (WithMmap(false)) are copied tensor by
// tensor into device buffers, never wrapped page by page around the Go allocation; a
// mapped file is wrapped without copying.
func TestUnmappedWeightsAreCopied(t *testing.T) {
	path := writeTiny(t)
	for _, mmap := range []bool{true, false} {
		f, err := gguf.Open(path, gguf.WithMmap(mmap))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w, err := qwen35.Bind(f)
		if err != nil {
			t.Fatal(err)
		}
		if w.Mapped() != mmap {
			t.Fatalf("WithMmap(%v): Mapped() = %v", mmap, w.Mapped())
		}
		dev := newCountingDevice(1 << 30)
		b := newBackend("counting", func() (gpu.Device, error) { return dev, nil }, nil)
		en, err := b.Load(context.Background(), w, bonsai.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e := en.(*engine)
		var matrices int
		for _, m := range []*qwen35.Matrix{&w.TokenEmbedding, &w.Output} {
			matrices += len(m.Data)
		}
		switch {
		case mmap && (len(dev.wrapped) == 0 || e.copied >= matrices):
			t.Errorf("mapped: %d views wrapped, %d bytes copied", len(dev.wrapped), e.copied)
		case !mmap && (len(dev.wrapped) != 0 || e.copied < matrices):
			t.Errorf("in memory: %d views wrapped, %d bytes copied (the matrices alone are %d)", len(dev.wrapped), e.copied, matrices)
		}
		// every tensor's bytes are where its reference points
		check := func(name string, r ref, want []byte) {
			got := r.buf.Contents()[r.off : r.off+len(want)]
			if string(got) != string(want) {
				t.Errorf("mmap %v: %s: the device copy differs", mmap, name)
			}
		}
		check("token_embd", e.emb, w.TokenEmbedding.Data)
		check("output", e.out, w.Output.Data)
		for i := range w.Layers {
			check("ffn_down", e.layers[i].ffnDown, w.Layers[i].FFNDown.Data)
			check("ffn_up", e.layers[i].ffnUp, w.Layers[i].FFNUp.Data)
		}
		en.Close()
	}
}

// The same logits from a mapped and an in-memory file, on the emulator.
func TestUnmappedWeightsEmulator(t *testing.T) {
	emulator(t)
	path := writeTiny(t)
	open := func(mmap bool) *bonsai.Model {
		m, err := bonsai.Open(path, bonsai.WithBackend(newEmulator()), bonsai.WithThreads(1), bonsai.WithMmap(mmap),
			bonsai.WithActivations(bonsai.ActivationsFloat32), bonsai.WithKVCache(qwen35.KVFloat16), bonsai.WithContextSize(16))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	ids := promptIDs(5)
	a, err := newSession(t, open(true)).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newSession(t, open(false)).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if d := maxAbsDiff(a[i], b[i]); d != 0 {
			t.Errorf("token %d: |Δlogit| %g between the mapped and the in-memory file", i, d)
		}
	}
}

// The emulator's working set (mslemu.WithWorkingSet) reaches Load through bonsai.Open:
// a 1 MiB GPU cannot hold the tiny model.
func TestWorkingSetEmulator(t *testing.T) {
	emulator(t)
	path := writeTiny(t)
	b := newEmulator(WithDevice("metal-emulator", func() (gpu.Device, error) { return mslemu.New(mslemu.WithWorkingSet(1 << 20)) }))
	m, err := bonsai.Open(path, bonsai.WithBackend(b), bonsai.WithContextSize(16))
	if err == nil {
		m.Close()
		t.Fatal("the tiny model loaded on a 1 MiB working set")
	}
	if !errors.Is(err, ErrWorkingSet) || !strings.Contains(err.Error(), "1.0 MiB") {
		t.Errorf("got %v", err)
	}
}
