package bonsai_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/internal/alloctest"
	"github.com/bonsai-go/sdk/internal/spectest"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func open(t testing.TB, path string, opts ...bonsai.Option) *bonsai.Model {
	t.Helper()
	m, err := bonsai.Open(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// reference returns the float64 logits of every position for tokens.
func reference(t testing.TB, path string, tokens []int32) [][]float64 {
	t.Helper()
	f, err := gguf.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := qwen35.NewReference(f)
	require.NoError(t, err)
	ids := make([]int, len(tokens))
	for i, v := range tokens {
		ids[i] = int(v)
	}
	out, err := r.Forward(ids)
	require.NoError(t, err)
	return out
}

func argmax[T float32 | float64](v []T) int {
	best := 0
	for i := range v {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}

// compare returns the largest |a−b| over all positions, and checks the argmax of every
// position agrees unless the reference's top two are within margin of each other.
func compare(t *testing.T, what string, got [][]float32, want [][]float64, margin float64) float64 {
	t.Helper()
	require.Equal(t, len(want), len(got), what)
	var worst float64
	for p := range want {
		require.Len(t, got[p], len(want[p]))
		for i := range want[p] {
			worst = max(worst, math.Abs(float64(got[p][i])-want[p][i]))
		}
		g, w := argmax(got[p]), argmax(want[p])
		if g != w {
			gap := want[p][w] - want[p][g]
			assert.LessOrEqual(t, gap, margin, "%s: position %d: argmax %d, reference %d (reference gap %g)", what, p, g, w, gap)
		}
	}
	return worst
}

func tokens(n, vocab int, seed int) []int32 { return spectest.Tokens(n, vocab, seed) }

func stepAll(t testing.TB, s *bonsai.Session, ids []int32) [][]float32 {
	t.Helper()
	out := make([][]float32, len(ids))
	for i, id := range ids {
		require.NoError(t, s.Step(context.Background(), id))
		out[i] = append([]float32(nil), s.Logits()...)
	}
	return out
}

func maxDiff(a, b [][]float32) float64 {
	var worst float64
	for p := range a {
		for i := range a[p] {
			worst = max(worst, math.Abs(float64(a[p][i])-float64(b[p][i])))
		}
	}
	return worst
}

func TestTinyMatchesReference(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	ids := tokens(100, 512, 1) // longer than one prefill chunk
	want := reference(t, path, ids)

	m := open(t, path, bonsai.WithKVCache(bonsai.KVFloat32), bonsai.WithActivations(bonsai.ActivationsFloat32))
	s, err := m.NewSession()
	require.NoError(t, err)
	got, err := s.PrefillAll(context.Background(), ids)
	require.NoError(t, err)
	prefill := compare(t, "prefill", got, want, 0)
	t.Logf("tiny, f32 KV, prefill vs float64 reference: max |Δlogit| %.3g over %d positions", prefill, len(ids))
	assert.Less(t, prefill, 1e-3)

	s.Reset()
	steps := stepAll(t, s, ids)
	step := compare(t, "step", steps, want, 0)
	t.Logf("tiny, f32 KV, step walk vs float64 reference: max |Δlogit| %.3g", step)
	assert.Less(t, step, 1e-3)
	walk := maxDiff(got, steps)
	t.Logf("tiny: prefill vs step walk: max |Δlogit| %.3g", walk)
	assert.Less(t, walk, 1e-3)
}

// The default int8 activations (one scale per 128 values, as llama.cpp's Q8_0 does per
// 32) add a rounding of about 0.6% of each product's output; through the layers of a
// random synthetic model that becomes a few tenths of a logit at worst, and the greedy
// token changes only where the reference's top two are that close.
func TestTinyInt8MatchesReference(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	ids := tokens(100, 512, 1)
	want := reference(t, path, ids)
	m := open(t, path, bonsai.WithKVCache(bonsai.KVFloat32), bonsai.WithActivations(bonsai.ActivationsInt8))
	s, err := m.NewSession()
	require.NoError(t, err)
	got, err := s.PrefillAll(context.Background(), ids)
	require.NoError(t, err)
	const bound = 1.0
	worst := compare(t, "int8 prefill", got, want, 2*bound)
	var sum, n float64
	for p := range want {
		for i := range want[p] {
			d := float64(got[p][i]) - want[p][i]
			sum += d * d
			n++
		}
	}
	t.Logf("tiny, int8 activations vs float64 reference: max |Δlogit| %.3g, rms %.3g over %d positions", worst, math.Sqrt(sum/n), len(ids))
	assert.Less(t, worst, bound)
	s.Reset()
	steps := stepAll(t, s, ids)
	assert.Equal(t, got, steps, "int8 prefill and step walk compute the same integer sums")
}

// TestKVPrecisionDrift bounds what the KV cache's precision costs: fp16, 8-bit and 4-bit
// each against the float64 reference (float32 activations, so that the cache is the main
// error), and 8-bit and 4-bit directly against fp16 — the drift a user switching WithKVCache sees —
// with both activation precisions. An argmax that changes must be a near tie of the fp16
// logits (its top-two gap within the bound).
func TestKVPrecisionDrift(t *testing.T) {
	path := synthtest.Path(t, "tiny", 2, ternary.PQ2_0)
	ids := tokens(80, 512, 2)
	want := reference(t, path, ids)
	run := func(kv bonsai.KVPrecision, acts bonsai.Activations) [][]float32 {
		m := open(t, path, bonsai.WithKVCache(kv), bonsai.WithActivations(acts))
		s, err := m.NewSession()
		require.NoError(t, err)
		got, err := s.PrefillAll(context.Background(), ids)
		require.NoError(t, err)
		return got
	}
	f16 := run(bonsai.KVFloat16, bonsai.ActivationsFloat32)
	for _, c := range []struct {
		kv    bonsai.KVPrecision
		got   [][]float32
		bound float64
	}{{bonsai.KVFloat16, f16, 2e-2}, {bonsai.KVInt8, run(bonsai.KVInt8, bonsai.ActivationsFloat32), 1e-1},
		{bonsai.KVQ4, run(bonsai.KVQ4, bonsai.ActivationsFloat32), 1}} {
		worst := compare(t, c.kv.String(), c.got, want, 2*c.bound)
		t.Logf("tiny, %s KV vs float64 reference (float32 activations, %d positions): max |Δlogit| %.3g", c.kv, len(ids), worst)
		assert.Less(t, worst, c.bound, c.kv.String())
	}

	// 8-bit and 4-bit against fp16 directly. Measured: 8-bit 0.0268 with float32
	// activations, 0.178 with int8 (whose rounding the cache's error moves across
	// quantisation steps); 4-bit 0.489 and 0.629, with one and two argmax changes at
	// near ties (16 levels a block instead of 255: the drift is about 18× 8-bit's).
	for _, c := range []struct {
		kv    bonsai.KVPrecision
		acts  bonsai.Activations
		bound float64
	}{
		{bonsai.KVInt8, bonsai.ActivationsFloat32, 0.1}, {bonsai.KVInt8, bonsai.ActivationsInt8, 0.5},
		{bonsai.KVQ4, bonsai.ActivationsFloat32, 1}, {bonsai.KVQ4, bonsai.ActivationsInt8, 1.25},
	} {
		base := f16
		if c.acts != bonsai.ActivationsFloat32 {
			base = run(bonsai.KVFloat16, c.acts)
		}
		q := run(c.kv, c.acts)
		var worst float64
		var flips []int
		for p := range base {
			for i := range base[p] {
				worst = max(worst, math.Abs(float64(q[p][i])-float64(base[p][i])))
			}
			if g, w := argmax(q[p]), argmax(base[p]); g != w {
				flips = append(flips, p)
				gap := float64(base[p][w] - base[p][g])
				assert.LessOrEqual(t, gap, 2*c.bound, "%s activations, position %d: argmax %d with %s KV, %d with fp16 (fp16 gap %g)", c.acts, p, g, c.kv, w, gap)
			}
		}
		t.Logf("tiny, %s KV vs fp16 KV (%s activations, %d positions): max |Δlogit| %.3g, argmax changes at %d positions %v",
			c.kv, c.acts, len(ids), worst, len(flips), flips)
		assert.Less(t, worst, c.bound, "%s KV, %s activations", c.kv, c.acts)
		assert.LessOrEqual(t, len(flips), len(ids)/20, "argmax changes")
	}
}

// TestPTQ1_0IdenticalToPQ2_0: a PTQ1_0 model and its PQ2_0 twin (the same codes and
// scales) give bit-identical logits — prefill over 70 positions (a full 64-token chunk
// and a partial one) and a 10-step walk — in both activation precisions.
func TestPTQ1_0IdenticalToPQ2_0(t *testing.T) {
	a := synthtest.Path(t, "tiny", 3, ternary.PQ2_0)
	b := synthtest.Path(t, "tiny", 3, ternary.PTQ1_0)
	ids := tokens(70, 512, 3)
	for _, acts := range []bonsai.Activations{bonsai.ActivationsInt8, bonsai.ActivationsFloat32} {
		var out [2][][]float32
		var steps [2][][]float32
		for i, path := range []string{a, b} {
			m := open(t, path, bonsai.WithActivations(acts))
			s, err := m.NewSession()
			require.NoError(t, err)
			out[i], err = s.PrefillAll(context.Background(), ids)
			require.NoError(t, err)
			s.Reset()
			steps[i] = stepAll(t, s, ids[:10])
		}
		prefill, step := maxDiff(out[0], out[1]), maxDiff(steps[0], steps[1])
		t.Logf("tiny seed 3, %s activations: PTQ1_0 vs PQ2_0, prefill %d positions × %d logits: max |Δlogit| %g; step walk %d positions: max |Δlogit| %g",
			acts, len(out[0]), len(out[0][0]), prefill, len(steps[0]), step)
		assert.Equal(t, out[0], out[1], "%s: prefill logits differ between PQ2_0 and PTQ1_0", acts)
		assert.Equal(t, steps[0], steps[1], "%s: step logits differ between PQ2_0 and PTQ1_0", acts)
	}
}

func TestSessionForkResetAndConcurrency(t *testing.T) {
	path := synthtest.Path(t, "tiny", 4, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2))
	ctx := context.Background()
	ids := tokens(40, 512, 4)

	base, err := m.NewSession()
	require.NoError(t, err)
	want := stepAll(t, base, ids)

	// A fork continues exactly as the original would; the original is unaffected.
	s, err := m.NewSession()
	require.NoError(t, err)
	require.NoError(t, s.Prefill(ctx, ids[:20]))
	fork, err := s.Clone()
	require.NoError(t, err)
	require.NoError(t, fork.Step(ctx, 7)) // diverge
	require.NoError(t, fork.Step(ctx, 9))
	rest := stepAll(t, s, ids[20:])
	assert.InDeltaSlice(t, want[39], rest[19], 1e-4)
	assert.Equal(t, 40, s.Len())
	assert.Equal(t, 22, fork.Len())

	// Sessions run concurrently and independently.
	var wg sync.WaitGroup
	results := make([][][]float32, 4)
	for g := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := m.NewSession()
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			results[g] = stepAll(t, c, ids)
		}()
	}
	wg.Wait()
	for g := range results {
		assert.Equal(t, want, results[g], "concurrent session %d", g)
	}

	s.Reset()
	assert.Equal(t, 0, s.Len())
	assert.Nil(t, s.Logits())
	again := stepAll(t, s, ids[:5])
	assert.Equal(t, want[:5], again, "a reset session starts afresh")
}

// TestStepAllocatesNothing counts a decode step's allocations exactly, step by step.
// The KV cache grows in pages (16 positions, then doubling to 1024): a step that fills a
// page adds the next, one allocation per attention layer (keys and values share it),
// and every other step allocates nothing. So over a window of steps within the
// allocated pages the count is exactly 0, and over a window that crosses page
// boundaries it is the number of page growths — amortised, one per attention layer at
// positions 16, 48, 112, 240, 496, …, then one per 1024 tokens. A step during which the
// runtime started an OS thread is left out (see countAllocs) and counted in the log.
func TestStepAllocatesNothing(t *testing.T) {
	path := synthtest.Path(t, "tiny", 5, ternary.PQ2_0)
	ctx := context.Background()
	for _, acts := range []bonsai.Activations{bonsai.ActivationsInt8, bonsai.ActivationsFloat32} {
		m := open(t, path, bonsai.WithThreads(2), bonsai.WithActivations(acts))
		cfg := m.Driver().Weights().(*qwen35.Weights).Config
		attention := 0
		for i := 0; i < cfg.Layers; i++ {
			if cfg.IsAttention(i) {
				attention++
			}
		}
		s, err := m.NewSession()
		require.NoError(t, err)
		// 20 positions fill the first page (16) and start the second (16–47).
		require.NoError(t, s.Prefill(ctx, tokens(20, cfg.Vocab, 5)))
		tok := int32(3)
		var stepErr error
		step := func() {
			if err := s.Step(ctx, tok); err != nil && stepErr == nil {
				stepErr = err
			}
			tok = int32(argmax(s.Logits()))
		}
		// Warm-up, positions 20–27, around settleRuntime.
		for range 4 {
			step()
		}
		alloctest.Settle()
		for range 4 {
			step()
		}

		// window runs the steps up to position end−1 and returns the allocations of
		// those measured, the steps measured, the steps that added a page (seen as a
		// change of the session's memory) and the allocations measured at those.
		window := func(end int) (total uint64, measured, growthSteps int, atGrowth uint64) {
			for s.Len() < end {
				mem := s.MemoryBytes()
				pos := s.Len()
				n, threads := alloctest.Count(step)
				grew := s.MemoryBytes() != mem
				if grew {
					growthSteps++
				}
				if threads > 0 {
					continue
				}
				measured++
				total += n
				if grew {
					atGrowth += n
				} else if n != 0 {
					t.Errorf("%s activations: step at position %d allocated %d times without a page growth", acts, pos, n)
				}
			}
			require.NoError(t, stepErr)
			return total, measured, growthSteps, atGrowth
		}

		// Positions 28–47: within the second page.
		memBefore := s.MemoryBytes()
		within, measuredA, growthA, _ := window(48)
		assert.Equal(t, memBefore, s.MemoryBytes(), "no page added within the window")
		assert.Zero(t, growthA)
		assert.Zero(t, within, "%s activations: allocations in decode steps within the KV pages", acts)
		assert.GreaterOrEqual(t, measuredA, 18, "steps measured (the others saw the runtime start a thread)")

		// Positions 48–240 cross the page boundaries at 48, 112 and 240.
		const growthsPerLayer = 3
		across, measuredB, growthB, atGrowth := window(241)
		assert.Equal(t, growthsPerLayer, growthB, "steps that added KV pages")
		assert.Equal(t, across, atGrowth, "allocations only at page growths")
		assert.LessOrEqual(t, across, uint64(growthsPerLayer*attention), "allocations across the page boundaries")
		assert.GreaterOrEqual(t, measuredB, 185, "steps measured")
		t.Logf("tiny, %s activations, f16 KV: decode steps within the KV pages (positions 28–47): %d allocations in %d steps measured; "+
			"across page boundaries (48–240): %d allocations in %d steps measured, all at the %d steps that added pages "+
			"(%d page growths expected: %d attention layer(s) × %d); steps left out because the runtime started a thread: %d",
			acts, within, measuredA, across, measuredB, growthB, growthsPerLayer*attention, attention, growthsPerLayer,
			(48-28-measuredA)+(241-48-measuredB))
	}
}

// TestPrefillAllocatesNothing: a prefill in steady state — the session's KV pages already
// allocated by an earlier prompt, kept by Reset — allocates nothing, in both activation
// precisions. The float32 path decodes each weight row into a per-worker scratch row
// (the engine's rowScratch), not a fresh one per chunk of rows.
func TestPrefillAllocatesNothing(t *testing.T) {
	path := synthtest.Path(t, "tiny", 5, ternary.PQ2_0)
	ctx := context.Background()
	for _, acts := range []bonsai.Activations{bonsai.ActivationsInt8, bonsai.ActivationsFloat32} {
		m := open(t, path, bonsai.WithThreads(2), bonsai.WithActivations(acts))
		s, err := m.NewSession()
		require.NoError(t, err)
		ids := tokens(80, m.Vocab(), 5) // two chunks: 64 + 16
		require.NoError(t, s.Prefill(ctx, ids))
		alloctest.Settle()
		s.Reset()
		require.NoError(t, s.Prefill(ctx, ids))
		var prefillErr error
		var counts []uint64
		const runs = 4
		for range runs {
			n, threads := alloctest.Count(func() {
				s.Reset()
				if err := s.Prefill(ctx, ids); err != nil && prefillErr == nil {
					prefillErr = err
				}
			})
			if threads == 0 {
				counts = append(counts, n)
			}
		}
		require.NoError(t, prefillErr)
		t.Logf("tiny, %s activations: prefills of %d tokens (two chunks each) after a warm-up: allocations %v (%d left out: the runtime started a thread)",
			acts, len(ids), counts, runs-len(counts))
		assert.GreaterOrEqual(t, len(counts), runs-1, "prefills measured")
		for _, n := range counts {
			assert.Zero(t, n, "%s activations: allocations in a steady-state prefill", acts)
		}
	}
}

func TestErrors(t *testing.T) {
	path := synthtest.Path(t, "tiny", 6, ternary.PQ2_0)
	m := open(t, path, bonsai.WithContextSize(10))
	ctx := context.Background()
	s, err := m.NewSession()
	require.NoError(t, err)

	err = s.Prefill(ctx, []int32{1, 2, 512})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "token 512 at index 2 out of range [0, 512)")
	assert.Equal(t, 0, s.Len(), "a refused call changes nothing")

	require.NoError(t, s.Prefill(ctx, tokens(8, 512, 6)))
	err = s.Prefill(ctx, []int32{1, 2, 3})
	require.ErrorIs(t, err, bonsai.ErrContextFull)
	assert.Equal(t, 8, s.Len())
	require.NoError(t, s.Step(ctx, 1))
	require.NoError(t, s.Step(ctx, 2))
	require.ErrorIs(t, s.Step(ctx, 3), bonsai.ErrContextFull)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	s.Reset()
	require.ErrorIs(t, s.Prefill(cancelled, []int32{1, 2}), context.Canceled)
	assert.Equal(t, 0, s.Len())

	_, err = bonsai.Open(filepath.Join(t.TempDir(), "missing.gguf"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.gguf")

	require.NoError(t, m.Close())
	require.ErrorIs(t, s.Step(ctx, 1), bonsai.ErrClosed)
	_, err = m.NewSession()
	require.ErrorIs(t, err, bonsai.ErrClosed)
}

func TestOpenRefusesNonBonsai(t *testing.T) {
	// A valid GGUF of another architecture.
	path := filepath.Join(t.TempDir(), "llama.gguf")
	require.NoError(t, writeGGUF(path, []gguf.KV{{Key: "general.architecture", Value: gguf.MustValue("llama")}}))
	_, err := bonsai.Open(path)
	require.True(t, errors.Is(err, bonsai.ErrNotBonsai), "%v", err)
	// The error names the file's architecture and the ones registered.
	require.ErrorIs(t, err, backend.ErrUnknownArchitecture)
	assert.Contains(t, err.Error(), `"llama"`)
	assert.Contains(t, err.Error(), "registered: qwen35")
}
