package main

import (
	"bytes"
	"errors"
	"flag"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parseFlags refuses a bad value on one line naming the flag and its range, before the
// run starts (the -model given does not exist); -kv takes every program's names but q4,
// which the Metal backend has not.
func TestParseFlags(t *testing.T) {
	parse := func(args ...string) (config, string, error) {
		fs := flag.NewFlagSet("metalcheck", flag.ContinueOnError)
		var out bytes.Buffer
		fs.SetOutput(&out)
		cfg, err := parseFlags(fs, args)
		return cfg, out.String(), err
	}
	_, out, err := parse("-h")
	require.True(t, errors.Is(err, flag.ErrHelp))
	assert.Contains(t, out, "int8 (alias q8)")
	for _, kv := range []string{"f16", "f32", "int8", "q8"} {
		cfg, out, err := parse("-kv", kv)
		require.NoError(t, err, out)
		assert.Equal(t, kv, cfg.kv)
	}
	missing := filepath.Join(t.TempDir(), "missing.gguf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-kv", "q4"}, `metalcheck: -kv "q4": must be one of f16, f32, int8 (alias q8): the Metal backend has no q4 cache`},
		{[]string{"-kv", "q5"}, `metalcheck: -kv "q5": must be one of f16, f32, int8 (alias q8), q4`},
		{[]string{"-device", "gpu"}, `metalcheck: -device "gpu": must be one of metal, emulator`},
		{[]string{"-prompt", "0"}, "metalcheck: -prompt 0: must be ≥ 1"},
		{[]string{"-gen", "-1"}, "metalcheck: -gen -1: must be ≥ 0"},
		{[]string{"-bandwidth", "-245"}, "metalcheck: -bandwidth -245: must be ≥ 0"},
		{[]string{"-preset", "70b"}, `metalcheck: -preset "70b": must be one of tiny, small, real-widths, 27b`},
	} {
		_, out, err := parse(append([]string{"-model", missing}, tc.args...)...)
		require.Error(t, err, "%v", tc.args)
		assert.Equal(t, tc.want+"\n", out, "%v", tc.args)
	}
}
