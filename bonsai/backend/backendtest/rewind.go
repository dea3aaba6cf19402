package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// rewindPasses are the lengths of the kept passes the suite rewinds: the last
// accepted token alone, and with 1, 4 and 8 drafts.
var rewindPasses = []int{1, 2, 5, 9}

// rewindBeside is the prompt of a sequence run in the same batch as a kept pass in one
// of the checks: 62 tokens, so that the pass's rows straddle the first 64-row chunk's
// end.
const rewindBeside = 62

// A kept pass over k+1 tokens gives, row by row, the logits of feeding them one at a
// time, and Rewind to any position j of it leaves the state those j steps leave: the
// same length, the same snapshot (every layer's view), and the same logits for the
// next token. Checked after a prompt of Options.RewindAt tokens, for several k and
// every j, at every KV precision: a pass alone (and, at fp16, in two calls, and
// beside another sequence's prompt in one batch), rewound by way of the pass's end
// and T−1, and one pass rewound to each position in turn from T down to 0.
func (s *suite) rewind(t *testing.T) {
	v, at := s.m.Vocab(), s.opt.RewindAt
	for _, p := range s.opt.RewindPrecisions {
		// Every state starts as a copy of one fed the prompt.
		base := s.newState(t, p)
		s.run(t, base, s.tokens(at))
		fromBase := func(t *testing.T) backend.State {
			st := s.newState(t, p)
			if err := backend.CopyState(st, base); err != nil {
				t.Fatalf("CopyState: %v", err)
			}
			return st
		}
		for _, T := range rewindPasses {
			t.Run(fmt.Sprintf("%v/%d", p, T), func(t *testing.T) {
				pass, next := s.tokens(T), s.tokens(1)
				// The reference: the prompt in one pass, then the pass's tokens one per
				// pass, with the snapshot after each and the next token's logits from a
				// copy of it (one walk of T steps, not a walk to each j: on a CPU device
				// the quadratic walk was a third of the suite's time).
				wantPass := make([]float32, 0, T*v)
				wantSnap := make([][]byte, T+1)
				wantNext := make([][]float32, T+1)
				ref := fromBase(t)
				for j := 0; j <= T; j++ {
					wantSnap[j] = snapshot(t, ref)
					st := s.newState(t, p)
					if err := backend.CopyState(st, ref); err != nil {
						t.Fatalf("CopyState: %v", err)
					}
					wantNext[j] = s.run(t, st, next)
					if j < T {
						wantPass = append(wantPass, s.run(t, ref, pass[j:j+1])...)
					}
				}
				ways := []passWay{alone}
				if p == backend.KVFloat16 {
					ways = append(ways, besidePrompt, twoCalls)
				}
				for _, way := range ways {
					for j := 0; j <= T; j++ {
						st := fromBase(t)
						what := fmt.Sprintf("a kept pass of %d tokens %s", T, way)
						got := s.keptPass(t, st, pass, way)
						s.compare(t, what+": its logits against steps", got, wantPass)
						r := st.(backend.Rewinder)
						// Down to j by way of the pass's end and, for j < T, T−1.
						for _, n := range []int{T, max(j, T-1), j} {
							if err := r.Rewind(at + n); err != nil {
								t.Fatalf("%s: Rewind(%d): %v", what, at+n, err)
							}
						}
						s.checkRewound(t, fmt.Sprintf("%s rewound to %d", what, j), st, at+j, wantSnap[j])
						s.compare(t, fmt.Sprintf("%s rewound to %d: the next token's logits", what, j), s.run(t, st, next), wantNext[j])
					}
				}
				// One pass rewound to every position in turn, from T down to 0.
				st := fromBase(t)
				s.keptPass(t, st, pass, alone)
				for j := T; j >= 0; j-- {
					if err := st.(backend.Rewinder).Rewind(at + j); err != nil {
						t.Fatalf("Rewind(%d) after rewinding to %d: %v", at+j, at+j+1, err)
					}
					s.checkRewound(t, fmt.Sprintf("one pass rewound in turn to %d", j), st, at+j, wantSnap[j])
				}
			})
		}
	}
}

// passWay is how a kept pass is fed.
type passWay int

const (
	alone        passWay = iota // in one call, alone
	besidePrompt                // in one call, after another sequence's prompt
	twoCalls                    // in two calls, the first of one token
)

func (w passWay) String() string {
	return [...]string{"alone", "beside a prompt", "in two calls"}[w]
}

// keptPass runs tokens through st in a kept pass asking for every logit, fed the way
// way says, and returns the logits.
func (s *suite) keptPass(t *testing.T, st backend.State, tokens []int32, way passWay) []float32 {
	t.Helper()
	v := s.m.Vocab()
	out := make([]float32, len(tokens)*v)
	seq := func(from, to int) backend.Sequence {
		return backend.Sequence{State: st, Tokens: tokens[from:to], Logits: backend.LogitsAll, Out: out[from*v : to*v], Keep: true}
	}
	calls := [][]backend.Sequence{{seq(0, len(tokens))}}
	switch way {
	case besidePrompt:
		other := backend.Sequence{State: s.newState(t, backend.KVFloat16), Tokens: s.tokens(rewindBeside)}
		calls[0] = []backend.Sequence{other, calls[0][0]}
	case twoCalls:
		calls = [][]backend.Sequence{{seq(0, 1)}, {seq(1, len(tokens))}}
	}
	for _, batch := range calls {
		if err := s.forward(t, context.Background(), batch...); err != nil {
			t.Fatalf("Forward of a kept pass: %v", err)
		}
	}
	return out
}

// checkRewound checks a rewound state's length and, for an engine whose arithmetic
// does not depend on the batch, that its snapshot is want's bytes.
func (s *suite) checkRewound(t *testing.T, what string, st backend.State, n int, want []byte) {
	t.Helper()
	if st.Len() != n {
		t.Fatalf("%s: Len %d, want %d", what, st.Len(), n)
	}
	if s.opt.Tolerance == 0 && !bytes.Equal(snapshot(t, st), want) {
		t.Fatalf("%s: the state differs from that of decoding the same tokens one at a time", what)
	}
}

// Rewind is refused, leaving the state as it was, without a kept pass, beyond either
// end of the last one, after a pass that was not kept, after Reset, SetLen and a copy,
// and on a closed state.
func (s *suite) rewindRefused(t *testing.T) {
	st := s.newState(t, backend.KVFloat16)
	r := st.(backend.Rewinder)
	refused := func(what string, n int) {
		t.Helper()
		before := snapshot(t, st)
		if err := r.Rewind(n); !errors.Is(err, backend.ErrNotKept) {
			t.Fatalf("%s: Rewind(%d) = %v, want ErrNotKept", what, n, err)
		}
		if !bytes.Equal(snapshot(t, st), before) {
			t.Fatalf("%s: a refused Rewind changed the state", what)
		}
	}
	refused("a new state", 0)
	s.run(t, st, s.tokens(4))
	refused("a state whose passes were not kept", 3)
	s.keptPass(t, st, s.tokens(3), alone)
	refused("before the kept pass", 3)
	refused("beyond the kept pass", 8)
	if err := r.Rewind(5); err != nil {
		t.Fatalf("Rewind(5) within the kept pass: %v", err)
	}
	refused("beyond the state after a rewind", 6)
	s.keptPass(t, st, s.tokens(2), alone) // a new pass, from 5: the rewind ended the last
	refused("before a kept pass that follows a rewind", 4)
	s.run(t, st, s.tokens(1))
	refused("after a pass that was not kept", 7)
	s.keptPass(t, st, s.tokens(2), alone)
	st.Reset()
	refused("after Reset", 0)
	s.keptPass(t, st, s.tokens(2), alone)
	if err := st.SetLen(2); err != nil {
		t.Fatalf("SetLen: %v", err)
	}
	refused("after SetLen", 1)
	if cp, ok := st.(backend.StateCopier); ok {
		src := s.newState(t, backend.KVFloat16)
		s.run(t, src, s.tokens(3))
		s.keptPass(t, st, s.tokens(2), alone)
		if err := cp.CopyFrom(src); err != nil {
			t.Fatalf("CopyFrom: %v", err)
		}
		refused("after CopyFrom", 2)
	}
	st.Close()
	if err := r.Rewind(0); !errors.Is(err, backend.ErrClosed) {
		t.Fatalf("Rewind on a closed state: %v, want ErrClosed", err)
	}
}
