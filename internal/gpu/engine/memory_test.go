package engine

import (
	"context"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// Defect 6 of issue 12: weights read into memory (WithMmap(false)) are copied tensor by
// tensor into device buffers, never wrapped page by page around the Go allocation; a
// mapped file is wrapped without copying.
func TestUnmappedWeightsAreCopied(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
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
		en, err := b.Load(context.Background(), w, backend.LoadOptions{})
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
		check("output", e.head.products[0], w.Output.Data)
		for i := range w.Layers {
			check("ffn_down", e.layers[i].ffnOut.products[0], w.Layers[i].FFNDown.Data)
			check("ffn_up", e.layers[i].ffnIn.products[1], w.Layers[i].FFNUp.Data)
		}
		for _, b := range boundTensors(e) {
			check(b.name, b.r, b.data)
		}
		en.Close()
	}
}
