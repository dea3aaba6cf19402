package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/cli/clitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExplain(t *testing.T) {
	for _, bad := range clitest.BadModels(t) {
		_, err := bonsai.Open(bad.Path)
		require.Error(t, err, bad.Name)
		explained := Explain(bad.Path, err)
		msg := explained.Error()
		t.Logf("%s: %s", bad.Name, msg)
		assert.Contains(t, msg, bad.Want, bad.Name)
		assert.Contains(t, msg, bad.Path)
		assert.NotContains(t, msg, "\n")
		assert.True(t, errors.Is(explained, err), "wraps the error")
	}
}

func TestLoadSynthetic(t *testing.T) {
	var stderr bytes.Buffer
	l, err := Load(context.Background(), &stderr, "test", ModelFlags{Threads: 2, Warmup: true, Verify: true})
	require.NoError(t, err)
	assert.True(t, l.Synthetic)
	dir := filepath.Dir(l.Path)
	require.NoError(t, l.Close())
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "the synthetic model's directory is removed")
	out := stderr.String()
	assert.Contains(t, out, "weights are RANDOM")
	assert.Contains(t, out, "test: backend cpu, 2 threads, context 4096 tokens (auto: no Vulkan GPU); weights ")
	assert.Equal(t, 3, strings.Count(out, "\n"), "quick stages print nothing when not on a terminal: %s", out)
}

func TestLoadErrors(t *testing.T) {
	for _, bad := range clitest.BadModels(t) {
		var stderr bytes.Buffer
		_, err := Load(context.Background(), &stderr, "test", ModelFlags{Model: bad.Path, Threads: 1})
		require.Error(t, err)
		assert.Contains(t, err.Error(), bad.Want, bad.Name)
	}
}

func TestBar(t *testing.T) {
	// Not a terminal: a line per quarter of the large stages counting bytes.
	var out bytes.Buffer
	b := NewBar(&out, "prog")
	require.False(t, b.tty)
	const total = 8 << 30
	for _, st := range []string{"map", "bind", "verify", "warmup"} {
		for done := int64(0); done <= total; done += total / 64 {
			b.Progress(bonsai.Progress{Stage: st, Done: done, Total: total})
		}
	}
	b.Done()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 8, "%s", out.String())
	assert.Equal(t, "prog: verifying weights:  25%  2.15 GB of 8.59 GB", lines[0])
	assert.True(t, strings.HasPrefix(lines[7], "prog: warming up: 100%  8.59 GB of 8.59 GB"), lines[7])

	// A terminal: one line redrawn, cleared at the end.
	out.Reset()
	b = NewBar(&out, "prog")
	b.tty = true
	b.Progress(bonsai.Progress{Stage: "bind", Done: 0, Total: 10})
	b.Progress(bonsai.Progress{Stage: "bind", Done: 10, Total: 10})
	b.Progress(bonsai.Progress{Stage: "warmup", Done: 1 << 30, Total: 2 << 30})
	b.Done()
	s := out.String()
	assert.Equal(t, 4, strings.Count(s, "\r"), "%q", s)
	assert.NotContains(t, s, "\n")
	assert.Contains(t, s, "checking tensors")
	assert.Contains(t, s, "100%  10/10")
	assert.Contains(t, s, " 50%  1.07 GB of 2.15 GB")
	assert.True(t, strings.HasSuffix(s, "\r\x1b[K"))
}

func TestOneLine(t *testing.T) {
	assert.Equal(t, "a; b; c", OneLine(errors.New("a\nb\r\n\nc\n")))
}

// refusingBackend fails to load any model, as a GPU backend does without a device.
type refusingBackend struct{}

func (refusingBackend) Name() string { return "refuser" }
func (refusingBackend) Load(context.Context, backend.Model, backend.LoadOptions) (backend.Engine, error) {
	return nil, errors.New("refuser: no device")
}

// A backend that cannot take the synthetic model is named as the cause: the file was
// once called "not a GGUF file" because it was removed before the error was explained.
func TestLoadBackendFails(t *testing.T) {
	var stderr bytes.Buffer
	_, err := Load(context.Background(), &stderr, "test", ModelFlags{Threads: 1}, bonsai.WithBackend(refusingBackend{}))
	require.Error(t, err)
	var be *bonsai.BackendError
	require.True(t, errors.As(err, &be), "%v", err)
	assert.Equal(t, "refuser", be.Backend)
	assert.Regexp(t, `^backend refuser cannot run .*tiny\.gguf: no device$`, err.Error())
}
