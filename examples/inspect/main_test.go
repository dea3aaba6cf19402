package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInspectSynthetic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	cfg, err := synth.Preset("tiny")
	require.NoError(t, err)
	require.NoError(t, synth.WriteFile(context.Background(), path, synth.Options{Config: cfg, Seed: 7}, nil))

	var out bytes.Buffer
	require.NoError(t, inspect(&out, path, true, false))
	s := out.String()
	for _, want := range []string{
		"GGUF v3, alignment 32",
		"layers      4: 3 Gated DeltaNet + 1 full attention",
		"gdn         12 V heads over 4 K heads (×3), state 32×32",
		"hadamard    version 1, normalized-sylvester-walsh-hadamard, block 64",
		"folded      26 tensors",
		"inverse     token_embd.weight",
		"blk.3.attn_q.weight",
		"all 27 tensors",
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "WARNING")
	assert.NotContains(t, s, "INVALID")
	// Uniform random codes: each of the three codes near a third of the weights, no code 3.
	fields := strings.Fields(lineWith(s, "all 27 tensors"))
	require.GreaterOrEqual(t, len(fields), 8, s)
	for _, f := range fields[4:7] {
		pct, err := strconv.ParseFloat(strings.TrimSuffix(f, "%"), 64)
		require.NoError(t, err, f)
		assert.InDelta(t, 100.0/3, pct, 1.0, "code share %s", f)
	}
	assert.Equal(t, "0", fields[7], "code-3 count")
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

func TestInspectRejectsGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junk.gguf")
	require.NoError(t, os.WriteFile(path, []byte("GGUF\x03\x00\x00\x00garbage"), 0o644))
	var out bytes.Buffer
	err := inspect(&out, path, true, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "junk.gguf")
}
