package cpu

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// New returns the pure-Go backend.
func New(opts ...Option) backend.Backend {
	var b cpuBackend
	for _, o := range opts {
		o(&b)
	}
	return b
}

// An Option configures the backend New returns.
type Option func(*cpuBackend)

// WithWeightFormat stores the model's ternary matrices in format f: those the file holds
// in the other format are transcoded at Load (losslessly; a PQ2_0 matrix holding code 3
// cannot become PTQ1_0, and Load then fails naming it) into memory of the backend's own.
//
// On a machine whose cores cannot decode PTQ1_0's base-3 bytes as fast as memory
// delivers them (few cores, or a fast memory system), a PTQ1_0 file decodes faster as
// PQ2_0: its rows are read 18% larger but with fewer instructions. The file then still
// takes its own memory, mapped or read, beside the transcoded copy; on this project's
// 2-core test machine the 27B's PTQ1_0 file decodes at 0.6–0.8 of its PQ2_0 twin's rate
// natively and at PQ2_0's rate transcoded (README, performance). The results are the
// same bits either way.
func WithWeightFormat(f ternary.Format) Option {
	return func(b *cpuBackend) { b.format, b.transcode = f, true }
}

// WithBatchTiles keeps, beside the weights, a copy of every ternary matrix in the layout
// of the batched kernels ([ternary.Tiles]), made at Load: the forward passes of several
// sequences at once (a batched decode step, a prefill chunk) then skip repacking the
// weights on every pass. It pays where a batch is small: on the 2-core Zen 3 test VM a
// 5120×17408 product of 2 vectors ran 1.5–1.9× and of 4 vectors 1.4–1.5× as fast, of 8
// the same (BenchmarkMatMulQ8Batch, mode=tiles). The copy takes 576 bytes for every 544
// of the weights (7.3 GB for the 27B model), and it is made only with int8 activations;
// one sequence's step reads the weights as ever. The results are the same bits.
func WithBatchTiles() Option {
	return func(b *cpuBackend) { b.tiles = true }
}

type cpuBackend struct {
	format    ternary.Format
	transcode bool
	tiles     bool
}

func (cpuBackend) Name() string { return "cpu" }

// errForeign is returned for a state of another engine.
var errForeign = errors.New("state belongs to another engine")

// prefillChunk is the number of tokens one pass of the layers processes at once: the
// weights are read once per chunk, and the chunked GDN form works on this many tokens.
const prefillChunk = 64

func (b cpuBackend) Load(ctx context.Context, m backend.Model, opt backend.LoadOptions) (backend.Engine, error) {
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
			e.pool.Close()
			return nil, fmt.Errorf("the model has no rotation of width %d", width)
		}
		e.rot[width] = r
	}
	if b.transcode {
		subst, err := transcodeMatrices(ctx, sites, b.format, max(opt.Threads, 1), opt.Progress)
		if err != nil {
			e.pool.Close()
			return nil, err
		}
		e.subst = subst
	}
	if b.tiles && e.int8 {
		tiles, err := tileMatrices(ctx, sites, e.mat, max(opt.Threads, 1), opt.Progress)
		if err != nil {
			e.pool.Close()
			return nil, err
		}
		e.tiles = tiles
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

	// subst holds the matrices transcoded at Load (WithWeightFormat), by the plan's
	// matrix they stand for; nil when none were.
	subst map[*qwen35.Matrix]*qwen35.Matrix
	// tiles holds the batched kernels' copies of the matrices (WithBatchTiles), by the
	// matrix the products read; nil without it.
	tiles map[*qwen35.Matrix]*ternary.Tiles

	// chunkedGDN selects the chunked GDN form for prefill. The chunked form agrees with
	// the step form but does more scalar arithmetic per token, so on the CPU prefill
	// walks the steps unless a test asks otherwise.
	chunkedGDN bool

	// int8 quantises each activation site once to int8 and runs the integer kernels
	// (the default); otherwise the products run in float32.
	int8 bool
	// profile accounts the time of each kind of operation (a few clock reads per op).
	profile bool

	// free holds the chunk scratches no Forward is using: one is taken per call, so
	// there are as many as calls have ever run at once, and a steady stream of calls
	// allocates none.
	mu   sync.Mutex
	free []*scratch
}

func (e *cpuEngine) Close() error {
	e.pool.Close()
	e.mu.Lock()
	e.free = nil
	e.mu.Unlock()
	return nil
}

// cpuState is one sequence: its position and recurrent state. The activations of a
// forward pass live in the engine's chunk scratches, shared by all its sequences.
type cpuState struct {
	e      *cpuEngine
	opt    backend.StateOptions
	pos    int
	closed bool

	gdn []*qwen35.GDNState // per layer; nil for attention layers
	kv  []*qwen35.KVCache  // per layer; nil for GDN layers

	prof backend.OpProfile
}

// scratch holds the activations of one chunk of up to prefillChunk rows, row-major by
// row. The rows are the tokens of the chunk's segments, one after another: each
// segment is a run of consecutive tokens of one sequence of the batch.
type scratch struct {
	x, h, hr, delta []float32 // rows × Embedding
	qkv, z          []float32 // rows × QKVWidth, rows × InnerSize
	alpha, beta     []float32 // rows × VHeads
	mix             []float32 // rows × max(InnerSize, AttentionWidth)
	qg, k, v        []float32 // rows × 2·Heads·HeadDim, rows × KVHeads·HeadDim (×2)
	gate, up        []float32 // rows × FeedForward
	// logits receives the head's rows when they go to more than one sequence, before
	// they are copied out: grown to the most such rows a chunk has had, × Vocab.
	logits []float32

	segs  []segment   // the chunk's segments, in row order (capacity prefillChunk)
	heads []headGroup // the rows whose logits were asked for (capacity prefillChunk)

	gdn  *qwen35.GDNScratch
	attn *qwen35.AttentionScratch

	// The int8 sites: each activation quantised once for every matrix that reads it.
	q8Embed, q8Inner, q8Attn, q8FF *ternary.Q8Batch

	prod   productJob
	rows   rowScratch // the float32 products' decoded weight rows
	rotate rotateJob

	prof    backend.OpProfile // the current chunk's, shared out to its states at its end
	opStart time.Time
}

// segment is one sequence's rows of a chunk: its tokens [first, first+n), at rows
// [row, row+n), starting at the state's position.
type segment struct {
	seq           *backend.Sequence
	st            *cpuState
	first, n, row int
}

func (g *segment) tokens() []int32 { return g.seq.Tokens[g.first : g.first+g.n] }

// headGroup is a run of rows of one segment whose logits were asked for: chunk rows
// [row, row+n), which are rows [at, at+n) of the head's input, and their destination.
type headGroup struct {
	row, n, at int
	dst        []float32
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
	return st, nil
}

// getScratch takes a free chunk scratch, or makes one.
func (e *cpuEngine) getScratch() *scratch {
	e.mu.Lock()
	if n := len(e.free); n > 0 {
		s := e.free[n-1]
		e.free = e.free[:n-1]
		e.mu.Unlock()
		return s
	}
	e.mu.Unlock()
	return e.newScratch()
}

// putScratch returns s to the free list, dropping its references to the caller's
// sequences.
func (e *cpuEngine) putScratch(s *scratch) {
	clear(s.segs[:cap(s.segs)])
	clear(s.heads[:cap(s.heads)])
	s.segs, s.heads = s.segs[:0], s.heads[:0]
	e.mu.Lock()
	e.free = append(e.free, s)
	e.mu.Unlock()
}

func (e *cpuEngine) newScratch() *scratch {
	c := e.cfg
	const chunk = prefillChunk
	f := func(n int) []float32 { return make([]float32, chunk*n) }
	gs, as := e.gdn.NewScratch(chunk), e.attn.NewScratch(chunk)
	// The GDN heads and the attention KV groups are independent: spread them too.
	gs.Runner, as.Runner = e.pool, e.pool
	s := &scratch{
		x: f(c.Embedding), h: f(c.Embedding), hr: f(c.Embedding), delta: f(c.Embedding),
		qkv: f(c.QKVWidth()), z: f(c.InnerSize),
		alpha: f(c.VHeads), beta: f(c.VHeads),
		mix: f(max(c.InnerSize, c.AttentionWidth())),
		qg:  f(2 * c.Heads * c.HeadDim), k: f(c.KVHeads * c.HeadDim), v: f(c.KVHeads * c.HeadDim),
		gate: f(c.FeedForward), up: f(c.FeedForward),
		segs:    make([]segment, 0, chunk),
		heads:   make([]headGroup, 0, chunk),
		gdn:     gs,
		attn:    as,
		q8Embed: ternary.NewQ8Batch(c.Embedding, chunk),
		q8Inner: ternary.NewQ8Batch(c.InnerSize, chunk),
		q8Attn:  ternary.NewQ8Batch(c.AttentionWidth(), chunk),
		q8FF:    ternary.NewQ8Batch(c.FeedForward, chunk),
	}
	if !e.int8 {
		// The float32 matrix-matrix products decode each weight row once per chunk into
		// a row of K floats: one per goroutine that can run a product at once (the
		// pool's workers, the caller among them), so that a chunk allocates nothing.
		s.rows = newRowScratch(e.pool.Workers(), max(c.Embedding, c.InnerSize, c.AttentionWidth(), c.FeedForward))
	}
	s.prod.rows, s.prod.tiles = &s.rows, e.tiles
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
	if st.closed || src.closed {
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

// Bytes returns the memory of the sequence's recurrent states and KV cache. The chunk
// scratches a forward pass works in belong to the engine, not to any one state.
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
	return n
}

func (st *cpuState) Close() error {
	st.gdn, st.kv, st.closed = nil, nil, true
	return nil
}

// Forward runs the batch together, in chunks of up to prefillChunk rows in all: the
// sequences' tokens are laid out in batch order, each sequence's rows contiguous and in
// order, and cut into chunks, so that one chunk may hold a decode step of each of
// several sequences and part of a prompt, and a sequence with more tokens than a chunk
// has room for continues in the next at its new position. Each chunk reads the weights
// once, whatever the batch; the mixers run on each segment with its own sequence's
// state.
func (e *cpuEngine) Forward(ctx context.Context, batch []backend.Sequence) error {
	for i := range batch {
		st, ok := batch[i].State.(*cpuState)
		if !ok || st.e != e {
			return fmt.Errorf("sequence %d: %w", i, errForeign)
		}
		if st.closed {
			return fmt.Errorf("sequence %d: %w", i, backend.ErrClosed)
		}
	}
	s := e.getScratch()
	defer e.putScratch(s)
	next, done := 0, 0 // the next sequence to lay out, and how many of its tokens are laid out
	for {
		s.segs = s.segs[:0]
		rows := 0
		for next < len(batch) && rows < prefillChunk {
			q := &batch[next]
			if n := min(len(q.Tokens)-done, prefillChunk-rows); n > 0 {
				s.segs = append(s.segs, segment{seq: q, st: q.State.(*cpuState), first: done, n: n, row: rows})
				rows += n
				done += n
			}
			if done == len(q.Tokens) {
				next, done = next+1, 0
			}
		}
		if rows == 0 {
			return nil
		}
		// A cancelled call leaves each state after the last chunk it completed: whole
		// segments, each state at a consistent position.
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := e.forwardChunk(s, rows); err != nil {
			return err
		}
	}
}

// forwardChunk runs the T rows of s.segs through the plan's layers, advances each
// segment's state by its rows, and writes the logits its sequence asked for: every
// row's (LogitsAll), or the sequence's last token's when the segment holds it
// (LogitsLast).
func (e *cpuEngine) forwardChunk(s *scratch, T int) error {
	p := e.plan
	E := p.EmbeddingWidth
	e.begin(s)

	// Embedding: dequantise the stored row and rotate it back (transform, then signs).
	emb := p.Embedding
	for i := range s.segs {
		g := &s.segs[i]
		for j, tok := range g.tokens() {
			x := s.x[(g.row+j)*E : (g.row+j+1)*E]
			if err := emb.Format.Decode(x, emb.Row(int(tok))); err != nil {
				return fmt.Errorf("%s row %d: %w", emb.Name, tok, err)
			}
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
			s.prod.ternary(e.mat(m), s.hr, q8, outs[i][:T*m.N])
		}
		for i, m := range in.Unrotated {
			s.prod.bf16(m, s.h, raw[i][:T*m.N])
		}
		e.run(s, &s.prod)
		// The mixer, per segment on its own sequence's state.
		ow := lp.Out.Width
		for i := range s.segs {
			g := &s.segs[i]
			r0, r1, n := g.row, g.row+g.n, g.n
			mix := s.mix[r0*ow : r1*ow]
			switch lp.Mixer {
			case qwen35.MixerAttention:
				qn, kn := in.Products[0].N, in.Products[1].N
				if err := e.attn.Forward(mix, s.qg[r0*qn:r1*qn], s.k[r0*kn:r1*kn], s.v[r0*kn:r1*kn], n, g.st.pos, l, g.st.kv[li], s.attn); err != nil {
					return fmt.Errorf("layer %d: %w", li, err)
				}
				e.lap(s, &s.prof.Attention)
			default:
				qkvn, inner, nv := in.Products[0].N, in.Products[1].N, in.Unrotated[0].N
				e.gdn.Forward(mix, s.qkv[r0*qkvn:r1*qkvn], s.z[r0*inner:r1*inner], s.alpha[r0*nv:r1*nv], s.beta[r0*nv:r1*nv], n, l, g.st.gdn[li], s.gdn, e.chunkedGDN && n > 1)
				e.lap(s, &s.prof.GDN)
			}
		}
		e.residualSite(s, &lp.Out, s.mix[:T*ow], T)

		e.normRotate(s, T, &lp.FFNIn, false)
		q8 = e.quantize(s, s.hr, T, s.q8Embed)
		gate, up := lp.FFNIn.Products[0], lp.FFNIn.Products[1]
		s.prod.reset(T)
		s.prod.ternary(e.mat(gate), s.hr, q8, s.gate[:T*gate.N])
		s.prod.ternary(e.mat(up), s.hr, q8, s.up[:T*up.N])
		e.run(s, &s.prod)
		act := s.gate[:T*gate.N]
		qwen35.SwiGLU(act, act, s.up[:T*up.N])
		e.lap(s, &s.prof.Other)
		e.residualSite(s, &lp.FFNOut, act, T)
	}
	for i := range s.segs {
		s.segs[i].st.pos += s.segs[i].n
	}
	e.head(s)
	e.shareProfile(s, T)
	return nil
}

// head writes the logits of the rows whose sequences asked for them: the head's input
// rows gathered from the residual stream, normalised, rotated and quantised once, and
// one product over all of them, written straight into the one sequence's Out when only
// one wants logits, else through s.logits.
func (e *cpuEngine) head(s *scratch) {
	c, head := e.cfg, &e.plan.Head
	E, V := e.plan.EmbeddingWidth, c.Vocab
	s.heads = s.heads[:0]
	R := 0
	for i := range s.segs {
		g := &s.segs[i]
		h := headGroup{at: R}
		switch g.seq.Logits {
		case backend.LogitsAll:
			h.row, h.n, h.dst = g.row, g.n, g.seq.Out[g.first*V:(g.first+g.n)*V]
		case backend.LogitsLast:
			if g.first+g.n == len(g.seq.Tokens) {
				h.row, h.n, h.dst = g.row+g.n-1, 1, g.seq.Out[:V]
			}
		}
		if h.n > 0 {
			s.heads = append(s.heads, h)
			R += h.n
		}
	}
	if R == 0 {
		e.lap(s, &s.prof.Other)
		return
	}
	for _, h := range s.heads {
		for j := range h.n {
			r, t := h.at+j, h.row+j
			qwen35.RMSNorm(s.hr[r*E:(r+1)*E], s.x[t*E:(t+1)*E], head.Norm, float32(c.RMSEpsilon))
		}
	}
	e.lap(s, &s.prof.Other)
	e.rotateRows(s, s.hr[:R*E], R, e.rot[head.Width])
	q8 := e.quantize(s, s.hr[:R*E], R, s.q8Embed)
	y := s.heads[0].dst
	if len(s.heads) > 1 {
		if len(s.logits) < R*V {
			s.logits = make([]float32, R*V)
		}
		y = s.logits[:R*V]
	}
	s.prod.reset(R)
	s.prod.ternary(e.mat(head.Products[0]), s.hr[:R*E], q8, y)
	e.run(s, &s.prod)
	if len(s.heads) > 1 {
		for _, h := range s.heads {
			copy(h.dst, y[h.at*V:(h.at+h.n)*V])
		}
		e.lap(s, &s.prof.Other)
	}
}

// shareProfile accounts a chunk's time to its states in proportion to their rows (a
// decode step of four sequences is a quarter of the chunk's time each), and its rows to
// their Tokens.
func (e *cpuEngine) shareProfile(s *scratch, T int) {
	if !e.profile {
		return
	}
	share := func(d time.Duration, n int) time.Duration { return time.Duration(int64(d) * int64(n) / int64(T)) }
	for i := range s.segs {
		g := &s.segs[i]
		p := &g.st.prof
		p.Ternary += share(s.prof.Ternary, g.n)
		p.Transforms += share(s.prof.Transforms, g.n)
		p.GDN += share(s.prof.GDN, g.n)
		p.Attention += share(s.prof.Attention, g.n)
		p.Other += share(s.prof.Other, g.n)
		p.Tokens += g.n
	}
	s.prof = backend.OpProfile{}
}

// residualSite runs a residual site over the T rows of x (the mixer's or SwiGLU's
// output, rotated in place): its one product, added to the residual stream.
func (e *cpuEngine) residualSite(s *scratch, site *qwen35.Site, x []float32, T int) {
	E := e.plan.EmbeddingWidth
	e.rotateRows(s, x, T, e.rot[site.Width])
	q8 := e.quantize(s, x, T, e.q8Of(s, site.Width))
	s.prod.reset(T)
	s.prod.ternary(e.mat(site.Products[0]), x, q8, s.delta[:T*E])
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

// Profile returns the time the state's forward passes spent per kind of operation:
// each chunk's time shared among its sequences in proportion to their rows in it.
func (st *cpuState) Profile() backend.OpProfile {
	if st.closed {
		return backend.OpProfile{}
	}
	return st.prof
}

// ResetProfile zeroes the accounting.
func (st *cpuState) ResetProfile() { st.prof = backend.OpProfile{} }

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
	rows  *rowScratch                       // decoded rows for the float32 matrix-matrix products
	tiles map[*qwen35.Matrix]*ternary.Tiles // the engine's tiles, if it made them
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
	tiles *ternary.Tiles   // tern's tiles, or nil
	x, y  []float32
	first int // global index of the product's first row
	rows  int
}

func (j *productJob) reset(t int) { j.t, j.n, j.total = t, 0, 0 }

func (j *productJob) ternary(m *qwen35.Matrix, x []float32, q8 *ternary.Q8Batch, y []float32) {
	j.ps[j.n] = product{tern: m, tiles: j.tiles[m], x: x, q8: q8, y: y, first: j.total, rows: m.N}
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
			ternary.MatMulQ8TilesRange(p.tern.Format, p.tern.Data, p.tiles, p.tern.K, p.tern.N, p.q8, j.t, p.y, a, b)
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
