package main

import (
	"bytes"
	"context"
	"io"
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
