package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every bad value is refused by parseFlags, before run loads anything (the -model given
// does not exist), on one line naming the flag and what it accepts.
func TestFlagRanges(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.gguf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-max-tokens", "-1"}, "serve: -max-tokens -1: must be ≥ 0"},
		{[]string{"-thinking-budget", "-1"}, "serve: -thinking-budget -1: must be ≥ 0"},
		{[]string{"-temperature", "-1"}, "serve: -temperature -1: must be ≥ 0"},
		{[]string{"-top-p", "2"}, "serve: -top-p 2: must be in (0, 1]"},
		{[]string{"-top-k", "-1"}, "serve: -top-k -1: must be ≥ 0"},
		{[]string{"-context", "-5"}, "serve: -context -5: must be ≥ 0"},
		{[]string{"-threads", "-1"}, "serve: -threads -1: must be ≥ 0"},
		{[]string{"-parallel", "0"}, "serve: -parallel 0: must be ≥ 1"},
		{[]string{"-queue", "-1"}, "serve: -queue -1: must be ≥ 0"},
		{[]string{"-max-body", "0"}, "serve: -max-body 0: must be ≥ 1"},
		{[]string{"-batch-tokens", "0"}, "serve: -batch-tokens 0: must be ≥ 1"},
		{[]string{"-drain-timeout", "-1s"}, "serve: -drain-timeout -1s: must be ≥ 0s"},
		{[]string{"-parallel", "8", "-batch-tokens", "4"}, "serve: -batch-tokens 4 is less than -parallel 8: a new prompt needs a row beside the running streams"},
	} {
		_, out, err := parse(t, append([]string{"-model", missing}, tc.args...)...)
		require.Error(t, err, "%v", tc.args)
		assert.Equal(t, tc.want+"\n", out, "%v: one line, no usage", tc.args)
	}
}

// The command itself: a bad value exits with status 2 and one line, before the model is
// loaded (nothing else printed).
func TestExitStatus(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childArgsEnv+"=-top-p 2 -model "+filepath.Join(t.TempDir(), "missing.gguf"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Equal(t, "serve: -top-p 2: must be in (0, 1]\n", stderr.String())
	assert.Empty(t, stdout.String())
}
