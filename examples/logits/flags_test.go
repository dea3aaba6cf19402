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

func parse(args ...string) (config, []int32, string, error) {
	fs := flag.NewFlagSet("logits", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	cfg, ids, err := parseFlags(fs, args)
	return cfg, ids, out.String(), err
}

// Every bad value, the token ids included, is refused by parseFlags before anything is
// loaded (the -model given does not exist), on one line naming the flag and what it
// accepts; -kv takes the names every program takes.
func TestFlags(t *testing.T) {
	_, _, out, err := parse("-h")
	require.True(t, errors.Is(err, flag.ErrHelp))
	for _, f := range []string{"-model", "-tokens", "-mode", "-backend", "metal-emulator", "-threads", "0: every core", "-kv", "int8 (alias q8)", "-activations"} {
		assert.Contains(t, out, f)
	}
	_, _, out, err = parse()
	require.Error(t, err)
	assert.Contains(t, out, "-tokens is required")

	cfg, ids, out, err := parse("-tokens", "1,2, 3", "-kv", "q8", "-backend", "metal-emulator", "-mode", "step")
	require.NoError(t, err, out)
	assert.Equal(t, []int32{1, 2, 3}, ids)
	assert.Equal(t, "q8", cfg.kv)
	assert.Zero(t, cfg.threads, "every core")

	missing := filepath.Join(t.TempDir(), "missing.gguf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-kv", "bf16"}, `logits: -kv "bf16": must be one of f16, f32, int8 (alias q8), q4`},
		{[]string{"-threads", "-1"}, "logits: -threads -1: must be ≥ 0"},
		{[]string{"-backend", "tpu"}, `logits: -backend "tpu": must be one of auto, cpu, metal, vulkan, metal-emulator`},
		{[]string{"-mode", "walk"}, `logits: -mode "walk": must be one of prefill, step`},
		{[]string{"-activations", "int4"}, `logits: -activations "int4": must be one of int8, float32`},
		{[]string{"-tokens", "1,x"}, `logits: -tokens: "x" is not a token id`},
	} {
		_, _, out, err := parse(append([]string{"-model", missing, "-tokens", "1"}, tc.args...)...)
		require.Error(t, err, "%v", tc.args)
		assert.Equal(t, tc.want+"\n", out, "%v", tc.args)
	}
}
