package bonsai

import (
	"context"
	"fmt"

	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// CPU returns the pure-Go backend. It runs on any platform Go supports, reads the ternary
// weights in place from the mapped file, and spreads the large matrix products over a
// pool of worker goroutines started once per model.
func CPU() Backend { return cpuBackend{} }

type cpuBackend struct{}

func (cpuBackend) Name() string { return "cpu" }

// prefillChunk is the number of tokens one pass of the layers processes at once: the
// weights are read once per chunk, and the chunked GDN form works on this many tokens.
const prefillChunk = 64

func (cpuBackend) Load(ctx context.Context, w *qwen35.Weights, opt LoadOptions) (Engine, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &w.Config
	e := &cpuEngine{
		w:    w,
		cfg:  c,
		pool: parallel.NewPool(max(opt.Threads, 1)),
		gdn:  qwen35.NewGDN(c),
		attn: qwen35.NewAttention(c),
	}
	e.rotEmbed = w.Rotation(c.Embedding)
	e.rotInner = w.Rotation(c.InnerSize)
	e.rotAttn = w.Rotation(c.AttentionWidth())
	e.rotFF = w.Rotation(c.FeedForward)
	for _, r := range []*hadamard.Rotation{e.rotEmbed, e.rotInner, e.rotAttn, e.rotFF} {
		if r == nil {
			return nil, fmt.Errorf("bonsai: cpu: the model has no rotation for one of its widths")
		}
	}
	return e, nil
}

type cpuEngine struct {
	w    *qwen35.Weights
	cfg  *qwen35.Config
	pool *parallel.Pool
	gdn  *qwen35.GDN
	attn *qwen35.Attention

	rotEmbed, rotInner, rotAttn, rotFF *hadamard.Rotation

	// chunkedGDN selects the chunked GDN form for prefill. The chunked form agrees with
	// the step form but does more scalar arithmetic per token, so on the CPU prefill
	// walks the steps unless a test asks otherwise.
	chunkedGDN bool
}

func (e *cpuEngine) Close() error {
	e.pool.Close()
	return nil
}

// cpuState is one sequence: its recurrent state and the scratch buffers of a forward
// pass, allocated once so that a decode step allocates nothing.
type cpuState struct {
	e   *cpuEngine
	opt StateOptions
	pos int

	gdn []*qwen35.GDNState // per layer; nil for attention layers
	kv  []*qwen35.KVCache  // per layer; nil for GDN layers

	s *scratch
}

// scratch holds a chunk's activations, row-major by token.
type scratch struct {
	chunk int

	x, h, hr, delta []float32 // T × Embedding
	qkv, z          []float32 // T × QKVWidth, T × InnerSize
	alpha, beta     []float32 // T × VHeads
	mix             []float32 // T × max(InnerSize, AttentionWidth)
	qg, k, v        []float32 // T × 2·Heads·HeadDim, T × KVHeads·HeadDim (×2)
	gate, up        []float32 // T × FeedForward
	logits          []float32 // Vocab (the last token's, before it is copied out)

	gdn  *qwen35.GDNScratch
	attn *qwen35.AttentionScratch

	prod    productJob
	rotate  rotateJob
	decoded []float32 // one embedding row
}

func (e *cpuEngine) NewState(opt StateOptions) (State, error) {
	c := e.cfg
	if opt.ContextSize <= 0 {
		return nil, fmt.Errorf("bonsai: context size %d must be positive", opt.ContextSize)
	}
	st := &cpuState{e: e, opt: opt, gdn: make([]*qwen35.GDNState, c.Layers), kv: make([]*qwen35.KVCache, c.Layers)}
	for i := 0; i < c.Layers; i++ {
		if c.IsAttention(i) {
			st.kv[i] = qwen35.NewKVCache(c.KVHeads, c.HeadDim, opt.KVCache, opt.ContextSize)
		} else {
			st.gdn[i] = e.gdn.NewState()
		}
	}
	st.s = e.newScratch(min(prefillChunk, opt.ContextSize))
	return st, nil
}

func (e *cpuEngine) newScratch(chunk int) *scratch {
	c := e.cfg
	f := func(n int) []float32 { return make([]float32, chunk*n) }
	gs, as := e.gdn.NewScratch(chunk), e.attn.NewScratch(chunk)
	// The GDN heads and the attention KV groups are independent: spread them too.
	gs.Runner, as.Runner = e.pool, e.pool
	return &scratch{
		chunk: chunk,
		x:     f(c.Embedding), h: f(c.Embedding), hr: f(c.Embedding), delta: f(c.Embedding),
		qkv: f(c.QKVWidth()), z: f(c.InnerSize),
		alpha: f(c.VHeads), beta: f(c.VHeads),
		mix: f(max(c.InnerSize, c.AttentionWidth())),
		qg:  f(2 * c.Heads * c.HeadDim), k: f(c.KVHeads * c.HeadDim), v: f(c.KVHeads * c.HeadDim),
		gate: f(c.FeedForward), up: f(c.FeedForward),
		logits:  make([]float32, c.Vocab),
		gdn:     gs,
		attn:    as,
		decoded: make([]float32, c.Embedding),
	}
}

func (st *cpuState) Len() int { return st.pos }

func (st *cpuState) Reset() {
	st.pos = 0
	for i := range st.gdn {
		if st.gdn[i] != nil {
			st.gdn[i].Reset()
		}
		if st.kv[i] != nil {
			st.kv[i].Reset()
		}
	}
}

func (st *cpuState) Clone() (State, error) {
	n, err := st.e.NewState(st.opt)
	if err != nil {
		return nil, err
	}
	c := n.(*cpuState)
	c.pos = st.pos
	for i := range st.gdn {
		if st.gdn[i] != nil {
			c.gdn[i].CopyFrom(st.gdn[i])
		}
		if st.kv[i] != nil {
			c.kv[i].CopyFrom(st.kv[i])
		}
	}
	return c, nil
}

func (st *cpuState) Bytes() int64 {
	var n int64
	for i := range st.gdn {
		if g := st.gdn[i]; g != nil {
			n += 4 * int64(len(g.Conv)+len(g.S))
		}
		if kv := st.kv[i]; kv != nil {
			n += kv.Bytes()
		}
	}
	s := st.s
	for _, b := range [][]float32{s.x, s.h, s.hr, s.delta, s.qkv, s.z, s.alpha, s.beta, s.mix, s.qg, s.k, s.v, s.gate, s.up, s.logits, s.decoded} {
		n += 4 * int64(len(b))
	}
	return n
}

func (st *cpuState) Close() error {
	st.gdn, st.kv, st.s = nil, nil, nil
	return nil
}

func (e *cpuEngine) Forward(ctx context.Context, s State, tokens []int32, logits []float32, all bool) error {
	st, ok := s.(*cpuState)
	if !ok || st.e != e {
		return fmt.Errorf("bonsai: cpu: state belongs to another engine")
	}
	if st.s == nil {
		return fmt.Errorf("bonsai: cpu: state is closed")
	}
	c := e.cfg
	if len(tokens) == 0 {
		return nil
	}
	if st.pos+len(tokens) > st.opt.ContextSize {
		return fmt.Errorf("%w: %d tokens held + %d new > context size %d", ErrContextFull, st.pos, len(tokens), st.opt.ContextSize)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= c.Vocab {
			return fmt.Errorf("bonsai: token %d at index %d out of range [0, %d)", t, i, c.Vocab)
		}
	}
	if logits != nil {
		want := c.Vocab
		if all {
			want *= len(tokens)
		}
		if len(logits) < want {
			return fmt.Errorf("bonsai: logits buffer holds %d values, want %d", len(logits), want)
		}
	}
	for done := 0; done < len(tokens); {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(st.s.chunk, len(tokens)-done)
		var out []float32
		switch {
		case logits == nil:
		case all:
			out = logits[done*c.Vocab : (done+n)*c.Vocab]
		case done+n == len(tokens):
			out = logits[:c.Vocab]
		}
		if err := e.forwardChunk(st, tokens[done:done+n], out, all); err != nil {
			return err
		}
		done += n
	}
	return nil
}

// forwardChunk runs T ≤ chunk tokens through every layer. out, when not nil, receives the
// logits of every token (all) or of the last one.
func (e *cpuEngine) forwardChunk(st *cpuState, tokens []int32, out []float32, all bool) error {
	c, w, s := e.cfg, e.w, st.s
	T := len(tokens)
	E := c.Embedding

	// Embedding: dequantise the stored row and rotate it back (transform, then signs).
	emb := &w.TokenEmbedding
	for t, tok := range tokens {
		x := s.x[t*E : (t+1)*E]
		if err := emb.Format.Decode(x, emb.Row(int(tok))); err != nil {
			return fmt.Errorf("bonsai: %s row %d: %w", emb.Name, tok, err)
		}
		e.rotEmbed.Inverse(x)
	}

	for li := range w.Layers {
		l := &w.Layers[li]
		e.normRotate(s, T, l.AttnNorm, true)
		if l.Attention {
			qn, kn := 2*c.Heads*c.HeadDim, c.KVHeads*c.HeadDim
			s.prod.reset(T)
			s.prod.ternary(&l.Q, s.hr, s.qg[:T*qn])
			s.prod.ternary(&l.K, s.hr, s.k[:T*kn])
			s.prod.ternary(&l.V, s.hr, s.v[:T*kn])
			e.run(&s.prod)
			aw := c.AttentionWidth()
			mix := s.mix[:T*aw]
			if err := e.attn.Forward(mix, s.qg[:T*qn], s.k[:T*kn], s.v[:T*kn], T, st.pos, l, st.kv[li], s.attn); err != nil {
				return fmt.Errorf("bonsai: layer %d: %w", li, err)
			}
			e.rotateRows(s, mix, T, e.rotAttn)
			s.prod.reset(T)
			s.prod.ternary(&l.O, mix, s.delta[:T*E])
			e.run(&s.prod)
		} else {
			qkvn, inner := c.QKVWidth(), c.InnerSize
			s.prod.reset(T)
			s.prod.ternary(&l.QKV, s.hr, s.qkv[:T*qkvn])
			s.prod.ternary(&l.Gate, s.hr, s.z[:T*inner])
			s.prod.bf16(&l.Alpha, s.h, s.alpha[:T*c.VHeads])
			s.prod.bf16(&l.Beta, s.h, s.beta[:T*c.VHeads])
			e.run(&s.prod)
			mix := s.mix[:T*inner]
			e.gdn.Forward(mix, s.qkv[:T*qkvn], s.z[:T*inner], s.alpha[:T*c.VHeads], s.beta[:T*c.VHeads], T, l, st.gdn[li], s.gdn, e.chunkedGDN && T > 1)
			e.rotateRows(s, mix, T, e.rotInner)
			s.prod.reset(T)
			s.prod.ternary(&l.SSMOut, mix, s.delta[:T*E])
			e.run(&s.prod)
		}
		addInto(s.x[:T*E], s.delta[:T*E])

		e.normRotate(s, T, l.PostAttnNorm, false)
		ff := c.FeedForward
		s.prod.reset(T)
		s.prod.ternary(&l.FFNGate, s.hr, s.gate[:T*ff])
		s.prod.ternary(&l.FFNUp, s.hr, s.up[:T*ff])
		e.run(&s.prod)
		qwen35.SwiGLU(s.gate[:T*ff], s.gate[:T*ff], s.up[:T*ff])
		e.rotateRows(s, s.gate[:T*ff], T, e.rotFF)
		s.prod.reset(T)
		s.prod.ternary(&l.FFNDown, s.gate[:T*ff], s.delta[:T*E])
		e.run(&s.prod)
		addInto(s.x[:T*E], s.delta[:T*E])
	}
	st.pos += T

	if out == nil {
		return nil
	}
	// The head: only the rows whose logits were asked for.
	first := 0
	if !all {
		first = T - 1
	}
	rows := T - first
	for t := first; t < T; t++ {
		hr := s.hr[(t-first)*E : (t-first+1)*E]
		qwen35.RMSNorm(hr, s.x[t*E:(t+1)*E], w.OutputNorm, float32(c.RMSEpsilon))
		e.rotEmbed.Forward(hr)
	}
	s.prod.reset(rows)
	s.prod.ternary(&w.Output, s.hr[:rows*E], out[:rows*c.Vocab])
	e.run(&s.prod)
	return nil
}

// normRotate computes h = rmsnorm(x)·gain for the chunk and hr = R·h, the shared input of
// the linears that read the normed residual. keepH keeps h un-rotated for the GDN
// alpha/beta projections, which are not folded.
func (e *cpuEngine) normRotate(s *scratch, T int, gain []float32, keepH bool) {
	E := e.cfg.Embedding
	eps := float32(e.cfg.RMSEpsilon)
	for t := 0; t < T; t++ {
		h, hr := s.h[t*E:(t+1)*E], s.hr[t*E:(t+1)*E]
		if keepH {
			qwen35.RMSNorm(h, s.x[t*E:(t+1)*E], gain, eps)
			copy(hr, h)
		} else {
			qwen35.RMSNorm(hr, s.x[t*E:(t+1)*E], gain, eps)
		}
	}
	e.rotateRows(s, s.hr[:T*E], T, e.rotEmbed)
}

// rotateRows rotates each of the T rows of x in place, in parallel over the rows.
func (e *cpuEngine) rotateRows(s *scratch, x []float32, T int, r *hadamard.Rotation) {
	if T == 1 {
		r.Forward(x)
		return
	}
	s.rotate = rotateJob{x: x, width: r.Width(), r: r}
	e.pool.For(T, 1, &s.rotate)
}

type rotateJob struct {
	x     []float32
	width int
	r     *hadamard.Rotation
}

func (j *rotateJob) Run(lo, hi int) {
	for t := lo; t < hi; t++ {
		j.r.Forward(j.x[t*j.width : (t+1)*j.width])
	}
}

func (e *cpuEngine) run(j *productJob) {
	// A grain of 16 rows keeps a chunk's weights (≥ 16 × 1.3 KB) worth a claim.
	e.pool.For(j.total, 16, j)
}

func addInto(x, d []float32) {
	_ = x[len(d)-1]
	for i, v := range d {
		x[i] += v
	}
}

// productJob is the set of matrix products that read one activation site, run as one
// parallel loop over the concatenated rows of every matrix: one barrier per site, and
// the workers stream each matrix's rows in order.
type productJob struct {
	t     int
	n     int
	total int
	ps    [4]product
}

type product struct {
	tern  *qwen35.Matrix
	bf    *qwen35.BF16Matrix
	x, y  []float32
	first int // global index of the product's first row
	rows  int
}

func (j *productJob) reset(t int) { j.t, j.n, j.total = t, 0, 0 }

func (j *productJob) ternary(m *qwen35.Matrix, x, y []float32) {
	j.ps[j.n] = product{tern: m, x: x, y: y, first: j.total, rows: m.N}
	j.n++
	j.total += m.N
}

func (j *productJob) bf16(m *qwen35.BF16Matrix, x, y []float32) {
	j.ps[j.n] = product{bf: m, x: x, y: y, first: j.total, rows: m.N}
	j.n++
	j.total += m.N
}

func (j *productJob) Run(lo, hi int) {
	for i := 0; i < j.n; i++ {
		p := &j.ps[i]
		a, b := max(lo, p.first)-p.first, min(hi, p.first+p.rows)-p.first
		if a >= b {
			continue
		}
		switch {
		case p.tern != nil && j.t == 1:
			ternary.MatVecRange(p.tern.Format, p.tern.Data, p.tern.K, p.x, p.y, a, b)
		case p.tern != nil:
			ternary.MatMulRange(p.tern.Format, p.tern.Data, p.tern.K, p.tern.N, p.x, j.t, p.y, a, b, nil)
		default:
			k, n := p.bf.K, p.bf.N
			for t := 0; t < j.t; t++ {
				p.bf.MulVecRange(p.y[t*n:(t+1)*n], p.x[t*k:(t+1)*k], a, b)
			}
		}
	}
}
