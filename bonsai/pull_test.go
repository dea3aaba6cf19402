package bonsai_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/hub/hubtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const pullCommit = "89abcdef0123456789abcdef0123456789abcdef"

func TestPull(t *testing.T) {
	t.Setenv("HF_ENDPOINT", "http://127.0.0.1:1") // the options must win over the environment
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	s := hubtest.New(t)
	data := []byte("GGUF and then some bytes of a model")
	s.Add(hubtest.Repo{ID: "org/name", Commit: pullCommit, Token: "hf_t", Files: []hubtest.File{{Path: "d/m.gguf", Data: data, LFS: true}}})
	cache := t.TempDir()
	var last bonsai.PullProgress
	opts := []bonsai.PullOption{bonsai.WithPullEndpoint(s.Hub.URL), bonsai.WithPullCacheDir(cache),
		bonsai.WithPullClient(http.DefaultClient), bonsai.WithPullProgress(func(p bonsai.PullProgress) { last = p })}

	_, err := bonsai.Pull(t.Context(), "org/name", "d/m.gguf", opts...)
	require.ErrorIs(t, err, bonsai.ErrHubAuth)
	assert.Contains(t, err.Error(), "HF_TOKEN")

	opts = append(opts, bonsai.WithPullToken("hf_t"))
	path, err := bonsai.Pull(t.Context(), "org/name", "d/m.gguf", opts...)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(cache, "models--org--name", "snapshots", pullCommit, "d", "m.gguf"), path)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	assert.Equal(t, bonsai.PullProgress{Done: int64(len(data)), Total: int64(len(data))}, last)

	// The reference syntax, at the commit, offline: from the cache.
	path2, err := bonsai.PullRef(t.Context(), "hf:org/name@"+pullCommit+"/d/m.gguf", append(opts, bonsai.WithPullOffline())...)
	require.NoError(t, err)
	assert.Equal(t, path, path2)
	_, err = bonsai.PullRef(t.Context(), "hf:org/name/d/other.gguf", append(opts, bonsai.WithPullOffline())...)
	require.ErrorIs(t, err, bonsai.ErrNotCached)

	_, err = bonsai.PullRef(t.Context(), "hf:org/name/missing.gguf", opts...)
	require.ErrorIs(t, err, bonsai.ErrHubNotFound)
	assert.Contains(t, err.Error(), "missing.gguf")

	_, err = bonsai.PullRef(t.Context(), "hf:org/name", opts...)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want hf:ORG/NAME/FILE")
	assert.True(t, bonsai.IsModelRef("hf:org/name/f"))
	assert.False(t, bonsai.IsModelRef("model.gguf"))
}
