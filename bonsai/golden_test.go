package bonsai_test

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readGolden reads the token ids and the logits upstream llama.cpp computed on the
// unfolded F32 twin of the tiny seed-1 model (see qwen35/testdata/golden/README.md).
func readGolden(t *testing.T) ([]int32, [][]float64) {
	t.Helper()
	const dir = "../qwen35/testdata/golden/"
	raw, err := os.ReadFile(dir + "tiny-seed1.tokens")
	require.NoError(t, err)
	var ids []int32
	for _, f := range strings.Fields(string(raw)) {
		v, err := strconv.Atoi(f)
		require.NoError(t, err)
		ids = append(ids, int32(v))
	}
	lf, err := os.Open(dir + "tiny-seed1.logits")
	require.NoError(t, err)
	defer lf.Close()
	var logits [][]float64
	sc := bufio.NewScanner(lf)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pos, err := strconv.Atoi(fields[0])
		require.NoError(t, err)
		require.Equal(t, len(logits), pos)
		row := make([]float64, len(fields)-1)
		for i, f := range fields[1:] {
			row[i], err = strconv.ParseFloat(f, 64)
			require.NoError(t, err)
		}
		logits = append(logits, row)
	}
	require.NoError(t, sc.Err())
	require.Len(t, logits, len(ids))
	return ids, logits
}

// The packed model (ternary codes, rotations at run time, tiled V heads permuted before
// ssm_out) against upstream llama.cpp running the unfolded twin: two independent
// implementations of the same network.
func TestTinyMatchesLlamaCpp(t *testing.T) {
	ids, want := readGolden(t)
	for _, format := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		path := synthtest.Path(t, "tiny", 1, format)
		m := open(t, path, bonsai.WithKVCache(bonsai.KVFloat32), bonsai.WithActivations(bonsai.ActivationsFloat32))
		s, err := m.NewSession()
		require.NoError(t, err)
		got, err := s.PrefillAll(context.Background(), ids)
		require.NoError(t, err)
		prefill := compare(t, "llama.cpp prefill", got, want, 0)
		s.Reset()
		step := compare(t, "llama.cpp step", stepAll(t, s, ids), want, 0)
		t.Logf("tiny seed 1 (%s) vs llama.cpp golden logits, %d positions: prefill max |Δlogit| %.3g, step walk %.3g",
			format, len(ids), prefill, step)
		assert.Less(t, prefill, 1e-4)
		assert.Less(t, step, 1e-4)
	}
	// With the default int8 activations (llama.cpp's own CPU path quantises to Q8_0).
	m := open(t, synthtest.Path(t, "tiny", 1, ternary.PQ2_0), bonsai.WithKVCache(bonsai.KVFloat32))
	s, err := m.NewSession()
	require.NoError(t, err)
	got, err := s.PrefillAll(context.Background(), ids)
	require.NoError(t, err)
	worst := compare(t, "llama.cpp int8", got, want, 3.0)
	t.Logf("tiny seed 1, int8 activations vs llama.cpp golden logits: max |Δlogit| %.3g", worst)
	assert.Less(t, worst, 1.5)
}
