package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/metal"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLogitsOutputContract(t *testing.T) {
	c := synthtest.Config(t, "tiny")
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
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
	err = run(context.Background(), &buf, config{model: "x", mode: "prefill", backend: "cpu", threads: 1, kv: "f16", acts: "int4"}, []int32{1})
	require.ErrorContains(t, err, `-activations "int4"`)
	err = run(context.Background(), &buf, config{model: "x", mode: "prefill", backend: "cpu", threads: 1, kv: "bf16"}, []int32{1})
	require.ErrorContains(t, err, `-kv "bf16"`)
}

// parseLogits reads the tool's output (or a golden file in the same format).
func parseLogits(t *testing.T, out []byte) [][]float64 {
	t.Helper()
	var rows [][]float64
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		require.Equal(t, strconv.Itoa(len(rows)), fields[0])
		row := make([]float64, len(fields)-1)
		for i, f := range fields[1:] {
			v, err := strconv.ParseFloat(f, 64)
			require.NoError(t, err)
			row[i] = v
		}
		rows = append(rows, row)
	}
	require.NoError(t, sc.Err())
	return rows
}

func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// TestLogitsReproducesGolden runs the tool as the contract's other side would: no -model
// (the tiny seed-1 synthetic model, the one the golden logits were computed on), float32
// activations and an F32 KV cache, and compares its printed logits with upstream
// llama.cpp's (qwen35/testdata/golden) to bonsai TestTinyMatchesLlamaCpp's tolerance:
// max |Δlogit| < 1e-4 and the same argmax at every position. The default int8
// activations are run too, to show that -activations takes effect.
func TestLogitsReproducesGolden(t *testing.T) {
	const dir = "../../qwen35/testdata/golden/"
	raw, err := os.ReadFile(dir + "tiny-seed1.tokens")
	require.NoError(t, err)
	ids, err := parseTokens(strings.Join(strings.Fields(string(raw)), ","))
	require.NoError(t, err)
	goldenRaw, err := os.ReadFile(dir + "tiny-seed1.logits")
	require.NoError(t, err)
	golden := parseLogits(t, goldenRaw)
	require.Len(t, golden, len(ids))

	diff := func(got [][]float64) (worst float64, flips int) {
		require.Len(t, got, len(golden))
		for p := range golden {
			require.Len(t, got[p], len(golden[p]))
			for i := range golden[p] {
				worst = max(worst, math.Abs(got[p][i]-golden[p][i]))
			}
			if argmax(got[p]) != argmax(golden[p]) {
				flips++
			}
		}
		return worst, flips
	}
	runTool := func(mode, acts, kv string) [][]float64 {
		var buf, stderr bytes.Buffer
		require.NoError(t, run(context.Background(), &buf, config{mode: mode, backend: "cpu", threads: 2, kv: kv, acts: acts, stderr: &stderr}, ids))
		require.Contains(t, stderr.String(), "tiny synthetic model")
		return parseLogits(t, buf.Bytes())
	}
	for _, mode := range []string{"prefill", "step"} {
		worst, flips := diff(runTool(mode, "float32", "f32"))
		t.Logf("logits -mode %s -activations float32 -kv f32 vs llama.cpp golden (tiny seed 1, %d positions × %d logits): max |Δlogit| %.3g, argmax changes %d",
			mode, len(ids), len(golden[0]), worst, flips)
		assert.Less(t, worst, 1e-4, mode)
		assert.Zero(t, flips, mode)
	}
	worst, flips := diff(runTool("prefill", "int8", "f32"))
	t.Logf("logits -mode prefill -activations int8 -kv f32 vs golden: max |Δlogit| %.3g, argmax changes %d of %d", worst, flips, len(ids))
	assert.Greater(t, worst, 1e-3, "int8 activations should differ visibly from float32")
	assert.Less(t, worst, 1.5)
}

// TestLogitsPTQ1MetalEmulator runs a synthetic PTQ1_0 model through the Metal kernels on
// the emulator (-backend metal-emulator) and through the CPU backend with float32
// activations (the precision the Metal kernels keep), in both modes: the printed logits
// agree to 2e-3 (logits up to about 20).
func TestLogitsPTQ1MetalEmulator(t *testing.T) {
	c := synthtest.Config(t, "tiny")
	path := synthtest.Path(t, "tiny", 3, ternary.PTQ1_0)
	for _, tc := range []struct {
		mode   string
		tokens int
	}{{"prefill", 70}, {"step", 16}} {
		ids := make([]int32, tc.tokens)
		for i := range ids {
			ids[i] = int32((i*37 + 11) % c.Vocab)
		}
		outs := map[string][][]float64{}
		for _, backend := range []string{"cpu", "metal-emulator"} {
			var buf bytes.Buffer
			err := run(context.Background(), &buf, config{model: path, mode: tc.mode, backend: backend, threads: 1, kv: "f32", acts: "float32"}, ids)
			if backend != "cpu" && errors.Is(err, metal.ErrUnavailable) && os.Getenv("MSLEMU_REQUIRE") == "" {
				t.Skipf("emulator unavailable: %v", err)
			}
			require.NoError(t, err, backend)
			outs[backend] = parseLogits(t, buf.Bytes())
			require.Len(t, outs[backend], len(ids))
		}
		maxDiff, scale := 0.0, 0.0
		for p := range ids {
			for i, want := range outs["cpu"][p] {
				maxDiff = math.Max(maxDiff, math.Abs(outs["metal-emulator"][p][i]-want))
				scale = math.Max(scale, math.Abs(want))
			}
			require.Equal(t, argmax(outs["cpu"][p]), argmax(outs["metal-emulator"][p]), "%s: position %d", tc.mode, p)
		}
		t.Logf("PTQ1_0 %s, %d tokens: max |Δlogit| metal-emulator vs cpu %.2e (logits up to %.1f)", tc.mode, len(ids), maxDiff, scale)
		require.LessOrEqual(t, maxDiff, 2e-3, tc.mode)
	}
}

// -kv q4 takes effect: its logits differ from an F32 cache's, within the 4-bit cache's
// drift on the tiny model (bonsai's KV precision tests allow 1 with float32 activations).
func TestLogitsKVQ4(t *testing.T) {
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	ids := []int32{1, 2, 3, 495, 7, 11, 13, 17}
	rows := map[string][][]float64{}
	for _, kv := range []string{"f32", "q4"} {
		var buf bytes.Buffer
		require.NoError(t, run(context.Background(), &buf, config{model: path, mode: "prefill", backend: "cpu", threads: 2, kv: kv, acts: "float32", stderr: io.Discard}, ids))
		rows[kv] = parseLogits(t, buf.Bytes())
	}
	worst := 0.0
	for p := range ids {
		for i := range rows["f32"][p] {
			worst = max(worst, math.Abs(rows["f32"][p][i]-rows["q4"][p][i]))
		}
	}
	assert.Greater(t, worst, 0.0, "-kv q4 gave the F32 cache's logits")
	assert.Less(t, worst, 1.0, "-kv q4 drifted %v from the F32 cache", worst)
}
