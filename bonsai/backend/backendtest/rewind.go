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
// every j, at every KV precision, a pass alone
// and beside another sequence's prompt in one batch, and after rewinding to each
// position in turn from T down to 0 and from the pass's end.
func (s *suite) rewind(t *testing.T) {
	v, at := s.m.Vocab(), s.opt.RewindAt
	for _, p := range s.opt.Precisions {
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
				// pass, with the snapshot and the next token's logits after each.
				wantPass := make([]float32, 0, T*v)
				wantSnap := make([][]byte, T+1)
				wantNext := make([][]float32, T+1)
				for j := 0; j <= T; j++ {
					ref := fromBase(t)
					for i := 0; i < j; i++ {
						out := s.run(t, ref, pass[i:i+1])
						if j == T {
							wantPass = append(wantPass, out...)
						}
					}
					wantSnap[j] = snapshot(t, ref)
					wantNext[j] = s.run(t, ref, next)
				}
				beside := []bool{false}
				if p == backend.KVFloat16 {
					beside = append(beside, true)
				}
				for _, b := range beside {
					for j := 0; j <= T; j++ {
						st := fromBase(t)
						what := fmt.Sprintf("a kept pass of %d tokens (beside a prompt: %v)", T, b)
						got := s.keptPass(t, st, pass, b)
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
				s.keptPass(t, st, pass, false)
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

// keptPass runs tokens through st in a kept pass asking for every logit, alone or
// after another sequence's prompt in the same batch, and returns the logits.
func (s *suite) keptPass(t *testing.T, st backend.State, tokens []int32, beside bool) []float32 {
	t.Helper()
	out := make([]float32, len(tokens)*s.m.Vocab())
	batch := []backend.Sequence{{State: st, Tokens: tokens, Logits: backend.LogitsAll, Out: out, Keep: true}}
	if beside {
		other := backend.Sequence{State: s.newState(t, backend.KVFloat16), Tokens: s.tokens(rewindBeside)}
		batch = []backend.Sequence{other, batch[0]}
	}
	if err := s.forward(t, context.Background(), batch...); err != nil {
		t.Fatalf("Forward of a kept pass: %v", err)
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
	s.keptPass(t, st, s.tokens(3), false)
	refused("before the kept pass", 3)
	refused("beyond the kept pass", 8)
	if err := r.Rewind(5); err != nil {
		t.Fatalf("Rewind(5) within the kept pass: %v", err)
	}
	refused("beyond the state after a rewind", 6)
	s.run(t, st, s.tokens(1))
	refused("after a pass that was not kept", 5)
	s.keptPass(t, st, s.tokens(2), false)
	st.Reset()
	refused("after Reset", 0)
	s.keptPass(t, st, s.tokens(2), false)
	if err := st.SetLen(2); err != nil {
		t.Fatalf("SetLen: %v", err)
	}
	refused("after SetLen", 1)
	if cp, ok := st.(backend.StateCopier); ok {
		src := s.newState(t, backend.KVFloat16)
		s.run(t, src, s.tokens(3))
		s.keptPass(t, st, s.tokens(2), false)
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
