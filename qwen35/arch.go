package qwen35

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
)

// The qwen35 family registers itself with the seam, so that bonsai.Open finds it by the
// general.architecture of a file.
func init() {
	backend.Register(backend.Architecture{Name: Architecture, Bind: bindModel})
}

// bindModel is the registered Bind: a Bonsai file must carry the Hadamard contract (an
// unrotated qwen35 model is upstream's, not one this SDK runs).
func bindModel(f *gguf.File, progress func(done, total int)) (backend.Model, error) {
	if !f.Has(hadamard.KeyVersion) {
		return nil, fmt.Errorf("%w: no %s contract (an unrotated qwen35 model?)", backend.ErrUnsupported, hadamard.KeyVersion)
	}
	return BindProgress(f, progress)
}

// Architecture returns "qwen35" (backend.Model).
func (w *Weights) Architecture() string { return Architecture }

// Vocab returns the number of logits per token (backend.Model).
func (w *Weights) Vocab() int { return w.Config.Vocab }

// ContextLength returns the positions the model was trained for (backend.Model).
func (w *Weights) ContextLength() int { return w.Config.ContextLength }

var _ backend.Model = (*Weights)(nil)

// WriteFingerprint writes what identifies the model's computation beyond its tensor
// table — the configuration and the Hadamard contract — for bonsai's snapshot
// fingerprint (a hash: the encoding only has to be stable).
func (w *Weights) WriteFingerprint(h io.Writer) {
	u64 := func(v uint64) { h.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	str := func(s string) { u64(uint64(len(s))); h.Write([]byte(s)) }
	str(fmt.Sprintf("%+v", w.Config))
	if c := w.Contract; c != nil {
		u64(uint64(c.BlockSize))
		str(c.Transform)
		for i, width := range c.Widths {
			u64(uint64(width))
			signs := make([]byte, len(c.Signs[i]))
			for j, s := range c.Signs[i] {
				signs[j] = byte(s)
			}
			h.Write(signs)
		}
	}
}

// String describes the model in a line: its layers, widths and vocabulary.
func (w *Weights) String() string {
	c := &w.Config
	return fmt.Sprintf("%s: %d layers (%d attention), embedding %d, vocabulary %d", Architecture, c.Layers, c.AttentionLayers(), c.Embedding, c.Vocab)
}
