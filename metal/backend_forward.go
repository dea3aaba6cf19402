package metal

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/metal/internal/gpu"
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

// Forward feeds tokens to the sequence: chunks of up to 64 tokens, each encoded into one
// command buffer (one decode step: one command buffer, the fused kernels).
func (e *engine) Forward(ctx context.Context, s bonsai.State, tokens []int32, logits []float32, all bool) error {
	st, err := e.check(s, tokens)
	if err != nil {
		return err
	}
	c := e.cfg
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
		n := min(st.chunk, len(tokens)-done)
		mode := outNone
		switch {
		case logits == nil:
		case all:
			mode = outAll
		case done+n == len(tokens):
			mode = outLast
		}
		if err := e.runChunk(st, tokens[done:done+n], mode); err != nil {
			return err
		}
		switch mode {
		case outAll:
			copy(logits[done*c.Vocab:(done+n)*c.Vocab], floats(st.logits.Contents())[:n*c.Vocab])
		case outLast:
			copy(logits[:c.Vocab], floats(st.logits.Contents())[:c.Vocab])
		}
		done += n
	}
	return nil
}

// ForwardGreedy feeds tokens like Forward and returns the greedy choice after the last
// one — the argmax of its logits, computed on the device, so that a decode step reads
// back one integer instead of the logits.
func (e *engine) ForwardGreedy(ctx context.Context, s bonsai.State, tokens []int32) (int32, error) {
	st, err := e.check(s, tokens)
	if err != nil {
		return 0, err
	}
	if len(tokens) == 0 {
		return 0, fmt.Errorf("metal: ForwardGreedy: no tokens")
	}
	for done := 0; done < len(tokens); {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n := min(st.chunk, len(tokens)-done)
		mode := outNone
		if done+n == len(tokens) {
			mode = outArgmax
		}
		if err := e.runChunk(st, tokens[done:done+n], mode); err != nil {
			return 0, err
		}
		done += n
	}
	return int32(binary.LittleEndian.Uint32(st.best.Contents())), nil
}

func (e *engine) check(s bonsai.State, tokens []int32) (*state, error) {
	st, ok := s.(*state)
	if !ok || st.e != e {
		return nil, fmt.Errorf("metal: state belongs to another engine")
	}
	if st.closed {
		return nil, fmt.Errorf("metal: state is closed")
	}
	if st.pos+len(tokens) > st.opt.ContextSize {
		return nil, fmt.Errorf("%w: %d tokens held + %d new > context size %d", bonsai.ErrContextFull, st.pos, len(tokens), st.opt.ContextSize)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= e.cfg.Vocab {
			return nil, fmt.Errorf("bonsai: token %d at index %d out of range [0, %d)", t, i, e.cfg.Vocab)
		}
	}
	return st, nil
}

// runChunk runs T tokens through the model in one command buffer and waits for it.
func (e *engine) runChunk(st *state, tokens []int32, mode outMode) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return bonsai.ErrClosed
	}
	// A prefill chunk is split into command buffers of a few layers (backend_split.go).
	T, every := len(tokens), 0
	if T > 1 {
		every = e.budget.every(T)
	}
	cb := newSplitter(e.dev, every)
	e.encodeChunk(cb, st, tokens, mode)
	cb.Commit()
	if err := cb.Wait(); err != nil {
		return e.commandBufferError(err, T, every)
	}
	if every > 0 {
		e.budget.observe(T, cb.layers, time.Since(cb.started))
	}
	st.pos += len(tokens)
	return nil
}

// encodeChunk writes the chunk's inputs (token ids, RoPE table) into the state's buffers
// and records its dispatches: the fused decode kernels for one token, the prefill
// kernels otherwise.
func (e *engine) encodeChunk(cb gpu.CommandBuffer, st *state, tokens []int32, mode outMode) {
	c := e.cfg
	ids := st.ids.Contents()
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(ids[4*i:], uint32(t))
	}
	half := c.RopeDims / 2
	rope := floats(st.rope.Contents())
	for t := range tokens {
		pos := float64(st.pos + t)
		for i := 0; i < half; i++ {
			// As qwen35's ropeTable: the angle in float64.
			f := math.Pow(c.RopeBase, -2*float64(i)/float64(c.RopeDims))
			s, co := math.Sincos(pos * f)
			rope[t*2*half+i] = float32(co)
			rope[t*2*half+half+i] = float32(s)
		}
	}
	if len(tokens) == 1 && e.fused {
		e.encodeDecode(cb, st, mode)
		return
	}
	e.encodePrefill(cb, st, len(tokens), mode)
}

func buf(i int, b gpu.Buffer) gpu.Arg { return gpu.Arg{Index: i, Buf: b} }
func bytesArg(a args) gpu.Arg         { return gpu.Arg{Index: 0, Bytes: a.bytes()} }

// mvSet is one weight set of a matrix-vector product: its matrix and its output.
type mvSet struct {
	w    ref
	rows int
	y    ref
}

// mvIn is a matrix-vector product's input: in0 (x, gate or the rotated/unrotated
// activation), in1 (delta or up), the residual output, the norm gain and the signs.
type mvIn struct {
	in0, in1, xout, gain, signs, hout ref
	flags                             uint32
}

// mv records one matrix-vector product of K inputs over up to three weight sets.
func (e *engine) mv(cb gpu.CommandBuffer, mode mvMode, K int, in mvIn, sets ...mvSet) {
	t1 := e.isPTQ1(sets[0].w)
	for _, s := range sets[1:] {
		if e.isPTQ1(s.w) != t1 {
			// Weight sets of both formats: one product per set.
			for _, s := range sets {
				e.mv(cb, mode, K, in, s)
			}
			return
		}
	}
	p := e.p[mode.kernel(t1)]
	chunk := mvChunk(e.blk, e.chunkCap)
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
	if single && ngroups > e.b.cfg.maxGroups {
		// At most maxGroups threadgroups, each with the same number of row groups.
		per := (ngroups + e.b.cfg.maxGroups - 1) / e.b.cfg.maxGroups
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
	a := args{uint32(K), uint32(n[0]), uint32(n[1]), uint32(n[2]), 0, uint32(ngroups),
		uint32(e.blk), uint32(chunk), f32(e.scale), f32(e.eps), in.flags}
	cb.Dispatch(p, gpu.Size{ntg, 1, 1}, gpu.Size{nt, 1, 1},
		bytesArg(a),
		def(in.in0).arg(1), def(in.in1).arg(2), def(in.xout).arg(3), def(in.gain).arg(4), def(in.signs).arg(5),
		ws[0].arg(6), ws[1].arg(7), ws[2].arg(8),
		ys[0].arg(9), ys[1].arg(10), ys[2].arg(11), def(in.hout).arg(12))
}

// r0 is a whole buffer as a reference.
func r0(b gpu.Buffer) ref { return ref{b, 0} }

// encodeDecode records one decode step with the fused kernels: the embedding, then per
// GDN layer gdn_decode (norm site + qkv/z/alpha/beta + the step), mv_fwht (ssm_out),
// mv_norm (gate+up) and mv_swiglu (down); per attention layer mv_norm (q+k+v), attn
// (norm, RoPE, append, attend, gate), mv_fwht (o), mv_norm (gate+up), mv_swiglu (down);
// then the head (mv_norm) and, for outArgmax, the argmax.
func (e *engine) encodeDecode(cb gpu.CommandBuffer, st *state, mode outMode) {
	c := e.cfg
	E := c.Embedding
	e.embed(cb, st, 1)
	x, xn := r0(st.xa), r0(st.xb)
	delta := r0(st.delta)
	hasDelta := false
	normIn := func(gain ref) mvIn {
		in := mvIn{in0: x, in1: delta, xout: xn, gain: gain, signs: e.signsOf(E)}
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
	for li := range e.layers {
		l := &e.layers[li]
		if l.attn {
			kv := c.KVHeads * c.HeadDim
			e.mv(cb, mvNorm, E, normIn(l.attnNorm),
				mvSet{l.q, 2 * c.Heads * c.HeadDim, r0(st.qg)}, mvSet{l.k, kv, r0(st.k)}, mvSet{l.v, kv, r0(st.v)})
			swap()
			e.attention(cb, st, li, 1, true)
			aw := c.AttentionWidth()
			e.mv(cb, mvFWHT, aw, mvIn{in0: r0(st.mix), signs: e.signsOf(aw)}, mvSet{l.o, E, delta})
		} else {
			if e.b.cfg.splitGDN || e.isPTQ1(l.qkv) != e.isPTQ1(l.gate) {
				// The products as a paired mv_norm that also keeps the normed vector for
				// alpha/beta, then the step (gdn_seq, one token).
				in := normIn(l.attnNorm)
				in.hout, in.flags = r0(st.h), in.flags|mvfHOut
				e.mv(cb, mvNorm, E, in, mvSet{l.qkv, c.QKVWidth(), r0(st.qkv)}, mvSet{l.gate, c.InnerSize, r0(st.z)})
				e.gdnSeq(cb, st, li, 1)
			} else {
				e.gdnDecode(cb, st, li, x, delta, xn, hasDelta)
			}
			swap()
			e.mv(cb, mvFWHT, c.InnerSize, mvIn{in0: r0(st.mix), signs: e.signsOf(c.InnerSize)}, mvSet{l.ssmOut, E, delta})
		}
		hasDelta = true
		ff := c.FeedForward
		e.mv(cb, mvNorm, E, normIn(l.postNorm), mvSet{l.ffnGate, ff, r0(st.gate)}, mvSet{l.ffnUp, ff, r0(st.up)})
		swap()
		e.mv(cb, mvSwiGLU, ff, mvIn{in0: r0(st.gate), in1: r0(st.up), signs: e.signsOf(ff)}, mvSet{l.ffnDown, E, delta})
	}
	if mode == outNone {
		return
	}
	e.mv(cb, mvNorm, E, mvIn{in0: x, in1: delta, gain: e.outNorm, signs: e.signsOf(E), flags: mvfDelta},
		mvSet{e.out, c.Vocab, r0(st.logits)})
	if mode == outArgmax {
		e.argmax(cb, st)
	}
}

func (e *engine) embed(cb gpu.CommandBuffer, st *state, T int) {
	c := e.cfg
	p := e.p[kEmbed]
	var flags uint32
	if e.isPTQ1(e.emb) {
		flags = sitePTQ1
	}
	a := args{uint32(c.Embedding), uint32(e.blk), f32(e.scale), f32(e.eps), flags,
		uint32(e.w.TokenEmbedding.Format.RowBytes(c.Embedding)), uint32(T), 0}
	cb.Dispatch(p, gpu.Size{c.Embedding / e.blk, T, 1}, gpu.Size{threads(p, e.blk), 1, 1},
		bytesArg(a), buf(1, st.ids), e.emb.arg(2), e.signsOf(c.Embedding).arg(3), buf(4, st.xa))
}

func (e *engine) argmax(cb gpu.CommandBuffer, st *state) {
	p := e.p[kArgmax]
	cb.Dispatch(p, gpu.Size{1, 1, 1}, gpu.Size{threads(p, 1024), 1, 1},
		bytesArg(args{uint32(e.cfg.Vocab), 0, 0, 0}), buf(1, st.logits), buf(2, st.best))
}

func (e *engine) gdnArgs(T int, flags uint32) args {
	c := e.cfg
	return args{uint32(c.Embedding), uint32(c.QKVWidth()), uint32(c.InnerSize), uint32(c.KHeads), uint32(c.VHeads),
		uint32(c.ConvKernel), uint32(T), flags, f32(e.eps), f32(float32(1 / math.Sqrt(float64(c.StateSize)))),
		uint32(e.blk), f32(e.scale)}
}

func (e *engine) gdnDecode(cb gpu.CommandBuffer, st *state, li int, x, delta, xn ref, hasDelta bool) {
	c := e.cfg
	l := &e.layers[li]
	k := kGDNDecode
	if e.isPTQ1(l.qkv) {
		k = kGDNDecodeT1
	}
	p := e.p[k]
	var flags uint32
	if hasDelta {
		flags = mvfDelta | mvfXOut
	}
	cb.Dispatch(p, gpu.Size{c.KHeads, 1, 1}, gpu.Size{threads(p, 1024), 1, 1},
		bytesArg(e.gdnArgs(1, flags)),
		x.arg(1), delta.arg(2), xn.arg(3), l.attnNorm.arg(4), e.signsOf(c.Embedding).arg(5),
		l.qkv.arg(6), l.gate.arg(7), l.alpha.arg(8), l.beta.arg(9),
		l.conv.arg(10), l.dt.arg(11), l.a.arg(12), l.ssmNorm.arg(13),
		st.conv[li].arg(14), st.ssm[li].arg(15), buf(16, st.mix))
}

// gdnSeq records the GDN core of T tokens (step form) on the chunk's qkv, z and h rows.
func (e *engine) gdnSeq(cb gpu.CommandBuffer, st *state, li, T int) {
	l := &e.layers[li]
	p := e.p[kGDNSeq]
	cb.Dispatch(p, gpu.Size{e.cfg.KHeads, 1, 1}, gpu.Size{threads(p, 1024), 1, 1},
		bytesArg(e.gdnArgs(T, 0)), buf(1, st.qkv), buf(2, st.z), buf(3, st.h),
		l.alpha.arg(4), l.beta.arg(5), l.conv.arg(6), l.dt.arg(7), l.a.arg(8), l.ssmNorm.arg(9),
		st.conv[li].arg(10), st.ssm[li].arg(11), buf(12, st.mix))
}

// gdnChunk records the GDN core of T ≤ 64 tokens in the chunked form (it convolves the
// chunk's qkv rows in place).
func (e *engine) gdnChunk(cb gpu.CommandBuffer, st *state, li, T int) {
	l := &e.layers[li]
	p := e.p[kGDNChunk]
	cb.Dispatch(p, gpu.Size{e.cfg.KHeads, 1, 1}, gpu.Size{threads(p, 1024), 1, 1},
		bytesArg(e.gdnArgs(T, 0)), buf(1, st.qkv), buf(2, st.z), buf(3, st.h),
		l.alpha.arg(4), l.beta.arg(5), l.conv.arg(6), l.dt.arg(7), l.a.arg(8), l.ssmNorm.arg(9),
		st.conv[li].arg(10), st.ssm[li].arg(11), buf(12, st.mix))
}

// attention records the attention of T tokens at st.pos: fused (T = 1: norm, RoPE,
// append and attend in one dispatch) or the prefill pair attn_append + attn.
func (e *engine) attention(cb gpu.CommandBuffer, st *state, li, T int, fused bool) {
	c := e.cfg
	l := &e.layers[li]
	var fu uint32
	if fused {
		fu = 1
	}
	a := args{uint32(c.Heads), uint32(c.KVHeads), uint32(c.HeadDim), uint32(c.RopeDims / 2), uint32(T),
		uint32(st.pos), uint32(st.opt.ContextSize), fu, f32(e.eps), f32(float32(1 / math.Sqrt(float64(c.HeadDim)))), 0, 0}
	attn, app := kAttnF16, kAttnAppend16
	switch st.kvElem {
	case 4:
		attn, app = kAttnF32, kAttnAppend32
	case 1:
		attn, app = kAttnI8, kAttnAppendI8
	}
	ks, vs := st.kc[li], st.vc[li] // bound, unused, when the cache has no scales
	if st.ks[li] != nil {
		ks, vs = st.ks[li], st.vs[li]
	}
	if !fused {
		p := e.p[app]
		cb.Dispatch(p, gpu.Size{c.KVHeads, T, 1}, gpu.Size{threads(p, (c.HeadDim+31)/32*32), 1, 1},
			bytesArg(a), buf(1, st.k), buf(2, st.v), l.kNorm.arg(3), buf(4, st.rope), buf(5, st.kc[li]), buf(6, st.vc[li]),
			buf(7, ks), buf(8, vs))
	}
	p := e.p[attn]
	cb.Dispatch(p, gpu.Size{c.Heads, T, 1}, gpu.Size{threads(p, attnThreads), 1, 1},
		bytesArg(a), buf(1, st.qg), buf(2, st.k), buf(3, st.v), l.qNorm.arg(4), l.kNorm.arg(5), buf(6, st.rope),
		buf(7, st.kc[li]), buf(8, st.vc[li]), buf(9, st.mix), buf(10, ks), buf(11, vs))
}

// siteNorm records x += delta (when hasDelta), h = RMSNorm(x)·gain (written when h is
// set) and hr = R·h for T rows.
func (e *engine) siteNorm(cb gpu.CommandBuffer, st *state, T int, gain ref, hasDelta, keepH bool) {
	c := e.cfg
	p := e.p[kSiteNorm]
	var flags uint32
	if hasDelta {
		flags |= siteDelta
	}
	if keepH {
		flags |= siteH
	}
	a := args{uint32(c.Embedding), uint32(e.blk), f32(e.scale), f32(e.eps), flags, 0, uint32(T), 0}
	cb.Dispatch(p, gpu.Size{T, 1, 1}, gpu.Size{threads(p, min(1024, max(e.blk, 256))), 1, 1},
		bytesArg(a), buf(1, st.xa), buf(2, st.delta), gain.arg(3), e.signsOf(c.Embedding).arg(4),
		buf(5, st.h), buf(6, st.hr))
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
	cb.Dispatch(p, gpu.Size{W / e.blk, T, 1}, gpu.Size{threads(p, e.blk), 1, 1}, list...)
}

// gemm records Y = X·Wᵀ for T rows of X.
func (e *engine) gemm(cb gpu.CommandBuffer, w ref, K, N, T int, x, y gpu.Buffer) {
	e.gemmTiles(cb, w, K, N, T, x, y, (N+gemmRows-1)/gemmRows)
}

// gemmTiles records the GEMM's first tiles row tiles (the kernel checks sample rows).
func (e *engine) gemmTiles(cb gpu.CommandBuffer, w ref, K, N, T int, x, y gpu.Buffer, tiles int) {
	k := kGemm
	if e.isPTQ1(w) {
		k = kGemmT1
	}
	p := e.p[k]
	cb.Dispatch(p, gpu.Size{tiles, (T + gemmTokens - 1) / gemmTokens, 1}, gpu.Size{gemmThreads, 1, 1},
		bytesArg(args{uint32(K), uint32(N), uint32(T), 0}), w.arg(1), buf(2, x), buf(3, y))
}

// encodePrefill records T tokens through the layers with the prefill kernels: the site
// kernels, one GEMM per matrix, gdn_seq, attn_append + attn.
func (e *engine) encodePrefill(cb gpu.CommandBuffer, st *state, T int, mode outMode) {
	c := e.cfg
	E, ff := c.Embedding, c.FeedForward
	e.embed(cb, st, T)
	hasDelta := false
	for li := range e.layers {
		l := &e.layers[li]
		e.siteNorm(cb, st, T, l.attnNorm, hasDelta, !l.attn)
		if l.attn {
			kv := c.KVHeads * c.HeadDim
			e.gemm(cb, l.q, E, 2*c.Heads*c.HeadDim, T, st.hr, st.qg)
			e.gemm(cb, l.k, E, kv, T, st.hr, st.k)
			e.gemm(cb, l.v, E, kv, T, st.hr, st.v)
			e.attention(cb, st, li, T, false)
			aw := c.AttentionWidth()
			e.siteBlocks(cb, kSiteFWHT, aw, T, st.mix, st.mixr)
			e.gemm(cb, l.o, aw, E, T, st.mixr, st.delta)
		} else {
			e.gemm(cb, l.qkv, E, c.QKVWidth(), T, st.hr, st.qkv)
			e.gemm(cb, l.gate, E, c.InnerSize, T, st.hr, st.z)
			if T > 1 && !e.b.cfg.stepGDN {
				e.gdnChunk(cb, st, li, T)
			} else {
				e.gdnSeq(cb, st, li, T)
			}
			e.siteBlocks(cb, kSiteFWHT, c.InnerSize, T, st.mix, st.mixr)
			e.gemm(cb, l.ssmOut, c.InnerSize, E, T, st.mixr, st.delta)
		}
		hasDelta = true
		e.siteNorm(cb, st, T, l.postNorm, true, false)
		e.gemm(cb, l.ffnGate, E, ff, T, st.hr, st.gate)
		e.gemm(cb, l.ffnUp, E, ff, T, st.hr, st.up)
		e.siteBlocks(cb, kSiteSwiGLU, ff, T, st.gate, st.up, st.act)
		e.gemm(cb, l.ffnDown, ff, E, T, st.act, st.delta)
		layerDone(cb)
	}
	switch mode {
	case outAll:
		e.siteNorm(cb, st, T, e.outNorm, true, false)
		e.gemm(cb, e.out, E, c.Vocab, T, st.hr, st.logits)
	case outLast, outArgmax:
		last := 4 * (T - 1) * E
		e.mv(cb, mvNorm, E, mvIn{in0: ref{st.xa, last}, in1: ref{st.delta, last}, gain: e.outNorm,
			signs: e.signsOf(E), flags: mvfDelta}, mvSet{e.out, c.Vocab, r0(st.logits)})
		if mode == outArgmax {
			e.argmax(cb, st)
		}
	}
}

// DecodeDispatches returns the kernel dispatches one decode step records with the fused
// kernels for a model of configuration c, all in one command buffer: the embedding; per
// GDN layer gdn_decode, mv_fwht, mv_norm and mv_swiglu; per attention layer mv_norm,
// attn, mv_fwht, mv_norm and mv_swiglu; the head; and, for a greedy step, the argmax.
// For the 27B model: 275 (274 when the logits are read back instead).
func DecodeDispatches(c *qwen35.Config, greedy bool) int {
	n := 1 + 4*(c.Layers-c.AttentionLayers()) + 5*c.AttentionLayers() + 1
	if greedy {
		n++
	}
	return n
}
