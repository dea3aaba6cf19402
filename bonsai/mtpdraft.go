package bonsai

import (
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/qwen35"
)

// ErrNoMTP is returned by NewMTPDrafter for a model file that carries no multi-token-
// prediction head (the published Ternary Bonsai 2 file has none; community files that
// re-bundle Qwen3.5's head set qwen35.nextn_predict_layers).
var ErrNoMTP = qwen35.ErrNoMTP

// HasMTP reports whether the model file carries a multi-token-prediction (nextn) head,
// which NewMTPDrafter drafts with.
func (m *Model) HasMTP() bool {
	w, ok := m.weights.(*qwen35.Weights)
	return ok && w.MTP != nil
}

// MTPDrafter drafts with the model's own multi-token-prediction head (qwen35.MTPHead):
// from the main model's hidden state at the last position fed and the token about to be
// fed, the head predicts the token after it, and a chain feeds the head its own output
// for the tokens beyond. Each drafted token is the head's greedy choice. It costs one
// decoder layer and the output head per drafted token, on the CPU, with the engine's
// int8 products (float32 ones for a model opened with ActivationsFloat32) on the CPU
// engine's workers.
//
// The head keeps a KV cache of its own, which follows the accepted tokens: at each
// Draft it first runs the head over the positions accepted since the last one, with
// the main model's hidden states there (which the session's state keeps for it,
// backend.HiddenStates), and the drafted positions' entries are dropped once drafted.
// The cache starts at the prompt's last position, whose hidden state the prefill of a
// speculative generation keeps, so the first draft comes with the first generated
// token; the head does not see the rest of the prompt (its hidden states are not kept).
// After more than mtpCatchUp positions without a draft (beyond what the last draft's
// pass accepted) it restarts over the last ones.
//
// An MTPDrafter serves one generation (Drafter). It drafts only within a generation
// with SpeculativeOptions, which binds it to the generation's session (SessionDrafter),
// and drafts nothing on a backend whose states do not keep hidden states (only the CPU
// backend does).
type MTPDrafter struct {
	m    *Model
	run  *qwen35.MTPRunner
	kv   backend.KVPrecision
	s    *Session
	st   backend.HiddenStates
	nctx int

	cache *qwen35.KVCache
	base  int // the main position of the cache's position 0
	lastK int // the tokens the last draft was asked for
	h     []float32
	out   []float32
	logit []float32
}

var _ SessionDrafter = (*MTPDrafter)(nil)

// mtpCatchUp is the most positions a draft runs the head over before drafting: after a
// stretch of plain steps (the cost model drafting nothing, its shadow drafts spaced
// out) the head's cache restarts over the last mtpCatchUp positions, so that a draft
// costs at most that many head steps beyond its tokens. The head's attention then sees
// only those positions of the stretch; its drafts may be worse, never the output.
const mtpCatchUp = 8

// NewMTPDrafter returns a drafter over the model's MTP head, or an error wrapping
// ErrNoMTP when the file has none. Pass it to a generation through
// SpeculativeOptions.NewDrafter (one per generation).
func (m *Model) NewMTPDrafter() (*MTPDrafter, error) {
	w, ok := m.weights.(*qwen35.Weights)
	if !ok || w.MTP == nil {
		return nil, fmt.Errorf("bonsai: MTP drafter: %w", ErrNoMTP)
	}
	// The head multiplies as the model's engine does (int8 activations unless the model
	// was opened with float32 ones), on the engine's workers, idle between passes.
	o := qwen35.MTPOptions{Float32: m.opts.acts == ActivationsFloat32}
	if wk, ok := m.engine.(backend.Workers); ok {
		o.Runner = wk
	}
	run, err := qwen35.NewMTPRunner(w, o)
	if err != nil {
		return nil, fmt.Errorf("bonsai: MTP drafter: %w", err)
	}
	E := w.Config.Embedding
	return &MTPDrafter{m: m, run: run, kv: m.opts.kv, nctx: m.opts.ctxSize,
		h: make([]float32, E), out: make([]float32, E), logit: make([]float32, w.Config.Vocab)}, nil
}

// BindSession ties the drafter to the session a generation runs on, and has the
// session's state keep the hidden states of the positions fed from now on
// (SessionDrafter).
func (d *MTPDrafter) BindSession(s *Session) {
	d.s = s
	d.st = nil
	s.mu.Lock()
	st := s.st
	s.mu.Unlock()
	if hs, ok := st.(backend.HiddenStates); ok {
		d.st = hs
		// The last position fed is the first draft's (kept when the prefill was told).
		hs.KeepHidden(max(hs.Len()-1, 0))
	}
	d.cache = nil
}

// Draft appends up to k tokens the head predicts after ctx (Drafter). ctx must be the
// session's tokens and the one token about to be fed, as in a generation.
func (d *MTPDrafter) Draft(ctx []int32, k int, dst []int32) []int32 {
	if d.st == nil || k <= 0 {
		return dst
	}
	d.s.mu.Lock()
	same := d.s.st == backend.State(d.st)
	d.s.mu.Unlock()
	n := d.st.Len() // the positions fed: ctx[n] is the token about to be
	if !same || len(ctx) != n+1 || n == 0 {
		return dst
	}
	if d.cache == nil {
		d.cache = d.run.NewKVCache(d.kv, d.nctx)
		d.base = n - 1
	}
	// Catch up: the head's entries for the positions accepted since the last draft,
	// from the main model's hidden states, ending with position n−1, whose logits are
	// the first drafted token's (recomputed if an earlier call wrote it). A position
	// whose hidden state was not kept (the first token after the prompt, or a state
	// that was swapped or reloaded) starts the cache afresh after it.
	from := d.base + d.cache.Len()
	switch {
	case n-1 < d.base:
		d.cache.Reset()
		d.base, from = n-1, n-1
	case from > n-1:
		d.cache.Truncate(n - 1 - d.base)
		from = n - 1
	case n-from > max(mtpCatchUp, d.lastK+1):
		// Plain steps ran since the last draft (the cost model drafted nothing): the
		// head restarts over the last mtpCatchUp positions rather than pay a step for
		// each position it missed. (A pass verifying the last draft of lastK tokens
		// accepts lastK at most: that gap is always caught up.)
		d.cache.Reset()
		d.base = n - mtpCatchUp
		from = d.base
	}
	ready := false
	for t := from; t < n; t++ {
		if !d.st.Hidden(t, d.h) {
			d.cache.Reset()
			d.base = t + 1
			continue
		}
		var logits []float32
		if t == n-1 {
			logits = d.logit
		}
		if err := d.run.Step(logits, d.out, d.h, int(ctx[t+1]), t-d.base, d.cache); err != nil {
			d.cache.Reset()
			d.base = n
			return dst
		}
		ready = t == n-1
	}
	if !ready {
		d.st.KeepHidden(n) // for the next draft
		return dst
	}
	keep := d.cache.Len()
	d.lastK = k
	for j := 0; j < k; j++ {
		tok := argmax(d.logit)
		dst = append(dst, int32(tok))
		if j+1 == k || n+j >= d.nctx-1 {
			break
		}
		// The chain: the head's output at n−1+j is its hidden state at n+j.
		copy(d.h, d.out)
		if d.run.Step(d.logit, d.out, d.h, tok, n+j-d.base, d.cache) != nil {
			break
		}
	}
	// The drafted positions' entries came from the head's own hidden states: drop
	// them; the catch-up of the next draft writes the accepted ones from the model's.
	d.cache.Truncate(keep)
	d.st.KeepHidden(n)
	return dst
}

// Accepted is the drafter's report of how the last draft fared (Drafter); the head
// drafts the same way whatever the outcome.
func (d *MTPDrafter) Accepted(drafted, accepted int) {}

// A SessionDrafter is a Drafter that drafts from the model's state at the session's
// positions rather than from the tokens alone, as MTPDrafter does: a generation with
// speculation binds it to its session before its first Draft. A wrapper of such a
// drafter passes BindSession on.
type SessionDrafter interface {
	Drafter
	// BindSession ties the drafter to the session whose generation it serves; the
	// generation calls it once, after the prompt is fed and before the first Draft.
	BindSession(s *Session)
}
