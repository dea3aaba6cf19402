package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSynthTiny(t *testing.T) {
	dir := t.TempDir()
	model, twin := filepath.Join(dir, "tiny.gguf"), filepath.Join(dir, "tiny-f32.gguf")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-preset", "tiny", "-seed", "7", "-format", "ptq1_0", "-out", model, "-f32-twin", twin}, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	assert.Contains(t, stdout.String(), "wrote "+model+": PTQ1_0 model, preset tiny, seed 7")
	assert.Contains(t, stdout.String(), "wrote "+twin+": F32 twin, preset tiny, seed 7")
	assert.Contains(t, stderr.String(), "100.0%", "progress bar")

	// The files are exactly what the library writes for these options.
	cfg, _ := synth.Preset("tiny")
	opt := synth.Options{Config: cfg, Seed: 7, Format: ternary.PTQ1_0}
	for path, write := range map[string]func(context.Context, string, synth.Options, synth.Progress) error{
		model: synth.WriteFile, twin: synth.WriteTwinFile,
	} {
		want := filepath.Join(dir, "want.gguf")
		require.NoError(t, write(context.Background(), want, opt, nil))
		a, err := os.ReadFile(path)
		require.NoError(t, err)
		b, err := os.ReadFile(want)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(a, b), path)
	}

	f, err := gguf.Open(model)
	require.NoError(t, err)
	defer f.Close()
	assert.True(t, f.Has(hadamard.KeyVersion))
	g, err := gguf.Open(twin)
	require.NoError(t, err)
	defer g.Close()
	assert.False(t, g.Has(hadamard.KeyVersion))
}

func TestSynthQuietNoTwin(t *testing.T) {
	model := filepath.Join(t.TempDir(), "m.gguf")
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-q", "-out", model}, &stdout, &stderr))
	assert.Empty(t, stderr.String())
	assert.Equal(t, 1, strings.Count(stdout.String(), "\n"))
	assert.Contains(t, stdout.String(), "PQ2_0 model, preset tiny, seed 1")
}

func TestSynthErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.gguf")
	for _, c := range []struct {
		args []string
		want string // in the error; empty for a usage error
	}{
		{[]string{"-preset", "huge", "-out", out}, `synth: -preset "huge": must be one of tiny, small, real-widths, 27b`},
		{[]string{"-preset", "", "-out", out}, `synth: -preset "": must be one of tiny, small, real-widths, 27b`},
		{[]string{"-format", "q4_0", "-out", out}, `synth: -format "q4_0": must be pq2_0 or ptq1_0`},
		{[]string{"-out", out, "-f32-twin", out}, "synth: -out and -f32-twin name the same file"},
		{[]string{"-out", filepath.Join(dir, "missing", "m.gguf")}, "synth: open"},
		{[]string{"-preset", "tiny"}, ""},
		{[]string{"-out", out, "extra"}, ""},
		{[]string{"-seed", "x", "-out", out}, ""},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), c.args, &stdout, &stderr)
		require.Error(t, err, c.args)
		switch {
		case c.want == "":
			assert.ErrorIs(t, err, errUsage, c.args)
			assert.Contains(t, stderr.String(), "usage: synth", c.args)
		case strings.HasPrefix(c.want, "synth: -"): // a flag's value: one line, exit status 2
			assert.ErrorIs(t, err, errUsage, c.args)
			assert.Equal(t, c.want+"\n", stderr.String(), c.args)
			assert.Empty(t, stdout.String(), c.args)
		default:
			assert.Contains(t, err.Error(), c.want, c.args)
			assert.Empty(t, stdout.String(), c.args)
		}
	}
	_, err := os.Stat(out)
	assert.ErrorIs(t, err, os.ErrNotExist, "no file left behind")
}

func TestSynthHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-h"}, &stdout, &stderr)
	require.True(t, errors.Is(err, flag.ErrHelp))
	for _, flagName := range []string{"-preset", "-seed", "-format", "-out", "-f32-twin", "-q", "27b"} {
		assert.Contains(t, stderr.String(), flagName)
	}
}

func TestSynthCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := filepath.Join(t.TempDir(), "m.gguf")
	err := run(ctx, []string{"-q", "-out", out}, &bytes.Buffer{}, &bytes.Buffer{})
	require.ErrorIs(t, err, context.Canceled)
	_, statErr := os.Stat(out)
	assert.ErrorIs(t, statErr, os.ErrNotExist)
}
