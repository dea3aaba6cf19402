package cpu

import (
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

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
			x := s.x[(g.Row+j)*E : (g.Row+j+1)*E]
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
			r0, r1, n := g.Row, g.Row+g.N, g.N
			mix := s.mix[r0*ow : r1*ow]
			switch lp.Mixer {
			case qwen35.MixerAttention:
				qn, kn := in.Products[0].N, in.Products[1].N
				qg, k, v := s.qg[r0*qn:r1*qn], s.k[r0*kn:r1*kn], s.v[r0*kn:r1*kn]
				var err error
				if g.seq.Keep {
					// A kept pass's positions are decode steps: so its logits are those
					// of decoding one token at a time, and a rewound state is that of
					// having done so.
					err = e.attn.ForwardAsSteps(mix, qg, k, v, n, g.st.pos, l, g.st.kv[li], s.attn)
				} else {
					err = e.attn.Forward(mix, qg, k, v, n, g.st.pos, l, g.st.kv[li], s.attn)
				}
				if err != nil {
					return fmt.Errorf("layer %d: %w", li, err)
				}
				e.lap(s, &s.prof.Attention)
			default:
				qkvn, inner, nv := in.Products[0].N, in.Products[1].N, in.Unrotated[0].N
				qkv, z, alpha, beta := s.qkv[r0*qkvn:r1*qkvn], s.z[r0*inner:r1*inner], s.alpha[r0*nv:r1*nv], s.beta[r0*nv:r1*nv]
				if g.seq.Keep {
					// A kept pass runs the step form whatever chunkedGDN says, so that
					// its positions are decode steps and a rewind replays them exactly.
					e.gdn.ForwardKept(mix, qkv, z, alpha, beta, n, l, g.st.gdn[li], s.gdn, g.st.keep[li])
				} else {
					e.gdn.Forward(mix, qkv, z, alpha, beta, n, l, g.st.gdn[li], s.gdn, e.chunkedGDN && n > 1)
				}
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
		e.eachRow(s, T, floatRowJob{op: rowSwiGLU, w: gate.N, x: act, y: s.up[:T*up.N]})
		e.lap(s, &s.prof.Other)
		e.residualSite(s, &lp.FFNOut, act, T)
	}
	for i := range s.segs {
		g := &s.segs[i]
		g.st.keepHidden(s.x[g.Row*E : (g.Row+g.N)*E])
		g.st.pos += g.N
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
			h.row, h.n, h.dst = g.Row, g.N, g.seq.Out[g.First*V:(g.First+g.N)*V]
		case backend.LogitsLast:
			if g.First+g.N == len(g.seq.Tokens) {
				h.row, h.n, h.dst = g.Row+g.N-1, 1, g.seq.Out[:V]
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

// residualSite runs a residual site over the T rows of x (the mixer's or SwiGLU's
// output, rotated in place): its one product, added to the residual stream.
func (e *cpuEngine) residualSite(s *scratch, site *qwen35.Site, x []float32, T int) {
	E := e.plan.EmbeddingWidth
	e.rotateRows(s, x, T, e.rot[site.Width])
	q8 := e.quantize(s, x, T, e.q8Of(s, site.Width))
	s.prod.reset(T)
	s.prod.ternary(e.mat(site.Products[0]), x, q8, s.delta[:T*E])
	e.run(s, &s.prod)
	e.eachRow(s, T, floatRowJob{op: rowAdd, w: E, x: s.x[:T*E], y: s.delta[:T*E]})
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
	E := site.Width
	j := floatRowJob{op: rowNorm, w: E, x: s.x[:T*E], y: s.hr[:T*E], gain: site.Norm, eps: float32(e.cfg.RMSEpsilon)}
	if keepH {
		j.op, j.z = rowNormKeep, s.h[:T*E]
	}
	e.eachRow(s, T, j)
	e.lap(s, &s.prof.Other)
	e.rotateRows(s, s.hr[:T*E], T, e.rot[E])
}

func addInto(x, d []float32) {
	_ = x[len(d)-1]
	for i, v := range d {
		x[i] += v
	}
}
