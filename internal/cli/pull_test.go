package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/hub/hubtest"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hubCommit = "fedcba9876543210fedcba9876543210fedcba98"

// hubEnv serves the tiny synthetic model as org/tiny's tiny.gguf and a gated
// org/gated, and points HF_ENDPOINT and HF_HOME at them.
func hubEnv(t *testing.T) (*hubtest.Server, string) {
	t.Helper()
	model, err := os.ReadFile(synthtest.Path(t, "tiny", 1, ternary.PQ2_0))
	require.NoError(t, err)
	s := hubtest.New(t)
	s.Add(hubtest.Repo{ID: "org/tiny", Commit: hubCommit, Files: []hubtest.File{{Path: "tiny.gguf", Data: model, LFS: true}}})
	s.Add(hubtest.Repo{ID: "org/gated", Commit: hubCommit, Token: "hf_x", Files: []hubtest.File{{Path: "m.gguf", Data: model, LFS: true}}})
	home := t.TempDir()
	for _, v := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_CACHE", "HF_HUB_OFFLINE"} {
		t.Setenv(v, "")
	}
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_ENDPOINT", s.Hub.URL)
	return s, home
}

func TestLoadPullsModelRef(t *testing.T) {
	s, home := hubEnv(t)
	flags := ModelFlags{Model: "hf:org/tiny/tiny.gguf", Threads: 1, Backend: "cpu"}
	var stderr bytes.Buffer
	l, err := Load(t.Context(), &stderr, "test", flags)
	require.NoError(t, err)
	assert.False(t, l.Synthetic)
	assert.Equal(t, filepath.Join(home, "hub", "models--org--tiny", "snapshots", hubCommit, "tiny.gguf"), l.Path)
	require.NoError(t, l.Close())
	out := stderr.String()
	assert.Contains(t, out, "test: downloading tiny.gguf (")
	assert.Contains(t, out, "test: downloading tiny.gguf: 100%")
	assert.Contains(t, out, "test: model tiny.gguf:")
	assert.NotContains(t, out, "synthetic")
	assert.Equal(t, 1, s.Count("cdn", "GET"))

	// The second load finds it in the cache.
	stderr.Reset()
	l, err = Load(t.Context(), &stderr, "test", flags)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	assert.NotContains(t, stderr.String(), "downloading")
	assert.Equal(t, 1, s.Count("cdn", "GET"))
}

func TestLoadModelRefErrors(t *testing.T) {
	hubEnv(t)
	for _, c := range []struct{ model, prefix, want string }{
		{"hf:org/gated/m.gguf", "pulling org/gated: m.gguf at revision main: 401", "set HF_TOKEN"},
		{"hf:org/tiny/nope.gguf", "pulling org/tiny: nope.gguf at revision main: ", "file nope.gguf not found"},
		{"hf:org/tiny", `pulling model reference "hf:org/tiny": `, "want hf:ORG/NAME/FILE"},
	} {
		var stderr bytes.Buffer
		_, err := Load(t.Context(), &stderr, "test", ModelFlags{Model: c.model, Threads: 1, Backend: "cpu"})
		require.Error(t, err, c.model)
		msg := err.Error()
		assert.True(t, strings.HasPrefix(msg, c.prefix), msg)
		assert.Contains(t, msg, c.want)
		assert.NotContains(t, msg, "\n")
		assert.NotContains(t, msg, "bonsai: pull:")
	}
	_, err := Load(t.Context(), &bytes.Buffer{}, "test", ModelFlags{Model: "hf:org/gated/m.gguf", Threads: 1, Backend: "cpu"})
	assert.ErrorIs(t, err, bonsai.ErrHubAuth)
}

func TestModelPathPlainFile(t *testing.T) {
	var stderr bytes.Buffer
	p, err := ModelPath(t.Context(), &stderr, "test", "dir/model.gguf")
	require.NoError(t, err)
	assert.Equal(t, "dir/model.gguf", p)
	assert.Empty(t, stderr.String())
}

func TestPullBarNotTerminal(t *testing.T) {
	var w bytes.Buffer
	b := NewPullBar(&w, "pull", "m.gguf")
	clock := time.Unix(1e9, 0)
	b.now = func() time.Time { return clock }
	b.Progress(bonsai.PullProgress{Done: 1000, Total: 4000, Resumed: 1000})
	clock = clock.Add(time.Second) // the next 1000 bytes at 1 kB/s, 2000 left: 2 s
	b.Progress(bonsai.PullProgress{Done: 2000, Total: 4000, Resumed: 1000})
	clock = clock.Add(2 * time.Second)
	b.Progress(bonsai.PullProgress{Done: 4000, Total: 4000, Resumed: 1000})
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	require.Len(t, lines, 4, w.String())
	assert.Equal(t, "pull: downloading m.gguf (4.0 kB, resuming at 1.0 kB)", lines[0])
	assert.Equal(t, "pull: downloading m.gguf:  25%  1.0 kB of 4.0 kB", lines[1])
	assert.Equal(t, "pull: downloading m.gguf:  50%  2.0 kB of 4.0 kB, 1.0 kB/s, ETA 2s", lines[2])
	assert.Equal(t, "pull: downloading m.gguf: 100%  4.0 kB of 4.0 kB, 1.0 kB/s", lines[3], "one line for two quarters")
}

func TestETA(t *testing.T) {
	for d, want := range map[time.Duration]string{
		45 * time.Second: "45s", 725 * time.Second: "12m05s", 7380 * time.Second: "2h03m", 0: "0s",
	} {
		assert.Equal(t, want, ETA(d))
	}
}
