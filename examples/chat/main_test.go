package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/cli/clitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlags(t *testing.T) {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	_, err := parseFlags(fs, []string{"-h"})
	require.True(t, errors.Is(err, flag.ErrHelp))
	for _, s := range []string{"-model", "-system", "-think", "-tools", "/tools off|auto|required", "-threads", "-context", "-verify", "-warmup", "/reset", "/think on|off", "/save FILE", "/load FILE", "/quit",
		"-temperature", "-top-k", "-top-p", "-min-p", "-repeat-penalty", "-presence-penalty", "-frequency-penalty", "-greedy", "-seed"} {
		assert.Contains(t, out.String(), s)
	}

	cfg, err := parseFlags(flag.NewFlagSet("chat", flag.ContinueOnError), []string{"-repeat-penalty", "1.2", "-presence-penalty", "0.5", "-frequency-penalty", "0.25", "-greedy"})
	require.NoError(t, err)
	assert.Equal(t, float32(1.2), cfg.opt.RepeatPenalty)
	assert.Equal(t, float32(0.5), cfg.opt.PresencePenalty)
	assert.Equal(t, float32(0.25), cfg.opt.FrequencyPenalty)
	assert.True(t, cfg.opt.Greedy)
	cfg, err = parseFlags(flag.NewFlagSet("chat", flag.ContinueOnError), nil)
	require.NoError(t, err)
	assert.Equal(t, float32(1), cfg.opt.RepeatPenalty, "off by default")
	assert.Zero(t, cfg.opt.PresencePenalty)
	assert.Zero(t, cfg.opt.FrequencyPenalty)
	assert.False(t, cfg.opt.Greedy)
}

func TestChatSession(t *testing.T) {
	save := filepath.Join(t.TempDir(), "chat.save")
	input := strings.Join([]string{
		"Hello there",
		"/think on",
		"How are you?",
		"/save " + save,
		"/reset",
		"/load " + save,
		"Third message",
		"/think maybe",
		"/bogus",
		"",
		"/quit",
		"never read",
	}, "\n") + "\n"
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	cfg, err := parseFlags(fs, []string{"-max-tokens", "8", "-seed", "3", "-threads", "2", "-system", "Be brief."})
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	require.NoError(t, run(context.Background(), strings.NewReader(input), &stdout, &stderr, cfg))
	out, errs := stdout.String(), stderr.String()
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errs)

	assert.Contains(t, errs, "weights are RANDOM")
	assert.Contains(t, errs, "chat: backend cpu, 2 threads")
	assert.Contains(t, out, "(thinking on)")
	assert.Contains(t, out, "(saved 5 messages to "+save+")", "system, two user messages and two replies")
	assert.Contains(t, out, "(conversation reset)")
	assert.Contains(t, out, "(loaded 5 messages from "+save+")")
	assert.Contains(t, errs, "usage: /think on|off")
	assert.Contains(t, errs, "unknown command /bogus")

	// Each turn reports how many prompt tokens it reused: the second turn and the one
	// after /load resume the conversation rather than prefilling it all again.
	re := regexp.MustCompile(`chat: (\d+) new prompt tokens \((\d+) reused\)`)
	turns := re.FindAllStringSubmatch(errs, -1)
	require.Len(t, turns, 3, "no turn after /quit")
	reused := func(i int) int { n, _ := strconv.Atoi(turns[i][2]); return n }
	assert.Zero(t, reused(0))
	assert.Positive(t, reused(1))
	assert.Positive(t, reused(2), "the loaded session holds the conversation")
}

func TestChatLoadErrors(t *testing.T) {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	cfg, err := parseFlags(fs, []string{"-threads", "2"})
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	input := "/load " + filepath.Join(t.TempDir(), "missing") + "\n/save\n/quit\n"
	require.NoError(t, run(context.Background(), strings.NewReader(input), &stdout, &stderr, cfg))
	assert.Contains(t, stderr.String(), "no such file")
	assert.Contains(t, stderr.String(), "usage: /save FILE")
}

func TestChatBadModels(t *testing.T) {
	for _, bad := range clitest.BadModels(t) {
		cfg, err := parseFlags(flag.NewFlagSet("chat", flag.ContinueOnError), []string{"-model", bad.Path, "-threads", "1"})
		require.NoError(t, err)
		var stdout, stderr bytes.Buffer
		err = run(context.Background(), strings.NewReader("Hi\n"), &stdout, &stderr, cfg)
		require.Error(t, err, bad.Name)
		assert.Contains(t, err.Error(), bad.Want, bad.Name)
		assert.NotContains(t, err.Error(), "\n")
	}
}
