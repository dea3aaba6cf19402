package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bonsai-go/sdk/internal/cli/clitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every bad value is refused by parseFlags, before run loads anything (the -model given
// does not exist: its error would come second), on one line naming the flag and what it
// accepts.
func TestFlagRanges(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.gguf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-max-tokens", "-1"}, "generate: -max-tokens -1: must be ≥ 0"},
		{[]string{"-temperature", "-1"}, "generate: -temperature -1: must be ≥ 0"},
		{[]string{"-top-p", "2"}, "generate: -top-p 2: must be in (0, 1]"},
		{[]string{"-context", "-5"}, "generate: -context -5: must be ≥ 0"},
		{[]string{"-threads", "-2"}, "generate: -threads -2: must be ≥ 0"},
		{[]string{"-top-k", "-1"}, "generate: -top-k -1: must be ≥ 0"},
		{[]string{"-min-p", "2"}, "generate: -min-p 2: must be in [0, 1]"},
		{[]string{"-repeat-penalty", "-1"}, "generate: -repeat-penalty -1: must be > 0"},
		{[]string{"-presence-penalty", "3"}, "generate: -presence-penalty 3: must be in [-2, 2]"},
		{[]string{"-frequency-penalty", "-3"}, "generate: -frequency-penalty -3: must be in [-2, 2]"},
		{[]string{"-seed", "-5"}, "generate: -seed -5: must be ≥ -1"},
		{[]string{"-backend", "cuda"}, `generate: -backend "cuda": must be one of auto, cpu, metal, vulkan`},
		{[]string{"-layout", "x"}, `generate: -layout "x": must be one of auto, file, interleaved`},
		{[]string{"-weight-format", "tq2_0"}, `generate: -weight-format "tq2_0": must be pq2_0 or ptq1_0`},
		{[]string{"-think"}, "generate: -think needs -chat"},
	} {
		args := append([]string{"-prompt", "x", "-model", missing}, tc.args...)
		_, out, err := parse(t, args...)
		require.Error(t, err, "%v", tc.args)
		assert.Equal(t, tc.want+"\n", out, "%v: one line, no usage", tc.args)
	}
	cfg, out, err := parse(t, "-prompt", "x", "-threads", "0", "-max-tokens", "0", "-top-p", "1", "-temperature", "0", "-seed", "-1")
	require.NoError(t, err, out)
	assert.Zero(t, cfg.load.Threads, "0: every core, resolved by bonsai")
}

// childEnv, when set, makes the test binary run generate's main with these arguments
// (one a line) instead of the tests (clitest.RunChild).
const childEnv = "BONSAI_GENERATE_CHILD_ARGS"

func TestMain(m *testing.M) {
	if args, ok := clitest.ChildArgs(childEnv); ok {
		os.Args = append([]string{"generate"}, args...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The command itself: a bad value exits with status 2 and one line on standard error,
// before the model is loaded (nothing else is printed: no synthetic model, no progress),
// as a flag it does not know exits with 2.
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-prompt", "x", "-max-tokens", "-1"}, "generate: -max-tokens -1: must be ≥ 0\n"},
		{[]string{"-prompt", "x", "-temperature", "-1"}, "generate: -temperature -1: must be ≥ 0\n"},
		{[]string{"-prompt", "x", "-top-p", "2"}, "generate: -top-p 2: must be in (0, 1]\n"},
		{[]string{"-prompt", "x", "-context", "-5"}, "generate: -context -5: must be ≥ 0\n"},
	} {
		stdout, stderr, code := clitest.RunChild(t, childEnv, tc.args...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Equal(t, tc.want, stderr, "%v", tc.args)
		assert.Empty(t, stdout, "%v", tc.args)
	}
	_, stderr, code := clitest.RunChild(t, childEnv, "-prompt", "x", "-max-token", "1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "flag provided but not defined: -max-token")
}
