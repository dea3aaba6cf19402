package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	tj := filepath.Join(dir, "tokenizer.json")
	cj := filepath.Join(dir, "tokenizer_config.json")
	require.NoError(t, os.WriteFile(tj, []byte(`{"added_tokens": [{"id": 3, "content": "<|endoftext|>", "special": true}],
		"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}}`), 0o644))
	require.NoError(t, os.WriteFile(cj, []byte(`{"eos_token": "<|endoftext|>"}`), 0o644))

	var stderr bytes.Buffer
	gz := filepath.Join(dir, "v.gguf.gz")
	require.NoError(t, run([]string{"-tokenizer", tj, "-config", cj, "-pre", "qwen2", "-vocab-size", "6", "-o", gz}, &stderr))
	plain := filepath.Join(dir, "v35.gguf")
	require.NoError(t, run([]string{"-from", gz, "-pre", "qwen35", "-o", plain}, &stderr))

	data, err := os.ReadFile(gz)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	f2, err := gguf.Parse(raw)
	require.NoError(t, err)
	f35, err := gguf.Open(plain)
	require.NoError(t, err)
	defer f35.Close()
	for f, want := range map[*gguf.File]string{f2: "qwen2", f35: "qwen35"} {
		pre, _ := f.String("tokenizer.ggml.pre")
		assert.Equal(t, want, pre)
		tokens, _ := f.Strings("tokenizer.ggml.tokens")
		assert.Equal(t, []string{"a", "b", "ab", "<|endoftext|>", "[PAD4]", "[PAD5]"}, tokens)
	}

	assert.True(t, errors.Is(run([]string{"-pre", "x"}, &stderr), errUsage))
	assert.True(t, errors.Is(run([]string{"-tokenizer", tj, "-pre", "x", "-o", plain}, &stderr), errUsage))
	assert.True(t, errors.Is(run([]string{"-h"}, &stderr), flag.ErrHelp))
	assert.Error(t, run([]string{"-from", filepath.Join(dir, "missing"), "-pre", "x", "-o", plain}, &stderr))
}
