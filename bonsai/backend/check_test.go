package backend_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

func TestCheck(t *testing.T) {
	const vocab, ctx = 5, 10
	held := func(n int) *fakeState { // a state of n tokens and a context of ctx
		st := newFakeState(nil, backend.KVFloat16, ctx)
		st.n = n
		return st
	}
	a, b := held(0), held(7)
	size := func(backend.State) int { return ctx }
	seq := func(st backend.State, tokens ...int32) backend.Sequence {
		return backend.Sequence{State: st, Tokens: tokens}
	}
	last := func(s backend.Sequence, out int) backend.Sequence {
		s.Logits, s.Out = backend.LogitsLast, make([]float32, out)
		return s
	}
	all := func(s backend.Sequence, out int) backend.Sequence {
		s.Logits, s.Out = backend.LogitsAll, make([]float32, out)
		return s
	}

	for _, c := range []struct {
		name  string
		batch []backend.Sequence
		want  []string // in the message
		is    error
	}{
		{"nil state", []backend.Sequence{seq(a, 1), seq(nil, 1)},
			[]string{"sequence 1", "no state"}, nil},
		{"a shared state", []backend.Sequence{seq(a, 1), seq(b, 2), seq(a, 3)},
			[]string{"sequence 2", "shares its state with sequence 0"}, nil},
		{"token −1", []backend.Sequence{seq(a, 0, 4), seq(b, 2, -1)},
			[]string{"sequence 1", "token -1", "index 1", "[0, 5)"}, nil},
		{"token == vocab", []backend.Sequence{seq(a, 0, 1, 2, vocab)},
			[]string{"token 5", "index 3", "[0, 5)"}, nil},
		{"context overflow", []backend.Sequence{seq(a, 1), seq(b, 1, 2, 3, 4)},
			[]string{"sequence 1", "7 tokens held + 4 new", "context size 10"}, backend.ErrContextFull},
		{"LogitsLast short Out", []backend.Sequence{last(seq(a, 1, 2), vocab-1)},
			[]string{"holds 4 values, want 5"}, nil},
		{"LogitsLast nil Out", []backend.Sequence{seq(b), last(seq(a, 1), 0)},
			[]string{"sequence 1", "holds 0 values, want 5"}, nil},
		{"LogitsAll short Out", []backend.Sequence{all(seq(a, 1, 2, 3), 3*vocab-1)},
			[]string{"holds 14 values, want 15"}, nil},
		{"LogitsAll Out for one token", []backend.Sequence{seq(b), all(seq(a, 1, 2), vocab)},
			[]string{"sequence 1", "holds 5 values, want 10"}, nil},
		{"unknown Logits", []backend.Sequence{{State: a, Tokens: []int32{1}, Logits: 3, Out: make([]float32, 100)}},
			[]string{"unknown Logits 3"}, nil},
	} {
		// A batch of one names no sequence: the caller has only the one.
		err := backend.Check(c.batch, vocab, size)
		if err == nil {
			t.Errorf("%s: Check accepted the batch", c.name)
			continue
		}
		if len(c.batch) == 1 && strings.Contains(err.Error(), "sequence") {
			t.Errorf("%s: %q numbers the only sequence", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: %v does not wrap %v", c.name, err, c.is)
		}
	}

	for _, c := range []struct {
		name  string
		batch []backend.Sequence
	}{
		{"empty", nil},
		{"LogitsNone with nil Out", []backend.Sequence{seq(a, 0, 1, 4), seq(b, 2, 3, 4)}}, // b fills its context exactly
		{"LogitsLast with no tokens and nil Out", []backend.Sequence{{State: a, Logits: backend.LogitsLast}}},
		{"LogitsAll with no tokens and nil Out", []backend.Sequence{{State: a, Logits: backend.LogitsAll}}},
		{"Out of exactly the lengths", []backend.Sequence{last(seq(a, 1, 2), vocab), all(seq(b, 3, 4), 2*vocab)}},
		{"Out longer than asked", []backend.Sequence{last(seq(a, 1), 2*vocab)}},
	} {
		if err := backend.Check(c.batch, vocab, size); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// Check asks contextSize for each state's own size.
func TestCheckContextSizePerState(t *testing.T) {
	small, big := newFakeState(nil, backend.KVFloat16, 2), newFakeState(nil, backend.KVFloat16, 8)
	sizes := map[backend.State]int{small: 2, big: 8}
	size := func(st backend.State) int { return sizes[st] }
	batch := []backend.Sequence{{State: big, Tokens: []int32{0, 0, 0}}, {State: small, Tokens: []int32{0, 0}}}
	if err := backend.Check(batch, 1, size); err != nil {
		t.Fatalf("a batch that fits each context: %v", err)
	}
	batch[1].Tokens = append(batch[1].Tokens, 0)
	err := backend.Check(batch, 1, size)
	if !errors.Is(err, backend.ErrContextFull) || !strings.Contains(err.Error(), "sequence 1") {
		t.Fatalf("3 tokens into a context of 2: %v, want sequence 1's ErrContextFull", err)
	}
}
