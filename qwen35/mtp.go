package qwen35

import (
	"errors"
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/ternary"
)

// ErrNoMTP is returned for a model file that carries no MTP head (nextn_predict_layers
// absent or 0), as the published Ternary Bonsai 2 file does not.
var ErrNoMTP = errors.New("qwen35: the model has no MTP (nextn) head")

// MTPRunner runs the MTP head (see [MTPHead]) one position at a time in float32 on the
// CPU: the ternary rows are multiplied in float32 against the rotated
// activation (W·x = W′·(R·x) for a folded W′ = W·Rᵀ), and the attention is the main
// model's [Attention] over a [KVCache] of the head's own. It is a drafter's engine: its
// cost per step is one decoder layer and the output head.
//
// A runner holds scratch buffers: one runner serves one Step at a time.
type MTPRunner struct {
	w    *Weights
	head *MTPHead
	attn *Attention
	sc   *AttentionScratch

	cat, x, hn, xr, qg, k, v, mix, act, up, delta, row []float32
}

// NewMTPRunner returns a runner for w's MTP head, or ErrNoMTP.
func NewMTPRunner(w *Weights) (*MTPRunner, error) {
	if w.MTP == nil {
		return nil, ErrNoMTP
	}
	c := &w.Config
	E := c.Embedding
	for _, width := range []int{E, 2 * E, c.AttentionWidth(), c.FeedForward} {
		if w.Rotation(width) == nil {
			return nil, fmt.Errorf("%w: no rotation of width %d for the MTP head", ErrWeights, width)
		}
	}
	kv := c.KVHeads * c.HeadDim
	attn := NewAttention(c)
	return &MTPRunner{
		w: w, head: w.MTP, attn: attn, sc: attn.NewScratch(1),
		cat: make([]float32, 2*E), x: make([]float32, E), hn: make([]float32, E),
		xr: make([]float32, max(2*E, c.FeedForward, c.AttentionWidth())),
		qg: make([]float32, 2*c.Heads*c.HeadDim), k: make([]float32, kv), v: make([]float32, kv),
		mix: make([]float32, c.AttentionWidth()), act: make([]float32, c.FeedForward), up: make([]float32, c.FeedForward),
		delta: make([]float32, E), row: make([]float32, E),
	}, nil
}

// NewKVCache returns an empty KV cache for the head's attention layer, of maxLen
// positions: the head's positions follow the main model's (see Step).
func (m *MTPRunner) NewKVCache(p backend.KVPrecision, maxLen int) *KVCache {
	return m.attn.NewKVCache(p, maxLen)
}

// Step runs the head at position pos, where cache holds exactly pos positions and
// gains one: hidden is the main model's hidden state at pos (the residual stream before
// output_norm, Embedding values) or, deeper in a chain, the out of the previous step;
// token is the token at pos+1. It writes the logits of the token at pos+2 (Vocab
// values; nil skips the output head, for a step that only fills the cache) and, when
// out is not nil, the layer's output before shared_head_norm (Embedding values), the
// next step's hidden. hidden is not modified.
func (m *MTPRunner) Step(logits, out, hidden []float32, token, pos int, cache *KVCache) error {
	c, w, h := &m.w.Config, m.w, m.head
	E := c.Embedding
	eps := float32(c.RMSEpsilon)
	if token < 0 || token >= c.Vocab {
		return fmt.Errorf("qwen35: MTP step: token %d outside the vocabulary [0, %d)", token, c.Vocab)
	}
	if len(hidden) != E || (logits != nil && len(logits) < c.Vocab) || (out != nil && len(out) < E) {
		return fmt.Errorf("qwen35: MTP step: hidden of %d values (want %d), logits of %d (want %d)", len(hidden), E, len(logits), c.Vocab)
	}
	// [enorm(embed(token)); hnorm(hidden)] into eh_proj.
	emb := &w.TokenEmbedding
	if err := emb.Format.Decode(m.row[:E], emb.Row(token)); err != nil {
		return fmt.Errorf("qwen35: MTP step: %s row %d: %w", emb.Name, token, err)
	}
	w.Rotation(E).Inverse(m.row[:E])
	RMSNorm(m.cat[:E], m.row[:E], h.ENorm, eps)
	RMSNorm(m.cat[E:], hidden, h.HNorm, eps)
	if err := m.linear(m.x, &h.EHProj, m.cat); err != nil {
		return err
	}
	// The decoder layer: gated attention, then the SwiGLU MLP, each added to x.
	l := &h.Layer
	hn := m.hn[:E]
	RMSNorm(hn, m.x, l.AttnNorm, eps)
	for _, p := range []struct {
		y []float32
		w *Matrix
	}{{m.qg, &l.Q}, {m.k, &l.K}, {m.v, &l.V}} {
		if err := m.linear(p.y, p.w, hn); err != nil {
			return err
		}
	}
	if err := m.attn.Forward(m.mix, m.qg, m.k, m.v, 1, pos, l, cache, m.sc); err != nil {
		return fmt.Errorf("qwen35: MTP step: %w", err)
	}
	if err := m.linear(m.delta, &l.O, m.mix); err != nil {
		return err
	}
	addInto32(m.x, m.delta)
	RMSNorm(hn, m.x, l.PostAttnNorm, eps)
	if err := m.linear(m.act, &l.FFNGate, hn); err != nil {
		return err
	}
	if err := m.linear(m.up, &l.FFNUp, hn); err != nil {
		return err
	}
	SwiGLU(m.act, m.act, m.up)
	if err := m.linear(m.delta, &l.FFNDown, m.act); err != nil {
		return err
	}
	addInto32(m.x, m.delta)
	if out != nil {
		copy(out, m.x)
	}
	if logits == nil {
		return nil
	}
	RMSNorm(hn, m.x, h.SharedHeadNorm, eps)
	return m.linear(logits[:c.Vocab], &w.Output, hn)
}

// linear computes y = W·x for a folded ternary W′ = W·Rᵀ as W′·(R·x): x is rotated in
// a copy, which the stored rows multiply in float32 (ternary.MatVecRange, the portable
// kernel: the head is a drafter, not yet on the engine's int8 kernels). x is not
// modified.
// Rows are split over goroutines when there are enough of them (the output head).
func (m *MTPRunner) linear(y []float32, w *Matrix, x []float32) error {
	r := m.w.Rotation(w.K)
	if r == nil || len(x) != w.K || len(y) < w.N {
		return fmt.Errorf("qwen35: MTP step: %s: input of %d values and output of %d, want %d and %d", w.Name, len(x), len(y), w.K, w.N)
	}
	xr := m.xr[:w.K]
	copy(xr, x)
	r.Forward(xr)
	parallelRows(w.N, w.K, func(lo, hi int) {
		ternary.MatVecRange(w.Format, w.Data, w.K, xr, y, lo, hi)
	})
	return nil
}

func addInto32(x, d []float32) {
	for i, v := range d {
		x[i] += v
	}
}
