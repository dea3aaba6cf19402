package qwen35

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// Attention works on tiles: attnBlock cache positions are decoded at a time and used by
// every query that reads them (the rep query heads sharing a KV head, times a block of
// tokens in prefill) while they are in L1; the running softmax is rescaled once per tile
// rather than once per position.
//
// A decode step (at most attnSplitT tokens) has too few queries to keep the cores busy —
// one KV group per core at best — so it also splits the positions (flash-decoding): each
// KV group's context is cut into at most attnMaxSplits spans of whole tiles, every span
// runs its own online softmax, and the partial results are merged exactly (each rescaled
// by e^(its max − the overall max)). The spans depend only on the context length, never
// on the number of workers, so a result does not depend on the Runner.
//
// Prefill splits the tokens instead, into blocks of attnQBlock per KV group: each block
// streams the tiles of its context once and reuses them for attnQBlock×rep queries; no
// T×T score matrix is formed.
const (
	attnBlock     = 32  // positions per tile: keys and values, 2×32×HeadDim float32, fit L1
	attnQBlock    = 16  // prefill tokens per work item
	attnSplitT    = 4   // calls of up to this many tokens split the positions
	attnSplitLen  = 256 // the shortest span worth its own work item
	attnMaxSplits = 16
)

var negInf = float32(math.Inf(-1))

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
func (a *Attention) NewKVCache(p backend.KVPrecision, maxLen int) *KVCache {
	return NewKVCache(a.kvHeads, a.dim, p, maxLen)
}

// AttentionScratch holds the working buffers of Forward. Nothing in it grows with the
// context: the softmax runs online, tile by tile. One scratch serves one Forward at a
// time.
type AttentionScratch struct {
	// Runner, when set, runs the KV groups, token blocks and position spans in parallel.
	Runner Runner

	maxT int
	q    []float32 // T × Heads × HeadDim: normed, roped, scaled by 1/√HeadDim
	// q quantised for an int8 or q4 cache (quantQuery), T × Heads heads of qb codes and
	// ql lane scales and corrections, packed as the cache's precision lays them out.
	qc          []int8
	qs          []float32
	qcorr       []int32
	qb, ql      int
	krow        []float32 // KVHeads × HeadDim: one position's normed, roped keys
	cos, sin    []float32 // RopeDims/2 for one position
	m, sum, acc []float32 // prefill: running max, sum and weighted values, T × Heads (× HeadDim)
	// Decode: the partial softmaxes of the spans, [KV group][span][token][rep] (× HeadDim),
	// and the merge weights, [token][head][span].
	pm, psum, pacc, mw []float32

	mu    sync.Mutex
	free  []*attnWork // tile buffers not in use by a running body
	body  attnBody
	merge attnMerge
}

// attnWork is what one running body needs for itself: a decoded tile and its scores.
type attnWork struct {
	kbuf, vbuf []float32 // attnBlock × HeadDim
	s          []float32 // rep × attnBlock: scores, then weights
	vscale     []float32 // attnBlock × blocks: a q4 tile's value scales as float32
}

// NewScratch returns buffers for calls of up to maxTokens tokens; a longer call grows
// them once.
func (a *Attention) NewScratch(maxTokens int) *AttentionScratch {
	sc := &AttentionScratch{
		krow: make([]float32, a.kvHeads*a.dim),
		cos:  make([]float32, a.ropeHalf),
		sin:  make([]float32, a.ropeHalf),
	}
	nq := a.kvHeads * attnMaxSplits * attnSplitT * a.rep
	sc.pm, sc.psum, sc.pacc = make([]float32, nq), make([]float32, nq), make([]float32, nq*a.dim)
	sc.mw = make([]float32, attnSplitT*a.heads*attnMaxSplits)
	for range runtime.GOMAXPROCS(0) {
		sc.free = append(sc.free, a.newWork())
	}
	a.grow(sc, max(maxTokens, 1))
	return sc
}

func (a *Attention) newWork() *attnWork {
	return &attnWork{
		kbuf:   make([]float32, attnBlock*a.dim),
		vbuf:   make([]float32, attnBlock*a.dim),
		s:      make([]float32, a.rep*attnBlock),
		vscale: make([]float32, attnBlock*a.blocks()),
	}
}

// work takes tile buffers for a running body; more bodies running at once than ever
// before allocate one more set.
func (sc *AttentionScratch) work(a *Attention) *attnWork {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if n := len(sc.free); n > 0 {
		w := sc.free[n-1]
		sc.free = sc.free[:n-1]
		return w
	}
	return a.newWork()
}

func (sc *AttentionScratch) release(w *attnWork) {
	sc.mu.Lock()
	sc.free = append(sc.free, w)
	sc.mu.Unlock()
}

func (a *Attention) grow(sc *AttentionScratch, T int) {
	if T <= sc.maxT {
		return
	}
	sc.maxT = T
	sc.q = make([]float32, T*a.heads*a.dim)
	qb, ql := qHead(a.dim), qLanes*qVectors(a.dim)
	sc.qc = make([]int8, T*a.heads*qb)
	sc.qs = make([]float32, T*a.heads*ql)
	sc.qcorr = make([]int32, T*a.heads*ql)
	if T > attnSplitT {
		sc.m = make([]float32, T*a.heads)
		sc.sum = make([]float32, T*a.heads)
		sc.acc = make([]float32, T*a.heads*a.dim)
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
	if err := a.prepare(out, qg, k, v, T, pos0, l, cache, sc); err != nil {
		return err
	}
	if T <= attnSplitT {
		a.attendSplit(out, qg, 0, T, T, pos0, attnSplitOf(pos0+T), cache, sc)
	} else {
		sc.body = attnBody{a: a, sc: sc, out: out, qg: qg, T: T, pos0: pos0, cache: cache}
		sc.body.qblocks = (T + attnQBlock - 1) / attnQBlock
		run(sc.Runner, a.kvHeads*sc.body.qblocks, 1, &sc.body)
	}
	sc.body = attnBody{} // drop the references to the caller's buffers
	return nil
}

// attnSplit is how a decode call cuts its positions: into spans of span positions (the
// last shorter).
type attnSplit struct{ spans, span int }

// attnSplitOf returns the split of a call whose last token sits at position end−1:
// about one span per attnSplitLen positions, at most attnMaxSplits, each a whole number
// of tiles. It depends on end alone, so that a token's sum runs in the same order
// whichever call computes it.
func attnSplitOf(end int) attnSplit {
	n := min(attnMaxSplits, max(1, end/attnSplitLen))
	span := (end + n - 1) / n
	span = (span + attnBlock - 1) / attnBlock * attnBlock
	return attnSplit{(end + span - 1) / span, span}
}

// prepare checks a call's buffers and cache, then forms the T tokens' queries (normed,
// roped, scaled; quantised for an integer cache) in the scratch and appends their keys
// and values to the cache.
func (a *Attention) prepare(out, qg, k, v []float32, T, pos0 int, l *Layer, cache *KVCache, sc *AttentionScratch) error {
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
	q4 := cache.prec == backend.KVQ4
	sc.qb, sc.ql = qHead(D), qLanes*qVectors(D)
	for t := 0; t < T; t++ {
		a.ropeTable(sc, pos0+t)
		for h := 0; h < H; h++ {
			q := sc.q[(t*H+h)*D : (t*H+h+1)*D]
			RMSNorm(q, qg[(t*H+h)*2*D:(t*H+h)*2*D+D], l.QNorm, a.eps)
			a.rope(q, sc)
			scal(q, a.scale)
			if cache.integer() {
				i := t*H + h
				quantQuery(sc.qc[i*sc.qb:(i+1)*sc.qb], sc.qs[i*sc.ql:(i+1)*sc.ql], sc.qcorr[i*sc.ql:(i+1)*sc.ql], q, q4)
			}
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
	return nil
}

// attendSplit runs the decode form for tokens t0 ≤ t < t1 (at most attnSplitT) of a
// call of T tokens from pos0, whose queries prepare formed: per KV group and span of
// sp a partial softmax, then their merge into out. Each token attends to the positions
// up to its own.
func (a *Attention) attendSplit(out, qg []float32, t0, t1, T, pos0 int, sp attnSplit, cache *KVCache, sc *AttentionScratch) {
	sc.body = attnBody{a: a, sc: sc, out: out, qg: qg, T: T, pos0: pos0, cache: cache, spans: sp.spans, span: sp.span, t0: t0, t1: t1}
	run(sc.Runner, a.kvHeads*sp.spans, 1, &sc.body)
	sc.merge = attnMerge{a: a, sc: sc, out: out, qg: qg, spans: sp.spans, t0: t0, t1: t1}
	run(sc.Runner, (t1-t0)*a.heads, 1, &sc.merge)
	sc.merge = attnMerge{}
}

// attnBody runs work items [lo, hi): in decode (spans > 0) item i is span i mod spans of
// KV group i / spans, writing that span's partial softmax; in prefill it is a block of
// tokens of a KV group, the last (longest) blocks first, writing the output. Items share
// only read-only inputs.
type attnBody struct {
	a       *Attention
	sc      *AttentionScratch
	out, qg []float32
	T, pos0 int
	cache   *KVCache
	spans   int // decode: spans per KV group, of span positions (the last shorter)
	span    int
	t0, t1  int // decode: the tokens attended
	qblocks int // prefill: token blocks per KV group
}

func (b *attnBody) Run(lo, hi int) {
	a, sc := b.a, b.sc
	H, D, rep, KV := a.heads, a.dim, a.rep, a.kvHeads
	w := sc.work(a)
	defer sc.release(w)
	for i := lo; i < hi; i++ {
		if b.spans > 0 {
			// The partials of token t at (g·spans + s)·nt·rep + (t − t0)·rep.
			g, s, nt := i/b.spans, i%b.spans, b.t1-b.t0
			base := ((g*b.spans+s)*nt - b.t0) * rep
			a.attendRange(w, sc, g, b.t0, b.t1, b.pos0, s*b.span, min((s+1)*b.span, b.pos0+b.t1), b.cache,
				sc.pm, sc.psum, sc.pacc, base, rep, true)
			continue
		}
		qb, g := b.qblocks-1-i/KV, i%KV
		t0, t1 := qb*attnQBlock, min((qb+1)*attnQBlock, b.T)
		a.attendRange(w, sc, g, t0, t1, b.pos0, 0, b.pos0+t1, b.cache, sc.m, sc.sum, sc.acc, g*rep, H, false)
		for t := t0; t < t1; t++ {
			for r := 0; r < rep; r++ {
				h := g*rep + r
				qi := t*H + h
				a.finish(b.out[qi*D:(qi+1)*D], b.qg[(t*H+h)*2*D+D:(t*H+h+1)*2*D], sc.acc[qi*D:(qi+1)*D], 1/sc.sum[qi])
			}
		}
	}
}

// finish writes one head's output: the normalised weighted values times the gate's
// sigmoid.
func (a *Attention) finish(o, gate, acc []float32, inv float32) { gateMul(o, gate, acc, inv) }

// attnMerge combines the spans' partial softmaxes of (token, head) pairs [lo, hi) and
// writes their outputs.
type attnMerge struct {
	a       *Attention
	sc      *AttentionScratch
	out, qg []float32
	spans   int
	t0, t1  int // the tokens merged: pair i is token t0 + i/Heads
}

func (b *attnMerge) Run(lo, hi int) {
	a, sc := b.a, b.sc
	H, D, rep := a.heads, a.dim, a.rep
	nt := b.t1 - b.t0
	for i := lo; i < hi; i++ {
		t, h := b.t0+i/H, i%H
		g, r := h/rep, h%rep
		first := (g*b.spans*nt+t-b.t0)*rep + r // span s at first + s·nt·rep
		stride := nt * rep
		mx := negInf
		for s := 0; s < b.spans; s++ {
			mx = max(mx, sc.pm[first+s*stride])
		}
		ws := sc.mw[i*attnMaxSplits : i*attnMaxSplits+b.spans]
		var den float32
		for s := range ws {
			j := first + s*stride
			if sc.pm[j] == negInf { // a span past this token: nothing in it
				ws[s] = 0
				continue
			}
			ws[s] = expf32(sc.pm[j] - mx)
			den += ws[s] * sc.psum[j]
		}
		o := b.out[(t*H+h)*D : (t*H+h+1)*D]
		clear(o)
		scaleAddRows(o, 1, ws, sc.pacc[first*D:], stride*D)
		a.finish(o, b.qg[(t*H+h)*2*D+D:(t*H+h+1)*2*D], o, 1/den)
	}
}

// ropeTable fills the scratch's cos/sin table of position pos.
func (a *Attention) ropeTable(sc *AttentionScratch, pos int) { a.RopeTable(sc.cos, sc.sin, pos) }

// RopeTable writes the cosines and sines of position pos's RoPE angles into cos and sin,
// RopeDims/2 of each: what the attention rotates the pairs (i, i+RopeDims/2) of each
// query and key head by, for a backend that applies RoPE itself. The angle is formed in
// float64 because pos·θ reaches 10⁵ radians in a long context, where float32 keeps only
// hundredths.
func (a *Attention) RopeTable(cos, sin []float32, pos int) {
	for i, f := range a.invFreq {
		s, c := math.Sincos(float64(pos) * f)
		cos[i], sin[i] = float32(c), float32(s)
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

// attendRange runs the queries of KV group g of tokens [t0, t1) over cache positions
// [lo, hi) with an online softmax, each token seeing only the positions up to its own.
// Token t's state for query head r of the group is m[j], sum[j], acc[j·D:(j+1)·D] with
// j = base + t·stride + r; it starts empty (a token that sees none of the span keeps
// m = −Inf). Each tile is decoded once and used by every query of the range. A query's
// arithmetic depends only on its own position and the span, not on t0, t1 or T.
//
// With decode set (a few tokens), an fp16 cache's keys and values are used where they
// lie by dot6F16 and axpy6F16 where the kernel set has them, rather than widened into the
// tile first: a decode step reads each row once. Prefill widens them once per tile for
// all its tokens. Both give the same results (the halves widen exactly, and the same
// kernel bodies do the sums).
//
// An int8 or q4 cache's keys are never widened: every token, prefill or decode, scores
// them in integers against its quantised queries (scoreTile). Their values are read as
// codes by axpy6Int8 and axpy6Q4 where the kernel set has them, else widened into the
// tile, with the same bits either way.
func (a *Attention) attendRange(w *attnWork, sc *AttentionScratch, g, t0, t1, pos0, lo, hi int, cache *KVCache,
	m, sum, acc []float32, base, stride int, decode bool) {
	D, rep := a.dim, a.rep
	fused := decode && cache.prec == backend.KVFloat16 && a.six() && kern.dot6F16 != nil
	integer := cache.integer()
	// Six heads a KV head read an integer cache's values where they lie, as fp16's.
	codeValues := integer && a.six() &&
		(cache.prec == backend.KVInt8 && kern.axpy6Int8 != nil || cache.prec == backend.KVQ4 && kern.axpy6Q4 != nil)
	for t := t0; t < t1; t++ {
		j := base + t*stride
		for r := 0; r < rep; r++ {
			m[j+r], sum[j+r] = negInf, 0
		}
		clear(acc[j*D : (j+rep)*D])
	}
	for pi := range cache.pages {
		p := &cache.pages[pi]
		if p.start >= hi {
			break
		}
		if p.start+p.n <= lo {
			continue
		}
		pend := min(p.start+p.n, hi)
		for b0 := max(p.start, lo); b0 < pend; b0 += attnBlock {
			b1 := min(b0+attnBlock, pend)
			var kb, vb []float32
			var k16, v16 []uint16
			var ct codeTile
			switch {
			case fused:
				k16, v16 = cache.rows16(p, g, b0-p.start, b1-b0)
			case integer:
				ct = cache.codes(p, g, b0-p.start, b1-b0)
				if !codeValues {
					vb = cache.values(p, g, b0-p.start, b1-b0, w.vbuf)
				}
			default:
				kb, vb = cache.block(p, g, b0-p.start, b1-b0, w.kbuf, w.vbuf)
			}
			for t := max(t0, b0-pos0); t < t1; t++ {
				n := min(b1, pos0+t+1) - b0
				j := base + t*stride
				qh := (t*a.heads + g*rep) * D
				if integer {
					a.scoreTile(w.s, sc, t, g, n, ct, cache.prec == backend.KVQ4)
				}
				a.attendBlock(w, sc.q[qh:qh+rep*D], n, kb, vb, k16, v16, &ct, m[j:j+rep], sum[j:j+rep], acc[j*D:(j+rep)*D])
			}
		}
	}
}

// scoreTile writes the scores of token t's queries of KV group g against the n keys of
// kt to s (rep × attnBlock), from the quantised queries (integer scoring, attnint.go).
func (a *Attention) scoreTile(s []float32, sc *AttentionScratch, t, g, n int, kt codeTile, q4 bool) {
	i := t*a.heads + g*a.rep
	codes, qs, corr := sc.qc[i*sc.qb:], sc.qs[i*sc.ql:], sc.qcorr[i*sc.ql:]
	if q4 {
		scoreQ4(s, attnBlock, codes, qs, corr, a.rep, kt.k4, kt.k4s, n, a.dim)
		return
	}
	scoreInt8(s, attnBlock, codes, qs, corr, a.rep, kt.k8, kt.ks, n, a.dim)
}

// blocks returns the scale blocks of a head.
func (a *Attention) blocks() int { return (a.dim + kvBlock - 1) / kvBlock }

// six reports whether the six-row kernels apply: six query heads a KV head (the 27B
// model's groups) and a head dim of whole 32-float chunks.
func (a *Attention) six() bool {
	return a.rep == 6 && a.dim%32 == 0 && kern.dot6F32 != nil && kern.axpy6F32 != nil
}

// attendBlock folds the first n rows of a key/value tile into the running softmax of the
// rep queries qs (rep × HeadDim) whose states are m, sum (rep) and acc (rep × HeadDim).
// The rows are kb, vb (float32) or, when kb is nil, k16, v16 (IEEE halves); when both
// are nil the scores are already in w.s (scoreTile) and the values are vb or, where vb
// is nil too, ct's codes.
func (a *Attention) attendBlock(w *attnWork, qs []float32, n int, kb, vb []float32, k16, v16 []uint16, ct *codeTile, m, sum, acc []float32) {
	D, rep := a.dim, a.rep
	s := w.s[:rep*attnBlock]
	// s[r][p] = q_r·k_p
	switch {
	case kb == nil && k16 == nil:
	case kb == nil:
		kern.dot6F16(s, attnBlock, qs[:6*D], k16[:n*D], n, D)
	case a.six():
		kern.dot6F32(s, attnBlock, qs[:6*D], kb[:n*D], n, D)
	default:
		dotRows(s, attnBlock, qs, D, rep, kb, D, n, D)
	}
	for r := 0; r < rep; r++ {
		sr := s[r*attnBlock : r*attnBlock+n]
		bm := maxf(sr)
		ar := acc[r*D : (r+1)*D]
		if bm > m[r] {
			if m[r] != negInf {
				// Weights under e^−50 are flushed, as in decayWeight: they would only
				// breed subnormals in the accumulators.
				var corr float32
				if d := m[r] - bm; d >= -50 {
					corr = expf32(d)
				}
				sum[r] *= corr
				scal(ar, corr)
			}
			m[r] = bm
		}
		sum[r] += expSub(sr, m[r])
	}
	// acc_r += Σ_p w_rp·v_p: each value row read once for the six heads where the
	// kernels apply, else once per head (from L1) with the accumulator in registers.
	switch {
	case kb == nil && k16 != nil:
		kern.axpy6F16(acc[:6*D], s, attnBlock, v16[:n*D], n, D)
	case vb != nil && a.six():
		kern.axpy6F32(acc[:6*D], s, attnBlock, vb[:n*D], n, D)
	case vb == nil && ct.v8 != nil:
		kern.axpy6Int8(acc[:6*D], s, attnBlock, ct.v8[:n*D], ct.vs[:n*a.blocks()], n, D)
	case vb == nil && ct.v4 != nil:
		// The scales widened once per tile (exactly), not once per block in the kernel.
		vs := w.vscale[:n*a.blocks()]
		f16ToF32s(vs, ct.v4s)
		kern.axpy6Q4(acc[:6*D], s, attnBlock, ct.v4[:16*n*a.blocks()], vs, n, D)
	default:
		for r := 0; r < rep; r++ {
			scaleAddRows(acc[r*D:(r+1)*D], 1, s[r*attnBlock:r*attnBlock+n], vb, D)
		}
	}
}
