package bonsai_test

import (
	"runtime"
	"syscall"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WithThreads(0), like no WithThreads, is every core (runtime.NumCPU); a negative count
// is refused, naming the option.
func TestWithThreadsZeroIsEveryCore(t *testing.T) {
	path := synthtest.Path(t, "tiny", 4, ternary.PQ2_0)
	for _, opts := range [][]bonsai.Option{nil, {bonsai.WithThreads(0)}} {
		m := open(t, path, opts...)
		assert.Equal(t, runtime.NumCPU(), m.Threads())
	}
	m := open(t, path, bonsai.WithThreads(3))
	assert.Equal(t, 3, m.Threads(), "a count given is kept")
	_, err := bonsai.Open(path, bonsai.WithThreads(-1))
	require.Error(t, err)
	assert.Equal(t, "bonsai: WithThreads(-1): want 0 (every core) or more", err.Error())
}

// Open on a directory says so, naming it (not "mmap: no such device").
func TestOpenDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := bonsai.Open(dir)
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.EISDIR)
	assert.Equal(t, "bonsai: gguf: "+dir+" is a directory, not a GGUF file", err.Error())
}
