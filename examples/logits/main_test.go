package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLogitsOutputContract(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	c, err := synth.Preset("tiny")
	require.NoError(t, err)
	require.NoError(t, synth.WriteFile(context.Background(), path, synth.Options{Config: c, Seed: 1}, nil))
	ids, err := parseTokens("1, 2,3,495,7")
	require.NoError(t, err)

	outputs := map[string][][]float64{}
	for _, mode := range []string{"prefill", "step"} {
		var buf, stderr bytes.Buffer
		require.NoError(t, run(context.Background(), &buf, config{model: path, mode: mode, backend: "cpu", threads: 2, kv: "f32", stderr: &stderr}, ids))
		assert.Contains(t, stderr.String(), "logits: backend cpu, 2 threads")
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		require.Len(t, lines, len(ids))
		for p, line := range lines {
			fields := strings.Split(line, " ")
			require.Len(t, fields, 1+c.Vocab, "position %d", p)
			assert.Equal(t, strconv.Itoa(p), fields[0])
			row := make([]float64, c.Vocab)
			for i, f := range fields[1:] {
				v, err := strconv.ParseFloat(f, 32)
				require.NoError(t, err)
				// The contract: each value printed as C's printf("%.9g").
				require.Equal(t, fmt.Sprintf("%.9g", float64(float32(v))), f)
				row[i] = v
			}
			outputs[mode] = append(outputs[mode], row)
		}
	}
	for p := range ids {
		for i := range outputs["prefill"][p] {
			require.InDelta(t, outputs["prefill"][p][i], outputs["step"][p][i], 1e-3, "position %d logit %d", p, i)
		}
	}
	assert.False(t, math.IsNaN(outputs["step"][4][0]))
}

func TestLogitsErrors(t *testing.T) {
	_, err := parseTokens("1,x")
	require.ErrorContains(t, err, `"x" is not a token id`)
	_, err = parseTokens(" , ")
	require.ErrorContains(t, err, "no token ids")
	var buf bytes.Buffer
	err = run(context.Background(), &buf, config{model: "missing.gguf", mode: "prefill", backend: "cpu", threads: 1, kv: "f16"}, []int32{1})
	require.ErrorContains(t, err, "missing.gguf")
	err = run(context.Background(), &buf, config{model: "x", mode: "prefill", backend: "tpu", threads: 1, kv: "f16"}, []int32{1})
	require.ErrorContains(t, err, `-backend "tpu"`)
	err = run(context.Background(), &buf, config{model: "x", mode: "walk", backend: "cpu", threads: 1, kv: "f16"}, []int32{1})
	require.ErrorContains(t, err, `-mode "walk"`)
}
