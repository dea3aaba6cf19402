package cpu

import (
	"errors"
	"fmt"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/qwen35"
)

// cpuState is one sequence: its position and recurrent state. The activations of a
// forward pass live in the engine's chunk scratches, shared by all its sequences.
type cpuState struct {
	e      *cpuEngine
	opt    backend.StateOptions
	pos    int
	closed bool

	gdn    []*qwen35.GDNState // per layer; nil for attention layers
	gdnSet []*qwen35.GDNState // the GDN layers' states in order, one allocation (see gdnStates)
	kv     []*qwen35.KVCache  // per layer; nil for GDN layers

	// keep holds, per GDN layer, what Rewind needs (nil until the first kept pass);
	// kept says that it covers the positions since keepFrom, those of the last pass,
	// and ended that a Rewind ended that pass.
	keep     []*qwen35.GDNKeep
	kept     bool
	ended    bool
	keepFrom int

	prof backend.OpProfile

	// hid holds the hidden states of positions hidFrom, hidFrom+1, … (Embedding
	// values each) while hidOn (backend.HiddenStates).
	hidOn   bool
	hidFrom int
	hid     []float32
}

var _ backend.HiddenStates = (*cpuState)(nil)

var _ backend.Workers = (*cpuEngine)(nil)

// KeepHidden starts or stops keeping hidden states (backend.HiddenStates).
func (st *cpuState) KeepHidden(from int) {
	if from < 0 {
		st.hidOn, st.hid, st.hidFrom = false, st.hid[:0], 0
		return
	}
	E := st.e.cfg.Embedding
	if !st.hidOn || len(st.hid) == 0 {
		st.hidOn, st.hid, st.hidFrom = true, st.hid[:0], from
		return
	}
	if drop := from - st.hidFrom; drop > 0 {
		if drop*E >= len(st.hid) {
			st.hid = st.hid[:0]
		} else {
			st.hid = st.hid[:copy(st.hid, st.hid[drop*E:])]
		}
		st.hidFrom = from
	}
}

// Hidden copies a kept hidden state (backend.HiddenStates).
func (st *cpuState) Hidden(pos int, dst []float32) bool {
	E := st.e.cfg.Embedding
	i := pos - st.hidFrom
	if !st.hidOn || pos >= st.pos || i < 0 || (i+1)*E > len(st.hid) || len(dst) < E {
		return false
	}
	copy(dst, st.hid[i*E:(i+1)*E])
	return true
}

// keepHidden appends the hidden states x (rows of Embedding values) of the positions
// from st.pos on, when keeping: those from st.hidFrom on, when the rows start before it;
// rows that would not follow the kept ones start afresh.
func (st *cpuState) keepHidden(x []float32) {
	if !st.hidOn {
		return
	}
	E := st.e.cfg.Embedding
	if st.hidFrom+len(st.hid)/E != st.pos {
		switch {
		case st.pos+len(x)/E <= st.hidFrom:
			return // all before the positions asked for
		case st.pos < st.hidFrom:
			x = x[(st.hidFrom-st.pos)*E:]
			st.hid = st.hid[:0]
		default:
			st.hid, st.hidFrom = st.hid[:0], st.pos
		}
	}
	st.hid = append(st.hid, x...)
}

// truncHidden drops the kept hidden states of positions n and later.
func (st *cpuState) truncHidden(n int) {
	E := st.e.cfg.Embedding
	if keep := n - st.hidFrom; keep <= 0 {
		st.hid = st.hid[:0]
	} else if keep*E < len(st.hid) {
		st.hid = st.hid[:keep*E]
	}
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
	nGDN := 0
	for i := 0; i < c.Layers; i++ {
		if !c.IsAttention(i) {
			nGDN++
		}
	}
	gdn := e.gdnStates(nGDN)
	st.gdnSet = gdn
	for i := 0; i < c.Layers; i++ {
		if c.IsAttention(i) {
			st.kv[i] = qwen35.NewKVCache(c.KVHeads, c.HeadDim, opt.KVCache, opt.ContextSize)
		} else {
			st.gdn[i], gdn = gdn[0], gdn[1:]
		}
	}
	return st, nil
}

func (st *cpuState) Len() int { return st.pos }

func (st *cpuState) Reset() {
	st.pos, st.kept = 0, false
	st.truncHidden(0)
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
	st.pos, st.kept = n, false
	st.truncHidden(0) // a loaded state's positions were never fed here
	return nil
}

// startKeep begins a call: a kept one continues the kept pass that the previous call
// began or continued, if no Rewind ended it, or else clears the per-layer keeps, which
// the GDN layers fill as the pass goes; any other forgets the last kept pass.
func (st *cpuState) startKeep(keep bool) {
	if keep && st.kept && !st.ended {
		return
	}
	st.kept, st.ended, st.keepFrom = keep, false, st.pos
	if !keep {
		return
	}
	if st.keep == nil {
		st.keep = make([]*qwen35.GDNKeep, len(st.gdn))
		for i := range st.gdn {
			if st.gdn[i] != nil {
				st.keep[i] = st.e.gdn.NewKeep()
			}
		}
	}
	for _, k := range st.keep {
		if k != nil {
			k.Clear()
		}
	}
}

// Rewind takes the state back to n tokens within its last kept pass
// (backend.Rewinder): the KV caches are truncated, and each GDN layer's state is
// restored to the one before the pass and the kept positions up to n replayed, which
// the step form of the pass makes bit for bit the state it held there.
func (st *cpuState) Rewind(n int) error {
	if st.closed {
		return backend.ErrClosed
	}
	if !st.kept {
		return fmt.Errorf("%w: rewind to %d tokens with no kept pass", backend.ErrNotKept, n)
	}
	if n < st.keepFrom || n > st.pos {
		return fmt.Errorf("%w: rewind to %d tokens, the kept pass covers %d to %d", backend.ErrNotKept, n, st.keepFrom, st.pos)
	}
	st.ended = true
	if n == st.pos {
		return nil
	}
	e := st.e
	s := e.getScratch() // for its GDN scratch's worker pool
	defer e.putScratch(s)
	e.begin(s)
	j := n - st.keepFrom
	for i := range st.gdn {
		if st.gdn[i] != nil {
			e.gdn.Rewind(st.gdn[i], st.keep[i], j, e.plan.Layers[i].Layer, s.gdn)
		}
		if st.kv[i] != nil {
			st.kv[i].Truncate(n)
		}
	}
	e.lap(s, &st.prof.GDN)
	st.pos = n
	st.truncHidden(n)
	return nil
}

// CopyFrom makes st a copy of o, a state of the same engine, reusing st's memory.
func (st *cpuState) CopyFrom(o backend.State) error {
	src, ok := o.(*cpuState)
	if !ok || src.e != st.e {
		return backend.ErrForeignState
	}
	if st.closed || src.closed {
		return backend.ErrClosed
	}
	if src.opt != st.opt {
		return errors.New("states of different sizes")
	}
	st.pos, st.kept = src.pos, false
	st.truncHidden(0)
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
	for _, k := range st.keep {
		if k != nil {
			n += k.Bytes()
		}
	}
	return n
}

func (st *cpuState) Close() error {
	if !st.closed {
		st.e.spareGDNStates(st.gdnSet)
	}
	st.gdn, st.gdnSet, st.kv, st.keep, st.kept, st.closed = nil, nil, nil, nil, false, true
	return nil
}

// gdnStates returns n zero GDN states for a new sequence: a closed sequence's, zeroed,
// if the engine kept one, else new ones (one allocation, in huge pages).
func (e *cpuEngine) gdnStates(n int) []*qwen35.GDNState {
	e.mu.Lock()
	var sts []*qwen35.GDNState
	if k := len(e.spareGDN); k > 0 {
		sts, e.spareGDN = e.spareGDN[k-1], e.spareGDN[:k-1]
	}
	e.mu.Unlock()
	if len(sts) != n {
		return e.gdn.NewStates(n)
	}
	for _, g := range sts {
		g.Reset()
	}
	return sts
}

// spareGDNStates keeps a closed sequence's GDN states for a new one, while the engine
// is open and keeps fewer than maxSpareGDN sets.
func (e *cpuEngine) spareGDNStates(sts []*qwen35.GDNState) {
	if len(sts) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed && len(e.spareGDN) < maxSpareGDN {
		e.spareGDN = append(e.spareGDN, sts)
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
		p.Ternary += share(s.prof.Ternary, g.N)
		p.Transforms += share(s.prof.Transforms, g.N)
		p.GDN += share(s.prof.GDN, g.N)
		p.Attention += share(s.prof.Attention, g.N)
		p.Other += share(s.prof.Other, g.N)
		p.Tokens += g.N
	}
	s.prof = backend.OpProfile{}
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
