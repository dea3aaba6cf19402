package engine

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// loadEmulated loads w on the emulated backend with opts.
func loadEmulated(t *testing.T, w *qwen35.Weights, opts ...Option) backend.Greedy {
	t.Helper()
	e, err := newEmulator(opts...).Load(context.Background(), w, backend.LoadOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e.(backend.Greedy)
}

// batchRun is what runBatchCase saw.
type batchRun struct {
	out   [][]float32 // each sequence's logits for its tokens
	next  []int32     // the greedy choices of the decode step after them
	step  [][]float32 // that step's logits (run alone)
	snaps [][]byte    // the states after it
	scale float64     // the largest |logit| seen
}

// batchWants are the logits the sequences of a case ask for, in turn.
var batchWants = []backend.Logits{backend.LogitsAll, backend.LogitsLast, backend.LogitsNone}

// runBatchCase gives sequence i a prompt of 2+i tokens, run alone, then lens[i] tokens,
// then one decode token, and snapshots its state. Together, the lens[i] tokens run as one
// batch asking for batchWants' logits and the decode tokens as one ForwardGreedy;
// otherwise each sequence runs alone, asking for the logits of all its tokens and of the
// decode step. The tokens are the same for the same lens.
func runBatchCase(t *testing.T, e backend.Greedy, lens []int, together bool) batchRun {
	t.Helper()
	V := e.(*engine).sizes.vocab
	rng := rand.New(rand.NewPCG(7, uint64(len(lens))))
	ids := func(n int) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(rng.IntN(V))
		}
		return s
	}
	ctx := context.Background()
	forward := func(b ...backend.Sequence) {
		t.Helper()
		if err := backend.Check(b, V, func(backend.State) int { return 160 }); err != nil {
			t.Fatalf("a bad batch: %v", err)
		}
		if err := e.Forward(ctx, b); err != nil {
			t.Fatalf("Forward: %v", err)
		}
	}
	n := len(lens)
	var r batchRun
	seqs := make([]backend.Sequence, n)
	for i, l := range lens {
		st, err := e.NewState(backend.StateOptions{ContextSize: 160, KVCache: backend.KVFloat16})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		forward(backend.Sequence{State: st, Tokens: ids(2 + i)})
		want := backend.LogitsAll
		if together {
			want = batchWants[i%len(batchWants)]
		}
		seqs[i] = backend.Sequence{State: st, Tokens: ids(l), Logits: want}
		switch want {
		case backend.LogitsAll:
			seqs[i].Out = make([]float32, l*V)
		case backend.LogitsLast:
			seqs[i].Out = make([]float32, V)
		}
	}
	if together {
		forward(seqs...)
	} else {
		for i := range seqs {
			forward(seqs[i])
		}
	}
	step := make([]backend.Sequence, n)
	for i := range step {
		step[i] = backend.Sequence{State: seqs[i].State, Tokens: ids(1), Logits: backend.LogitsAll, Out: make([]float32, V)}
	}
	if together {
		r.next = make([]int32, n)
		if err := e.ForwardGreedy(ctx, step, r.next); err != nil {
			t.Fatalf("ForwardGreedy: %v", err)
		}
	} else {
		for i := range step {
			forward(step[i])
			r.step = append(r.step, step[i].Out)
		}
	}
	for i := range seqs {
		r.out = append(r.out, seqs[i].Out)
		for _, x := range append(seqs[i].Out, step[i].Out...) {
			r.scale = math.Max(r.scale, math.Abs(float64(x)))
		}
		var b bytes.Buffer
		if err := backend.WriteState(&b, seqs[i].State); err != nil {
			t.Fatal(err)
		}
		r.snaps = append(r.snaps, b.Bytes())
	}
	return r
}

// diff returns the first index at which got and want differ in their bits (-1 for
// none) and the largest |Δ|.
func diff(got, want []float32) (first int, worst float64) {
	first = -1
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) && first < 0 {
			first = i
		}
		worst = math.Max(worst, math.Abs(float64(got[i])-float64(want[i])))
	}
	return first, worst
}

// argmaxOf is the backend.Greedy choice: the largest logit's index, the lowest among
// equal ones.
func argmaxOf(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// checkBatchBits compares a batch run together on e with its sequences run alone on
// alone, bit for bit: each sequence's logits as asked (the last row of its logits alone,
// for LogitsLast), the greedy choices, the states. It returns the batch's run.
func checkBatchBits(t *testing.T, e, alone backend.Greedy, lens []int) batchRun {
	t.Helper()
	V := e.(*engine).sizes.vocab
	b, a := runBatchCase(t, e, lens, true), runBatchCase(t, alone, lens, false)
	for i, l := range lens {
		want := a.out[i]
		switch batchWants[i%len(batchWants)] {
		case backend.LogitsNone:
			want = nil
		case backend.LogitsLast:
			want = want[(l-1)*V:]
		}
		if len(b.out[i]) != len(want) {
			t.Fatalf("%v: sequence %d: %d logits, want %d", lens, i, len(b.out[i]), len(want))
		}
		if k, d := diff(b.out[i], want); k >= 0 {
			t.Errorf("%v: sequence %d: logit %d of token %d is %v, alone %v (max |Δ| %.3g)", lens, i, k%V, k/V, b.out[i][k], want[k], d)
		}
		if got, w := b.next[i], argmaxOf(a.step[i]); got != w {
			t.Errorf("%v: sequence %d: the batch's greedy step chose %d, the argmax alone is %d", lens, i, got, w)
		}
		if !bytes.Equal(b.snaps[i], a.snaps[i]) {
			t.Errorf("%v: sequence %d: its state after the batch differs from its state alone", lens, i)
		}
	}
	if a.scale > tinyLogitScale {
		t.Errorf("the tiny model's logits reach %.3g, past the scale %v that batchTolerance assumes", a.scale, tinyLogitScale)
	}
	return b
}

// A batch runs its rows through the prefill kernels, so it is bit-identical to its
// sequences run alone through the same kernels — WithUnfusedDecode for a decode token,
// the GEMM for the head: four decode streams; and, with the GDN in its step form (which
// does not depend on where a prompt is cut), a decode token with two prompts, one of
// which the batch's 64-row command buffers cut at 63 rows where alone it is cut at 64.
// On both formats: PQ2_0, and PTQ1_0 on the _t1 kernels. Against the default kernels
// alone (the fused decode) the four streams agree within batchTolerance and choose the
// same greedy tokens.
func TestBatchMatchesUnfused(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the batch sweeps against the unfused kernels (both formats, minutes on the emulator) are left to the full go test; TestConformance runs batches against sequences alone")
	}
	emulator(t)
	for _, f := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		t.Run(f.String(), func(t *testing.T) {
			w := synthtest.Weights(t, "tiny", 1, f)
			step := loadEmulated(t, w, stepGDN)
			stepUnfused := loadEmulated(t, w, stepGDN, unfused)
			checkBatchBits(t, step, stepUnfused, []int{1, 70, 3})
			if f != ternary.PQ2_0 {
				return // the emulator is slow; the decode streams' kernels are the same
			}
			lens := []int{1, 1, 1, 1}
			def := loadEmulated(t, w)
			b := checkBatchBits(t, def, loadEmulated(t, w, unfused), lens)
			a := runBatchCase(t, def, lens, false)
			worst := 0.0
			for i := range lens {
				_, d := diff(b.out[i], a.out[i][len(a.out[i])-len(b.out[i]):])
				worst = math.Max(worst, d)
				if got, w := b.next[i], argmaxOf(a.step[i]); got != w {
					t.Errorf("stream %d: the batch's greedy step chose %d, the fused decode's argmax alone is %d", i, got, w)
				}
			}
			t.Logf("%v: the batch against the fused decode alone: max |Δlogit| %.3g (%.2g of max |logit| %.3g)", lens, worst, worst/a.scale, a.scale)
			if worst > batchTolerance {
				t.Errorf("the batch against the fused decode: |Δlogit| %.3g > %.3g", worst, batchTolerance)
			}
		})
	}
}

// The structure of a batch, on the counting device: the rows of all its sequences in
// command buffers of up to 64, each with one GEMM per product whatever the number of
// sequences, the mixers per sequence; the watchdog split; the batch activations
// allocated once and counted against the working set.
func TestBatchCommandBuffers(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	dev := newCountingDevice(1 << 30)
	en, err := loadOn(t, path, dev, backend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer en.Close()
	e := en.(*engine)
	c := e.cfg
	gdnLayers, attnLayers := c.Layers-c.AttentionLayers(), c.AttentionLayers()
	products := 0 // GEMMs per pass through the layers
	for i := range e.plan.Layers {
		lp := &e.plan.Layers[i]
		products += len(lp.In.Products) + len(lp.Out.Products) + len(lp.FFNIn.Products) + len(lp.FFNOut.Products)
	}
	newStates := func(n int) []backend.State {
		var ss []backend.State
		for range n {
			s, err := e.NewState(backend.StateOptions{ContextSize: 160, KVCache: backend.KVFloat16})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			ss = append(ss, s)
		}
		return ss
	}
	run := func(batch []backend.Sequence, greedy bool) map[string]int {
		t.Helper()
		dev.dispatched = nil
		var err error
		if greedy {
			err = e.ForwardGreedy(context.Background(), batch, make([]int32, len(batch)))
		} else {
			err = e.Forward(context.Background(), batch)
		}
		if err != nil {
			t.Fatal(err)
		}
		return dev.dispatched
	}
	V := e.sizes.vocab

	// N decode streams, greedy: one pass through the layers (one embedding) with the
	// same GEMMs for any N, plus the head's; the mixers and the argmax per stream. The
	// activations are the batch's, allocated at the first batch.
	for _, n := range []int{2, 3, 4} {
		states := newStates(n)
		batch := make([]backend.Sequence, n)
		for i := range batch {
			batch[i] = backend.Sequence{State: states[i], Tokens: []int32{int32(i)}}
		}
		allocated, resident := dev.allocated, e.resident
		got := run(batch, true)
		need := int64(0)
		if n == 2 {
			need = e.actsBytes(backend.ChunkRows, backend.ChunkRows)
		}
		if a, r := int64(dev.allocated-allocated), e.resident-resident; a != need || r != need {
			t.Errorf("%d decode streams allocated %d bytes and reserved %d, want %d (the batch activations at the first batch)", n, a, r, need)
		}
		want := map[string]int{kEmbed: 1, kGemm: products + 1, kGDNSeq: n * gdnLayers, kAttnAppend16: n * attnLayers, kAttnF16: n * attnLayers, kArgmax: n}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%d decode streams: %d × %s, want %d (%v)", n, got[k], k, w, got)
			}
		}
		if got[kGDNDecode] != 0 || got[kMVNorm] != 0 {
			t.Errorf("%d decode streams ran the fused decode kernels: %v", n, got)
		}
		for i, s := range states {
			if s.Len() != 1 {
				t.Errorf("%d decode streams: stream %d holds %d tokens", n, i, s.Len())
			}
		}
	}

	// 1 + 70 + 3 rows: command buffers of 64 (1, and 63 of the prompt) and 10 (its last
	// 7, and 3), each one pass through the layers; the head's GEMM in each over the rows
	// asked for.
	states := newStates(3)
	batch := []backend.Sequence{
		{State: states[0], Tokens: make([]int32, 1), Logits: backend.LogitsLast, Out: make([]float32, V)},
		{State: states[1], Tokens: make([]int32, 70), Logits: backend.LogitsAll, Out: make([]float32, 70*V)},
		{State: states[2], Tokens: make([]int32, 3)},
	}
	got := run(batch, false)
	if got[kEmbed] != 2 || got[kGemm] != 2*products+2 || got[kGDNChunk] != 3*gdnLayers || got[kGDNSeq] != gdnLayers {
		t.Errorf("1 + 70 + 3 rows: %v, want 2 passes of %d GEMMs and 2 of the head, gdn_chunk for the 63, 7 and 3 rows, gdn_seq for the 1", got, products)
	}
	for i, s := range states {
		if s.Len() != len(batch[i].Tokens) {
			t.Errorf("sequence %d holds %d tokens, want %d", i, s.Len(), len(batch[i].Tokens))
		}
	}

	// Split for the watchdog as a prefill chunk is: unmeasured, Layers/16 = 1 layer per
	// command buffer, then the head.
	e.budget.perLayer = 0
	cbs := dev.cbs
	states = newStates(2)
	run([]backend.Sequence{{State: states[0], Tokens: make([]int32, 1)}, {State: states[1], Tokens: make([]int32, 5)}}, true)
	if got := dev.cbs - cbs; got != c.Layers+1 {
		t.Errorf("a batch of 6 rows went in %d command buffers, want %d", got, c.Layers+1)
	}
	if e.budget.perLayer <= 0 {
		t.Error("the batch's time was not measured")
	}

	// A batch with one sequence's tokens, or one command buffer with one sequence's
	// rows, runs that sequence's own path: here the fused decode.
	states = newStates(2)
	got = run([]backend.Sequence{{State: states[0], Tokens: []int32{1}}, {State: states[1]}}, false)
	if got[kGDNDecode] != gdnLayers || got[kGemm] != 0 {
		t.Errorf("a batch with one token: %v, want the fused decode", got)
	}

	// A closed state or another engine's is refused before anything runs.
	states = newStates(2)
	states[1].Close()
	err = e.Forward(context.Background(), []backend.Sequence{{State: states[0], Tokens: []int32{1}}, {State: states[1], Tokens: []int32{2}}})
	if !errors.Is(err, backend.ErrClosed) || states[0].Len() != 0 {
		t.Errorf("a batch with a closed state: %v, the open one holds %d tokens", err, states[0].Len())
	}
	// A cancelled batch runs nothing.
	states = newStates(2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = e.Forward(ctx, []backend.Sequence{{State: states[0], Tokens: []int32{1}}, {State: states[1], Tokens: []int32{2}}})
	if !errors.Is(err, context.Canceled) || states[0].Len() != 0 || states[1].Len() != 0 {
		t.Errorf("a cancelled batch: %v, states hold %d and %d tokens", err, states[0].Len(), states[1].Len())
	}
}

// Without room in the working set for the batch activations, a batch runs its sequences
// one after another.
func TestBatchWithoutRoom(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	dev := newCountingDevice(1 << 30)
	en, err := loadOn(t, path, dev, backend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := en.(*engine)
	weights := e.resident
	st := e.bytesFor(160, 2)
	en.Close()
	// Room for the weights and two states, not for the batch activations as well.
	dev = newCountingDevice(1 << 30)
	dev.workingSet = weights + 2*st + e.actsBytes(backend.ChunkRows, backend.ChunkRows)/2
	en, err = loadOn(t, path, dev, backend.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer en.Close()
	e = en.(*engine)
	var batch []backend.Sequence
	for i := range 2 {
		s, err := e.NewState(backend.StateOptions{ContextSize: 160, KVCache: backend.KVFloat16})
		if err != nil {
			t.Fatalf("state %d: %v", i, err)
		}
		defer s.Close()
		batch = append(batch, backend.Sequence{State: s, Tokens: []int32{1}})
	}
	dev.dispatched = nil
	if err := e.ForwardGreedy(context.Background(), batch, make([]int32, 2)); err != nil {
		t.Fatal(err)
	}
	if e.batch != nil || dev.dispatched[kGDNDecode] != 2*(e.cfg.Layers-e.cfg.AttentionLayers()) {
		t.Errorf("without room: batch activations %v, dispatches %v, want each stream's fused decode", e.batch != nil, dev.dispatched)
	}
}
