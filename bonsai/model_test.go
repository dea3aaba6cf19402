package bonsai_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeModel writes a synthetic model to a temporary file.
func writeModel(t testing.TB, preset string, seed uint64, format ternary.Format) string {
	t.Helper()
	cfg, err := synth.Preset(preset)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), preset+".gguf")
	require.NoError(t, synth.WriteFile(context.Background(), path, synth.Options{Config: cfg, Seed: seed, Format: format}, nil))
	return path
}

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

func tokens(n, vocab int, seed int) []int32 {
	ids := make([]int32, n)
	x := uint32(seed*2654435761 + 1)
	for i := range ids {
		x = x*1664525 + 1013904223
		ids[i] = int32(x>>8) % int32(vocab)
	}
	return ids
}

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
	path := writeModel(t, "tiny", 1, ternary.PQ2_0)
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
	path := writeModel(t, "tiny", 1, ternary.PQ2_0)
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

func TestKVPrecisionDrift(t *testing.T) {
	path := writeModel(t, "tiny", 2, ternary.PQ2_0)
	ids := tokens(80, 512, 2)
	want := reference(t, path, ids)
	for _, c := range []struct {
		kv    qwen35.KVPrecision
		bound float64
	}{{bonsai.KVFloat16, 2e-2}, {bonsai.KVInt8, 1e-1}} {
		m := open(t, path, bonsai.WithKVCache(c.kv), bonsai.WithActivations(bonsai.ActivationsFloat32))
		s, err := m.NewSession()
		require.NoError(t, err)
		got, err := s.PrefillAll(context.Background(), ids)
		require.NoError(t, err)
		worst := compare(t, c.kv.String(), got, want, 2*c.bound)
		t.Logf("tiny, %s KV vs float64 reference: max |Δlogit| %.3g", c.kv, worst)
		assert.Less(t, worst, c.bound, c.kv.String())
	}
}

func TestPTQ1_0IdenticalToPQ2_0(t *testing.T) {
	a := writeModel(t, "tiny", 3, ternary.PQ2_0)
	b := writeModel(t, "tiny", 3, ternary.PTQ1_0)
	ids := tokens(70, 512, 3)
	var out [2][][]float32
	var steps [2][][]float32
	for i, path := range []string{a, b} {
		m := open(t, path)
		s, err := m.NewSession()
		require.NoError(t, err)
		out[i], err = s.PrefillAll(context.Background(), ids)
		require.NoError(t, err)
		s.Reset()
		steps[i] = stepAll(t, s, ids[:10])
	}
	assert.Equal(t, out[0], out[1], "prefill logits differ between PQ2_0 and PTQ1_0")
	assert.Equal(t, steps[0], steps[1], "step logits differ between PQ2_0 and PTQ1_0")
}

func TestSessionForkResetAndConcurrency(t *testing.T) {
	path := writeModel(t, "tiny", 4, ternary.PQ2_0)
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

func TestStepAllocatesNothing(t *testing.T) {
	path := writeModel(t, "tiny", 5, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2))
	s, err := m.NewSession()
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, s.Prefill(ctx, tokens(8, 512, 5)))
	tok := int32(3)
	allocs := testing.AllocsPerRun(50, func() {
		if err := s.Step(ctx, tok); err != nil {
			t.Fatal(err)
		}
		tok = int32(argmax(s.Logits()))
	})
	assert.Zero(t, allocs, "allocations per decode step")
}

func TestErrors(t *testing.T) {
	path := writeModel(t, "tiny", 6, ternary.PQ2_0)
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
}
