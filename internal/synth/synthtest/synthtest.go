// Package synthtest builds synthetic Bonsai models for tests, as net/http/httptest builds
// servers: one call gives a test a model file of a synth preset, its parsed GGUF or its
// bound weights, and the test's cleanup removes it.
//
// A model is named by its preset (synth.Presets), seed and ternary format, and every call
// with the same three gives the same bytes. A test binary generates each model of up to
// 64 MiB once (the tiny and small presets; a package's tests open the tiny one a hundred
// times) and writes every test its own copy, so that no test sees another's file; a
// larger model (the real-widths preset, 420 MB) is generated for each call rather than
// held.
package synthtest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/require"
)

// cacheBytes is the tensor data up to which a model is generated once per test binary.
var cacheBytes int64 = 64 << 20

// Config returns the named preset's configuration.
func Config(t testing.TB, preset string) qwen35.Config {
	t.Helper()
	c, err := synth.Preset(preset)
	require.NoError(t, err)
	return c
}

// Path writes the model into a new temporary directory of t, as <preset>.gguf, and
// returns its path.
func Path(t testing.TB, preset string, seed uint64, format ternary.Format) string {
	t.Helper()
	return write(t, preset+".gguf", model{options(t, preset, seed, format), false})
}

// TwinPath writes the model's F32 twin (synth.WriteTwin), the layout upstream llama.cpp
// runs, into a new temporary directory of t, as <preset>-f32.gguf, and returns its path.
func TwinPath(t testing.TB, preset string, seed uint64, format ternary.Format) string {
	t.Helper()
	return write(t, preset+"-f32.gguf", model{options(t, preset, seed, format), true})
}

// PathOf writes the model opt describes, for a test that needs a configuration no preset
// has, into a new temporary directory of t, as model.gguf, and returns its path.
func PathOf(t testing.TB, opt synth.Options) string {
	t.Helper()
	return write(t, "model.gguf", model{opt, false})
}

// MainPath writes the model, as Path does, for a TestMain, which has no testing.TB:
// into a new temporary directory that cleanup removes.
func MainPath(preset string, seed uint64, format ternary.Format) (path string, cleanup func(), err error) {
	c, err := synth.Preset(preset)
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "synthtest-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, preset+".gguf")
	if err := synth.WriteFile(context.Background(), path, synth.Options{Config: c, Seed: seed, Format: format}, nil); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// ThinkTemplate is a ChatML chat template that opens a think block unless thinking is
// switched off, as Qwen3's does, for tests of thinking on the synthetic models (whose
// own template has none): bonsai.WithChatTemplate(synthtest.ThinkTemplate).
const ThinkTemplate = `{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}
{{- '<think>\n\n</think>\n\n' -}}
{%- else -%}
{{- '<think>\n' -}}
{%- endif -%}
{%- endif -%}
`

// File maps the model's file (Path) as bonsai.Open maps a model, so that its tensors are
// page-aligned views of a read-only mapping, as a GPU backend's no-copy buffers need; the
// file is closed at t's cleanup.
func File(t testing.TB, preset string, seed uint64, format ternary.Format) *gguf.File {
	t.Helper()
	return open(t, Path(t, preset, seed, format))
}

// Twin maps the model's F32 twin (TwinPath); it is closed at t's cleanup.
func Twin(t testing.TB, preset string, seed uint64, format ternary.Format) *gguf.File {
	t.Helper()
	return open(t, TwinPath(t, preset, seed, format))
}

// FileOf maps the model opt describes (PathOf); it is closed at t's cleanup.
func FileOf(t testing.TB, opt synth.Options) *gguf.File {
	t.Helper()
	return open(t, PathOf(t, opt))
}

// Weights binds the model's File through the architecture it names, as bonsai.Open binds
// a file. It returns the qwen35 weights rather than the seam's backend.Model, which they
// implement: a test of a backend passes them as they are, and a test that looks inside
// (the plan, the layers, a GPU backend's loader) needs no type assertion.
func Weights(t testing.TB, preset string, seed uint64, format ternary.Format) *qwen35.Weights {
	t.Helper()
	f := File(t, preset, seed, format)
	arch, err := backend.Lookup(f.Architecture())
	require.NoError(t, err)
	m, err := arch.Bind(f, nil)
	require.NoError(t, err)
	w, ok := m.(*qwen35.Weights)
	require.Truef(t, ok, "synthtest: %s binds to %T, not *qwen35.Weights", f.Architecture(), m)
	return w
}

func options(t testing.TB, preset string, seed uint64, format ternary.Format) synth.Options {
	t.Helper()
	return synth.Options{Config: Config(t, preset), Seed: seed, Format: format}
}

func open(t testing.TB, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// model is a synthetic file: the model opt describes, or its twin.
type model struct {
	opt  synth.Options
	twin bool
}

// The cache's keys must compare: a map of them compiles only if they do.
var _ map[model]bool

// generated holds the bytes of the models of up to cacheBytes, each generated once.
var generated sync.Map // model → func() ([]byte, error)

// write writes m into a new temporary directory of t as name.
func write(t testing.TB, name string, m model) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	stream, file := synth.Write, synth.WriteFile
	if m.twin {
		stream, file = synth.WriteTwin, synth.WriteTwinFile
	}
	if size(t, m) > cacheBytes {
		require.NoError(t, file(context.Background(), path, m.opt, nil))
		return path
	}
	gen, _ := generated.LoadOrStore(m, sync.OnceValues(func() ([]byte, error) {
		var buf bytes.Buffer
		err := stream(context.Background(), &buf, m.opt, nil)
		return buf.Bytes(), err
	}))
	data, err := gen.(func() ([]byte, error))()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// size is the bytes of the model's tensor data, which is nearly all of its file.
func size(t testing.TB, m model) int64 {
	t.Helper()
	infos, err := synth.TensorInfos(m.opt)
	if m.twin {
		infos, err = synth.TwinTensorInfos(m.opt)
	}
	require.NoError(t, err)
	var n int64
	for _, ti := range infos {
		s, err := ti.Size()
		require.NoError(t, err)
		n += s
	}
	return n
}
