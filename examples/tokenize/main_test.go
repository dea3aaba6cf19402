package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/cli/clitest"
	"github.com/bonsai-go/sdk/internal/hub/hubtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// qwen3Vocab writes the tokenizer package's test vocabulary (Qwen3's, qwen35
// pre-tokenizer) to a temporary file.
func qwen3Vocab(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../bonsai/tokenizer/testdata/qwen3-vocab.gguf.gz")
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "qwen3-vocab.gguf")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	return path
}

func tokenize(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(args, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestModel(t *testing.T) {
	path := qwen3Vocab(t)
	text := "<|im_start|>user\nHello, world!<|im_end|>\n"

	out, errOut, err := tokenize(t, text, "-model", path, "-special")
	require.NoError(t, err)
	assert.Empty(t, errOut)
	assert.Equal(t, "151644 872 198 9707 11 1879 0 151645 198\n", out)

	out, _, err = tokenize(t, text, "-model", path)
	require.NoError(t, err)
	assert.NotContains(t, out, "151644")
	assert.Equal(t, 1, strings.Count(out, "\n"))
	assert.True(t, strings.HasPrefix(out, "27 91 318 4906 91 29 "), out)

	out, _, err = tokenize(t, "", "-model", path)
	require.NoError(t, err)
	assert.Equal(t, "\n", out)
}

func TestSynthetic(t *testing.T) {
	out, errOut, err := tokenize(t, "Hello, world! <|im_start|>", "-special")
	require.NoError(t, err)
	assert.Contains(t, errOut, "synthetic tiny model")
	fields := strings.Fields(out)
	assert.Greater(t, len(fields), 3)
	assert.Equal(t, "495", fields[len(fields)-1]) // <|im_start|> in the 512-token vocabulary
	assert.True(t, strings.HasSuffix(out, "\n"))
	assert.Equal(t, 1, strings.Count(out, "\n"))
}

func TestErrors(t *testing.T) {
	_, _, err := tokenize(t, "x", "-model", filepath.Join(t.TempDir(), "missing.gguf"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.gguf")
	assert.Contains(t, err.Error(), "does not exist")
	assert.NotContains(t, err.Error(), "\n")

	bad := filepath.Join(t.TempDir(), "bad.gguf")
	require.NoError(t, os.WriteFile(bad, []byte("not a gguf file at all"), 0o644))
	_, _, err = tokenize(t, "x", "-model", bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a GGUF file")

	for _, bad := range clitest.BadModels(t) {
		if bad.Name == "not Bonsai" || bad.Name == "corrupt" {
			continue // tokenize reads any GGUF's vocabulary, and no weights
		}
		_, _, err = tokenize(t, "x", "-model", bad.Path)
		require.Error(t, err, bad.Name)
		assert.Contains(t, err.Error(), bad.Want, bad.Name)
		assert.NotContains(t, err.Error(), "\n")
	}

	_, errOut, err := tokenize(t, "x", "-h")
	assert.True(t, errors.Is(err, flag.ErrHelp))
	assert.Contains(t, errOut, "-model file")
	assert.Contains(t, errOut, "-special")

	_, _, err = tokenize(t, "x", "extra")
	assert.True(t, errors.Is(err, errUsage))
}

func TestModelFromHub(t *testing.T) {
	vocab, err := os.ReadFile(qwen3Vocab(t))
	require.NoError(t, err)
	s := hubtest.New(t)
	s.Add(hubtest.Repo{ID: "org/vocab", Commit: "0000000000111111111122222222223333333333",
		Files: []hubtest.File{{Path: "v/qwen3-vocab.gguf", Data: vocab, LFS: true}}})
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_ENDPOINT", s.Hub.URL)
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	out, errOut, err := tokenize(t, "<|im_start|>", "-model", "hf:org/vocab/v/qwen3-vocab.gguf", "-special")
	require.NoError(t, err)
	assert.Equal(t, "151644\n", out)
	assert.Contains(t, errOut, "tokenize: downloading qwen3-vocab.gguf")
	assert.FileExists(t, filepath.Join(home, "hub", "models--org--vocab", "blobs", hubtest.SHA256(vocab)))

	_, _, err = tokenize(t, "x", "-model", "hf:org/vocab/missing.gguf")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pulling org/vocab: missing.gguf at revision main: ")
	assert.Contains(t, err.Error(), "not found")
}

// An unknown flag is a usage error (exit status 2), as in every program.
func TestUnknownFlag(t *testing.T) {
	_, errOut, err := tokenize(t, "x", "-threads", "2")
	assert.ErrorIs(t, err, errUsage)
	assert.Contains(t, errOut, "flag provided but not defined: -threads")
}
