// Package backendtest is the conformance suite of the backend seam: a backend's tests
// call Run with the backend and a bound model, and it checks what bonsai relies on —
// that a batch of sequences gives each the logits it would get alone, that states
// survive the shared snapshot codec and copies, that Reset empties, that cancellation
// leaves consistent states, that closed and foreign states are refused, that a
// Greedy engine's choice is the argmax of its logits, and that a Rewinder's kept pass
// and rewinds give what decoding the kept tokens one at a time gives. FillSynthetic
// writes a long context's state in seconds, for benchmarks of the decode speed there.
package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// Options tune Run.
type Options struct {
	// Threads for the engine (default 2).
	Threads int
	// ContextSize of the states (default 160).
	ContextSize int
	// Lengths are the prompt lengths of the batch's sequences (default 1, 9, 70: a
	// decode step, a short prompt, and one of more than one 64-token chunk).
	Lengths []int
	// Tolerance is the largest |Δlogit| allowed between a sequence run in a batch and run
	// alone (default 0: bit-identical, as for an engine whose arithmetic does not depend
	// on the batch).
	Tolerance float64
	// Precisions are the KV precisions whose states are checked (default all four).
	Precisions []backend.KVPrecision
	// Activations for the engine (default int8).
	Activations backend.Activations
	// RewindPrecisions are the KV precisions of a Rewinder's Rewind checks (default
	// Precisions): a slow backend (an emulator) whose engine another backend runs
	// through them all may take fewer.
	RewindPrecisions []backend.KVPrecision
	// RewindAt is the length of the prompt before a Rewinder's kept passes (default 6);
	// ContextSize must leave room for it and 10 tokens more.
	RewindAt int
}

func (o *Options) defaults() {
	if o.Threads == 0 {
		o.Threads = 2
	}
	if o.ContextSize == 0 {
		o.ContextSize = 160
	}
	if len(o.Lengths) == 0 {
		o.Lengths = []int{1, 9, 70}
	}
	if o.RewindAt == 0 {
		o.RewindAt = 6
	}
	if len(o.Precisions) == 0 {
		o.Precisions = []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8, backend.KVQ4}
	}
	if len(o.RewindPrecisions) == 0 {
		o.RewindPrecisions = o.Precisions
	}
}

// suite is one Run's engine and model.
type suite struct {
	t   *testing.T
	e   backend.Engine
	m   backend.Model
	opt Options
	rng *rand.Rand
}

// Run checks backend b on model m. It loads one engine for all its subtests.
func Run(t *testing.T, b backend.Backend, m backend.Model, opt Options) {
	opt.defaults()
	e, err := b.Load(context.Background(), m, backend.LoadOptions{Threads: opt.Threads, Activations: opt.Activations})
	if err != nil {
		t.Fatalf("%s: Load: %v", b.Name(), err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("%s: Close: %v", b.Name(), err)
		}
	})
	s := &suite{t: t, e: e, m: m, opt: opt, rng: rand.New(rand.NewPCG(1, 2))}
	t.Run("BatchMatchesAlone", s.batchMatchesAlone)
	t.Run("Snapshot", s.snapshot)
	t.Run("Copy", s.copy)
	t.Run("Reset", s.reset)
	t.Run("Cancel", s.cancel)
	t.Run("ClosedAndForeign", func(t *testing.T) { s.closedAndForeign(t, b) })
	if g, ok := e.(backend.Greedy); ok {
		t.Run("Greedy", func(t *testing.T) { s.greedy(t, g) })
	}
	if st, err := e.NewState(backend.StateOptions{ContextSize: 1}); err == nil {
		_, ok := st.(backend.Rewinder)
		st.Close()
		if ok {
			t.Run("Rewind", s.rewind)
			t.Run("RewindRefused", s.rewindRefused)
		}
	}
}

func (s *suite) tokens(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(s.rng.IntN(s.m.Vocab()))
	}
	return ids
}

func (s *suite) newState(t *testing.T, p backend.KVPrecision) backend.State {
	st, err := s.e.NewState(backend.StateOptions{ContextSize: s.opt.ContextSize, KVCache: p})
	if err != nil {
		t.Fatalf("NewState(%v): %v", p, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// forward checks the batch as bonsai does, then runs it.
func (s *suite) forward(t *testing.T, ctx context.Context, batch ...backend.Sequence) error {
	t.Helper()
	if err := backend.Check(batch, s.m.Vocab(), func(backend.State) int { return s.opt.ContextSize }); err != nil {
		t.Fatalf("the suite built a bad batch: %v", err)
	}
	return s.e.Forward(ctx, batch)
}

// run feeds tokens to st alone and returns the logits of every token.
func (s *suite) run(t *testing.T, st backend.State, tokens []int32) []float32 {
	t.Helper()
	out := make([]float32, len(tokens)*s.m.Vocab())
	if err := s.forward(t, context.Background(), backend.Sequence{State: st, Tokens: tokens, Logits: backend.LogitsAll, Out: out}); err != nil {
		t.Fatalf("Forward: %v", err)
	}
	return out
}

func (s *suite) compare(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logits, want %d", what, len(got), len(want))
	}
	worst, at := 0.0, -1
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if math.IsNaN(d) {
			t.Fatalf("%s: logit %d is %v, want %v", what, i, got[i], want[i])
		}
		if d > worst {
			worst, at = d, i
		}
	}
	if worst > s.opt.Tolerance {
		v := s.m.Vocab()
		t.Fatalf("%s: |Δlogit| %.3g at token %d logit %d (%v, want %v), tolerance %.3g", what, worst, at/v, at%v, got[at], want[at], s.opt.Tolerance)
	}
}

func snapshot(t *testing.T, st backend.State) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := backend.WriteState(&b, st); err != nil {
		t.Fatalf("WriteState: %v", err)
	}
	return b.Bytes()
}

// A batch of sequences of different lengths, each asking for different logits, gives
// each what it gets alone asking for the same; so does the batch's next decode step,
// and their states end equal.
func (s *suite) batchMatchesAlone(t *testing.T) {
	v := s.m.Vocab()
	n := len(s.opt.Lengths)
	wants := []backend.Logits{backend.LogitsAll, backend.LogitsLast, backend.LogitsNone}
	seq := func(st backend.State, tokens []int32, want backend.Logits) backend.Sequence {
		q := backend.Sequence{State: st, Tokens: tokens, Logits: want}
		switch want {
		case backend.LogitsAll:
			q.Out = make([]float32, len(tokens)*v)
		case backend.LogitsLast:
			q.Out = make([]float32, v)
		}
		return q
	}
	prompts := make([][]int32, n)
	next := s.tokens(n)
	alone := make([]backend.Sequence, n)
	aloneNext := make([][]float32, n)
	aloneSnap := make([][]byte, n)
	for i, l := range s.opt.Lengths {
		prompts[i] = s.tokens(l)
		st := s.newState(t, backend.KVFloat16)
		alone[i] = seq(st, prompts[i], wants[i%len(wants)])
		if err := s.forward(t, context.Background(), alone[i]); err != nil {
			t.Fatalf("Forward of sequence %d alone: %v", i, err)
		}
		aloneNext[i] = s.run(t, st, next[i:i+1])
		aloneSnap[i] = snapshot(t, st)
	}
	states := make([]backend.State, n)
	batch := make([]backend.Sequence, n)
	for i := range batch {
		states[i] = s.newState(t, backend.KVFloat16)
		batch[i] = seq(states[i], prompts[i], alone[i].Logits)
	}
	if err := s.forward(t, context.Background(), batch...); err != nil {
		t.Fatalf("Forward of the batch: %v", err)
	}
	for i, q := range batch {
		if got := q.State.Len(); got != len(prompts[i]) {
			t.Fatalf("sequence %d holds %d tokens after its %d-token prompt", i, got, len(prompts[i]))
		}
		if q.Logits != backend.LogitsNone {
			s.compare(t, fmt.Sprintf("sequence %d (%d tokens, logits %d) in a batch", i, len(prompts[i]), q.Logits), q.Out, alone[i].Out)
		}
	}
	// One decode step for all of them at once.
	for i := range batch {
		batch[i] = seq(states[i], next[i:i+1], backend.LogitsAll)
	}
	if err := s.forward(t, context.Background(), batch...); err != nil {
		t.Fatalf("Forward of the decode batch: %v", err)
	}
	for i, q := range batch {
		s.compare(t, fmt.Sprintf("sequence %d's decode step in a batch", i), q.Out, aloneNext[i])
		if s.opt.Tolerance == 0 && !bytes.Equal(snapshot(t, q.State), aloneSnap[i]) {
			t.Fatalf("sequence %d: its state after the batch differs from its state run alone", i)
		}
	}
}

// A state written by WriteState and read into a fresh state continues as the original,
// at every KV precision; the snapshot of the copy is the same bytes.
func (s *suite) snapshot(t *testing.T) {
	for _, p := range s.opt.Precisions {
		t.Run(p.String(), func(t *testing.T) {
			a := s.newState(t, p)
			s.run(t, a, s.tokens(21))
			snap := snapshot(t, a)
			b := s.newState(t, p)
			s.run(t, b, s.tokens(3)) // something to replace
			if err := backend.ReadState(bytes.NewReader(snap), b); err != nil {
				t.Fatalf("ReadState: %v", err)
			}
			if b.Len() != a.Len() {
				t.Fatalf("the loaded state holds %d tokens, the saved one %d", b.Len(), a.Len())
			}
			if !bytes.Equal(snapshot(t, b), snap) {
				t.Fatal("the loaded state's snapshot differs from the one it was loaded from")
			}
			next := s.tokens(2)
			s.compare(t, "the loaded state's next steps", s.run(t, b, next), s.run(t, a, next))
			// A damaged snapshot is refused and leaves the state empty.
			if err := backend.ReadState(bytes.NewReader(snap[:len(snap)/2]), b); err == nil {
				t.Fatal("ReadState of half a snapshot succeeded")
			}
			if b.Len() != 0 {
				t.Fatalf("after a failed ReadState the state holds %d tokens, want 0", b.Len())
			}
		})
	}
}

// CopyState (through the views) and a StateCopier's CopyFrom make states that continue
// as the original.
func (s *suite) copy(t *testing.T) {
	a := s.newState(t, backend.KVFloat16)
	s.run(t, a, s.tokens(13))
	next := s.tokens(2)
	b := s.newState(t, backend.KVFloat16)
	if err := backend.CopyState(b, a); err != nil {
		t.Fatalf("CopyState: %v", err)
	}
	var c backend.State
	if cp, ok := a.(backend.StateCopier); ok {
		c = s.newState(t, backend.KVFloat16)
		if err := c.(backend.StateCopier).CopyFrom(cp); err != nil {
			t.Fatalf("CopyFrom: %v", err)
		}
	}
	want := s.run(t, a, next)
	s.compare(t, "a CopyState copy's next steps", s.run(t, b, next), want)
	if c != nil {
		s.compare(t, "a CopyFrom copy's next steps", s.run(t, c, next), want)
	}
}

// A Reset state runs as a new one.
func (s *suite) reset(t *testing.T) {
	prompt := s.tokens(11)
	fresh := s.run(t, s.newState(t, backend.KVFloat16), prompt)
	st := s.newState(t, backend.KVFloat16)
	s.run(t, st, s.tokens(17))
	st.Reset()
	if st.Len() != 0 {
		t.Fatalf("Len after Reset is %d", st.Len())
	}
	s.compare(t, "a Reset state", s.run(t, st, prompt), fresh)
}

// A cancelled Forward returns the context's error and leaves each state consistent: it
// holds a prefix of its tokens and continues as a state fed that prefix.
func (s *suite) cancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st := s.newState(t, backend.KVFloat16)
	prompt := s.tokens(70)
	err := s.forward(t, ctx, backend.Sequence{State: st, Tokens: prompt})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Forward with a cancelled context: %v, want context.Canceled", err)
	}
	held := st.Len()
	if held < 0 || held > len(prompt) {
		t.Fatalf("after cancellation the state holds %d tokens of a %d-token prompt", held, len(prompt))
	}
	ref := s.newState(t, backend.KVFloat16)
	if held > 0 {
		s.run(t, ref, prompt[:held])
	}
	next := s.tokens(1)
	s.compare(t, "a cancelled state's next step", s.run(t, st, next), s.run(t, ref, next))
}

// A closed state and a state of another engine are refused with errors, not panics.
func (s *suite) closedAndForeign(t *testing.T, b backend.Backend) {
	st := s.newState(t, backend.KVFloat16)
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	err := s.e.Forward(context.Background(), []backend.Sequence{{State: st, Tokens: s.tokens(1)}})
	if !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("Forward on a closed state: %v, want ErrClosed", err)
	}
	other, err := b.Load(context.Background(), s.m, backend.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatalf("a second Load: %v", err)
	}
	defer other.Close()
	foreign, err := other.NewState(backend.StateOptions{ContextSize: s.opt.ContextSize})
	if err != nil {
		t.Fatalf("NewState on the second engine: %v", err)
	}
	defer foreign.Close()
	if err := s.e.Forward(context.Background(), []backend.Sequence{{State: foreign, Tokens: s.tokens(1)}}); err == nil {
		t.Fatal("Forward accepted a state of another engine")
	}
}

// ForwardGreedy's choice is the argmax of Forward's logits, for each sequence of a batch.
func (s *suite) greedy(t *testing.T, g backend.Greedy) {
	n := len(s.opt.Lengths)
	batch := make([]backend.Sequence, n)
	want := make([]int32, n)
	for i, l := range s.opt.Lengths {
		prompt := s.tokens(l)
		logits := s.run(t, s.newState(t, backend.KVFloat16), prompt)
		last := logits[(l-1)*s.m.Vocab():]
		best := 0
		for j, x := range last {
			if x > last[best] {
				best = j
			}
		}
		want[i] = int32(best)
		batch[i] = backend.Sequence{State: s.newState(t, backend.KVFloat16), Tokens: prompt}
	}
	next := make([]int32, n)
	if err := g.ForwardGreedy(context.Background(), batch, next); err != nil {
		t.Fatalf("ForwardGreedy: %v", err)
	}
	for i := range next {
		if next[i] != want[i] {
			t.Fatalf("sequence %d: ForwardGreedy chose %d, the argmax of Forward's logits is %d", i, next[i], want[i])
		}
	}
}
