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

// MTPOptions configures an [MTPRunner].
type MTPOptions struct {
	// Float32 multiplies the ternary rows with float32 activations
	// (ternary.MatVecRange), as the CPU engine does with float32 activations; by default
	// each product site's activation is quantised once to int8 (ternary.Q8) and the rows
	// run on ternary.MatVecQ8Range, as the engine's default int8 path does — several
	// times faster, within the int8 rounding of the float32 products.
	Float32 bool
	// Runner, when set, splits each site's products (and the attention's heads) across
	// its workers; without one a step runs on the calling goroutine.
	Runner Runner
}

// MTPRunner runs the MTP head (see [MTPHead]) one position at a time on the CPU, the
// way the CPU engine runs a decoder layer: each product site's input is normalised,
// rotated (W·x = W′·(R·x) for a folded W′ = W·Rᵀ) and quantised once, and every matrix
// that reads it multiplies that one quantised vector, the rows of the site's matrices
// split across the runner's workers as one loop. The attention is the main model's
// [Attention] over a [KVCache] of the head's own. It is a drafter's engine: its cost
// per step is one decoder layer and the output head.
//
// A runner holds scratch buffers: one runner serves one Step at a time.
type MTPRunner struct {
	w    *Weights
	head *MTPHead
	attn *Attention
	sc   *AttentionScratch
	opt  MTPOptions

	cat, x, hn, qg, k, v, mix, act, up, delta, row []float32
	// xr and q8 hold a site's rotated input and its quantised copy, by width (E, 2E,
	// the attention's and the FFN's).
	xr  map[int][]float32
	q8  map[int]*ternary.Q8
	job mtpJob
}

// NewMTPRunner returns a runner for w's MTP head, or ErrNoMTP.
func NewMTPRunner(w *Weights, o MTPOptions) (*MTPRunner, error) {
	if w.MTP == nil {
		return nil, ErrNoMTP
	}
	c := &w.Config
	E := c.Embedding
	m := &MTPRunner{w: w, head: w.MTP, opt: o, xr: map[int][]float32{}, q8: map[int]*ternary.Q8{}}
	for _, width := range []int{E, 2 * E, c.AttentionWidth(), c.FeedForward} {
		if w.Rotation(width) == nil {
			return nil, fmt.Errorf("%w: no rotation of width %d for the MTP head", ErrWeights, width)
		}
		if m.xr[width] == nil {
			m.xr[width] = make([]float32, width)
			if !o.Float32 {
				m.q8[width] = ternary.NewQ8(width)
			}
		}
	}
	kv := c.KVHeads * c.HeadDim
	m.attn = NewAttention(c)
	m.sc = m.attn.NewScratch(1)
	m.sc.Runner = o.Runner
	m.cat, m.x, m.hn = make([]float32, 2*E), make([]float32, E), make([]float32, E)
	m.qg, m.k, m.v = make([]float32, 2*c.Heads*c.HeadDim), make([]float32, kv), make([]float32, kv)
	m.mix, m.act, m.up = make([]float32, c.AttentionWidth()), make([]float32, c.FeedForward), make([]float32, c.FeedForward)
	m.delta, m.row = make([]float32, E), make([]float32, E)
	return m, nil
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
	if err := m.site(m.cat, mtpProduct{&h.EHProj, m.x}); err != nil {
		return err
	}
	// The decoder layer: gated attention, then the SwiGLU MLP, each added to x.
	l := &h.Layer
	hn := m.hn[:E]
	RMSNorm(hn, m.x, l.AttnNorm, eps)
	if err := m.site(hn, mtpProduct{&l.Q, m.qg}, mtpProduct{&l.K, m.k}, mtpProduct{&l.V, m.v}); err != nil {
		return err
	}
	if err := m.attn.Forward(m.mix, m.qg, m.k, m.v, 1, pos, l, cache, m.sc); err != nil {
		return fmt.Errorf("qwen35: MTP step: %w", err)
	}
	if err := m.site(m.mix, mtpProduct{&l.O, m.delta}); err != nil {
		return err
	}
	addInto32(m.x, m.delta)
	RMSNorm(hn, m.x, l.PostAttnNorm, eps)
	if err := m.site(hn, mtpProduct{&l.FFNGate, m.act}, mtpProduct{&l.FFNUp, m.up}); err != nil {
		return err
	}
	SwiGLU(m.act, m.act, m.up)
	if err := m.site(m.act, mtpProduct{&l.FFNDown, m.delta}); err != nil {
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
	return m.site(hn, mtpProduct{&w.Output, logits[:c.Vocab]})
}

// mtpProduct is one matrix of a site and where its output goes.
type mtpProduct struct {
	w *Matrix
	y []float32
}

// site computes y = W·x for every product of a product site, each W a folded ternary
// W′ = W·Rᵀ, as W′·(R·x): x is rotated once into a copy and, on the int8 path,
// quantised once, and the rows of all the products run as one loop over the runner.
// x is not modified.
func (m *MTPRunner) site(x []float32, ps ...mtpProduct) error {
	K := len(x)
	r, xr := m.w.Rotation(K), m.xr[K]
	if r == nil || xr == nil {
		return fmt.Errorf("qwen35: MTP step: no site of width %d", K)
	}
	j := &m.job
	j.n, j.total, j.q8 = 0, 0, nil
	for _, p := range ps {
		if p.w.K != K || len(p.y) < p.w.N {
			return fmt.Errorf("qwen35: MTP step: %s: input of %d values and output of %d, want %d and %d", p.w.Name, K, len(p.y), p.w.K, p.w.N)
		}
		j.ps[j.n] = p
		j.first[j.n] = j.total
		j.n++
		j.total += p.w.N
	}
	copy(xr, x)
	r.Forward(xr)
	j.x = xr
	if q := m.q8[K]; q != nil {
		q.Quantize(xr)
		j.q8 = q
	}
	if m.opt.Runner == nil {
		j.Run(0, j.total)
		return nil
	}
	// A grain of 16 rows, as the engine's product loops: a chunk's weights (≥ 16 rows of
	// 1.3 KB) are worth a claim.
	m.opt.Runner.For(j.total, 16, j)
	return nil
}

// mtpJob is one site's products as a loop over their concatenated rows (Body).
type mtpJob struct {
	n, total int
	ps       [3]mtpProduct
	first    [3]int // the loop index of each product's first row
	x        []float32
	q8       *ternary.Q8 // nil on the float32 path
}

// Run computes the rows [lo, hi) of the concatenation.
func (j *mtpJob) Run(lo, hi int) {
	for i := 0; i < j.n; i++ {
		p := &j.ps[i]
		a, b := max(lo, j.first[i])-j.first[i], min(hi, j.first[i]+p.w.N)-j.first[i]
		if a >= b {
			continue
		}
		if j.q8 != nil {
			ternary.MatVecQ8Range(p.w.Format, p.w.Data, p.w.K, j.q8, p.y, a, b)
		} else {
			ternary.MatVecRange(p.w.Format, p.w.Data, p.w.K, j.x, p.y, a, b)
		}
	}
}

func addInto32(x, d []float32) {
	for i, v := range d {
		x[i] += v
	}
}
