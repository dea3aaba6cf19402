package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -context decodes at the position asked for, after the short-context decode, and
// reports attention against the KV read time of that context at each precision.
func TestContextFlag(t *testing.T) {
	for _, kv := range []string{"f16", "int8", "q4", "f32"} {
		t.Run(kv, func(t *testing.T) {
			var out bytes.Buffer
			cfg := config{preset: "tiny", acts: "int8", kv: kv, mmap: true, threads: 2, prompt: 8, gen: 3, context: 300, bwTime: 50 * time.Millisecond, pairedBytes: 8 << 20}
			require.NoError(t, run(context.Background(), &out, io.Discard, cfg))
			s := out.String()
			assert.Contains(t, s, "KV cache "+kv)
			assert.Contains(t, s, "3 tokens at position 8 ")
			assert.Contains(t, s, "3 tokens at position 300 ")
			// The CPU engine streams its weights after each of 3 steps (min(gen, 12)).
			assert.Regexp(t, `paired      3 steps, each against a read of its 0\.[0-9]{3} GB of weights right after it .* decode ÷ that ceiling median [0-9.]+%`, s)
			m := regexp.MustCompile(`KV cache ([0-9.]+) MB`).FindStringSubmatch(s)
			require.NotNil(t, m, s)
			mb, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			// 300 positions of a key and a value row per attention layer, at 2, 4,
			// 1 + 4/32 (int8 codes and a float32 scale per 32) or ½ + 2/32 (4-bit
			// codes and a half scale per 32) bytes a value.
			c := synthtest.Config(t, "tiny")
			perValue := map[string]float64{"f16": 2, "f32": 4, "int8": 1.125, "q4": 0.5625}[kv]
			want := float64(c.AttentionLayers()*300*2*c.KVHeads*c.HeadDim) * perValue / 1e6
			assert.InDelta(t, want, mb, 0.05+want*1e-3)
			assert.Regexp(t, `attention ÷ KV read = [0-9.]+×`, s)
			assert.Regexp(t, `paired      3 steps, .* attention ÷ KV read median [0-9.]+×`, s)
		})
	}
	err := run(context.Background(), io.Discard, io.Discard, config{preset: "tiny", acts: "int8", kv: "f8", gen: 1, threads: 1})
	assert.ErrorContains(t, err, `-kv "f8"`)
}

// -weight-format transcodes at load: the small PQ2_0 model runs as PTQ1_0 and says
// so in the weight bytes it counts per token (28/34 of PQ2_0's for the products); a
// bad name is refused.
func TestWeightFormatFlag(t *testing.T) {
	perToken := func(format string) float64 {
		var out bytes.Buffer
		cfg := config{preset: "small", acts: "int8", kv: "f16", weightFormat: format, mmap: true, threads: 2, prompt: 4, gen: 2, bwTime: 50 * time.Millisecond}
		require.NoError(t, run(context.Background(), &out, io.Discard, cfg))
		m := regexp.MustCompile(`weights +([0-9.]+) GB read per decoded token`).FindStringSubmatch(out.String())
		require.NotNil(t, m, out.String())
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return v
	}
	pq, tq := perToken(""), perToken("ptq1_0")
	assert.Less(t, tq, pq, "PTQ1_0 products read fewer bytes a token")
	err := run(context.Background(), io.Discard, io.Discard, config{preset: "tiny", acts: "int8", kv: "f16", weightFormat: "tq2_0", threads: 1, gen: 1})
	assert.ErrorContains(t, err, `-weight-format "tq2_0"`)
}

// -speculative generates without speculation, with the automatic policy and with
// lookup drafts at every pass, in one run, and reports for each the rate against the
// plain one, the drafts, the mean k and the tokens per pass, then the pass times; with
// greedy decoding the tokens are the plain run's.
func TestSpeculativeFlag(t *testing.T) {
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	require.NoError(t, os.WriteFile(prompt, []byte("one two three one two three one two"), 0o644))
	for _, temp := range []float64{0, 0.7} {
		var out bytes.Buffer
		cfg := config{preset: "tiny", acts: "int8", kv: "f16", mmap: true, threads: 2, prompt: 8, gen: 40, bwTime: 50 * time.Millisecond,
			speculative: true, specPrompt: prompt, specTemp: temp, specMaxDraft: 4, specReplay: 4}
		require.NoError(t, run(context.Background(), &out, io.Discard, cfg))
		s := out.String()
		// The replay run (greedy only) drafts the plain continuation with every
		// 4th token wrong: drafts are made and accepted, and the tokens stay the
		// plain run's.
		replay := regexp.MustCompile(`spec replay 40 tokens \(length\): [0-9.]+ tok/s = [0-9.]+× plain; (\d+) drafted in \d+ of \d+ passes \(mean k [0-9.]+\), (\d+) accepted \(\d+%\), [0-9.]+ tokens per pass; same tokens as plain: true\n`).FindStringSubmatch(s)
		if temp > 0 {
			assert.Nil(t, replay, "a replay run under sampling:\n%s", s)
		} else if assert.NotNil(t, replay, s) {
			drafted, _ := strconv.Atoi(replay[1])
			accepted, _ := strconv.Atoi(replay[2])
			assert.Greater(t, accepted, 0, s)
			assert.LessOrEqual(t, accepted, drafted, s)
		}
		assert.Regexp(t, `generate    40 tokens \(length\) after a prompt of \d+, .*plain steps: [0-9.]+ tok/s`, s)
		for _, name := range []string{"auto  ", "lookup"} {
			re := `spec ` + name + ` 40 tokens \(length\): [0-9.]+ tok/s = [0-9.]+× plain; \d+ drafted in \d+ of \d+ passes \(mean k [0-9.]+\), \d+ accepted \(\d+%\), [0-9.]+ tokens per pass`
			if temp == 0 {
				re += `; same tokens as plain: true`
			}
			assert.Regexp(t, re+"\n", s)
		}
		// Widths 1 … MaxDraft + 1, the first the step itself.
		assert.Regexp(t, `pass times  a step [0-9.]+ ms; .*: 1:1.00 2:[0-9.]+ 3:[0-9.]+ 4:[0-9.]+ 5:[0-9.]+\n`, s)
	}
}
