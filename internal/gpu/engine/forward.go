package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
)

// outMode is what a chunk's command buffer computes after the layers.
type outMode int

const (
	outNone   outMode = iota // nothing: a prefill chunk whose logits nobody asked for
	outLast                  // the last token's logits
	outAll                   // every token's logits
	outArgmax                // the last token's logits and their argmax
)

// Forward feeds each sequence of the batch its tokens in command buffers of up to 64
// rows. One sequence runs alone, in chunks of its own (one decode step: one command
// buffer, the fused kernels); several run together, their rows packed into shared
// command buffers that read the weights once for all of them (batch.go). The
// batch has been checked (backend.Check).
func (e *engine) Forward(ctx context.Context, batch []backend.Sequence) error {
	return e.run(ctx, batch, nil)
}

// ForwardGreedy runs the batch as Forward does and stores in next[i] the greedy choice
// after batch[i]'s last token — the argmax of its logits, computed on the device, so that
// a decode step reads back one integer instead of the logits (backend.Greedy).
func (e *engine) ForwardGreedy(ctx context.Context, batch []backend.Sequence, next []int32) error {
	if len(next) < len(batch) {
		return fmt.Errorf("ForwardGreedy: %d results for %d sequences", len(next), len(batch))
	}
	for i := range batch {
		if len(batch[i].Tokens) == 0 {
			return inSequence(batch, i, errors.New("ForwardGreedy: no tokens"))
		}
	}
	return e.run(ctx, batch, next[:len(batch)])
}

// inSequence says which sequence of a batch of several an error is about.
func inSequence(batch []backend.Sequence, i int, err error) error {
	if len(batch) == 1 {
		return err
	}
	return fmt.Errorf("sequence %d: %w", i, err)
}

// forward runs one sequence in chunks, checking ctx between them. With next set it takes
// the argmax after the last token instead of the logits the sequence asks for.
func (e *engine) forward(ctx context.Context, s *backend.Sequence, next *int32) error {
	st, err := e.stateOf(s.State)
	if err != nil {
		return err
	}
	alone := []backend.Sequence{*s}
	for c := range backend.Chunks(alone, st.chunk) {
		if err := ctx.Err(); err != nil {
			return err
		}
		for p := range c.Parts() {
			mode := chunkMode(s, p.Last(alone), next != nil)
			if err := e.runChunk(st, s.Tokens[p.First:p.First+p.N], mode); err != nil {
				return err
			}
			chunkOut(s, p.First, p.N, mode, next, floats(st.logits.Contents()), st.best.Contents(), e.sizes.vocab)
		}
	}
	return nil
}

// chunkOut delivers what a chunk of s's tokens [done, done+n) computed for mode: its
// logits into s.Out, or its argmax into next. logits holds the chunk's logits rows
// (all n, or the last), best the argmax.
func chunkOut(s *backend.Sequence, done, n int, mode outMode, next *int32, logits []float32, best []byte, V int) {
	switch mode {
	case outAll:
		copy(s.Out[done*V:(done+n)*V], logits[:n*V])
	case outLast:
		copy(s.Out[:V], logits[:V])
	case outArgmax:
		*next = int32(binary.LittleEndian.Uint32(best))
	}
}

// stateOf returns s as an open state of this engine.
func (e *engine) stateOf(s backend.State) (*state, error) {
	st, ok := s.(*state)
	if !ok || st.e != e {
		return nil, backend.ErrForeignState
	}
	if st.closed {
		return nil, backend.ErrClosed
	}
	return st, nil
}

// runChunk runs T tokens through the model in one command buffer and waits for it.
func (e *engine) runChunk(st *state, tokens []int32, mode outMode) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return backend.ErrClosed
	}
	// The chunk's command buffers end where the cost model or, in prefill, the measured
	// budget says (split.go).
	T := len(tokens)
	cb := e.splitter(T)
	e.encodeChunk(cb, st, tokens, mode)
	cb.Commit()
	if err := cb.Wait(); err != nil {
		return e.commandBufferError(err, T, st.pos, cb)
	}
	if cb.every > 0 {
		e.budget.observe(T, cb.layers, time.Since(cb.started))
	}
	st.setLen(st.pos + len(tokens))
	return nil
}

// encodeChunk writes the chunk's inputs (token ids, RoPE table) into the state's buffers
// and records its dispatches: the fused decode kernels for one token, the prefill
// kernels otherwise.
func (e *engine) encodeChunk(cb gpu.CommandBuffer, st *state, tokens []int32, mode outMode) {
	e.putRows(&st.acts, 0, st.pos, tokens)
	if len(tokens) == 1 && e.fused && !st.kp.on {
		// (A kept token runs the prefill kernels: its GDN layers keep the raw qkv rows
		// that gdn_seq reads, where the fused step convolves them as it writes them.)
		e.encodeDecode(cb, st, mode)
		return
	}
	e.encodePrefill(cb, st, len(tokens), mode)
}

// putRows writes the inputs of rows from row on of a: the token ids and the RoPE table
// of their positions, pos, pos+1, ….
func (e *engine) putRows(a *acts, row, pos int, tokens []int32) {
	ids := a.ids.Contents()
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(ids[4*(row+i):], uint32(t))
	}
	e.ropeTable(a, row, pos, len(tokens))
}

// ropeWidth is a row of the RoPE table: the cosines, then the sines.
func (e *engine) ropeWidth() int { return 2 * (e.cfg.RopeDims / 2) }

// ropeTable writes the RoPE table of n rows of a from row on, for positions pos,
// pos+1, …: per row the cosines, then the sines (qwen35.Attention.RopeTable).
func (e *engine) ropeTable(a *acts, row, pos, n int) {
	w := e.ropeWidth()
	rope := floats(a.rope.Contents())[row*w:]
	for t := range n {
		r := rope[t*w : (t+1)*w]
		e.att.RopeTable(r[:w/2], r[w/2:], pos+t)
	}
}

// seg is one sequence's rows of a command buffer: rows [row, row+n) of the activations
// a, at the sequence's next positions st.pos, st.pos+1, …. Its mixers run on them with
// the sequence's own state.
type seg struct {
	a      *acts
	st     *state
	row, n int
}

// alone is the first n rows of st's own activations: a chunk of st run alone.
func (st *state) alone(n int) seg { return seg{&st.acts, st, 0, n} }

// rowAt is row r of b, whose rows are w floats wide.
func rowAt(b gpu.Buffer, r, w int) ref { return ref{b, 4 * r * w} }

func buf(i int, b gpu.Buffer) gpu.Arg { return gpu.Arg{Index: i, Buf: b} }
func bytesArg(a args) gpu.Arg         { return gpu.Arg{Index: 0, Bytes: a.bytes()} }

// mvSet is one weight set of a matrix-vector product: its matrix and its output.
type mvSet struct {
	w    ref
	rows int
	y    ref
}

// mvIn is a matrix-vector product's input: in0 (x, gate or the rotated/unrotated
// activation), in1 (delta or up), the residual output, the norm gain and the signs;
// with mvfConv, a GDN layer's convolution weights and state, which set 0's rows (its
// attn_qkv channels) go through as they are written (MVF_CONV, NORM only).
type mvIn struct {
	in0, in1, xout, gain, signs, hout ref
	convw, conv                       ref
	flags                             uint32
}

// mv records one matrix-vector product of K inputs over up to three weight sets.
func (e *engine) mv(cb gpu.CommandBuffer, mode mvMode, K int, in mvIn, sets ...mvSet) {
	t1 := e.isPTQ1(sets[0].w)
	for _, s := range sets[1:] {
		if e.isPTQ1(s.w) != t1 {
			// Weight sets of both formats: one product per set (the convolution, set
			// 0's, in the first).
			for i, s := range sets {
				if i > 0 {
					in.flags &^= mvfConv
				}
				e.mv(cb, mode, K, in, s)
			}
			return
		}
	}
	chunk := mvChunk(K, e.blk, e.chunkCap)
	p := e.mvPipeline(mode.kernel(t1), chunk)
	single := K <= chunk
	want := 256
	if !single {
		want = 1024
	}
	nt := threads(p, want)
	nsg := nt / simdWidth
	total := 0
	for _, s := range sets {
		total += s.rows
	}
	perGroup := nsg * mvRows
	ngroups := (total + perGroup - 1) / perGroup
	ntg := ngroups
	if single && ngroups > e.b.cfg.MaxGroups {
		// At most maxGroups threadgroups, each with the same number of row groups.
		per := (ngroups + e.b.cfg.MaxGroups - 1) / e.b.cfg.MaxGroups
		ntg = (ngroups + per - 1) / per
	}
	var n [3]int
	ws, ys := [3]ref{}, [3]ref{}
	for i := range ws {
		ws[i], ys[i] = sets[0].w, sets[0].y
	}
	for i, s := range sets {
		n[i], ws[i], ys[i] = s.rows, s.w, s.y
	}
	def := func(r ref) ref { // an unused input still needs a buffer bound
		if r.buf == nil {
			return sets[0].y
		}
		return r
	}
	var convK uint32
	if in.flags&mvfConv != 0 {
		convK = uint32(e.cfg.ConvKernel)
	}
	a := args{uint32(K), uint32(n[0]), uint32(n[1]), uint32(n[2]), convK, uint32(ngroups),
		uint32(e.blk), uint32(chunk), f32(e.scale), f32(e.eps), in.flags}
	cb.Dispatch(p, gpu.Size{ntg, 1, 1}, gpu.Size{nt, 1, 1},
		bytesArg(a),
		def(in.in0).arg(1), def(in.in1).arg(2), def(in.xout).arg(3), def(in.gain).arg(4), def(in.signs).arg(5),
		ws[0].arg(6), ws[1].arg(7), ws[2].arg(8),
		ys[0].arg(9), ys[1].arg(10), ys[2].arg(11), def(in.hout).arg(12), def(in.convw).arg(13), def(in.conv).arg(14))
}

// mvPipeline returns a matrix-vector kernel in its variant for chunks of c values: the
// smallest compiled (geometry.mv) that holds c, which is c itself for every product
// of the plan.
func (e *engine) mvPipeline(kernel string, c int) gpu.Pipeline {
	for _, v := range e.geo.mv {
		if v >= c {
			return e.p[mvKey(kernel, v)]
		}
	}
	panic(fmt.Sprintf("engine: no variant of %s holds a chunk of %d values (compiled for %v)", kernel, c, e.geo.mv))
}

// r0 is a whole buffer as a reference.
func r0(b gpu.Buffer) ref { return ref{b, 0} }

// mvSite records one matrix-vector product over a site's products (at most three),
// product j writing its rows into outs[j].
func (e *engine) mvSite(cb gpu.CommandBuffer, mode mvMode, s *qwen35.Site, r *siteRefs, in mvIn, outs ...gpu.Buffer) {
	charge(cb, e.siteCost(s, 1))
	var sets [3]mvSet
	for j, m := range s.Products {
		sets[j] = mvSet{r.products[j], m.N, r0(outs[j])}
	}
	e.mv(cb, mode, s.Width, in, sets[:len(s.Products)]...)
}

// gemmSite records one GEMM per product of a site over T rows of x, product j writing
// into outs[j]. A product whose GEMM would cost more than the command buffer's limit
// (split.go) — the 27B model's head over 64 rows on the slowest GPU — is recorded as
// GEMMs over ranges of its rows, each within the limit.
func (e *engine) gemmSite(cb gpu.CommandBuffer, s *qwen35.Site, r *siteRefs, T int, x gpu.Buffer, outs ...gpu.Buffer) {
	for j, m := range s.Products {
		tiles := ceilDiv(m.N, gemmRows)
		per := tiles
		if lim := costLimit(cb); lim > 0 {
			for per > 1 && gemmCost(m, per*gemmRows, T).seconds() > lim {
				per = ceilDiv(per, 2)
			}
		}
		if per == tiles {
			charge(cb, gemmCost(m, m.N, T))
			e.gemm(cb, r.products[j], m.K, m.N, T, x, outs[j])
			continue
		}
		// Ranges of per tiles: the weights and the output bound at the range's first
		// row, N kept as the output's stride and bound. The kernel writes every row of
		// its tiles below N, so the last range ends at N exactly, overlapping the one
		// before (its rows computed twice, the same products).
		n := per * gemmRows
		rb := m.Format.RowBytes(m.K)
		for from := 0; from < m.N; from += n {
			off := min(from, m.N-n)
			charge(cb, gemmCost(m, n, T))
			e.gemmAt(cb, r.products[j].at(off*rb), e.isPTQ1(r.products[j]), m.K, m.N, T, r0(x), ref{outs[j], 4 * off}, per)
		}
	}
}

// encodeDecode records one decode step with the fused kernels, following the plan: the
// embedding, then per layer the In site's products fused with its norm (mv_norm) — for a
// GDN layer inside gdn_decode, with the step — or the attention (attn: norm, RoPE,
// append, attend, gate), the Out site (mv_fwht), the FFNIn site (mv_norm) and the FFNOut
// site (mv_swiglu); then the head (mv_norm) and, for outArgmax, the argmax. A site's
// product that adds to the residual stream writes delta, which the next norm site adds.
func (e *engine) encodeDecode(cb gpu.CommandBuffer, st *state, mode outMode) {
	p := e.plan
	e.embed(cb, &st.acts, 1)
	x, xn := r0(st.xa), r0(st.xb)
	delta := r0(st.delta)
	hasDelta := false
	// normIn is a norm site's input: the stream x, plus delta when a product wrote one
	// (the sum kept in xn, which swap makes the stream).
	normIn := func(s *qwen35.Site, gain ref) mvIn {
		in := mvIn{in0: x, in1: delta, xout: xn, gain: gain, signs: e.signsOf(s.Width)}
		if hasDelta {
			in.flags = mvfDelta | mvfXOut
		}
		return in
	}
	swap := func() {
		if hasDelta {
			x, xn = xn, x
		}
	}
	for li := range p.Layers {
		lp, l := &p.Layers[li], &e.layers[li]
		switch lp.Mixer {
		case qwen35.MixerAttention:
			e.mvSite(cb, mvNorm, &lp.In, &l.in, normIn(&lp.In, l.in.norm), st.qg, st.k, st.v)
			swap()
			e.attention(cb, st.alone(1), li, true)
		case qwen35.MixerGDN:
			charge(cb, e.siteCost(&lp.In, 1).add(e.gdnCost(1)))
			e.gdnDecode(cb, st, li, normIn(&lp.In, l.in.norm), lp.In.Products[0].N, lp.In.Products[1].N)
			swap()
		}
		e.mvSite(cb, mvFWHT, &lp.Out, &l.out, mvIn{in0: r0(st.mix), signs: e.signsOf(lp.Out.Width)}, st.delta)
		hasDelta = true
		e.mvSite(cb, mvNorm, &lp.FFNIn, &l.ffnIn, normIn(&lp.FFNIn, l.ffnIn.norm), st.gate, st.up)
		swap()
		e.mvSite(cb, mvSwiGLU, &lp.FFNOut, &l.ffnOut, mvIn{in0: r0(st.gate), in1: r0(st.up), signs: e.signsOf(lp.FFNOut.Width)}, st.delta)
	}
	if mode == outNone {
		return
	}
	e.mvSite(cb, mvNorm, &p.Head, &e.head, mvIn{in0: x, in1: delta, gain: e.head.norm, signs: e.signsOf(p.Head.Width), flags: mvfDelta}, st.logits)
	if mode == outArgmax {
		e.argmax(cb, r0(st.logits), r0(st.best))
	}
}

// embed records the embedding of the first T rows of a (their token ids).
func (e *engine) embed(cb gpu.CommandBuffer, a *acts, T int) {
	E, m := e.plan.EmbeddingWidth, e.plan.Embedding
	p := e.p[kEmbed]
	var flags uint32
	if e.isPTQ1(e.emb) {
		flags = sitePTQ1
	}
	ea := args{uint32(E), uint32(e.blk), f32(e.scale), f32(e.eps), flags, uint32(m.Format.RowBytes(E)), uint32(T), 0}
	cb.Dispatch(p, gpu.Size{E / e.blk, T, 1}, gpu.Size{threads(p, e.blk), 1, 1},
		bytesArg(ea), buf(1, a.ids), e.emb.arg(2), e.signsOf(E).arg(3), buf(4, a.xa))
}

// argmax records the argmax of the Vocab logits at v into the uint32 at out.
func (e *engine) argmax(cb gpu.CommandBuffer, v, out ref) {
	p := e.p[kArgmax]
	cb.Dispatch(p, gpu.Size{1, 1, 1}, gpu.Size{threads(p, 1024), 1, 1},
		bytesArg(args{uint32(e.sizes.vocab), 0, 0, 0}), v.arg(1), out.arg(2))
}

func (e *engine) gdnArgs(T int, flags uint32) args {
	c := e.cfg
	return args{uint32(c.Embedding), uint32(c.QKVWidth()), uint32(c.InnerSize), uint32(c.KHeads), uint32(c.VHeads),
		uint32(c.ConvKernel), uint32(T), flags, f32(e.eps), f32(float32(1 / math.Sqrt(float64(c.StateSize)))),
		uint32(e.blk), f32(e.scale)}
}

// gdnDecode records a GDN layer's decode token in two dispatches (in, its In site's
// norm input; qkv and z, the rows of its two products):
//
//   - mv_norm: the In site (residual add, RMSNorm·attn_norm, the signed FWHT) and the
//     products attn_qkv and attn_gate as one matrix-vector product over all their rows
//     — spread over up to MaxGroups threadgroups like every other product — keeping the
//     normed vector (hout) for alpha/beta, with each attn_qkv row put through its
//     channel's causal convolution and SiLU as it is written (MVF_CONV: one thread owns
//     a channel's state, so the state updates without races);
//   - gdn_decode: the recurrence, one threadgroup per V head (gdn.metal).
//
// With SplitGDN the same mv_norm runs without the convolution and the recurrence is
// gdn_seq's one-token step (KH threadgroups, the convolution inside): the same
// arithmetic in another order of dispatch, whose logits match these bit for bit.
//
// The products once ran inside gdn_decode itself, KH = 16 threadgroups at 27B each
// computing its q/k head group's 1024 rows (22 MB of PQ2_0 weights a layer over 16
// cores), which left most cores of a 20–40-core GPU idle through the layer's largest
// read; the sizes and the alternatives weighed are in gdn.metal.
func (e *engine) gdnDecode(cb gpu.CommandBuffer, st *state, li int, in mvIn, qkv, z int) {
	l := &e.layers[li]
	in.hout, in.flags = r0(st.h), in.flags|mvfHOut
	if !e.b.cfg.SplitGDN {
		in.convw, in.conv, in.flags = l.conv, st.conv[li], in.flags|mvfConv
	}
	e.mv(cb, mvNorm, e.cfg.Embedding, in, mvSet{l.in.products[0], qkv, r0(st.qkv)}, mvSet{l.in.products[1], z, r0(st.z)})
	if e.b.cfg.SplitGDN {
		e.gdnSeq(cb, st.alone(1), li)
		return
	}
	e.gdnCore(cb, kGDNDecode, st.alone(1), li, e.cfg.VHeads)
}

// gdnSeq records the GDN core of s's rows in the step form, on their qkv, z and h rows.
func (e *engine) gdnSeq(cb gpu.CommandBuffer, s seg, li int) {
	e.gdnCore(cb, kGDNSeq, s, li, e.cfg.KHeads)
}

// gdnChunk records the GDN core of s's rows (at most 64) in the chunked form (it
// convolves their qkv rows in place).
func (e *engine) gdnChunk(cb gpu.CommandBuffer, s seg, li int) {
	e.gdnCore(cb, kGDNChunk, s, li, e.cfg.KHeads)
}

// gdnCore records one of the GDN core kernels over grid threadgroups (gdn_seq and
// gdn_chunk: one per q/k head group; gdn_decode: one per V head), all bound alike.
func (e *engine) gdnCore(cb gpu.CommandBuffer, kernel string, s seg, li, grid int) {
	c, a := e.cfg, s.a
	// The row widths are gdnArgs's: QKV, inner and E.
	e.gdnCoreAt(cb, kernel, s.st, li, grid, s.n, rowAt(a.qkv, s.row, c.QKVWidth()), rowAt(a.z, s.row, c.InnerSize),
		rowAt(a.h, s.row, c.Embedding), rowAt(a.mix, s.row, c.InnerSize))
}

// gdnCoreAt is gdnCore over T rows bound at references: their qkv, z and h rows, and
// where the output rows go.
func (e *engine) gdnCoreAt(cb gpu.CommandBuffer, kernel string, st *state, li, grid, T int, qkv, z, h, out ref) {
	l := &e.layers[li]
	p := e.p[kernel]
	cb.Dispatch(p, gpu.Size{grid, 1, 1}, gpu.Size{threads(p, 1024), 1, 1},
		bytesArg(e.gdnArgs(T, 0)), qkv.arg(1), z.arg(2), h.arg(3),
		l.in.unrotated[0].arg(4), l.in.unrotated[1].arg(5), l.conv.arg(6), l.dt.arg(7), l.a.arg(8), l.ssmNorm.arg(9),
		st.conv[li].arg(10), st.ssm[li].arg(11), out.arg(12))
}

// attention records the attention of s's rows at their positions (attn.go): for a
// prefill (fused unset) attn_append first stores the rows' keys and values; then the
// partial softmaxes over blocks of positions (attn_*; fused, for one row, the block
// holding its position also forms, stores and attends its key and value), in as many
// dispatches as the command buffer's cost limit needs, and attn_merge.
func (e *engine) attention(cb gpu.CommandBuffer, s seg, li int, fused bool) {
	c := e.cfg
	l, st := &e.layers[li], s.st
	H, KV, HD := c.Heads, c.KVHeads, c.HeadDim
	T := s.n
	attn, app := kAttnF16, kAttnAppend16
	switch st.kvElem {
	case 4:
		attn, app = kAttnF32, kAttnAppend32
	case 1:
		attn, app = kAttnI8, kAttnAppendI8
	}
	p := e.p[attn]
	pl := e.planAttention(p, st.pos, T, s.a.part.Len()/(4*H*(HD+2)))
	var fu uint32
	if fused {
		fu = 1
	}
	a := args{uint32(H), uint32(KV), uint32(HD), uint32(c.RopeDims / 2), uint32(T),
		uint32(st.pos), uint32(st.opt.ContextSize), fu, f32(e.eps), f32(float32(1 / math.Sqrt(float64(HD)))),
		uint32(pl.span), uint32(pl.nb), 0, 0, uint32(pl.tt), 0}
	// The kernels' rows: q|gate 2·H·HD, k and v KV·HD, the output H·HD. The partials
	// (T·H·nb results) are scratch: the segments of a batch take their turns on them,
	// each merged before the next writes (dispatches run in order).
	qg := rowAt(s.a.qg, s.row, 2*H*HD)
	k, v := rowAt(s.a.k, s.row, KV*HD), rowAt(s.a.v, s.row, KV*HD)
	rope, mix := rowAt(s.a.rope, s.row, e.ropeWidth()), rowAt(s.a.mix, s.row, H*HD)
	pacc := r0(s.a.part)
	pml := pacc.at(4 * T * H * pl.nb * HD)
	ks, vs := st.kc[li], st.vc[li] // bound, unused, when the cache has no scales
	if st.ks[li] != nil {
		ks, vs = st.ks[li], st.vs[li]
	}
	if !fused {
		ap := e.p[app]
		charge(cb, cost{bytes: float64(T*KV*HD) * float64(2*4+2*st.kvElem)})
		cb.Dispatch(ap, gpu.Size{KV, T, 1}, gpu.Size{threads(ap, (HD+31)/32*32), 1, 1},
			bytesArg(a), k.arg(1), v.arg(2), l.kNorm.arg(3), rope.arg(4), buf(5, st.kc[li]), buf(6, st.vc[li]),
			buf(7, ks), buf(8, vs))
	}
	bPer, yPer := e.pieces(pl, st.kvElem, costLimit(cb))
	for y0 := 0; y0 < pl.tiles; y0 += yPer {
		for b0 := 0; b0 < pl.nb; b0 += bPer {
			bn, yn := min(bPer, pl.nb-b0), min(yPer, pl.tiles-y0)
			a[12], a[13] = uint32(b0), uint32(y0)
			charge(cb, e.pieceCost(pl, st.kvElem, bn, yn))
			cb.Dispatch(p, gpu.Size{bn, yn, KV}, gpu.Size{pl.nt, 1, 1},
				bytesArg(a), qg.arg(1), k.arg(2), v.arg(3), l.qNorm.arg(4), l.kNorm.arg(5), rope.arg(6),
				buf(7, st.kc[li]), buf(8, st.vc[li]), pacc.arg(9), buf(10, ks), buf(11, vs), pml.arg(12))
		}
	}
	m := e.p[kAttnMerge]
	charge(cb, e.mergeCost(pl))
	cb.Dispatch(m, gpu.Size{H, T, 1}, gpu.Size{threads(m, min(256, (HD+31)/32*32)), 1, 1},
		bytesArg(a), qg.arg(1), pacc.arg(2), pml.arg(3), mix.arg(4))
}

// siteNorm records x += delta (when hasDelta), h = RMSNorm(x)·gain (written when keepH)
// and hr = R·h for the first T rows of a, of width W.
func (e *engine) siteNorm(cb gpu.CommandBuffer, a *acts, T, W int, gain ref, hasDelta, keepH bool) {
	e.siteNormAt(cb, a, 0, r0(a.hr), T, W, gain, hasDelta, keepH)
}

// siteNormAt is siteNorm of the T rows of a from row on, writing their hr rows from
// out on.
func (e *engine) siteNormAt(cb gpu.CommandBuffer, a *acts, row int, out ref, T, W int, gain ref, hasDelta, keepH bool) {
	p := e.p[kSiteNorm]
	var flags uint32
	if hasDelta {
		flags |= siteDelta
	}
	if keepH {
		flags |= siteH
	}
	sa := args{uint32(W), uint32(e.blk), f32(e.scale), f32(e.eps), flags, 0, uint32(T), 0}
	charge(cb, rowsCost(T, W, 5))
	cb.Dispatch(p, gpu.Size{T, 1, 1}, gpu.Size{threads(p, min(1024, max(e.blk, 256))), 1, 1},
		bytesArg(sa), rowAt(a.xa, row, W).arg(1), rowAt(a.delta, row, W).arg(2), gain.arg(3), e.signsOf(W).arg(4),
		rowAt(a.h, row, W).arg(5), out.arg(6))
}

// siteBlocks records a per-block site kernel (site_fwht or site_swiglu) over T rows of W.
func (e *engine) siteBlocks(cb gpu.CommandBuffer, kernel string, W, T int, ins ...gpu.Buffer) {
	p := e.p[kernel]
	a := args{uint32(W), uint32(e.blk), f32(e.scale), f32(e.eps), 0, 0, uint32(T), 0}
	list := []gpu.Arg{bytesArg(a)}
	i := 1
	for _, b := range ins[:len(ins)-1] {
		list = append(list, buf(i, b))
		i++
	}
	list = append(list, e.signsOf(W).arg(i), buf(i+1, ins[len(ins)-1]))
	charge(cb, rowsCost(T, W, len(ins)))
	cb.Dispatch(p, gpu.Size{W / e.blk, T, 1}, gpu.Size{threads(p, e.blk), 1, 1}, list...)
}

// gemm records Y = X·Wᵀ for T rows of X.
func (e *engine) gemm(cb gpu.CommandBuffer, w ref, K, N, T int, x, y gpu.Buffer) {
	e.gemmTiles(cb, w, K, N, T, x, y, (N+gemmRows-1)/gemmRows)
}

// gemmTiles records the GEMM's first tiles row tiles (the kernel checks sample rows).
func (e *engine) gemmTiles(cb gpu.CommandBuffer, w ref, K, N, T int, x, y gpu.Buffer, tiles int) {
	e.gemmAt(cb, w, e.isPTQ1(w), K, N, T, r0(x), r0(y), tiles)
}

// gemmAt is gemmTiles with X and Y bound at references, and W (stored as PTQ1_0 when
// t1) at a reference that may lie inside a matrix.
func (e *engine) gemmAt(cb gpu.CommandBuffer, w ref, t1 bool, K, N, T int, x, y ref, tiles int) {
	k := kGemm
	if t1 {
		k = kGemmT1
	}
	p := e.p[k]
	cb.Dispatch(p, gpu.Size{tiles, (T + gemmTokens - 1) / gemmTokens, 1}, gpu.Size{gemmThreads, 1, 1},
		bytesArg(args{uint32(K), uint32(N), uint32(T), 0}), w.arg(1), x.arg(2), y.arg(3))
}

// encodePrefill records T tokens of st through the layers with the prefill kernels
// (encodeLayers), then the head: a GEMM over every row for outAll, the last row's
// product fused with its norm (mv_norm) otherwise.
func (e *engine) encodePrefill(cb gpu.CommandBuffer, st *state, T int, mode outMode) {
	e.encodeLayers(cb, &st.acts, T, []seg{st.alone(T)})
	head := &e.plan.Head
	switch mode {
	case outAll:
		e.siteNorm(cb, &st.acts, T, head.Width, e.head.norm, true, false)
		e.gemmSite(cb, head, &e.head, T, st.hr, st.logits)
	case outLast, outArgmax:
		last := 4 * (T - 1) * e.sizes.embed
		e.mvSite(cb, mvNorm, head, &e.head, mvIn{in0: ref{st.xa, last}, in1: ref{st.delta, last}, gain: e.head.norm,
			signs: e.signsOf(head.Width), flags: mvfDelta}, st.logits)
		if mode == outArgmax {
			e.argmax(cb, r0(st.logits), r0(st.best))
		}
	}
}

// encodeLayers records the R rows of a — the rows of segs, one or more sequences —
// through the embedding and the layers with the prefill kernels, following the plan:
// per site its kernel (site_norm, site_fwht, site_swiglu) and one GEMM per product over
// all R rows, so that each weight is read once whatever the sequences; the mixer per
// sequence, on its rows with its own state: gdn_chunk (or gdn_seq) or attn_append +
// attn. The stream ends in xa + delta, which the head's norm adds.
func (e *engine) encodeLayers(cb gpu.CommandBuffer, a *acts, R int, segs []seg) {
	p := e.plan
	for _, s := range segs {
		e.keepSave(cb, s.st)
	}
	e.embed(cb, a, R)
	hasDelta := false
	for li := range p.Layers {
		lp, l := &p.Layers[li], &e.layers[li]
		// h is kept for the products that read it unrotated.
		e.siteNorm(cb, a, R, lp.In.Width, l.in.norm, hasDelta, len(lp.In.Unrotated) > 0)
		switch lp.Mixer {
		case qwen35.MixerAttention:
			e.gemmSite(cb, &lp.In, &l.in, R, a.hr, a.qg, a.k, a.v)
			for _, s := range segs {
				e.attention(cb, s, li, false)
			}
		case qwen35.MixerGDN:
			e.gemmSite(cb, &lp.In, &l.in, R, a.hr, a.qkv, a.z)
			for _, s := range segs {
				charge(cb, e.gdnCost(s.n).add(unrotatedCost(&lp.In, s.n)))
				if s.st.kp.on {
					// A kept pass: its rows' recurrence inputs kept, and the step form,
					// which a Rewind's replay repeats bit for bit.
					e.keepRows(cb, s, li)
					e.gdnSeq(cb, s, li)
				} else if s.n > 1 && !e.b.cfg.StepGDN {
					e.gdnChunk(cb, s, li)
				} else {
					e.gdnSeq(cb, s, li)
				}
			}
		}
		e.siteBlocks(cb, kSiteFWHT, lp.Out.Width, R, a.mix, a.mixr)
		e.gemmSite(cb, &lp.Out, &l.out, R, a.mixr, a.delta)
		hasDelta = true
		e.siteNorm(cb, a, R, lp.FFNIn.Width, l.ffnIn.norm, true, false)
		e.gemmSite(cb, &lp.FFNIn, &l.ffnIn, R, a.hr, a.gate, a.up)
		e.siteBlocks(cb, kSiteSwiGLU, lp.FFNOut.Width, R, a.gate, a.up, a.act)
		e.gemmSite(cb, &lp.FFNOut, &l.ffnOut, R, a.act, a.delta)
		layerDone(cb)
	}
}

// DecodeDispatches is metal.DecodeDispatches (the doc is there): the dispatches
// encodeDecode records.
func DecodeDispatches(c *qwen35.Config, greedy bool) int {
	// An attention layer: mv_norm, attn and attn_merge (one dispatch each below the cost
	// limit: a long context may cut attn into several, split.go), mv_fwht, mv_norm,
	// mv_swiglu.
	n := 1 + 5*(c.Layers-c.AttentionLayers()) + 6*c.AttentionLayers() + 1
	if greedy {
		n++
	}
	return n
}
