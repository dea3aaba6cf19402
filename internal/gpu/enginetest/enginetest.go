// Package enginetest holds the backend-level tests of the backends built on the GPU
// engine (internal/gpu/engine): each runs a backend through bonsai's API, against the CPU
// backend on the same file, on the tiny synthetic model. It is used only by tests — the
// engine's own, on the MSL emulator, and bonsai/vulkan's, on a Vulkan device — which call
// its functions with a constructor of their backend, so that every backend passes the
// same assertions within the same tolerances.
//
// It does not import the engine, whose internal tests import it: a Variant names the
// engine.Config settings a test needs, and each backend's constructor applies them.
package enginetest

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// Variant is what a test asks of a backend beyond its defaults: each field sets the
// engine.Config field of the same name.
type Variant struct {
	// StepGDN: prefill runs the GDN recurrence token by token (gdn_seq) instead of in
	// chunks (gdn_chunk).
	StepGDN bool
	// Unfused: decode steps run the prefill kernels instead of the fused decode kernels.
	Unfused bool
	// SplitGDN: decode steps run each GDN layer's recurrence as gdn_seq (per q/k head
	// group) after the paired mv_norm, instead of gdn_decode (per V head).
	SplitGDN bool
}

// NewBackend returns a new backend of the kind under test with v applied. It may skip
// or fail t where the backend cannot run, and register cleanups on t (a check of the
// validation layer's messages, say).
type NewBackend func(t testing.TB, v Variant) backend.Backend

// TolLogit is the allowed |Δlogit| between a GPU backend and the CPU backend's float32
// path on the tiny model (logits up to ~20): float32 sums in another order through four
// layers, and fp16 keys that may round to the other neighbouring half. Over an int8
// cache a key's code may round the other way, and the CPU scores in integers against
// queries rounded to int8 per block of 32 (qwen35's integer attention scores) while the
// GPU kernels score the float queries: TolLogitInt8 (measured 1.3e-2 on the emulator,
// 1.1e-3 before the CPU's scores were integers).
const (
	TolLogit     = 2e-3
	TolLogitInt8 = 3e-2
)

// BatchTolerance is the |Δlogit| allowed between a sequence run in a batch and run alone
// on the tiny model. A batch runs its rows through the prefill kernels
// (internal/gpu/engine/batch.go): a decode token through the GEMM where alone it runs the
// fused matrix-vector kernels, a last row's head through the GEMM instead of mv_norm, a
// prompt cut at other points through gdn_chunk over other spans — the same float32
// products and recurrences, summed in another order. Reordering a float32 sum of K terms
// moves it by at most γ_K ≈ K·2⁻²⁴ of the sum of its terms' magnitudes: with K ≤ 512 (the
// tiny model's widest product), 3.1·10⁻⁵ of the logits' scale per product, and a logit
// depends on 17 products in sequence (4 layers of 4 sites, the head), the norms between
// them keeping the scale: 17 × 3.1·10⁻⁵ ≈ 5.2·10⁻⁴ of TinyLogitScale, 1.3·10⁻². Measured
// on the emulator (the logs of the engine's TestBatchMatchesUnfused and of States):
// 2.6·10⁻⁵ for four decode streams, 9·10⁻⁵ for two sessions stepping together. Where the
// kernels are the same the batch is bit-identical, as TestBatchMatchesUnfused checks.
const BatchTolerance = 17 * 512.0 / (1 << 24) * TinyLogitScale

// TinyLogitScale bounds the |logit| of the tiny model (seed 1): the engine's
// TestBatchMatchesUnfused checks it on its batches' tokens, Parity logs the scale on its
// prompt (about 20).
const TinyLogitScale = 25

// OpenTiny opens the file at path (the tiny synthetic model) on backend b: float32
// activations (the CPU's exact path), the given KV precision and context.
func OpenTiny(t testing.TB, path string, b bonsai.Backend, kv bonsai.KVPrecision, ctx int) *bonsai.Model {
	t.Helper()
	m, err := bonsai.Open(path, bonsai.WithBackend(b), bonsai.WithThreads(1),
		bonsai.WithActivations(bonsai.ActivationsFloat32), bonsai.WithKVCache(kv), bonsai.WithContextSize(ctx))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// NewSession is a new session of m, closed when t ends.
func NewSession(t testing.TB, m *bonsai.Model) *bonsai.Session {
	t.Helper()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// StepAll steps s through ids, one token at a time, and returns the logits of each step.
func StepAll(t testing.TB, s *bonsai.Session, ids []int32) [][]float32 {
	t.Helper()
	var rows [][]float32
	for _, id := range ids {
		if err := s.Step(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, append([]float32(nil), s.Logits()...))
	}
	return rows
}

// PromptIDs returns n token ids of the tiny vocabulary, deterministic.
func PromptIDs(n int) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32((i*7919 + 13) % 500)
	}
	return ids
}

// MaxAbsDiff is the largest |a[i] - b[i]|; infinite where one is NaN.
func MaxAbsDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		x := math.Abs(float64(a[i]) - float64(b[i]))
		if math.IsNaN(x) {
			return math.Inf(1)
		}
		d = math.Max(d, x)
	}
	return d
}

func maxAbs(a []float32) float64 {
	m := 0.0
	for _, v := range a {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

func argmax(v []float32) int {
	b := 0
	for i, x := range v {
		if x > v[b] {
			b = i
		}
	}
	return b
}

// Parity compares the logits of every position, for a 70-token prefill (two chunks) and
// for a step-by-step walk, with the CPU backend, at every KV precision; and, on the f16
// cache, a prefill on the step form of the GDN recurrence with both.
func Parity(t *testing.T, nb NewBackend) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	for _, kv := range []bonsai.KVPrecision{bonsai.KVFloat16, bonsai.KVFloat32, bonsai.KVInt8} {
		b := nb(t, Variant{})
		cpu := OpenTiny(t, path, bonsai.CPU(), kv, 96)
		dev := OpenTiny(t, path, b, kv, 96)
		ids := PromptIDs(70)
		want, err := NewSession(t, cpu).PrefillAll(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		got, err := NewSession(t, dev).PrefillAll(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		var dPre, dStep, scale float64
		for i := range want {
			dPre = math.Max(dPre, MaxAbsDiff(got[i], want[i]))
			scale = math.Max(scale, maxAbs(want[i]))
		}
		walk := ids[:24]
		wantS := StepAll(t, NewSession(t, cpu), walk)
		gotS := StepAll(t, NewSession(t, dev), walk)
		agree := 0
		for i := range wantS {
			dStep = math.Max(dStep, MaxAbsDiff(gotS[i], wantS[i]))
			if argmax(gotS[i]) == argmax(wantS[i]) {
				agree++
			}
		}
		t.Logf("%s vs cpu, KV %s: max |Δlogit| prefill (70 positions) %.2e, step walk (24) %.2e; logits up to %.1f; argmax %d/%d",
			b.Name(), kv, dPre, dStep, scale, agree, len(walk))
		tol := TolLogit
		if kv == bonsai.KVInt8 {
			tol = TolLogitInt8
		}
		if dPre > tol || dStep > tol {
			t.Errorf("KV %s: |Δlogit| prefill %.2e, steps %.2e > %.0e", kv, dPre, dStep, tol)
		}
		if agree != len(walk) {
			t.Errorf("KV %s: greedy choice differs at %d of %d steps", kv, len(walk)-agree, len(walk))
		}
		if kv != bonsai.KVFloat16 {
			continue
		}
		// The step form of the GDN recurrence in prefill (gdn_seq instead of gdn_chunk).
		stepped, err := NewSession(t, OpenTiny(t, path, nb(t, Variant{StepGDN: true}), kv, 96)).PrefillAll(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		var dSeq, dForms float64
		for i := range want {
			dSeq = math.Max(dSeq, MaxAbsDiff(stepped[i], want[i]))
			dForms = math.Max(dForms, MaxAbsDiff(stepped[i], got[i]))
		}
		t.Logf("%s, KV %s, GDN step form in prefill: max |Δlogit| vs cpu %.2e, vs the chunked form %.2e", b.Name(), kv, dSeq, dForms)
		if dSeq > TolLogit || dForms > TolLogit {
			t.Errorf("step-form prefill: |Δlogit| %.2e vs cpu, %.2e vs chunked", dSeq, dForms)
		}
	}
}

// ParityPTQ1 runs the tiny model stored as PTQ1_0 — every ternary product on the PTQ1_0
// kernels, reading the base-3 bytes — against the CPU backend on the same file: a
// 70-token prefill (two chunks, the GEMM) and a step walk (the fused decode), and checks
// that the PQ2_0 file of the same seed (the same values) gives the same logits.
func ParityPTQ1(t *testing.T, nb NewBackend) {
	path := synthtest.Path(t, "tiny", 1, ternary.PTQ1_0)
	kv := bonsai.KVFloat32
	b := nb(t, Variant{})
	cpu := OpenTiny(t, path, bonsai.CPU(), kv, 96)
	dev := OpenTiny(t, path, b, kv, 96)
	pq2 := OpenTiny(t, synthtest.Path(t, "tiny", 1, ternary.PQ2_0), nb(t, Variant{}), kv, 96)
	ids := PromptIDs(70)
	want, err := NewSession(t, cpu).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewSession(t, dev).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	twin, err := NewSession(t, pq2).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	var dPre, dTwin, scale float64
	for i := range want {
		dPre = math.Max(dPre, MaxAbsDiff(got[i], want[i]))
		dTwin = math.Max(dTwin, MaxAbsDiff(got[i], twin[i]))
		scale = math.Max(scale, maxAbs(want[i]))
	}
	walk := ids[:12]
	wantS := StepAll(t, NewSession(t, cpu), walk)
	gotS := StepAll(t, NewSession(t, dev), walk)
	var dStep float64
	agree := 0
	for i := range wantS {
		dStep = math.Max(dStep, MaxAbsDiff(gotS[i], wantS[i]))
		if argmax(gotS[i]) == argmax(wantS[i]) {
			agree++
		}
	}
	t.Logf("%s, PTQ1_0, KV f32: max |Δlogit| vs cpu: prefill (70 positions) %.2e, step walk (%d) %.2e; vs the PQ2_0 file on %s %.2e; logits up to %.1f; argmax %d/%d",
		b.Name(), dPre, len(walk), dStep, b.Name(), dTwin, scale, agree, len(walk))
	if dPre > TolLogit || dStep > TolLogit || dTwin > TolLogit {
		t.Errorf("PTQ1_0: |Δlogit| prefill %.2e, steps %.2e, vs PQ2_0 %.2e > %.0e", dPre, dStep, dTwin, TolLogit)
	}
	if agree != len(walk) {
		t.Errorf("PTQ1_0: greedy choice differs at %d of %d steps", len(walk)-agree, len(walk))
	}
}

// GreedyGeneration generates greedily on both backends (the GPU one taking the argmax on
// the device through bonsai.GreedyEngine): the same tokens.
func GreedyGeneration(t *testing.T, nb NewBackend) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	b := nb(t, Variant{})
	cpu := OpenTiny(t, path, bonsai.CPU(), bonsai.KVFloat16, 64)
	dev := OpenTiny(t, path, b, bonsai.KVFloat16, 64)
	in := bonsai.TokenIDs(PromptIDs(9)...)
	opt := bonsai.GenerateOptions{MaxTokens: 20}
	generate := func(m *bonsai.Model) bonsai.Result {
		p, err := m.Prepare(in, opt)
		if err != nil {
			t.Fatal(err)
		}
		res, err := NewSession(t, m).Generate(context.Background(), p).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	want, got := generate(cpu), generate(dev)
	t.Logf("greedy: cpu %v, %s %v", want.Tokens, b.Name(), got.Tokens)
	if !slices.Equal(want.Tokens, got.Tokens) {
		t.Errorf("greedy tokens differ:\ncpu %v\ngpu %v", want.Tokens, got.Tokens)
	}
}

// SnapshotsAcrossBackends saves a session on each backend and loads it on the other: the
// next steps' logits agree with the session that was saved. A snapshot of another KV
// precision loads converted, as the CPU converts it.
func SnapshotsAcrossBackends(t *testing.T, nb NewBackend) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	for _, kv := range []bonsai.KVPrecision{bonsai.KVFloat16, bonsai.KVFloat32, bonsai.KVInt8} {
		b := nb(t, Variant{})
		cpu := OpenTiny(t, path, bonsai.CPU(), kv, 48)
		dev := OpenTiny(t, path, b, kv, 48)
		ids := PromptIDs(30)
		for _, dir := range []struct {
			name     string
			from, to *bonsai.Model
		}{{b.Name() + "→cpu", dev, cpu}, {"cpu→" + b.Name(), cpu, dev}} {
			s := NewSession(t, dir.from)
			if err := s.Prefill(context.Background(), ids[:20]); err != nil {
				t.Fatal(err)
			}
			var snap bytes.Buffer
			if err := s.Save(&snap); err != nil {
				t.Fatal(err)
			}
			l, err := dir.to.LoadSession(bytes.NewReader(snap.Bytes()))
			if err != nil {
				t.Fatalf("%s: %v", dir.name, err)
			}
			t.Cleanup(func() { l.Close() })
			if l.Len() != 20 {
				t.Fatalf("%s: loaded session holds %d tokens", dir.name, l.Len())
			}
			saved := StepAll(t, s, ids[20:])
			loaded := StepAll(t, l, ids[20:])
			d := 0.0
			for i := range saved {
				d = math.Max(d, MaxAbsDiff(saved[i], loaded[i]))
			}
			t.Logf("KV %s %s: %d bytes, next 10 steps max |Δlogit| %.2e", kv, dir.name, snap.Len(), d)
			if d > TolLogitInt8 || kv != bonsai.KVInt8 && d > TolLogit {
				t.Errorf("KV %s %s: |Δlogit| %.2e", kv, dir.name, d)
			}
		}
	}
	// Snapshots across precisions load converted: int8 (CPU) on the GPU's f16 cache, f16
	// (CPU) on the GPU's int8 cache; the next logits match the CPU's same conversion.
	for _, pair := range [][2]bonsai.KVPrecision{{bonsai.KVInt8, bonsai.KVFloat16}, {bonsai.KVFloat16, bonsai.KVInt8}} {
		b := nb(t, Variant{})
		src := OpenTiny(t, path, bonsai.CPU(), pair[0], 48)
		cpuTo := OpenTiny(t, path, bonsai.CPU(), pair[1], 48)
		dev := OpenTiny(t, path, b, pair[1], 48)
		s := NewSession(t, src)
		if err := s.Prefill(context.Background(), PromptIDs(12)); err != nil {
			t.Fatal(err)
		}
		var snap bytes.Buffer
		if err := s.Save(&snap); err != nil {
			t.Fatal(err)
		}
		ga, err := dev.LoadSession(bytes.NewReader(snap.Bytes()))
		if err != nil {
			t.Fatalf("%s snapshot on %s %s: %v", pair[0], b.Name(), pair[1], err)
		}
		t.Cleanup(func() { ga.Close() })
		gb, err := cpuTo.LoadSession(bytes.NewReader(snap.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { gb.Close() })
		la, lb := StepAll(t, ga, PromptIDs(14)[12:]), StepAll(t, gb, PromptIDs(14)[12:])
		d := 0.0
		for i := range la {
			d = math.Max(d, MaxAbsDiff(la[i], lb[i]))
		}
		t.Logf("%s snapshot loaded into a %s cache: %s vs cpu max |Δlogit| %.2e", pair[0], pair[1], b.Name(), d)
		if d > TolLogitInt8 {
			t.Errorf("%s → %s: |Δlogit| %.2e", pair[0], pair[1], d)
		}
	}
}

// States covers the state methods: Clone, Reset and the context limit; and two sessions
// of one model stepping concurrently.
func States(t *testing.T, nb NewBackend) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	dev := OpenTiny(t, path, nb(t, Variant{}), bonsai.KVFloat16, 24)
	s := NewSession(t, dev)
	ids := PromptIDs(24)
	if err := s.Prefill(context.Background(), ids[:10]); err != nil {
		t.Fatal(err)
	}
	c, err := s.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := StepAll(t, s, ids[10:14])
	b := StepAll(t, c, ids[10:14])
	for i := range a {
		if d := MaxAbsDiff(a[i], b[i]); d != 0 {
			t.Fatalf("clone step %d differs by %g", i, d)
		}
	}
	if err := s.Prefill(context.Background(), ids[14:24]); err != nil {
		t.Fatal(err)
	}
	if err := s.Step(context.Background(), 1); !errors.Is(err, bonsai.ErrContextFull) {
		t.Errorf("step past the context: %v, want ErrContextFull", err)
	}
	// Two sessions of one model stepping concurrently match a lone session: bit for bit
	// where a step ran alone, within BatchTolerance where bonsai's batcher ran both in
	// one batch (the GEMM path instead of the fused decode).
	var wg sync.WaitGroup
	res := make([][][]float32, 2)
	sessions := []*bonsai.Session{NewSession(t, dev), NewSession(t, dev)}
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, id := range ids[:6] {
				if err := sessions[i].Step(context.Background(), id); err != nil {
					t.Error(err)
					return
				}
				res[i] = append(res[i], append([]float32(nil), sessions[i].Logits()...))
			}
		}()
	}
	wg.Wait()
	lone := StepAll(t, NewSession(t, dev), ids[:6])
	worst := 0.0
	for i := range res {
		for j := range lone {
			if j >= len(res[i]) {
				t.Fatalf("concurrent session %d made %d steps", i, len(res[i]))
			}
			d := MaxAbsDiff(res[i][j], lone[j])
			if d > BatchTolerance {
				t.Fatalf("concurrent session %d step %d differs from a lone session by %.3g", i, j, d)
			}
			worst = math.Max(worst, d)
		}
	}
	t.Logf("two concurrent sessions (at most %d sequences a step) against a lone one: max |Δlogit| %.3g", dev.Stats().Batch.MaxBatch, worst)
	s.Reset()
	r := StepAll(t, s, ids[:2])
	f := StepAll(t, NewSession(t, dev), ids[:2])
	if d := MaxAbsDiff(r[1], f[1]); d != 0 {
		t.Errorf("after Reset the logits differ from a fresh session's by %g", d)
	}
}

// UnfusedDecode checks the fused decode kernels against the prefill kernels run one
// token at a time, and gdn_decode (per V head) against gdn_seq (per head group) after
// the same mv_norm. It returns the fused decode's logits on PromptIDs(8), the f16 cache, a
// context of 16, for a caller's further checks (the emulator's thread orders).
func UnfusedDecode(t *testing.T, nb NewBackend) [][]float32 {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	ids := PromptIDs(8)
	fused := StepAll(t, NewSession(t, OpenTiny(t, path, nb(t, Variant{}), bonsai.KVFloat16, 16)), ids)
	unfused := StepAll(t, NewSession(t, OpenTiny(t, path, nb(t, Variant{Unfused: true}), bonsai.KVFloat16, 16)), ids)
	d := 0.0
	for i := range fused {
		d = math.Max(d, MaxAbsDiff(fused[i], unfused[i]))
	}
	split := StepAll(t, NewSession(t, OpenTiny(t, path, nb(t, Variant{SplitGDN: true}), bonsai.KVFloat16, 16)), ids)
	ds := 0.0
	for i := range fused {
		ds = math.Max(ds, MaxAbsDiff(fused[i], split[i]))
	}
	t.Logf("fused vs unfused decode: max |Δlogit| %.2e; fused vs split GDN: %.2e", d, ds)
	if d > TolLogit || ds > TolLogit {
		t.Errorf("fused vs unfused: %.2e, vs split GDN: %.2e", d, ds)
	}
	return fused
}

// Conformance runs the seam's conformance suite (backendtest.Run) — among its checks a
// batch of three sequences of different lengths (a decode step, a short prompt, two
// chunks) against each run alone, within BatchTolerance — at the KV precisions the engine
// holds, on the tiny model mapped from a file (the weights wrapped in place where the
// device can).
//
// rewind, when given, are the KV precisions of the Rewind checks (default all three):
// the emulator, whose kept passes take minutes, runs fewer where Vulkan on lavapipe
// runs the engine's same host logic through them all.
func Conformance(t *testing.T, nb NewBackend, rewind ...backend.KVPrecision) {
	b := nb(t, Variant{})
	w := synthtest.Weights(t, "tiny", 1, ternary.PQ2_0)
	backendtest.Run(t, b, w, backendtest.Options{
		Precisions:       []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8},
		RewindPrecisions: rewind,
		Tolerance:        BatchTolerance,
	})
}

// LongContext runs a long context against the CPU backend on the f16 cache, where the
// GPU cuts attention's positions into blocks (internal/gpu/engine/attn.go: blocks of at
// least 256 positions, merged by attn_merge): a 1,100-token prompt in 18 prefill chunks,
// the later ones over 4 and 5 blocks, then 200 decode steps to position 1,300 (over 5
// and 6 blocks, whose span changes with the length); every position's logits within
// TolLogit of the CPU's, and the same greedy choice at every step. On 2 cores it takes
// 90–120 s on the MSL emulator and 75 s on lavapipe; a step walk through all 1,300
// positions (0.13 s a step on the emulator, for the matrix-vector and GDN kernels, not
// attention) took 225 s and 167 s, so the prompt carries the first 1,100; LongStepWalk
// is that walk.
func LongContext(t *testing.T, nb NewBackend) { longContext(t, nb, 1100, 200) }

// LongStepWalk is LongContext in step mode alone: 1,250 decode steps from an empty
// cache, every position's logits against the CPU's, attention crossing from one block to
// five as the sequence grows. It takes minutes on a CPU device, so -short skips it.
func LongStepWalk(t *testing.T, nb NewBackend) {
	if testing.Short() {
		t.Skip("1,250 decode steps take minutes on a CPU device; LongContext covers the blocks with a prompt")
	}
	longContext(t, nb, 0, 1250)
}

func longContext(t *testing.T, nb NewBackend, prompt, steps int) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	b := nb(t, Variant{})
	cpu := OpenTiny(t, path, bonsai.CPU(), bonsai.KVFloat16, prompt+steps)
	dev := OpenTiny(t, path, b, bonsai.KVFloat16, prompt+steps)
	ids := PromptIDs(prompt + steps)
	cs, ds := NewSession(t, cpu), NewSession(t, dev)
	var want, got [][]float32
	if prompt > 0 {
		var err error
		if want, err = cs.PrefillAll(context.Background(), ids[:prompt]); err != nil {
			t.Fatal(err)
		}
		if got, err = ds.PrefillAll(context.Background(), ids[:prompt]); err != nil {
			t.Fatal(err)
		}
	}
	var dPre, dStep, scale float64
	for i := range want {
		dPre = math.Max(dPre, MaxAbsDiff(got[i], want[i]))
		scale = math.Max(scale, maxAbs(want[i]))
	}
	worstAt, agree := 0, 0
	for i, id := range ids[prompt:] {
		if err := cs.Step(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if err := ds.Step(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		w, g := cs.Logits(), ds.Logits()
		if d := MaxAbsDiff(g, w); d > dStep {
			dStep, worstAt = d, prompt+i
		}
		scale = math.Max(scale, maxAbs(w))
		if argmax(g) == argmax(w) {
			agree++
		}
	}
	t.Logf("%s vs cpu, KV f16: prompt of %d: max |Δlogit| %.2e; steps at positions %d..%d: max |Δlogit| %.2e (at %d), argmax %d/%d; logits up to %.1f",
		b.Name(), prompt, dPre, prompt, prompt+steps-1, dStep, worstAt, agree, steps, scale)
	if dPre > TolLogit || dStep > TolLogit {
		t.Errorf("|Δlogit| prompt %.2e, steps %.2e > %.0e", dPre, dStep, TolLogit)
	}
	if agree != steps {
		t.Errorf("greedy choice differs at %d of %d steps", steps-agree, steps)
	}
}
