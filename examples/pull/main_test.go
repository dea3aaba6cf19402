package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/hub/hubtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const commit = "00112233445566778899aabbccddeeff00112233"

var model = bytes.Repeat([]byte("GGUF-ish bytes "), 1000)

func hubEnv(t *testing.T) (*hubtest.Server, string) {
	t.Helper()
	s := hubtest.New(t)
	s.Add(hubtest.Repo{ID: "org/name", Commit: commit, Files: []hubtest.File{{Path: "m.gguf", Data: model, LFS: true}}})
	s.Add(hubtest.Repo{ID: "org/gated", Commit: commit, Token: "hf_x", Files: []hubtest.File{{Path: "m.gguf", Data: model, LFS: true}}})
	home := t.TempDir()
	for _, v := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_CACHE", "HF_HUB_OFFLINE"} {
		t.Setenv(v, "")
	}
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1") // -endpoint is what the tests use
	return s, home
}

func pull(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestPull(t *testing.T) {
	s, home := hubEnv(t)
	out, errOut, err := pull(t, "-endpoint", s.Hub.URL, "org/name", "m.gguf")
	require.NoError(t, err)
	want := filepath.Join(home, "hub", "models--org--name", "snapshots", commit, "m.gguf")
	assert.Equal(t, want+"\n", out)
	got, err := os.ReadFile(want)
	require.NoError(t, err)
	assert.Equal(t, model, got)
	assert.Contains(t, errOut, "pull: downloading m.gguf (15.0 kB)\n")
	assert.Contains(t, errOut, "pull: downloading m.gguf: 100%  15.0 kB of 15.0 kB")

	// Again, with the reference syntax at the commit: from the cache, nothing printed
	// but the path.
	out, errOut, err = pull(t, "-offline", "hf:org/name@"+commit+"/m.gguf")
	require.NoError(t, err)
	assert.Equal(t, want+"\n", out)
	assert.Empty(t, errOut)
	assert.Equal(t, 1, s.Count("cdn", "GET"))
}

func TestPullDroppedConnection(t *testing.T) {
	s, _ := hubEnv(t)
	t.Setenv("HF_ENDPOINT", s.Hub.URL)
	s.SetFault(hubtest.Fault{Times: 1, DropAfter: 4000})
	out, _, err := pull(t, "hf:org/name/m.gguf")
	require.NoError(t, err)
	got, err := os.ReadFile(strings.TrimSpace(out))
	require.NoError(t, err)
	assert.Equal(t, model, got)
	assert.Equal(t, "bytes=4000-", s.Requests()[2].Range)
}

func TestPullErrors(t *testing.T) {
	s, _ := hubEnv(t)
	_, errOut, err := pull(t)
	require.ErrorIs(t, err, errUsage)
	assert.Contains(t, errOut, "usage: pull")

	_, _, err = pull(t, "hf:org/name")
	require.ErrorIs(t, err, errUsage)

	_, _, err = pull(t, "-endpoint", s.Hub.URL, "org/gated", "m.gguf")
	require.ErrorIs(t, err, bonsai.ErrHubAuth)
	assert.True(t, strings.HasPrefix(err.Error(), "org/gated: m.gguf at revision main: 401 Unauthorized: "), err.Error())
	assert.Contains(t, err.Error(), "set HF_TOKEN")
	t.Setenv("HF_TOKEN", "hf_x")
	_, _, err = pull(t, "-endpoint", s.Hub.URL, "org/gated", "m.gguf")
	require.NoError(t, err)

	s.SetFault(hubtest.Fault{Times: 1, Corrupt: true})
	_, _, err = pull(t, "-endpoint", s.Hub.URL, "-revision", "main", "org/name", "m.gguf")
	require.ErrorIs(t, err, bonsai.ErrChecksum)
	assert.Contains(t, err.Error(), hubtest.SHA256(model))

	_, _, err = pull(t, "-endpoint", s.Hub.URL, "org/name", "other.gguf")
	require.ErrorIs(t, err, bonsai.ErrHubNotFound)
}

// A bad flag is refused before anything is asked of the Hub: -endpoint on one line, an
// unknown flag with the usage, both exit status 2 (errUsage).
func TestPullFlags(t *testing.T) {
	_, errOut, err := pull(t, "-endpoint", "huggingface.co", "org/name", "m.gguf")
	require.ErrorIs(t, err, errUsage)
	assert.Equal(t, "pull: -endpoint \"huggingface.co\": must be an http or https URL, as https://huggingface.co\n", errOut)
	_, errOut, err = pull(t, "-retries", "3", "org/name", "m.gguf")
	require.ErrorIs(t, err, errUsage)
	assert.Contains(t, errOut, "flag provided but not defined: -retries")
	assert.Contains(t, errOut, "usage: pull")
}
