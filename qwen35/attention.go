package qwen35

import (
	"fmt"
	"math"
)

// attnBlock is how many cache positions attention decodes and scores at a time: the
// keys and values of a block (2 × 64 × HeadDim float32) stay in cache while every query
// head of the group uses them, and the running softmax is rescaled once per block
// rather than once per position.
const attnBlock = 64

// Attention is the core of a gated full-attention mixer: everything between the
// attn_q/attn_k/attn_v projections and the attn_output rotation. It holds sizes and the
// RoPE frequencies only, so one Attention serves every attention layer and sequence.
type Attention struct {
	heads, kvHeads, dim, rep int
	ropeHalf                 int
	eps                      float32
	scale                    float32
	invFreq                  []float64 // RopeBase^(−2i/RopeDims), i < RopeDims/2
}

// NewAttention returns the attention core for c's sizes. c must be valid.
func NewAttention(c *Config) *Attention {
	a := &Attention{
		heads:    c.Heads,
		kvHeads:  c.KVHeads,
		dim:      c.HeadDim,
		rep:      c.Heads / c.KVHeads,
		ropeHalf: c.RopeDims / 2,
		eps:      float32(c.RMSEpsilon),
		scale:    float32(1 / math.Sqrt(float64(c.HeadDim))),
	}
	a.invFreq = make([]float64, a.ropeHalf)
	for i := range a.invFreq {
		a.invFreq[i] = math.Pow(c.RopeBase, -2*float64(i)/float64(c.RopeDims))
	}
	return a
}

// NewKVCache returns an empty cache shaped for this attention.
func (a *Attention) NewKVCache(p KVPrecision, maxLen int) *KVCache {
	return NewKVCache(a.kvHeads, a.dim, p, maxLen)
}

// AttentionScratch holds the working buffers of Forward. Nothing in it grows with the
// context: the softmax runs online, block by block. One scratch serves one Forward at a
// time.
type AttentionScratch struct {
	// Runner, when set, runs the KV groups in parallel.
	Runner Runner

	maxT     int
	q        []float32 // T × Heads × HeadDim: normed, roped, scaled by 1/√HeadDim
	krow     []float32 // KVHeads × HeadDim: one position's normed, roped keys
	cos, sin []float32 // RopeDims/2 for one position
	groups   []attnGroup
	body     attnBody
}

// attnGroup is the working set of one KV group's queries (rep heads × T tokens).
type attnGroup struct {
	m, sum     []float32 // T × rep: running max and sum
	acc        []float32 // T × rep × HeadDim: running weighted sum of values
	kbuf, vbuf []float32 // attnBlock × HeadDim: a decoded block
	s          []float32 // rep × attnBlock: scores, then weights
}

// NewScratch returns buffers for calls of up to maxTokens tokens; a longer call grows
// them once.
func (a *Attention) NewScratch(maxTokens int) *AttentionScratch {
	sc := &AttentionScratch{
		krow:   make([]float32, a.kvHeads*a.dim),
		cos:    make([]float32, a.ropeHalf),
		sin:    make([]float32, a.ropeHalf),
		groups: make([]attnGroup, a.kvHeads),
	}
	for i := range sc.groups {
		gr := &sc.groups[i]
		gr.kbuf = make([]float32, attnBlock*a.dim)
		gr.vbuf = make([]float32, attnBlock*a.dim)
		gr.s = make([]float32, a.rep*attnBlock)
	}
	a.grow(sc, max(maxTokens, 1))
	return sc
}

func (a *Attention) grow(sc *AttentionScratch, T int) {
	if T <= sc.maxT {
		return
	}
	sc.maxT = T
	sc.q = make([]float32, T*a.heads*a.dim)
	for i := range sc.groups {
		gr := &sc.groups[i]
		gr.m = make([]float32, T*a.rep)
		gr.sum = make([]float32, T*a.rep)
		gr.acc = make([]float32, T*a.rep*a.dim)
	}
}

// Forward runs T tokens at positions pos0..pos0+T−1 of one sequence through attention,
// appending their keys and values to cache, which must hold exactly pos0 positions.
// Inputs are row-major by token: qg T×(Heads·2·HeadDim), the raw attn_q output with
// each head laid out [query | gate]; k and v T×(KVHeads·HeadDim), the raw attn_k and
// attn_v outputs. out receives T×(Heads·HeadDim): the attention output times
// sigmoid(gate), ready for the rotation in front of attn_output; it must not alias the
// inputs, which are not modified. On error nothing has been appended.
func (a *Attention) Forward(out, qg, k, v []float32, T, pos0 int, l *Layer, cache *KVCache, sc *AttentionScratch) error {
	if T < 1 {
		return nil
	}
	H, KV, D := a.heads, a.kvHeads, a.dim
	if len(out) < T*H*D || len(qg) < T*H*2*D || len(k) < T*KV*D || len(v) < T*KV*D {
		return fmt.Errorf("qwen35: attention: buffers too short for %d tokens", T)
	}
	if len(l.QNorm) != D || len(l.KNorm) != D {
		return fmt.Errorf("qwen35: attention: layer %d has q/k norms of %d and %d values, want %d", l.Index, len(l.QNorm), len(l.KNorm), D)
	}
	if cache.heads != KV || cache.dim != D {
		return fmt.Errorf("qwen35: attention: cache of %d×%d, want %d KV heads × %d", cache.heads, cache.dim, KV, D)
	}
	if cache.Len() != pos0 {
		return fmt.Errorf("qwen35: attention at position %d, but the cache holds %d positions", pos0, cache.Len())
	}
	if pos0+T > cache.MaxLen() {
		return fmt.Errorf("%w: %d positions, %d more do not fit after %d", ErrContextFull, cache.MaxLen(), T, pos0)
	}
	a.grow(sc, T)
	cache.Reserve(pos0 + T)
	for t := 0; t < T; t++ {
		a.ropeTable(sc, pos0+t)
		for h := 0; h < H; h++ {
			q := sc.q[(t*H+h)*D : (t*H+h+1)*D]
			RMSNorm(q, qg[(t*H+h)*2*D:(t*H+h)*2*D+D], l.QNorm, a.eps)
			a.rope(q, sc)
			scal(q, a.scale)
		}
		for h := 0; h < KV; h++ {
			kh := sc.krow[h*D : (h+1)*D]
			RMSNorm(kh, k[(t*KV+h)*D:(t*KV+h+1)*D], l.KNorm, a.eps)
			a.rope(kh, sc)
		}
		if err := cache.Append(sc.krow, v[t*KV*D:(t+1)*KV*D]); err != nil {
			return err // unreachable: the length was checked above
		}
	}
	sc.body = attnBody{a: a, sc: sc, out: out, qg: qg, T: T, pos0: pos0, cache: cache}
	run(sc.Runner, KV, 1, &sc.body)
	sc.body = attnBody{} // drop the references to the caller's buffers
	return nil
}

// attnBody attends KV groups [lo, hi); groups share only read-only inputs.
type attnBody struct {
	a       *Attention
	sc      *AttentionScratch
	out, qg []float32
	T, pos0 int
	cache   *KVCache
}

func (b *attnBody) Run(lo, hi int) {
	for g := lo; g < hi; g++ {
		b.a.attend(b.out, b.qg, g, b.T, b.pos0, b.cache, b.sc)
	}
}

// ropeTable fills the cos/sin table of position pos; the angle is formed in float64
// because pos·θ reaches 10⁵ radians in a long context, where float32 keeps only
// hundredths.
func (a *Attention) ropeTable(sc *AttentionScratch, pos int) {
	for i, f := range a.invFreq {
		s, c := math.Sincos(float64(pos) * f)
		sc.cos[i], sc.sin[i] = float32(c), float32(s)
	}
}

// rope rotates the pairs (i, i+RopeDims/2) of one head in place (NeoX order).
func (a *Attention) rope(x []float32, sc *AttentionScratch) {
	half := a.ropeHalf
	lo, hi := x[:half], x[half:2*half]
	for i := range lo {
		c, s := sc.cos[i], sc.sin[i]
		x0, x1 := lo[i], hi[i]
		lo[i] = x0*c - x1*s
		hi[i] = x0*s + x1*c
	}
}

// attend runs the queries of KV group g (rep heads × T tokens) over the cache with an
// online softmax. Each block of keys and values is decoded once and each of its rows is
// used by all the group's heads while it is in L1. A query's arithmetic depends only on
// its own position, not on T, so prefill and token-by-token decode agree exactly.
func (a *Attention) attend(out, qg []float32, g, T, pos0 int, cache *KVCache, sc *AttentionScratch) {
	H, D, rep := a.heads, a.dim, a.rep
	nq := T * rep
	gr := &sc.groups[g]
	m, sum, acc := gr.m[:nq], gr.sum[:nq], gr.acc[:nq*D]
	for i := range m {
		m[i] = float32(math.Inf(-1))
	}
	clear(sum)
	clear(acc)
	end := pos0 + T
	for pi := range cache.pages {
		p := &cache.pages[pi]
		if p.start >= end {
			break
		}
		pend := min(p.start+p.n, end)
		for b0 := p.start; b0 < pend; b0 += attnBlock {
			b1 := min(b0+attnBlock, pend)
			kb, vb := cache.block(p, g, b0-p.start, b1-b0, gr.kbuf, gr.vbuf)
			for t := max(0, b0-pos0); t < T; t++ {
				n := min(b1, pos0+t+1) - b0
				a.attendBlock(gr, sc.q, t, g, n, kb, vb)
			}
		}
	}
	for t := 0; t < T; t++ {
		for r := 0; r < rep; r++ {
			h := g*rep + r
			qi := t*rep + r
			o := out[(t*H+h)*D : (t*H+h+1)*D]
			gate := qg[(t*H+h)*2*D+D : (t*H+h+1)*2*D]
			ac := acc[qi*D : (qi+1)*D]
			inv := 1 / sum[qi]
			for j := range o {
				o[j] = ac[j] * inv * Sigmoid(gate[j])
			}
		}
	}
}

// attendBlock folds the first n rows of a key/value block into the running softmax of
// token t's queries of group g.
func (a *Attention) attendBlock(gr *attnGroup, q []float32, t, g, n int, kb, vb []float32) {
	H, D, rep := a.heads, a.dim, a.rep
	s := gr.s[:rep*attnBlock]
	qs := q[(t*H+g*rep)*D : (t*H+g*rep+rep)*D]
	dotRows(s, attnBlock, qs, D, rep, kb, D, n, D) // s[r][p] = q_r·k_p
	for r := 0; r < rep; r++ {
		qi := t*rep + r
		sr := s[r*attnBlock : r*attnBlock+n]
		bm := sr[0]
		for _, x := range sr[1:] {
			bm = max(bm, x)
		}
		if bm > gr.m[qi] {
			corr := decayWeight(float64(gr.m[qi] - bm))
			gr.sum[qi] *= corr
			scal(gr.acc[qi*D:(qi+1)*D], corr)
			gr.m[qi] = bm
		}
		mx := float64(gr.m[qi])
		var total float32
		for p, x := range sr {
			w := decayWeight(float64(x) - mx)
			sr[p] = w
			total += w
		}
		gr.sum[qi] += total
	}
	// acc_r += Σ_p w_rp·v_p, each head's accumulator held in registers while the block's
	// value rows stream past.
	acc := gr.acc[t*rep*D : (t+1)*rep*D]
	for r := 0; r < rep; r++ {
		scaleAddRows(acc[r*D:(r+1)*D], 1, s[r*attnBlock:r*attnBlock+n], vb, D)
	}
}
