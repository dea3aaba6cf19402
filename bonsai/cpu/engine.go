package cpu

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// New returns the pure-Go backend.
func New() backend.Backend { return cpuBackend{} }

type cpuBackend struct{}

func (cpuBackend) Name() string { return "cpu" }

// errForeign is returned for a state of another engine.
var errForeign = errors.New("state belongs to another engine")

// prefillChunk is the number of tokens one pass of the layers processes at once: the
// weights are read once per chunk, and the chunked GDN form works on this many tokens.
const prefillChunk = 64

func (cpuBackend) Load(ctx context.Context, m backend.Model, opt backend.LoadOptions) (backend.Engine, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, ok := m.(*qwen35.Weights)
	if !ok {
		return nil, fmt.Errorf("the cpu backend runs %s models, not %s", qwen35.Architecture, m.Architecture())
	}
	c := &w.Config
	e := &cpuEngine{
		w:       w,
		cfg:     c,
		plan:    w.Plan(),
		pool:    parallel.NewPool(max(opt.Threads, 1)),
		gdn:     qwen35.NewGDN(c),
		attn:    qwen35.NewAttention(c),
		int8:    opt.Activations == backend.ActivationsInt8,
		profile: opt.Profile,
		rot:     map[int]*hadamard.Rotation{},
	}
	sites := []*qwen35.Site{&e.plan.Head}
	for i := range e.plan.Layers {
		lp := &e.plan.Layers[i]
		sites = append(sites, &lp.In, &lp.Out, &lp.FFNIn, &lp.FFNOut)
	}
	for _, width := range append([]int{e.plan.EmbeddingWidth}, siteWidths(sites)...) {
		r := w.Rotation(width)
		if r == nil {
			return nil, fmt.Errorf("the model has no rotation of width %d", width)
		}
		e.rot[width] = r
	}
	return e, nil
}

func siteWidths(sites []*qwen35.Site) []int {
	var ws []int
	for _, s := range sites {
		ws = append(ws, s.Width)
	}
	return ws
}

type cpuEngine struct {
	w    *qwen35.Weights
	cfg  *qwen35.Config
	plan *qwen35.Plan
	pool *parallel.Pool
	gdn  *qwen35.GDN
	attn *qwen35.Attention

	rot map[int]*hadamard.Rotation // by width, every width of the plan

	// chunkedGDN selects the chunked GDN form for prefill. The chunked form agrees with
	// the step form but does more scalar arithmetic per token, so on the CPU prefill
	// walks the steps unless a test asks otherwise.
	chunkedGDN bool

	// int8 quantises each activation site once to int8 and runs the integer kernels
	// (the default); otherwise the products run in float32.
	int8 bool
	// profile accounts the time of each kind of operation (a few clock reads per op).
	profile bool
}

func (e *cpuEngine) Close() error {
	e.pool.Close()
	return nil
}

// cpuState is one sequence: its recurrent state and the scratch buffers of a forward
// pass, allocated once so that a decode step allocates nothing.
type cpuState struct {
	e   *cpuEngine
	opt backend.StateOptions
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

	// The int8 sites: each activation quantised once for every matrix that reads it.
	q8Embed, q8Inner, q8Attn, q8FF *ternary.Q8Batch

	prod    productJob
	rows    rowScratch // the float32 prefill products' decoded weight rows
	rotate  rotateJob
	decoded []float32 // one embedding row

	prof    backend.OpProfile
	opStart time.Time
}

func (e *cpuEngine) NewState(opt backend.StateOptions) (backend.State, error) {
	c := e.cfg
	if opt.ContextSize <= 0 {
		return nil, fmt.Errorf("context size %d must be positive", opt.ContextSize)
	}
	if !opt.KVCache.Valid() {
		return nil, fmt.Errorf("unknown KV precision %v", opt.KVCache)
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
	s := &scratch{
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
		q8Embed: ternary.NewQ8Batch(c.Embedding, chunk),
		q8Inner: ternary.NewQ8Batch(c.InnerSize, chunk),
		q8Attn:  ternary.NewQ8Batch(c.AttentionWidth(), chunk),
		q8FF:    ternary.NewQ8Batch(c.FeedForward, chunk),
	}
	if !e.int8 && chunk > 1 {
		// Float32 prefill decodes each weight row once per chunk into a row of K floats:
		// one per goroutine that can run a product at once (the pool's workers, the
		// caller among them), so that a chunk allocates nothing.
		s.rows = newRowScratch(e.pool.Workers(), max(c.Embedding, c.InnerSize, c.AttentionWidth(), c.FeedForward))
	}
	s.prod.rows = &s.rows
	return s
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

// Layers returns the number of decoder layers (backend.State).
func (st *cpuState) Layers() int { return len(st.gdn) }

// Layer returns the view of layer i's state: a GDN layer's convolution and recurrent
// states, or an attention layer's KV cache.
func (st *cpuState) Layer(i int) backend.Layer {
	if st.kv[i] != nil {
		return backend.Layer{KV: st.kv[i]}
	}
	return backend.Layer{Recurrent: [][]float32{st.gdn[i].Conv, st.gdn[i].S}}
}

// SetLen sets the tokens held, after a load wrote every layer.
func (st *cpuState) SetLen(n int) error {
	if n < 0 || n > st.opt.ContextSize {
		return fmt.Errorf("%w: %d tokens, the context holds %d", backend.ErrContextFull, n, st.opt.ContextSize)
	}
	st.pos = n
	return nil
}

// CopyFrom makes st a copy of o, a state of the same engine, reusing st's memory.
func (st *cpuState) CopyFrom(o backend.State) error {
	src, ok := o.(*cpuState)
	if !ok || src.e != st.e {
		return errForeign
	}
	if st.s == nil || src.s == nil {
		return backend.ErrClosed
	}
	if src.opt != st.opt {
		return errors.New("states of different sizes")
	}
	st.pos = src.pos
	for i := range src.gdn {
		if src.gdn[i] != nil {
			st.gdn[i].CopyFrom(src.gdn[i])
		}
		if src.kv[i] != nil {
			st.kv[i].CopyFrom(src.kv[i])
		}
	}
	return nil
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
	for _, r := range s.rows.rows {
		n += 4 * int64(len(r))
	}
	return n
}

func (st *cpuState) Close() error {
	st.gdn, st.kv, st.s = nil, nil, nil
	return nil
}

// Forward runs the batch one sequence after another, each in chunks of up to
// prefillChunk tokens (the weights read once per chunk).
func (e *cpuEngine) Forward(ctx context.Context, batch []backend.Sequence) error {
	for i := range batch {
		if err := e.forward(ctx, &batch[i]); err != nil {
			return err
		}
	}
	return nil
}

func (e *cpuEngine) forward(ctx context.Context, seq *backend.Sequence) error {
	st, ok := seq.State.(*cpuState)
	if !ok || st.e != e {
		return errForeign
	}
	if st.s == nil {
		return backend.ErrClosed
	}
	c := e.cfg
	tokens, logits, all := seq.Tokens, seq.Out, seq.Logits == backend.LogitsAll
	if seq.Logits == backend.LogitsNone {
		logits = nil
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

// forwardChunk runs T ≤ chunk tokens through the plan's layers. out, when not nil,
// receives the logits of every token (all) or of the last one.
func (e *cpuEngine) forwardChunk(st *cpuState, tokens []int32, out []float32, all bool) error {
	c, p, s := e.cfg, e.plan, st.s
	T := len(tokens)
	E := p.EmbeddingWidth
	e.begin(s)

	// Embedding: dequantise the stored row and rotate it back (transform, then signs).
	emb := p.Embedding
	for t, tok := range tokens {
		x := s.x[t*E : (t+1)*E]
		if err := emb.Format.Decode(x, emb.Row(int(tok))); err != nil {
			return fmt.Errorf("%s row %d: %w", emb.Name, tok, err)
		}
	}
	e.lap(s, &s.prof.Other)
	rotEmbed := e.rot[E]
	for t := range T {
		rotEmbed.Inverse(s.x[t*E : (t+1)*E])
	}
	e.lap(s, &s.prof.Transforms)

	for li := range p.Layers {
		lp := &p.Layers[li]
		l, in := lp.Layer, &lp.In
		e.normRotate(s, T, in, len(in.Unrotated) > 0)
		q8 := e.quantize(s, s.hr, T, s.q8Embed)
		// The mixer's inputs, in the order of the site's products.
		var outs, raw [][]float32
		switch lp.Mixer {
		case qwen35.MixerAttention:
			outs = [][]float32{s.qg, s.k, s.v}
		default:
			outs, raw = [][]float32{s.qkv, s.z}, [][]float32{s.alpha, s.beta}
		}
		s.prod.reset(T)
		for i, m := range in.Products {
			s.prod.ternary(m, s.hr, q8, outs[i][:T*m.N])
		}
		for i, m := range in.Unrotated {
			s.prod.bf16(m, s.h, raw[i][:T*m.N])
		}
		e.run(s, &s.prod)
		mix := s.mix[:T*lp.Out.Width]
		switch lp.Mixer {
		case qwen35.MixerAttention:
			qn, kn := in.Products[0].N, in.Products[1].N
			if err := e.attn.Forward(mix, s.qg[:T*qn], s.k[:T*kn], s.v[:T*kn], T, st.pos, l, st.kv[li], s.attn); err != nil {
				return fmt.Errorf("layer %d: %w", li, err)
			}
			e.lap(s, &s.prof.Attention)
		default:
			qkvn, inner, nv := in.Products[0].N, in.Products[1].N, in.Unrotated[0].N
			e.gdn.Forward(mix, s.qkv[:T*qkvn], s.z[:T*inner], s.alpha[:T*nv], s.beta[:T*nv], T, l, st.gdn[li], s.gdn, e.chunkedGDN && T > 1)
			e.lap(s, &s.prof.GDN)
		}
		e.residualSite(s, &lp.Out, mix, T)

		e.normRotate(s, T, &lp.FFNIn, false)
		q8 = e.quantize(s, s.hr, T, s.q8Embed)
		gate, up := lp.FFNIn.Products[0], lp.FFNIn.Products[1]
		s.prod.reset(T)
		s.prod.ternary(gate, s.hr, q8, s.gate[:T*gate.N])
		s.prod.ternary(up, s.hr, q8, s.up[:T*up.N])
		e.run(s, &s.prod)
		act := s.gate[:T*gate.N]
		qwen35.SwiGLU(act, act, s.up[:T*up.N])
		e.lap(s, &s.prof.Other)
		e.residualSite(s, &lp.FFNOut, act, T)
	}
	st.pos += T
	s.prof.Tokens += T

	if out == nil {
		e.lap(s, &s.prof.Other)
		return nil
	}
	// The head: only the rows whose logits were asked for.
	head := &p.Head
	first := 0
	if !all {
		first = T - 1
	}
	rows := T - first
	for t := first; t < T; t++ {
		hr := s.hr[(t-first)*E : (t-first+1)*E]
		qwen35.RMSNorm(hr, s.x[t*E:(t+1)*E], head.Norm, float32(c.RMSEpsilon))
	}
	e.lap(s, &s.prof.Other)
	e.rotateRows(s, s.hr[:rows*E], rows, e.rot[head.Width])
	q8 := e.quantize(s, s.hr[:rows*E], rows, s.q8Embed)
	s.prod.reset(rows)
	s.prod.ternary(head.Products[0], s.hr[:rows*E], q8, out[:rows*c.Vocab])
	e.run(s, &s.prod)
	return nil
}

// residualSite runs a residual site over the T rows of x (the mixer's or SwiGLU's
// output, rotated in place): its one product, added to the residual stream.
func (e *cpuEngine) residualSite(s *scratch, site *qwen35.Site, x []float32, T int) {
	E := e.plan.EmbeddingWidth
	e.rotateRows(s, x, T, e.rot[site.Width])
	q8 := e.quantize(s, x, T, e.q8Of(s, site.Width))
	s.prod.reset(T)
	s.prod.ternary(site.Products[0], x, q8, s.delta[:T*E])
	e.run(s, &s.prod)
	addInto(s.x[:T*E], s.delta[:T*E])
}

// q8Of returns the int8 site buffer for activations of width w.
func (e *cpuEngine) q8Of(s *scratch, w int) *ternary.Q8Batch {
	switch w {
	case s.q8Inner.K:
		return s.q8Inner
	case s.q8Attn.K:
		return s.q8Attn
	case s.q8FF.K:
		return s.q8FF
	}
	return s.q8Embed
}

// Profile returns the time the state's forward passes spent per kind of operation.
func (st *cpuState) Profile() backend.OpProfile {
	if st.s == nil {
		return backend.OpProfile{}
	}
	return st.s.prof
}

// ResetProfile zeroes the accounting.
func (st *cpuState) ResetProfile() {
	if st.s != nil {
		st.s.prof = backend.OpProfile{}
	}
}

// begin and lap account the time since the previous mark to one kind of operation.
func (e *cpuEngine) begin(s *scratch) {
	if e.profile {
		s.opStart = time.Now()
	}
}

func (e *cpuEngine) lap(s *scratch, into *time.Duration) {
	if e.profile {
		now := time.Now()
		*into += now.Sub(s.opStart)
		s.opStart = now
	}
}

// quantize prepares the int8 site of T rows of x, or returns nil in float32 mode.
func (e *cpuEngine) quantize(s *scratch, x []float32, T int, q8 *ternary.Q8Batch) *ternary.Q8Batch {
	if !e.int8 {
		return nil
	}
	q8.Quantize(x, T)
	return q8
}

// normRotate computes h = rmsnorm(x)·gain for the chunk and hr = R·h, the shared input of
// the linears that read the normed residual. keepH keeps h un-rotated for the GDN
// alpha/beta projections, which are not folded.
func (e *cpuEngine) normRotate(s *scratch, T int, site *qwen35.Site, keepH bool) {
	E, gain := site.Width, site.Norm
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
	e.lap(s, &s.prof.Other)
	e.rotateRows(s, s.hr[:T*E], T, e.rot[E])
}

// rotateRows rotates each of the T rows of x in place, in parallel over the rows.
func (e *cpuEngine) rotateRows(s *scratch, x []float32, T int, r *hadamard.Rotation) {
	if T == 1 {
		r.Forward(x)
	} else {
		s.rotate = rotateJob{x: x, width: r.Width(), r: r}
		e.pool.For(T, 1, &s.rotate)
	}
	e.lap(s, &s.prof.Transforms)
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

func (e *cpuEngine) run(s *scratch, j *productJob) {
	// A grain of 16 rows keeps a chunk's weights (≥ 16 × 1.3 KB) worth a claim.
	e.pool.For(j.total, 16, j)
	e.lap(s, &s.prof.Ternary)
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
	rows  *rowScratch // decoded rows for the float32 matrix-matrix products
}

// rowScratch is a set of K-wide rows, one per goroutine that may run a productJob's
// chunks at once: a pool's For runs a loop on at most Workers goroutines (the helpers it
// hands the loop to and the caller), so a free row is always found.
type rowScratch struct {
	busy []atomic.Bool
	rows [][]float32
}

func newRowScratch(n, k int) rowScratch {
	r := rowScratch{busy: make([]atomic.Bool, n), rows: make([][]float32, n)}
	for i := range r.rows {
		r.rows[i] = make([]float32, k)
	}
	return r
}

// get claims a free row, or returns −1 and nil when none is (MatMulRange then allocates
// its own: correct, only slower).
func (r *rowScratch) get() (int, []float32) {
	for i := range r.busy {
		if r.busy[i].CompareAndSwap(false, true) {
			return i, r.rows[i]
		}
	}
	return -1, nil
}

func (r *rowScratch) put(i int) {
	if i >= 0 {
		r.busy[i].Store(false)
	}
}

type product struct {
	tern  *qwen35.Matrix
	bf    *qwen35.BF16Matrix
	q8    *ternary.Q8Batch // the int8 site, or nil for the float32 kernels
	x, y  []float32
	first int // global index of the product's first row
	rows  int
}

func (j *productJob) reset(t int) { j.t, j.n, j.total = t, 0, 0 }

func (j *productJob) ternary(m *qwen35.Matrix, x []float32, q8 *ternary.Q8Batch, y []float32) {
	j.ps[j.n] = product{tern: m, x: x, q8: q8, y: y, first: j.total, rows: m.N}
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
		case p.q8 != nil && j.t == 1:
			ternary.MatVecQ8Range(p.tern.Format, p.tern.Data, p.tern.K, p.q8.Row(0), p.y, a, b)
		case p.q8 != nil:
			ternary.MatMulQ8Range(p.tern.Format, p.tern.Data, p.tern.K, p.tern.N, p.q8, j.t, p.y, a, b)
		case p.tern != nil && j.t == 1:
			ternary.MatVecRange(p.tern.Format, p.tern.Data, p.tern.K, p.x, p.y, a, b)
		case p.tern != nil:
			ri, row := j.rows.get()
			ternary.MatMulRange(p.tern.Format, p.tern.Data, p.tern.K, p.tern.N, p.x, j.t, p.y, a, b, row)
			j.rows.put(ri)
		default:
			k, n := p.bf.K, p.bf.N
			for t := 0; t < j.t; t++ {
				p.bf.MulVecRange(p.y[t*n:(t+1)*n], p.x[t*k:(t+1)*k], a, b)
			}
		}
	}
}
