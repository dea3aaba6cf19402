package engine

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/gpu/mslemu"
	"github.com/bonsai-go/sdk/ternary"
)

// The tests of this file run the emulated backend through bonsai's API, against the CPU
// backend on the same file.

// openTiny opens the tiny synthetic model (seed 1) at path on backend b: float32
// activations (the CPU's exact path), the given KV precision and context.
func openTiny(t *testing.T, path string, b bonsai.Backend, kv bonsai.KVPrecision, ctx int) *bonsai.Model {
	t.Helper()
	m, err := bonsai.Open(path, bonsai.WithBackend(b), bonsai.WithThreads(1),
		bonsai.WithActivations(bonsai.ActivationsFloat32), bonsai.WithKVCache(kv), bonsai.WithContextSize(ctx))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func newSession(t *testing.T, m *bonsai.Model) *bonsai.Session {
	t.Helper()
	s, err := m.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func stepAll(t *testing.T, s *bonsai.Session, ids []int32) [][]float32 {
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

// tolLogit is the allowed |Δlogit| between the emulated Metal backend and the CPU
// backend's float32 path on the tiny model (logits up to ~20): float32 sums in another
// order through four layers, and fp16 keys that may round to the other neighbouring
// half. An int8 cache's code may round the other way: tolLogitInt8.
const (
	tolLogit     = 2e-3
	tolLogitInt8 = 1e-2
)

// TestParity compares the logits of every position, for a 70-token prefill (two chunks)
// and for a step-by-step walk, with the CPU backend.
func TestParity(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	for _, kv := range []bonsai.KVPrecision{bonsai.KVFloat16, bonsai.KVFloat32, bonsai.KVInt8} {
		cpu := openTiny(t, path, bonsai.CPU(), kv, 96)
		dev := openTiny(t, path, newEmulator(), kv, 96)
		ids := promptIDs(70)
		want, err := newSession(t, cpu).PrefillAll(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		got, err := newSession(t, dev).PrefillAll(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		var dPre, dStep, scale float64
		for i := range want {
			dPre = math.Max(dPre, maxAbsDiff(got[i], want[i]))
			scale = math.Max(scale, maxAbs(want[i]))
		}
		walk := ids[:24]
		wantS := stepAll(t, newSession(t, cpu), walk)
		gotS := stepAll(t, newSession(t, dev), walk)
		agree := 0
		for i := range wantS {
			dStep = math.Max(dStep, maxAbsDiff(gotS[i], wantS[i]))
			if argmax(gotS[i]) == argmax(wantS[i]) {
				agree++
			}
		}
		t.Logf("KV %s: max |Δlogit| prefill (70 positions) %.2e, step walk (24) %.2e; logits up to %.1f; argmax %d/%d",
			kv, dPre, dStep, scale, agree, len(walk))
		tol := tolLogit
		if kv == bonsai.KVInt8 {
			tol = tolLogitInt8
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
		stepped, err := newSession(t, openTiny(t, path, newEmulator(stepGDN), kv, 96)).PrefillAll(context.Background(), ids)
		if err != nil {
			t.Fatal(err)
		}
		var dSeq, dForms float64
		for i := range want {
			dSeq = math.Max(dSeq, maxAbsDiff(stepped[i], want[i]))
			dForms = math.Max(dForms, maxAbsDiff(stepped[i], got[i]))
		}
		t.Logf("KV %s, GDN step form in prefill: max |Δlogit| vs cpu %.2e, vs the chunked form %.2e", kv, dSeq, dForms)
		if dSeq > tolLogit || dForms > tolLogit {
			t.Errorf("step-form prefill: |Δlogit| %.2e vs cpu, %.2e vs chunked", dSeq, dForms)
		}
	}
}

// TestParityPTQ1 runs the tiny model stored as PTQ1_0 — every ternary product on the
// PTQ1_0 kernels, reading the base-3 bytes — against the CPU backend on the same file:
// a 70-token prefill (two chunks, the GEMM) and a step walk (the fused decode), and
// checks that the PQ2_0 file of the same seed (the same values) gives the same logits.
func TestParityPTQ1(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PTQ1_0)
	kv := bonsai.KVFloat32
	cpu := openTiny(t, path, bonsai.CPU(), kv, 96)
	dev := openTiny(t, path, newEmulator(), kv, 96)
	pq2 := openTiny(t, synthtest.Path(t, "tiny", 1, ternary.PQ2_0), newEmulator(), kv, 96)
	ids := promptIDs(70)
	want, err := newSession(t, cpu).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	got, err := newSession(t, dev).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	twin, err := newSession(t, pq2).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	var dPre, dTwin, scale float64
	for i := range want {
		dPre = math.Max(dPre, maxAbsDiff(got[i], want[i]))
		dTwin = math.Max(dTwin, maxAbsDiff(got[i], twin[i]))
		scale = math.Max(scale, maxAbs(want[i]))
	}
	walk := ids[:12]
	wantS := stepAll(t, newSession(t, cpu), walk)
	gotS := stepAll(t, newSession(t, dev), walk)
	var dStep float64
	agree := 0
	for i := range wantS {
		dStep = math.Max(dStep, maxAbsDiff(gotS[i], wantS[i]))
		if argmax(gotS[i]) == argmax(wantS[i]) {
			agree++
		}
	}
	t.Logf("PTQ1_0, KV f32: max |Δlogit| vs cpu: prefill (70 positions) %.2e, step walk (%d) %.2e; vs the PQ2_0 file on the emulator %.2e; logits up to %.1f; argmax %d/%d",
		dPre, len(walk), dStep, dTwin, scale, agree, len(walk))
	if dPre > tolLogit || dStep > tolLogit || dTwin > tolLogit {
		t.Errorf("PTQ1_0: |Δlogit| prefill %.2e, steps %.2e, vs PQ2_0 %.2e > %.0e", dPre, dStep, dTwin, tolLogit)
	}
	if agree != len(walk) {
		t.Errorf("PTQ1_0: greedy choice differs at %d of %d steps", len(walk)-agree, len(walk))
	}
}

// TestGreedyGeneration generates greedily on both backends (the emulated one taking the
// argmax on the device through bonsai.GreedyEngine): the same tokens.
func TestGreedyGeneration(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	cpu := openTiny(t, path, bonsai.CPU(), bonsai.KVFloat16, 64)
	dev := openTiny(t, path, newEmulator(), bonsai.KVFloat16, 64)
	in := bonsai.TokenIDs(promptIDs(9)...)
	opt := bonsai.GenerateOptions{MaxTokens: 20}
	generate := func(m *bonsai.Model) bonsai.Result {
		p, err := m.Prepare(in, opt)
		if err != nil {
			t.Fatal(err)
		}
		res, err := newSession(t, m).Generate(context.Background(), p).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	want, got := generate(cpu), generate(dev)
	t.Logf("greedy: cpu %v, metal-emulator %v", want.Tokens, got.Tokens)
	if !slicesEqual(want.Tokens, got.Tokens) {
		t.Errorf("greedy tokens differ:\ncpu   %v\nmetal %v", want.Tokens, got.Tokens)
	}
}

// TestSnapshotsAcrossBackends saves a session on each backend and loads it on the other:
// the next steps' logits agree with the session that was saved.
func TestSnapshotsAcrossBackends(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	for _, kv := range []bonsai.KVPrecision{bonsai.KVFloat16, bonsai.KVFloat32, bonsai.KVInt8} {
		cpu := openTiny(t, path, bonsai.CPU(), kv, 48)
		dev := openTiny(t, path, newEmulator(), kv, 48)
		ids := promptIDs(30)
		for _, dir := range []struct {
			name     string
			from, to *bonsai.Model
		}{{"metal→cpu", dev, cpu}, {"cpu→metal", cpu, dev}} {
			s := newSession(t, dir.from)
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
			a := stepAll(t, s, ids[20:])
			b := stepAll(t, l, ids[20:])
			d := 0.0
			for i := range a {
				d = math.Max(d, maxAbsDiff(a[i], b[i]))
			}
			t.Logf("KV %s %s: %d bytes, next 10 steps max |Δlogit| %.2e", kv, dir.name, snap.Len(), d)
			if d > tolLogitInt8 || kv != bonsai.KVInt8 && d > tolLogit {
				t.Errorf("KV %s %s: |Δlogit| %.2e", kv, dir.name, d)
			}
		}
	}
	// Snapshots across precisions load converted: int8 (CPU) on Metal's f16 cache, f16
	// (CPU) on Metal's int8 cache; the next logits match the CPU's same conversion.
	for _, pair := range [][2]bonsai.KVPrecision{{bonsai.KVInt8, bonsai.KVFloat16}, {bonsai.KVFloat16, bonsai.KVInt8}} {
		src := openTiny(t, path, bonsai.CPU(), pair[0], 48)
		cpuTo := openTiny(t, path, bonsai.CPU(), pair[1], 48)
		dev := openTiny(t, path, newEmulator(), pair[1], 48)
		s := newSession(t, src)
		if err := s.Prefill(context.Background(), promptIDs(12)); err != nil {
			t.Fatal(err)
		}
		var snap bytes.Buffer
		if err := s.Save(&snap); err != nil {
			t.Fatal(err)
		}
		a, err := dev.LoadSession(bytes.NewReader(snap.Bytes()))
		if err != nil {
			t.Fatalf("%s snapshot on metal %s: %v", pair[0], pair[1], err)
		}
		t.Cleanup(func() { a.Close() })
		b, err := cpuTo.LoadSession(bytes.NewReader(snap.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		ga, gb := stepAll(t, a, promptIDs(14)[12:]), stepAll(t, b, promptIDs(14)[12:])
		d := 0.0
		for i := range ga {
			d = math.Max(d, maxAbsDiff(ga[i], gb[i]))
		}
		t.Logf("%s snapshot loaded into a %s cache: metal vs cpu max |Δlogit| %.2e", pair[0], pair[1], d)
		if d > tolLogitInt8 {
			t.Errorf("%s → %s: |Δlogit| %.2e", pair[0], pair[1], d)
		}
	}
}

// TestStates covers the state methods: Clone, Reset and the context limit.
func TestStates(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	dev := openTiny(t, path, newEmulator(), bonsai.KVFloat16, 24)
	s := newSession(t, dev)
	ids := promptIDs(24)
	if err := s.Prefill(context.Background(), ids[:10]); err != nil {
		t.Fatal(err)
	}
	c, err := s.Clone()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := stepAll(t, s, ids[10:14])
	b := stepAll(t, c, ids[10:14])
	for i := range a {
		if d := maxAbsDiff(a[i], b[i]); d != 0 {
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
	// where a step ran alone, within batchTolerance where bonsai's batcher ran both in
	// one batch (the GEMM path instead of the fused decode).
	var wg sync.WaitGroup
	res := make([][][]float32, 2)
	sessions := []*bonsai.Session{newSession(t, dev), newSession(t, dev)}
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
	lone := stepAll(t, newSession(t, dev), ids[:6])
	worst := 0.0
	for i := range res {
		for j := range lone {
			if j >= len(res[i]) {
				t.Fatalf("concurrent session %d made %d steps", i, len(res[i]))
			}
			d := maxAbsDiff(res[i][j], lone[j])
			if d > batchTolerance {
				t.Fatalf("concurrent session %d step %d differs from a lone session by %.3g", i, j, d)
			}
			worst = math.Max(worst, d)
		}
	}
	t.Logf("two concurrent sessions (at most %d sequences a step) against a lone one: max |Δlogit| %.3g", dev.Stats().Batch.MaxBatch, worst)
	s.Reset()
	r := stepAll(t, s, ids[:2])
	f := stepAll(t, newSession(t, dev), ids[:2])
	if d := maxAbsDiff(r[1], f[1]); d != 0 {
		t.Errorf("after Reset the logits differ from a fresh session's by %g", d)
	}
}

// TestUnfusedDecode checks the fused decode kernels against the prefill kernels run one
// token at a time, and the emulator's thread orders against each other (a missing
// barrier or a race shows as a difference).
func TestUnfusedDecode(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	ids := promptIDs(8)
	fused := stepAll(t, newSession(t, openTiny(t, path, newEmulator(), bonsai.KVFloat16, 16)), ids)
	unfused := stepAll(t, newSession(t, openTiny(t, path, newEmulator(unfused), bonsai.KVFloat16, 16)), ids)
	d := 0.0
	for i := range fused {
		d = math.Max(d, maxAbsDiff(fused[i], unfused[i]))
	}
	split := stepAll(t, newSession(t, openTiny(t, path, newEmulator(splitGDN), bonsai.KVFloat16, 16)), ids)
	ds := 0.0
	for i := range fused {
		ds = math.Max(ds, maxAbsDiff(fused[i], split[i]))
	}
	t.Logf("fused vs unfused decode: max |Δlogit| %.2e; fused vs split GDN: %.2e", d, ds)
	if d > tolLogit || ds > tolLogit {
		t.Errorf("fused vs unfused: %.2e, vs split GDN: %.2e", d, ds)
	}
	for _, o := range []mslemu.Order{mslemu.Reverse, mslemu.Random} {
		b := newEmulator(onDevice("metal-emulator", func() (gpu.Device, error) { return mslemu.New(mslemu.WithOrder(o), mslemu.WithSeed(7)) }))
		got := stepAll(t, newSession(t, openTiny(t, path, b, bonsai.KVFloat16, 16)), ids)
		for i := range got {
			if dd := maxAbsDiff(got[i], fused[i]); dd != 0 {
				t.Errorf("order %s: step %d differs from forward order by %g", o, i, dd)
				break
			}
		}
	}
}

// smallDevice reports a small largest buffer, so that the model is wrapped as several
// overlapping views.
type smallDevice struct {
	gpu.Device
	max int
}

func (d smallDevice) MaxBufferLength() int { return d.max }

func (d smallDevice) WrapNoCopy(mem []byte) (gpu.Buffer, error) { return d.Device.WrapNoCopy(mem) }

// TestSplitViews runs the tiny model wrapped as views of 64 KiB.
func TestSplitViews(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	b := newEmulator(onDevice("metal-emulator", func() (gpu.Device, error) {
		d, err := mslemu.New()
		if err != nil {
			return nil, err
		}
		return smallDevice{d, 64 << 10}, nil
	}))
	dev := openTiny(t, path, b, bonsai.KVFloat16, 16)
	cpu := openTiny(t, path, bonsai.CPU(), bonsai.KVFloat16, 16)
	ids := promptIDs(5)
	got, err := newSession(t, dev).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	want, err := newSession(t, cpu).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	d := 0.0
	for i := range got {
		d = math.Max(d, maxAbsDiff(got[i], want[i]))
	}
	if d > tolLogit {
		t.Errorf("split views: |Δlogit| %.2e", d)
	}
}

// The same logits from a mapped and an in-memory file, on the emulator.
func TestUnmappedWeightsEmulator(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	open := func(mmap bool) *bonsai.Model {
		m, err := bonsai.Open(path, bonsai.WithBackend(newEmulator()), bonsai.WithThreads(1), bonsai.WithMmap(mmap),
			bonsai.WithActivations(bonsai.ActivationsFloat32), bonsai.WithKVCache(bonsai.KVFloat16), bonsai.WithContextSize(16))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	ids := promptIDs(5)
	a, err := newSession(t, open(true)).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newSession(t, open(false)).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if d := maxAbsDiff(a[i], b[i]); d != 0 {
			t.Errorf("token %d: |Δlogit| %g between the mapped and the in-memory file", i, d)
		}
	}
}

// The emulator's working set (mslemu.WithWorkingSet) reaches Load through bonsai.Open:
// a 1 MiB GPU cannot hold the tiny model.
func TestWorkingSetEmulator(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	b := newEmulator(onDevice("metal-emulator", func() (gpu.Device, error) { return mslemu.New(mslemu.WithWorkingSet(1 << 20)) }))
	m, err := bonsai.Open(path, bonsai.WithBackend(b), bonsai.WithContextSize(16))
	if err == nil {
		m.Close()
		t.Fatal("the tiny model loaded on a 1 MiB working set")
	}
	if !errors.Is(err, ErrWorkingSet) || !strings.Contains(err.Error(), "1.0 MiB") {
		t.Errorf("got %v", err)
	}
}
