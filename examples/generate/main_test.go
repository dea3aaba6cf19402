package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/cli/clitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, args ...string) (config, string, error) {
	t.Helper()
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	cfg, err := parseFlags(fs, args)
	return cfg, out.String(), err
}

func TestFlags(t *testing.T) {
	_, out, err := parse(t, "-h")
	require.True(t, errors.Is(err, flag.ErrHelp))
	for _, f := range []string{"-prompt", "-model", "-chat", "-think", "-max-tokens", "-temperature", "-top-k", "-top-p", "-min-p", "-seed", "-threads", "-context", "-verify", "-warmup", "-stop",
		"-repeat-penalty", "-presence-penalty", "-frequency-penalty", "-greedy"} {
		assert.Contains(t, out, f)
	}
	assert.Contains(t, out, "random weights")

	_, out, err = parse(t)
	require.Error(t, err)
	assert.Contains(t, out, "-prompt is required")

	_, _, err = parse(t, "-temperature", "hot", "-prompt", "x")
	require.Error(t, err)

	cfg, _, err := parse(t, "-prompt", "hi", "-stop", "a", "-stop", "\n\n", "-seed", "9", "-temperature", "0", "-top-k", "5", "-max-tokens", "7", "-chat", "-think")
	require.NoError(t, err)
	assert.Equal(t, "hi", cfg.prompt)
	assert.Equal(t, []string{"a", "\n\n"}, cfg.opt.Stop)
	assert.Equal(t, uint64(9), cfg.opt.Seed)
	assert.Zero(t, cfg.opt.Temperature)
	assert.Equal(t, 5, cfg.opt.TopK)
	assert.Equal(t, 7, cfg.opt.MaxTokens)
	assert.True(t, cfg.chat && cfg.think)
	assert.Equal(t, float32(1), cfg.opt.RepeatPenalty, "off by default")
	assert.Zero(t, cfg.opt.PresencePenalty)
	assert.Zero(t, cfg.opt.FrequencyPenalty)
	assert.False(t, cfg.opt.Greedy)

	cfg, _, err = parse(t, "-prompt", "hi", "-repeat-penalty", "1.1", "-presence-penalty", "1.5", "-frequency-penalty", "0.5", "-greedy")
	require.NoError(t, err)
	assert.Equal(t, float32(1.1), cfg.opt.RepeatPenalty)
	assert.Equal(t, float32(1.5), cfg.opt.PresencePenalty)
	assert.Equal(t, float32(0.5), cfg.opt.FrequencyPenalty)
	assert.True(t, cfg.opt.Greedy)
}

func TestGenerateSynthetic(t *testing.T) {
	for _, args := range [][]string{
		{"-prompt", "Once upon a time", "-max-tokens", "12", "-seed", "1", "-threads", "2"},
		{"-prompt", "Hello", "-chat", "-max-tokens", "12", "-seed", "1", "-threads", "2", "-temperature", "0"},
		{"-prompt", "Hello", "-chat", "-think", "-max-tokens", "12", "-seed", "1", "-threads", "2"},
		{"-prompt", "Hello", "-max-tokens", "12", "-seed", "1", "-threads", "2", "-repeat-penalty", "1.3", "-presence-penalty", "0.5", "-frequency-penalty", "0.5"},
		{"-prompt", "Hello", "-max-tokens", "12", "-threads", "2", "-greedy"},
	} {
		cfg, _, err := parse(t, args...)
		require.NoError(t, err)
		var stdout, stderr bytes.Buffer
		require.NoError(t, run(context.Background(), &stdout, &stderr, cfg), "%v", args)
		assert.Contains(t, stderr.String(), "weights are RANDOM")
		assert.Contains(t, stderr.String(), "generate: backend cpu, 2 threads")
		assert.Regexp(t, `finish: (length|stop).*; prompt \d+ tokens at [\d.]+ tok/s; first token after .*; \d+ tokens at [\d.]+ tok/s`, stderr.String())
		assert.True(t, strings.HasSuffix(stdout.String(), "\n"))
	}

	// Reproducible with a seed.
	cfg, _, _ := parse(t, "-prompt", "abc", "-max-tokens", "10", "-seed", "5", "-threads", "2")
	var a, b, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), &a, &stderr, cfg))
	require.NoError(t, run(context.Background(), &b, &stderr, cfg))
	assert.Equal(t, a.String(), b.String())
}

func TestGenerateErrors(t *testing.T) {
	cfg, _, err := parse(t, "-prompt", "x")
	require.NoError(t, err)
	cfg.think = true // a config made without flags: run checks it too
	var stdout, stderr bytes.Buffer
	require.ErrorContains(t, run(context.Background(), &stdout, &stderr, cfg), "-think needs -chat")

	cfg, _, _ = parse(t, "-prompt", "x", "-model", filepath.Join(t.TempDir(), "missing.gguf"))
	err = run(context.Background(), &stdout, &stderr, cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.gguf")
	assert.NotContains(t, err.Error(), "\n", "one line")

	// A missing file, a file that is not a model, a damaged one: one clear line each.
	for _, bad := range clitest.BadModels(t) {
		cfg, _, err := parse(t, "-prompt", "x", "-model", bad.Path, "-threads", "1")
		require.NoError(t, err)
		err = run(context.Background(), &stdout, &stderr, cfg)
		require.Error(t, err, bad.Name)
		assert.Contains(t, err.Error(), bad.Want, bad.Name)
		assert.Contains(t, err.Error(), bad.Path, bad.Name)
		assert.NotContains(t, err.Error(), "\n", "one line")
	}
}
