package cpu

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

func snapshotOf(t testing.TB, st backend.State) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, backend.WriteState(&b, st))
	return b.Bytes()
}

func tokensFor(n, vocab, seed int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32((i*131 + seed*17 + 5) % vocab)
	}
	return out
}

// A kept pass runs the GDN step form even where the engine's prefill takes the chunked
// one, so that its positions stay decode steps: its logits and every rewound state are
// bit for bit those of one-token steps, while a plain pass of the same tokens differs.
func TestRewindChunkedGDN(t *testing.T) {
	w := synthtest.Weights(t, "tiny", 8, ternary.PQ2_0)
	V := w.Config.Vocab
	eng, err := New().Load(context.Background(), w, backend.LoadOptions{Threads: 2, Activations: backend.ActivationsFloat32})
	require.NoError(t, err)
	defer eng.Close()
	e := eng.(*cpuEngine)
	e.chunkedGDN = true
	ctx := context.Background()
	prompt, pass := tokensFor(20, V, 1), tokensFor(9, V, 2)
	newState := func() backend.State {
		st, err := e.NewState(backend.StateOptions{ContextSize: 64, KVCache: backend.KVFloat32})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		require.NoError(t, e.Forward(ctx, []backend.Sequence{{State: st, Tokens: prompt}}))
		return st
	}
	ref := newState()
	wantLogits := make([]float32, 0, len(pass)*V)
	wantSnap := [][]byte{snapshotOf(t, ref)}
	for i := range pass {
		out := make([]float32, V)
		require.NoError(t, e.Forward(ctx, []backend.Sequence{{State: ref, Tokens: pass[i : i+1], Logits: backend.LogitsLast, Out: out}}))
		wantLogits = append(wantLogits, out...)
		wantSnap = append(wantSnap, snapshotOf(t, ref))
	}
	plain, kept := newState(), newState()
	plainOut, keptOut := make([]float32, len(pass)*V), make([]float32, len(pass)*V)
	require.NoError(t, e.Forward(ctx, []backend.Sequence{{State: plain, Tokens: pass, Logits: backend.LogitsAll, Out: plainOut}}))
	require.NotEqual(t, wantLogits, plainOut, "the chunked form rounds otherwise than steps")
	require.NoError(t, e.Forward(ctx, []backend.Sequence{{State: kept, Tokens: pass, Logits: backend.LogitsAll, Out: keptOut, Keep: true}}))
	require.Equal(t, wantLogits, keptOut)
	for j := len(pass); j >= 0; j-- {
		require.NoError(t, kept.(backend.Rewinder).Rewind(len(prompt)+j))
		require.Equal(t, wantSnap[j], snapshotOf(t, kept), "rewound to %d", j)
	}
}

// The seam's Rewind conformance on a PTQ1_0 model, int8 and float32 activations.
func TestRewindPTQ1(t *testing.T) {
	m := synthtest.Weights(t, "tiny", 5, ternary.PTQ1_0)
	for _, a := range []backend.Activations{backend.ActivationsInt8, backend.ActivationsFloat32} {
		t.Run(a.String(), func(t *testing.T) {
			e, err := New().Load(context.Background(), m, backend.LoadOptions{Threads: 2, Activations: a})
			require.NoError(t, err)
			defer e.Close()
			checkRewinds(t, e, m.Config.Vocab, backend.KVInt8, 7)
		})
	}
}

// checkRewinds feeds a prompt of at tokens, then a kept pass of 5, rewinds to each
// position and compares the state and the next token's logits with one-token steps.
func checkRewinds(t *testing.T, e backend.Engine, V int, p backend.KVPrecision, at int) {
	t.Helper()
	ctx := context.Background()
	prompt, pass, next := tokensFor(at, V, 3), tokensFor(5, V, 4), tokensFor(1, V, 5)
	newState := func() backend.State {
		st, err := e.NewState(backend.StateOptions{ContextSize: at + 8, KVCache: p})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		require.NoError(t, e.Forward(ctx, []backend.Sequence{{State: st, Tokens: prompt}}))
		return st
	}
	step := func(st backend.State, tok []int32) []float32 {
		out := make([]float32, V)
		require.NoError(t, e.Forward(ctx, []backend.Sequence{{State: st, Tokens: tok, Logits: backend.LogitsLast, Out: out}}))
		return out
	}
	for j := 0; j <= len(pass); j++ {
		ref := newState()
		for i := range j {
			step(ref, pass[i:i+1])
		}
		snap, wantNext := snapshotOf(t, ref), step(ref, next)
		st := newState()
		require.NoError(t, e.Forward(ctx, []backend.Sequence{{State: st, Tokens: pass, Keep: true}}))
		require.NoError(t, st.(backend.Rewinder).Rewind(at+j))
		require.Equal(t, at+j, st.Len())
		require.Equal(t, snap, snapshotOf(t, st), "rewound to %d", j)
		require.Equal(t, wantNext, step(st, next), "the next token after rewinding to %d", j)
	}
}

// Rewinds of states of one engine from several goroutines, beside their passes, give
// each what it gets alone (run with -race: the replay shares the engine's worker pool).
func TestRewindConcurrent(t *testing.T) {
	w := synthtest.Weights(t, "tiny", 6, ternary.PQ2_0)
	V := w.Config.Vocab
	e, err := New().Load(context.Background(), w, backend.LoadOptions{Threads: 2})
	require.NoError(t, err)
	defer e.Close()
	ctx := context.Background()
	// run returns the snapshot after a prompt and six rounds of a kept pass of 5
	// tokens rewound to a varying length; an error instead of a failure, for it runs
	// off the test's goroutine.
	run := func(seed int) ([]byte, error) {
		st, err := e.NewState(backend.StateOptions{ContextSize: 128, KVCache: backend.KVFloat16})
		if err != nil {
			return nil, err
		}
		defer st.Close()
		if err := e.Forward(ctx, []backend.Sequence{{State: st, Tokens: tokensFor(10, V, seed)}}); err != nil {
			return nil, err
		}
		for round := range 6 {
			pass := tokensFor(5, V, seed*10+round)
			if err := e.Forward(ctx, []backend.Sequence{{State: st, Tokens: pass, Keep: true}}); err != nil {
				return nil, err
			}
			if err := st.(backend.Rewinder).Rewind(st.Len() - 5 + (seed+round)%6); err != nil {
				return nil, err
			}
		}
		var b bytes.Buffer
		err = backend.WriteState(&b, st)
		return b.Bytes(), err
	}
	want := make([][]byte, 4)
	for i := range want {
		want[i], err = run(i)
		require.NoError(t, err)
	}
	got := make([][]byte, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = run(i)
		}()
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i], "state %d", i)
		require.Equal(t, want[i], got[i], "state %d", i)
	}
}

// A kept pass adds to the state's Bytes at least the recurrent states it saves: one
// StateSize² matrix per V head of each GDN layer.
func TestRewindBytes(t *testing.T) {
	w := synthtest.Weights(t, "tiny", 6, ternary.PQ2_0)
	c := w.Config
	e, err := New().Load(context.Background(), w, backend.LoadOptions{Threads: 1})
	require.NoError(t, err)
	defer e.Close()
	st, err := e.NewState(backend.StateOptions{ContextSize: 16, KVCache: backend.KVFloat16})
	require.NoError(t, err)
	defer st.Close()
	before := st.Bytes()
	require.NoError(t, e.Forward(context.Background(), []backend.Sequence{{State: st, Tokens: tokensFor(3, c.Vocab, 1), Keep: true}}))
	gdnLayers := 0
	for i := range c.Layers {
		if !c.IsAttention(i) {
			gdnLayers++
		}
	}
	require.Equal(t, 3, gdnLayers) // tiny: three GDN layers and one attention layer
	require.GreaterOrEqual(t, st.Bytes()-before, int64(gdnLayers*c.VHeads*c.StateSize*c.StateSize*4))
}

// BenchmarkVerify times, after a 64-token prompt (and at the real widths a 2000-token
// one, past the length from which a kept pass runs its attention a token at a time, as
// decode steps do: qwen35.Attention.ForwardAsSteps), a pass over T tokens plain and kept,
// and a Rewind after a kept pass (the rewind alone) to the pass's start (the GDN states
// restored, nothing replayed) and to T−1 tokens (the most replay), at the tiny and the
// real widths (BONSAI_BENCH_MODEL to name another file). Each iteration times all four
// in turn, the state copied back to the prompt's end before each pass, and the figures
// reported are medians, with the ratios to the plain pass: on a machine shared with
// other work, interleaving and medians keep a burst of load from landing on one side.
func BenchmarkVerify(b *testing.B) {
	presets := []string{"tiny", "real-widths"}
	if os.Getenv("BONSAI_BENCH_MODEL") != "" {
		presets = []string{"file"}
	}
	ctx := context.Background()
	for _, preset := range presets {
		path := os.Getenv("BONSAI_BENCH_MODEL")
		if path == "" {
			path = synthtest.Path(b, preset, 1, ternary.PQ2_0)
		}
		f, err := gguf.Open(path)
		require.NoError(b, err)
		defer f.Close()
		m, err := qwen35.Bind(f)
		require.NoError(b, err)
		e, err := New().Load(ctx, m, backend.LoadOptions{Threads: runtime.NumCPU()})
		require.NoError(b, err)
		defer e.Close()
		V := m.Config.Vocab
		ats := []int{64}
		if preset != "tiny" {
			ats = append(ats, 2000)
		}
		for _, at := range ats {
			for _, T := range []int{1, 2, 5, 9} {
				benchVerify(b, e, fmt.Sprintf("%s/at=%d/T=%d", preset, at, T), V, at, T)
			}
		}
	}
}

func benchVerify(b *testing.B, e backend.Engine, name string, V, at, T int) {
	ctx := context.Background()
	b.Run(name, func(b *testing.B) {
		opt := backend.StateOptions{ContextSize: at + 16, KVCache: backend.KVFloat16}
		st, err := e.NewState(opt)
		require.NoError(b, err)
		defer st.Close()
		base, err := e.NewState(opt)
		require.NoError(b, err)
		defer base.Close()
		require.NoError(b, e.Forward(ctx, []backend.Sequence{{State: base, Tokens: tokensFor(at, V, 1)}}))
		q := backend.Sequence{State: st, Tokens: tokensFor(T, V, 2), Logits: backend.LogitsAll, Out: make([]float32, T*V)}
		pass := func(keep bool) time.Duration {
			require.NoError(b, st.(backend.StateCopier).CopyFrom(base))
			q.Keep = keep
			t0 := time.Now()
			require.NoError(b, e.Forward(ctx, []backend.Sequence{q}))
			return time.Since(t0)
		}
		rewind := func(n int) time.Duration {
			pass(true)
			t0 := time.Now()
			require.NoError(b, st.(backend.Rewinder).Rewind(n))
			return time.Since(t0)
		}
		var plain, kept, r0, r1 []time.Duration
		for b.Loop() {
			plain = append(plain, pass(false))
			kept = append(kept, pass(true))
			r0 = append(r0, rewind(at))
			r1 = append(r1, rewind(at+T-1))
		}
		p := median(plain)
		for _, x := range []struct {
			name string
			d    []time.Duration
		}{{"plain", plain}, {"kept", kept}, {"rewind0", r0}, {"rewind-1", r1}} {
			b.ReportMetric(float64(median(x.d).Microseconds())/1e3, x.name+"-ms")
			if x.name != "plain" {
				b.ReportMetric(float64(median(x.d))/float64(p), x.name+"/plain")
			}
		}
	})
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkGDNStateCopy27B times one copy of every GDN layer's state at the 27B's
// widths (48 layers of 48 V heads × 128² float32 and the conv rows): what a snapshot
// per position would cost each position of a verification pass.
func BenchmarkGDNStateCopy27B(b *testing.B) {
	c := synthtest.Config(b, "27b")
	g := qwen35.NewGDN(&c)
	var src, dst []*qwen35.GDNState
	for i := range c.Layers {
		if !c.IsAttention(i) {
			src, dst = append(src, g.NewState()), append(dst, g.NewState())
		}
	}
	var n int64
	for _, s := range src {
		n += 4 * int64(len(s.S)+len(s.Conv))
	}
	b.SetBytes(n)
	for b.Loop() {
		for i := range src {
			dst[i].CopyFrom(src[i])
		}
	}
	b.ReportMetric(float64(len(src)), "layers")
}
