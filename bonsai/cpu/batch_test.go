package cpu_test

import (
	"context"
	"fmt"
	"github.com/bonsai-go/sdk/internal/alloctest"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func load(t testing.TB, m backend.Model, opt backend.LoadOptions) backend.Engine {
	t.Helper()
	e, err := cpu.New().Load(context.Background(), m, opt)
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

func newStates(t testing.TB, e backend.Engine, n, contextSize int) []backend.State {
	t.Helper()
	sts := make([]backend.State, n)
	for i := range sts {
		st, err := e.NewState(backend.StateOptions{ContextSize: contextSize, KVCache: backend.KVFloat16})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		sts[i] = st
	}
	return sts
}

func ids(n, vocab, seed int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32((i*131 + seed*17 + 5) % vocab)
	}
	return out
}

func argmax(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// decodeBatch is one decode step of several sequences at once, each asking for its last
// token's logits, and feeding the greedy choice back as the next step's token.
type decodeBatch struct {
	e     backend.Engine
	batch []backend.Sequence
	next  []int32
	reset backend.State // a prefill chunk's state, reset before each step (no token fed back)
}

func newDecodeBatch(e backend.Engine, sts []backend.State, vocab int) *decodeBatch {
	d := &decodeBatch{e: e, batch: make([]backend.Sequence, len(sts)), next: make([]int32, len(sts))}
	for i, st := range sts {
		d.next[i] = int32(i + 1)
		d.batch[i] = backend.Sequence{State: st, Tokens: d.next[i : i+1], Logits: backend.LogitsLast, Out: make([]float32, vocab)}
	}
	return d
}

func (d *decodeBatch) step(ctx context.Context) error {
	if d.reset != nil {
		d.reset.Reset()
	}
	if err := d.e.Forward(ctx, d.batch); err != nil {
		return err
	}
	for i := range d.next {
		d.next[i] = argmax(d.batch[i].Out)
	}
	return nil
}

// newPrefillChunk is a "step" that prefills n tokens of one sequence from its start:
// the state is reset first, so that every call does the same work.
func newPrefillChunk(e backend.Engine, st backend.State, n, vocab int) *decodeBatch {
	toks := make([]int32, n)
	for i := range toks {
		toks[i] = int32((i*7919 + 13) % vocab)
	}
	return &decodeBatch{e: e, reset: st,
		batch: []backend.Sequence{{State: st, Tokens: toks, Logits: backend.LogitsLast, Out: make([]float32, vocab)}}}
}

// A decode step of a batch of three sequences allocates nothing once warm: the chunk
// scratch comes from the engine's free list, the head's rows for three sequences from
// its logits buffer, and the steps measured stay within the KV pages already allocated
// (positions 16–47, checked through the states' Bytes).
func TestBatchedStepAllocatesNothing(t *testing.T) {
	m := synthtest.Weights(t, "tiny", 5, ternary.PQ2_0)
	ctx := context.Background()
	for _, acts := range []backend.Activations{backend.ActivationsInt8, backend.ActivationsFloat32} {
		t.Run(acts.String(), func(t *testing.T) {
			e := load(t, m, backend.LoadOptions{Threads: 2, Activations: acts})
			sts := newStates(t, e, 3, 256)
			// Prompts of 20, 22 and 24 tokens, prefilled together.
			prefill := make([]backend.Sequence, len(sts))
			for i, st := range sts {
				prefill[i] = backend.Sequence{State: st, Tokens: ids(20+2*i, m.Vocab(), i)}
			}
			require.NoError(t, e.Forward(ctx, prefill))
			d := newDecodeBatch(e, sts, m.Vocab())
			var stepErr error
			step := func() {
				if err := d.step(ctx); err != nil && stepErr == nil {
					stepErr = err
				}
			}
			for range 4 {
				step()
			}
			alloctest.Settle()
			for range 4 {
				step()
			}
			bytes := make([]int64, len(sts))
			for i, st := range sts {
				bytes[i] = st.Bytes()
			}
			var counts []uint64
			const steps = 12 // up to position 24+8+12 = 44
			for range steps {
				n, threads := alloctest.Count(step)
				if threads == 0 {
					counts = append(counts, n)
				}
			}
			require.NoError(t, stepErr)
			for i, st := range sts {
				require.Equal(t, bytes[i], st.Bytes(), "sequence %d's state grew within the window", i)
			}
			t.Logf("tiny, %s activations: batched decode steps of 3 sequences after a warm-up: allocations %v (%d left out: the runtime started a thread)",
				acts, counts, steps-len(counts))
			require.GreaterOrEqual(t, len(counts), steps-2, "steps measured, of %d", steps)
			for _, n := range counts {
				require.Zero(t, n, "allocations of a batched decode step (steps: %v)", counts)
			}
		})
	}
}

// Forward calls with distinct states run at once on one engine, each with its own chunk
// scratch, and give what the same calls give one after another.
func TestConcurrentForward(t *testing.T) {
	m := synthtest.Weights(t, "tiny", 6, ternary.PQ2_0)
	e := load(t, m, backend.LoadOptions{Threads: 2})
	ctx := context.Background()
	const callers, perCaller, steps = 4, 2, 4
	run := func(sts []backend.State, c int) [][]float32 {
		prompt := make([]backend.Sequence, len(sts))
		for i, st := range sts {
			prompt[i] = backend.Sequence{State: st, Tokens: ids(6+3*c+i, m.Vocab(), c*perCaller+i)}
		}
		if !assert.NoError(t, e.Forward(ctx, prompt)) {
			return nil
		}
		d := newDecodeBatch(e, sts, m.Vocab())
		var logits [][]float32
		for range steps {
			if !assert.NoError(t, d.step(ctx)) {
				return nil
			}
			for _, q := range d.batch {
				logits = append(logits, append([]float32(nil), q.Out...))
			}
		}
		return logits
	}
	want := make([][][]float32, callers)
	for c := range callers {
		want[c] = run(newStates(t, e, perCaller, 128), c)
	}
	got := make([][][]float32, callers)
	states := make([][]backend.State, callers)
	for c := range callers {
		states[c] = newStates(t, e, perCaller, 128)
	}
	var wg sync.WaitGroup
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[c] = run(states[c], c)
		}()
	}
	wg.Wait()
	for c := range callers {
		require.Len(t, got[c], len(want[c]), "caller %d's logit rows", c)
		for r := range want[c] {
			require.Equal(t, want[c][r], got[c][r], "caller %d, row %d: concurrently, alone", c, r)
		}
	}
}

// A chunk's time is shared among its sequences in proportion to their rows: a batch of
// one decode step and a 3-token prompt, one chunk of 4 rows, gives the prompt's state
// three times the decode step's share of every kind of operation (to the nanosecond
// lost in each integer division), and each state its own tokens.
func TestProfileShared(t *testing.T) {
	m := synthtest.Weights(t, "tiny", 7, ternary.PQ2_0)
	e := load(t, m, backend.LoadOptions{Threads: 2, Profile: true})
	sts := newStates(t, e, 2, 64)
	out := make([]float32, m.Vocab())
	batch := []backend.Sequence{
		{State: sts[0], Tokens: ids(1, m.Vocab(), 1), Logits: backend.LogitsLast, Out: out},
		{State: sts[1], Tokens: ids(3, m.Vocab(), 2)},
	}
	require.NoError(t, e.Forward(context.Background(), batch))
	a, b := sts[0].(backend.Profiler).Profile(), sts[1].(backend.Profiler).Profile()
	require.Equal(t, [2]int{1, 3}, [2]int{a.Tokens, b.Tokens}, "tokens accounted")
	require.Truef(t, a.Ternary > 0 && a.GDN > 0 && a.Attention > 0, "the decode step's share has no time in every kind: %+v", a)
	for _, k := range []struct {
		name string
		a, b time.Duration
	}{{"Ternary", a.Ternary, b.Ternary}, {"Transforms", a.Transforms, b.Transforms}, {"GDN", a.GDN, b.GDN},
		{"Attention", a.Attention, b.Attention}, {"Other", a.Other, b.Other}} {
		// ⌊3d/4⌋ − 3⌊d/4⌋ is 0, 1 or 2 nanoseconds.
		d := k.b - 3*k.a
		assert.Truef(t, d >= 0 && d <= 2, "%s: the prompt's share %v is not three times the decode step's %v", k.name, k.b, k.a)
	}
	sts[0].(backend.Profiler).ResetProfile()
	require.Zero(t, sts[0].(backend.Profiler).Profile(), "after ResetProfile")
}

// BenchmarkBatchedDecode measures decode steps of 1, 2, 4 and 8 sequences run as one
// batch, in aggregate tokens per second, and a 64-token prefill chunk of one sequence
// (prefill=64), the batched work's best rate: the batch's sequences against it is the
// engine's share of loadbench's 8-streams-against-prefill ratio. Each runs on three
// loads in turn, so that each set is measured minutes apart at most: the file's layout
// (layout=file), the file's layout with the batch tiles (cpu.WithBatchTiles,
// layout=tiles) and the interleaved copy (cpu.LayoutInterleaved, layout=interleaved). Each
// case reports where its steps' time goes (the OpProfile kinds, in ms a step). The model
// is the real-widths synthetic preset (the 27B model's widths, four layers), generated
// once per run into a temporary directory, or the GGUF file BONSAI_BENCH_MODEL names.
func BenchmarkBatchedDecode(b *testing.B) {
	path := os.Getenv("BONSAI_BENCH_MODEL")
	if path == "" {
		path = synthtest.Path(b, "real-widths", 1, ternary.PQ2_0)
	}
	f, err := gguf.Open(path)
	require.NoError(b, err)
	defer f.Close()
	m, err := qwen35.Bind(f)
	require.NoError(b, err)
	opt := backend.LoadOptions{Threads: runtime.NumCPU(), Profile: true}
	engines := map[string]backend.Engine{}
	for _, c := range []struct {
		name string
		opts []cpu.Option
	}{{"file", []cpu.Option{cpu.WithLayout(cpu.LayoutFile)}},
		{"tiles", []cpu.Option{cpu.WithLayout(cpu.LayoutFile), cpu.WithBatchTiles()}},
		{"interleaved", []cpu.Option{cpu.WithLayout(cpu.LayoutInterleaved)}}} {
		e, err := cpu.New(c.opts...).Load(context.Background(), m, opt)
		require.NoError(b, err)
		defer e.Close()
		engines[c.name] = e
	}
	ctx := context.Background()
	const contextSize = 512
	for _, n := range []int{1, 2, 4, 8, -64} {
		for _, layout := range []string{"file", "tiles", "interleaved"} {
			n, e := n, engines[layout]
			name := fmt.Sprintf("batch=%d/layout=%s", n, layout)
			if n < 0 {
				name = fmt.Sprintf("prefill=%d/layout=%s", -n, layout)
			}
			b.Run(name, func(b *testing.B) {
				var sts []backend.State
				var d *decodeBatch
				if n > 0 {
					sts = newStates(b, e, n, contextSize)
					d = newDecodeBatch(e, sts, m.Vocab())
				} else {
					sts = newStates(b, e, 1, contextSize)
					d = newPrefillChunk(e, sts[0], -n, m.Vocab())
					n = -n
				}
				// A step outside the timing: the first one faults the mapped weights in.
				require.NoError(b, d.step(ctx))
				for _, st := range sts {
					st.(backend.Profiler).ResetProfile()
				}
				for b.Loop() {
					if sts[0].Len() >= contextSize-1 {
						for _, st := range sts {
							st.Reset()
						}
					}
					require.NoError(b, d.step(ctx))
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "tok/s")
				// Where a step's time goes: each state holds its share of the batch's.
				var p backend.OpProfile
				for _, st := range sts {
					q := st.(backend.Profiler).Profile()
					p.Ternary += q.Ternary
					p.Transforms += q.Transforms
					p.GDN += q.GDN
					p.Attention += q.Attention
					p.Other += q.Other
				}
				steps := float64(b.N)
				for _, k := range []struct {
					unit string
					d    time.Duration
				}{{"ternary-ms/step", p.Ternary}, {"transforms-ms/step", p.Transforms}, {"gdn-ms/step", p.GDN},
					{"attention-ms/step", p.Attention}, {"other-ms/step", p.Other}} {
					b.ReportMetric(float64(k.d.Milliseconds())/steps, k.unit)
				}
			})
		}
	}
}
