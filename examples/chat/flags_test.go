package main

import (
	"bytes"
	"flag"
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
		{[]string{"-max-tokens", "-1"}, "chat: -max-tokens -1: must be ≥ 0"},
		{[]string{"-temperature", "-1"}, "chat: -temperature -1: must be ≥ 0"},
		{[]string{"-top-p", "2"}, "chat: -top-p 2: must be in (0, 1]"},
		{[]string{"-context", "-5"}, "chat: -context -5: must be ≥ 0"},
		{[]string{"-threads", "-1"}, "chat: -threads -1: must be ≥ 0"},
		{[]string{"-min-p", "-0.5"}, "chat: -min-p -0.5: must be in [0, 1]"},
		{[]string{"-seed", "-7"}, "chat: -seed -7: must be ≥ -1"},
		{[]string{"-tools", "always"}, `chat: -tools "always": must be one of off, auto, required`},
	} {
		fs := flag.NewFlagSet("chat", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		_, err := parseFlags(fs, append([]string{"-model", missing}, tc.args...))
		require.Error(t, err, "%v", tc.args)
		assert.Equal(t, tc.want+"\n", out.String(), "%v: one line, no usage", tc.args)
	}
}
