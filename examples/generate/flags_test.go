package main

import (
	"path/filepath"
	"testing"

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
