package enginetest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// RewindExact checks that a Rewind leaves, byte for byte, the state a kept pass of
// only the tokens rewound to leaves: the seam's conformance suite (Rewind) checks the
// logits within BatchTolerance, which would hide a replay that differs from the pass in
// the last bits. A kept pass's first j rows go through the same kernels whatever rows
// follow them (the GEMMs compute each row from itself; gdn_seq goes token by token; at
// the tiny model's short context attention holds one block of positions), so the
// reference is exact. Checked for a pass alone, in two calls (the second growing the
// engine's kept rows past its first allocation), beside another sequence's 62-token
// prompt (the pass straddling the 64-row command buffers), and for a pass of 70 tokens
// (two chunks of its own).
func RewindExact(t *testing.T, nb NewBackend) {
	b := nb(t, Variant{})
	w := synthtest.Weights(t, "tiny", 1, ternary.PQ2_0)
	e, err := b.Load(context.Background(), w, backend.LoadOptions{Threads: 1, Activations: backend.ActivationsFloat32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	v := w.Vocab()
	const at = 6
	ids := PromptIDs(at + 70)
	newState := func(t *testing.T) backend.State {
		st, err := e.NewState(backend.StateOptions{ContextSize: 160, KVCache: backend.KVFloat16})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	forward := func(t *testing.T, batch ...backend.Sequence) {
		t.Helper()
		if err := e.Forward(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
	}
	base := newState(t)
	forward(t, backend.Sequence{State: base, Tokens: ids[:at]})
	fromBase := func(t *testing.T) backend.State {
		st := newState(t)
		if err := backend.CopyState(st, base); err != nil {
			t.Fatal(err)
		}
		return st
	}
	snap := func(t *testing.T, st backend.State) []byte {
		var b bytes.Buffer
		if err := backend.WriteState(&b, st); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	kept := func(st backend.State, tokens []int32, out []float32) backend.Sequence {
		return backend.Sequence{State: st, Tokens: tokens, Logits: backend.LogitsAll, Out: out, Keep: true}
	}
	type way struct {
		name  string
		T     int
		calls func(t *testing.T, st backend.State, pass []int32, out []float32)
	}
	ways := []way{
		{"alone", 5, func(t *testing.T, st backend.State, pass []int32, out []float32) {
			forward(t, kept(st, pass, out))
		}},
		{"in two calls", 12, func(t *testing.T, st backend.State, pass []int32, out []float32) {
			forward(t, kept(st, pass[:1], out[:v]))
			forward(t, kept(st, pass[1:], out[v:]))
		}},
		{"beside a prompt", 5, func(t *testing.T, st backend.State, pass []int32, out []float32) {
			other := backend.Sequence{State: newState(t), Tokens: PromptIDs(62)}
			forward(t, other, kept(st, pass, out))
		}},
		{"of 70 tokens", 70, func(t *testing.T, st backend.State, pass []int32, out []float32) {
			forward(t, kept(st, pass, out))
		}},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			pass := ids[at : at+w.T]
			js := []int{0, 1, w.T / 2, w.T - 1, w.T}
			for _, j := range js {
				got := fromBase(t)
				out := make([]float32, w.T*v)
				w.calls(t, got, pass, out)
				if err := got.(backend.Rewinder).Rewind(at + j); err != nil {
					t.Fatalf("Rewind(%d): %v", at+j, err)
				}
				want := fromBase(t)
				wantOut := make([]float32, j*v)
				if j > 0 {
					forward(t, kept(want, pass[:j], wantOut))
				}
				what := fmt.Sprintf("a kept pass of %d tokens %s rewound to %d", w.T, w.name, j)
				if got.Len() != at+j {
					t.Fatalf("%s: Len %d, want %d", what, got.Len(), at+j)
				}
				if !bytes.Equal(snap(t, got), snap(t, want)) {
					t.Fatalf("%s: the state differs from a kept pass of its first %d tokens", what, j)
				}
				if d := MaxAbsDiff(out[:j*v], wantOut); d != 0 {
					t.Fatalf("%s: its first %d rows' logits differ from a pass of those alone by %g", what, j, d)
				}
			}
		})
	}
}
