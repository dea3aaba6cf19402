//go:build !race

// The real-widths tests need gigabytes and minutes; under the race detector (five to ten
// times the memory and time) they are left out, and the race job runs the rest.

package bonsai_test

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real widths (K = 5120, 6144, 17408, Hadamard block 1024, 24/4 heads, 48/16 V/K
// heads) with four layers: the packed path against the float64 reference over unfolded
// weights. The reference holds about 6 GB of dense weights.
//
// The reference runs over 72 positions, two prefill chunks (64 + 8). The int8 path (the
// default) is compared over all 72: its prefill against the reference, and against its
// own step walk, which has no chunks. The float32 path, tight to the reference, is
// compared over the first 12 (prefill and step walk): on two slow cores its products run
// about 0.27 s per position at these widths, so its 72-position prefill would add about
// 16 s (measured once: max |Δlogit| 4.2e-5 over 72 positions, argmax equal everywhere).
func TestRealWidthsMatchesReference(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the real widths against the float64 reference (minutes, 6 GB) run in the full go test")
	}
	path := synthtest.Path(t, "real-widths", 1, ternary.PQ2_0)
	ids := tokens(72, 4096, 7) // two prefill chunks: 64 + 8
	const short = 12           // positions of the float32 checks

	f, err := gguf.Open(path)
	require.NoError(t, err)
	r, err := qwen35.NewReference(f)
	require.NoError(t, err)
	assert.Zero(t, r.RoundedWeights(), "with block 1024 every unfolded weight is exact in float32")
	in := make([]int, len(ids))
	for i, v := range ids {
		in[i] = int(v)
	}
	want, err := r.Forward(in)
	require.NoError(t, err)
	r = nil
	require.NoError(t, f.Close())

	m := open(t, path, bonsai.WithKVCache(bonsai.KVFloat32), bonsai.WithActivations(bonsai.ActivationsFloat32))
	s, err := m.NewSession()
	require.NoError(t, err)
	got, err := s.PrefillAll(context.Background(), ids[:short])
	require.NoError(t, err)
	prefill := compare(t, "real-widths prefill", got, want[:short], 0)
	s.Reset()
	steps := stepAll(t, s, ids[:short])
	step := compare(t, "real-widths step", steps, want[:short], 0)
	t.Logf("real widths, f32 KV, float32 activations, vs float64 reference over %d positions: prefill max |Δlogit| %.3g, step walk %.3g, prefill vs walk %.3g",
		short, prefill, step, maxDiff(got, steps))
	assert.Less(t, prefill, 2e-3)
	assert.Less(t, step, 2e-3)

	m8 := open(t, path, bonsai.WithKVCache(bonsai.KVFloat32))
	s8, err := m8.NewSession()
	require.NoError(t, err)
	got8, err := s8.PrefillAll(context.Background(), ids)
	require.NoError(t, err)
	const bound = 1.0
	int8 := compare(t, "real-widths int8", got8, want, 2*bound)
	s8.Reset()
	walk8 := stepAll(t, s8, ids)
	int8Walk := compare(t, "real-widths int8 step walk", walk8, want, 2*bound)
	t.Logf("real widths, int8 activations vs float64 reference over %d positions (prefill chunks of 64 and 8): prefill max |Δlogit| %.3g, step walk %.3g, prefill vs walk %.3g (second chunk alone: %.3g)",
		len(ids), int8, int8Walk, maxDiff(got8, walk8), maxDiff(got8[64:], walk8[64:]))
	assert.Less(t, int8, bound)
	assert.Less(t, int8Walk, bound)
	// The chunked prefill and the walk compute the same integer dot products; measured,
	// they agree bit for bit over both chunks. The bound leaves room for a kernel that
	// finishes its sums in another float32 order, far below the int8 error.
	assert.Less(t, maxDiff(got8, walk8), 1e-3, "int8 prefill (two chunks) vs its step walk")
}

// Open maps the file and binds views of it: the heap holds the contract's sign vectors
// and name lists and the bound tensor table, well under 1% of the file.
func TestOpenHeapRealWidths(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: Open's heap and a session's memory at the real widths (a 420 MB file) run in the full go test")
	}
	path := synthtest.Path(t, "real-widths", 1, ternary.PQ2_0)
	st, err := os.Stat(path)
	require.NoError(t, err)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var stages []string
	m, err := bonsai.Open(path, bonsai.WithProgress(func(p bonsai.Progress) {
		if len(stages) == 0 || stages[len(stages)-1] != p.Stage {
			stages = append(stages, p.Stage)
		}
	}))
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	defer m.Close()

	allocated := after.TotalAlloc - before.TotalAlloc
	frac := float64(allocated) / float64(st.Size())
	t.Logf("Open of the real-widths preset (%d MB file): %d KB allocated on the heap (%.3f%% of the file)",
		st.Size()>>20, allocated>>10, 100*frac)
	assert.Less(t, frac, 0.01)
	assert.Equal(t, append([]string{"map", "bind", "tokenizer"}, loadStages(true)...), stages)

	// A session's memory: the GDN states are fixed, the KV cache grows with use.
	s, err := m.NewSession()
	require.NoError(t, err)
	before0 := s.MemoryBytes()
	require.NoError(t, s.Prefill(context.Background(), tokens(3, m.Vocab(), 1)))
	assert.Less(t, s.MemoryBytes()-before0, int64(64<<20))
	c := m.Driver().Weights().(*qwen35.Weights).Config
	kvMax := int64(2*c.KVHeads*c.HeadDim*2) * int64(m.ContextSize())
	assert.Less(t, before0, kvMax, "memory must not be reserved for the whole context")
}
