package qwen35_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The golden logits are upstream llama.cpp's, computed on the F32 twin of the tiny seed-1
// model; testdata/golden/README.md states the run. They tie our float64 reference to an
// implementation we did not write.

// goldenTwinWeightsSHA256 is the SHA-256 of the tensor data of the twin the golden logits
// were computed from. When the synthetic generator changes the weights, this fails first,
// saying the golden files must be regenerated, rather than the logits merely disagreeing.
const goldenTwinWeightsSHA256 = "8da771c6c42ff76f4002ba5658250e62d8f656494ecfc229f72fe257d2e9e56b"

// goldenMaxAbsDiff bounds |llama.cpp − reference| over every logit. llama.cpp computes in
// float32 (F32 weights and K/V, float32 accumulation), the reference in float64, so the
// difference is float32 rounding carried through four layers: measured 1.54e-5 on logits
// spanning ±19 (about 1e-6 relative), the same size as llama.cpp's own batch versus
// one-token-at-a-time spread (1.84e-5). The bound leaves a factor of about six for other
// SIMD paths and summation orders, yet sits far below any real fault (a wrong head order
// or a missing sign moves logits by whole units) and below half the smallest top-two gap
// (0.0149), so the argmax check and this one cannot disagree.
const goldenMaxAbsDiff = 1e-4

func TestGoldenLlamaCpp(t *testing.T) {
	tokens := goldenTokens(t, "testdata/golden/tiny-seed1.tokens")
	want := goldenLogits(t, "testdata/golden/tiny-seed1.logits")
	require.Len(t, want, len(tokens), "one line of logits per token")

	cfg := synthtest.Config(t, "tiny")
	packed := synthtest.File(t, "tiny", 1, ternary.PQ2_0)
	twin := synthtest.Twin(t, "tiny", 1, ternary.PQ2_0)
	require.Equal(t, goldenTwinWeightsSHA256, goldenWeightsHash(t, twin),
		"the synthetic tiny seed-1 weights changed: regenerate testdata/golden (see its README.md)")

	ref, err := qwen35.NewReference(packed)
	require.NoError(t, err)
	got, err := ref.Forward(tokens)
	require.NoError(t, err)
	require.Len(t, got, len(tokens))

	worst, at, atTok := 0.0, 0, 0
	for p := range tokens {
		require.Len(t, got[p], cfg.Vocab)
		require.Len(t, want[p], cfg.Vocab)
		assert.Equal(t, goldenArgmax(want[p]), goldenArgmax(got[p]), "argmax at position %d", p)
		for j, w := range want[p] {
			if d := math.Abs(got[p][j] - w); d > worst {
				worst, at, atTok = d, p, j
			}
		}
	}
	t.Logf("max |reference − llama.cpp| = %.3g (position %d, token %d) over %d×%d logits", worst, at, atTok, len(tokens), cfg.Vocab)
	assert.LessOrEqual(t, worst, goldenMaxAbsDiff)

	// The reference reads the twin llama.cpp ran and the packed file to the same weights,
	// so it must give the very same logits from both.
	tref, err := qwen35.NewReference(twin)
	require.NoError(t, err)
	tgot, err := tref.Forward(tokens)
	require.NoError(t, err)
	for p := range got {
		require.Equal(t, got[p], tgot[p], "position %d: reference of the twin differs from that of the packed file", p)
	}
}

// goldenWeightsHash hashes every tensor's data, in file order.
func goldenWeightsHash(t *testing.T, f *gguf.File) string {
	t.Helper()
	h := sha256.New()
	for _, ti := range f.Tensors {
		data, err := f.TensorData(ti.Name)
		require.NoError(t, err)
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func goldenTokens(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var toks []int
	for _, f := range strings.Fields(string(data)) {
		v, err := strconv.Atoi(f)
		require.NoError(t, err, path)
		toks = append(toks, v)
	}
	return toks
}

// goldenLogits reads lines "position logit logit …".
func goldenLogits(t *testing.T, path string) [][]float64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var rows [][]float64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		require.NotEmpty(t, fields, "%s: empty line", path)
		pos, err := strconv.Atoi(fields[0])
		require.NoError(t, err, "%s: position", path)
		require.Equal(t, len(rows), pos, "%s: positions out of order", path)
		row := make([]float64, len(fields)-1)
		for i, s := range fields[1:] {
			row[i], err = strconv.ParseFloat(s, 64)
			require.NoError(t, err, "%s: line %d", path, pos)
		}
		rows = append(rows, row)
	}
	require.NoError(t, sc.Err())
	return rows
}

func goldenArgmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
