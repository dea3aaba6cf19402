package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/bonsai-go/sdk/internal/cli/clitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(args ...string) (config, string, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	cfg, err := parseFlags(fs, args)
	return cfg, out.String(), err
}

// Every bad value is refused by parseFlags, before run loads or writes anything (the
// -model given does not exist), on one line naming the flag and what it accepts; -kv
// takes the names every program takes, q8 included.
func TestFlags(t *testing.T) {
	_, out, err := parse("-h")
	require.True(t, errors.Is(err, flag.ErrHelp))
	for _, f := range []string{"-model", "-preset", "-threads", "0: every core", "-kv", "int8 (alias q8)", "-context", "-gen-tokens", "-layout", "-backend", "-speculative", "-spec-prompt", "-temperature", "-spec-max-draft", "-spec-replay"} {
		assert.Contains(t, out, f)
	}
	cfg, out, err := parse()
	require.NoError(t, err, out)
	assert.Zero(t, cfg.threads, "every core")
	assert.Equal(t, 1<<30, cfg.pairedBytes)

	missing := filepath.Join(t.TempDir(), "missing.gguf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-kv", "q5"}, `bench: -kv "q5": must be one of f16, f32, int8 (alias q8), q4`},
		{[]string{"-threads", "-1"}, "bench: -threads -1: must be ≥ 0"},
		{[]string{"-context", "-5"}, "bench: -context -5: must be ≥ 0"},
		{[]string{"-gen-tokens", "0"}, "bench: -gen-tokens 0: must be ≥ 1"},
		{[]string{"-prompt-tokens", "-1"}, "bench: -prompt-tokens -1: must be ≥ 0"},
		{[]string{"-activations", "fp16"}, `bench: -activations "fp16": must be one of int8, float32`},
		{[]string{"-weight-format", "tq2_0"}, `bench: -weight-format "tq2_0": must be pq2_0 or ptq1_0`},
		{[]string{"-layout", "rows"}, `bench: -layout "rows": must be one of auto, file, interleaved`},
		{[]string{"-backend", "cuda"}, `bench: -backend "cuda": must be one of auto, cpu, metal, vulkan`},
		{[]string{"-bandwidth-time", "-1s"}, "bench: -bandwidth-time -1s: must be > 0"},
		{[]string{"-temperature", "-0.5"}, "bench: -temperature -0.5: must be ≥ 0"},
		{[]string{"-spec-max-draft", "-1"}, "bench: -spec-max-draft -1: must be ≥ 0"},
		{[]string{"-preset", "tiny"}, "bench: -model and -preset exclude each other"},
	} {
		_, out, err := parse(append([]string{"-model", missing}, tc.args...)...)
		require.Error(t, err, "%v", tc.args)
		assert.Equal(t, tc.want+"\n", out, "%v", tc.args)
	}
	for _, name := range []string{"f16", "f32", "int8", "q8", "q4"} {
		cfg, out, err := parse("-kv", name)
		require.NoError(t, err, out)
		assert.Equal(t, name, cfg.kv)
	}
}

// childEnv, when set, makes the test binary run bench's main with these arguments (one a
// line) instead of the tests (clitest.RunChild).
const childEnv = "BONSAI_BENCH_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args, ok := clitest.ChildArgs(childEnv); ok {
		os.Args = append([]string{"bench"}, args...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The command itself: -kv q5 exits with status 2 and one line, before any model is
// written or loaded (nothing else printed); -kv q8 is not refused.
func TestExitStatus(t *testing.T) {
	stdout, stderr, code := clitest.RunChild(t, childEnv, "-kv", "q5")
	assert.Equal(t, 2, code)
	assert.Equal(t, "bench: -kv \"q5\": must be one of f16, f32, int8 (alias q8), q4\n", stderr)
	assert.Empty(t, stdout)
	missing := filepath.Join(t.TempDir(), "missing.gguf")
	_, stderr, code = clitest.RunChild(t, childEnv, "-kv", "q8", "-model", missing)
	assert.Equal(t, 1, code, "past the flags: the missing model")
	assert.Equal(t, "bench: model file "+missing+" does not exist\n", stderr)
}
