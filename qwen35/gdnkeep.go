package qwen35

import (
	"fmt"

	"github.com/bonsai-go/sdk/internal/hugemem"
)

// GDNKeep holds what it takes to rewind one GDN layer's state to any position of a kept
// pass (ForwardKept): the state as it was before the pass, and each position's inputs
// to the recurrence. The recurrence cannot be run backwards, and a copy of the whole
// state after every position would cost a state's size per token (3 MiB per layer at
// the 27B's widths); instead Rewind restores the saved state and replays the positions
// kept: the convolution, normalisation and steps recomputed from the raw qkv rows by the
// same code in the same order, so the state is bit for bit the one the pass held at
// that position. A kept position costs QKVWidth + 2·VHeads floats (41 KB at the 27B's
// widths); the buffers keep the largest size a pass has needed.
type GDNKeep struct {
	n          int       // positions kept
	conv       []float32 // (ConvKernel−1+n) × QKVWidth: the conv state before the pass, then the pass's qkv rows
	s          []float32 // the recurrent state before the pass
	beta, logd []float32 // n × VHeads: sigmoid(β) and the log decay, as the steps read them
	out        []float32 // InnerSize: where a replay's step writes the output it discards
}

// NewKeep returns an empty keep for this GDN's layers.
func (g *GDN) NewKeep() *GDNKeep {
	return &GDNKeep{s: hugemem.Float32s(g.vHeads * g.d * g.d), out: make([]float32, g.inner)}
}

// Len returns the number of positions kept.
func (k *GDNKeep) Len() int { return k.n }

// Clear forgets the kept positions, keeping the memory, so that the next ForwardKept
// starts a new pass.
func (k *GDNKeep) Clear() {
	k.n = 0
	k.conv, k.beta, k.logd = k.conv[:0], k.beta[:0], k.logd[:0]
}

// Bytes returns the memory the keep holds.
func (k *GDNKeep) Bytes() int64 {
	return 4 * int64(cap(k.conv)+len(k.s)+cap(k.beta)+cap(k.logd)+len(k.out))
}

// begin saves the conv state at the start of a kept pass. (The recurrent state is saved
// head by head, as the pass reaches each.)
func (k *GDNKeep) begin(g *GDN, st *GDNState) {
	if k.n == 0 {
		k.conv = append(k.conv[:0], st.Conv...)
	}
}

// ForwardKept is Forward in the step form, keeping in keep what Rewind needs. A pass
// may come in several calls (a sequence's tokens split across chunks of a batch): each
// call appends to keep, and keep must be cleared (Clear) before a pass's first call.
// The step form runs every position as a decode step would, so each position's output
// and the state after it are bit for bit those of feeding the tokens one at a time.
func (g *GDN) ForwardKept(out, qkv, z, alpha, beta []float32, T int, l *Layer, st *GDNState, sc *GDNScratch, keep *GDNKeep) {
	if len(keep.s) != len(st.S) || len(keep.out) != g.inner {
		panic("qwen35: GDN.ForwardKept: a keep of another GDN")
	}
	g.forward(out, qkv, z, alpha, beta, T, l, st, sc, false, keep)
}

// Rewind sets st to the state after the first j positions of the pass kept in keep
// (0 ≤ j ≤ keep.Len()), l being the layer the pass ran: the state before the pass with
// those j positions replayed. sc provides the Runner and the working buffers, as for
// Forward; keep is left as it was, so a later Rewind to another position of the same
// pass is valid too.
func (g *GDN) Rewind(st *GDNState, keep *GDNKeep, j int, l *Layer, sc *GDNScratch) {
	if j < 0 || j > keep.n {
		panic(fmt.Sprintf("qwen35: GDN.Rewind(%d) with %d positions kept", j, keep.n))
	}
	W, K := g.width, g.kernel
	copy(st.Conv, keep.conv[j*W:(j+K-1)*W])
	if j > 0 {
		// The convolution of the j positions, as Forward runs it, into sc.act.
		g.grow(sc, j)
		sc.conv = gdnConvBody{g: g, sc: sc, l: l, T: j, cached: keep.conv[:(K-1)*W], rows: keep.conv[(K-1)*W : (K-1+j)*W]}
		run(sc.Runner, W, 512, &sc.conv)
		sc.conv = gdnConvBody{}
	}
	sc.replay = gdnReplayBody{g: g, sc: sc, st: st, keep: keep, j: j}
	run(sc.Runner, g.kHeads, 1, &sc.replay)
	sc.replay = gdnReplayBody{}
}

// gdnReplayBody restores and replays the V heads of q/k heads [lo, hi), from the
// convolved rows in sc.act.
type gdnReplayBody struct {
	g    *GDN
	sc   *GDNScratch
	st   *GDNState
	keep *GDNKeep
	j    int
}

func (b *gdnReplayBody) Run(lo, hi int) {
	g, k, sc := b.g, b.keep, b.sc
	d, d2 := g.d, g.d*g.d
	for kh := lo; kh < hi; kh++ {
		// What gdnHeadBody does to the head's k before the steps. (Its q only reads the
		// state out, into an output the replay discards, so it is left as it is.)
		for t := 0; t < b.j; t++ {
			row := sc.act[t*g.width : (t+1)*g.width]
			L2Normalize(row[(g.kHeads+kh)*d:(g.kHeads+kh+1)*d], g.eps)
		}
		for _, h := range g.readers[kh] {
			S := b.st.S[h*d2 : (h+1)*d2]
			copy(S, k.s[h*d2:(h+1)*d2])
			// The arithmetic of step, reading the kept gates where it reads the scratch's.
			o := k.out[g.grouped[h]*d : (g.grouped[h]+1)*d]
			for t := 0; t < b.j; t++ {
				q, kk, v := g.views(sc, h, t)
				decay := decayWeight(float64(k.logd[t*g.vHeads+h]))
				gdnStep(S, kk, q, v, o, decay, k.beta[t*g.vHeads+h])
			}
		}
	}
}
