// Package synthetic writes synthetic Ternary Bonsai models, so that a program's tests can
// open a real model file without downloading the 7 GB one.
//
// A synthetic model is a GGUF file laid out exactly as PrismML's converter lays out
// Ternary Bonsai 2: the qwen35 architecture, the real tensor names, types and layout,
// ternary weights folded with the prism.hadamard rotation, a byte-level BPE vocabulary
// with Qwen's special tokens and a ChatML chat template. Its weights are random: every
// tensor's values depend only on the seed and the tensor's name, so the same options
// always give the same bytes. What such a model writes is noise, but it runs through the
// very code paths and arithmetic the real model does, which is what a test of a program
// built on package bonsai needs: bonsai.Open, sessions, generation, tools, constrained
// JSON output and snapshots all work on it.
//
// A preset names the shape (Presets): tiny (about a megabyte, every structural feature
// at toy widths, the one to test with), small, real-widths (the 27B model's widths in
// four layers) and 27b (the full shape, about 7.2 GB as PQ2_0).
//
// WriteFile and Write write a model; Path writes one for a test into its temporary
// directory, as net/http/httptest starts a server for a test.
package synthetic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/ternary"
)

// ErrUnknownPreset is returned for a preset name that Presets does not list.
var ErrUnknownPreset = errors.New("synthetic: unknown preset")

// ErrUnsupportedFormat is returned for a ternary format other than PQ2_0 and PTQ1_0.
var ErrUnsupportedFormat = errors.New("synthetic: unsupported format")

// An Option changes one property of the model to write. The defaults are the tiny
// preset, seed 1 and the PQ2_0 format.
type Option func(*options)

type options struct {
	preset   string
	seed     uint64
	format   ternary.Format
	progress func(done, total int64)
}

// WithPreset picks the model's shape by name: one of Presets.
func WithPreset(name string) Option { return func(o *options) { o.preset = name } }

// WithSeed sets the seed every tensor's values derive from.
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = seed } }

// WithFormat sets the ternary format of the linear layers: ternary.PQ2_0 (the default)
// or ternary.PTQ1_0.
func WithFormat(f ternary.Format) Option { return func(o *options) { o.format = f } }

// WithProgress has f called after each tensor with the bytes of tensor data written so
// far and their total, for a progress bar while a large preset is written.
func WithProgress(f func(done, total int64)) Option { return func(o *options) { o.progress = f } }

// Presets returns the names of the shapes WithPreset accepts, smallest first.
func Presets() []string { return synth.Presets() }

// resolve applies opts over the defaults and checks them.
func resolve(opts []Option) (options, synth.Options, error) {
	o := options{preset: "tiny", seed: 1, format: ternary.PQ2_0}
	for _, opt := range opts {
		opt(&o)
	}
	if !slices.Contains(synth.Presets(), o.preset) {
		return o, synth.Options{}, fmt.Errorf("%w %q (have %s)", ErrUnknownPreset, o.preset, strings.Join(synth.Presets(), ", "))
	}
	if o.format != ternary.PQ2_0 && o.format != ternary.PTQ1_0 {
		return o, synth.Options{}, fmt.Errorf("%w %v (want PQ2_0 or PTQ1_0)", ErrUnsupportedFormat, o.format)
	}
	cfg, err := synth.Preset(o.preset)
	if err != nil {
		return o, synth.Options{}, err
	}
	return o, synth.Options{Config: cfg, Seed: o.seed, Format: o.format}, nil
}

// Write streams the model file to w. It stops with ctx's error when ctx is cancelled.
func Write(ctx context.Context, w io.Writer, opts ...Option) error {
	o, so, err := resolve(opts)
	if err != nil {
		return err
	}
	return synth.Write(ctx, w, so, o.progress)
}

// WriteFile writes the model to path, removing the partial file on failure. It stops
// with ctx's error when ctx is cancelled.
func WriteFile(ctx context.Context, path string, opts ...Option) error {
	o, so, err := resolve(opts)
	if err != nil {
		return err
	}
	return synth.WriteFile(ctx, path, so, o.progress)
}

// cacheBytes is the tensor data up to which Path generates a model once per process
// (the tiny and small presets) and copies it for each test.
const cacheBytes = 64 << 20

// key names a model Path may cache: the progress function is left out, as it changes
// nothing in the file.
type key struct {
	preset string
	seed   uint64
	format ternary.Format
}

// generated holds the bytes of the models of up to cacheBytes, each generated once.
var generated sync.Map // key → func() ([]byte, error)

// Path writes the model into a new temporary directory of t (t.TempDir), as
// <preset>.gguf, and returns its path; the directory is removed when the test ends. It
// fails the test if the options are invalid. A model of up to 64 MiB (the tiny and small
// presets) is generated once per test binary and copied for each call, so that every
// test gets its own file cheaply.
func Path(t testing.TB, opts ...Option) string {
	t.Helper()
	o, so, err := resolve(opts)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), o.preset+".gguf")
	size, err := tensorBytes(so)
	if err != nil {
		t.Fatal(err)
	}
	if size > cacheBytes {
		if err := synth.WriteFile(context.Background(), path, so, o.progress); err != nil {
			t.Fatal(err)
		}
		return path
	}
	gen, _ := generated.LoadOrStore(key{o.preset, o.seed, o.format}, sync.OnceValues(func() ([]byte, error) {
		var buf bytes.Buffer
		err := synth.Write(context.Background(), &buf, so, nil)
		return buf.Bytes(), err
	}))
	data, err := gen.(func() ([]byte, error))()
	if err != nil {
		t.Fatal(err)
	}
	if o.progress != nil {
		o.progress(size, size)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tensorBytes is the bytes of the model's tensor data, which is nearly all of its file.
func tensorBytes(so synth.Options) (int64, error) {
	infos, err := synth.TensorInfos(so)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, ti := range infos {
		s, err := ti.Size()
		if err != nil {
			return 0, err
		}
		n += s
	}
	return n, nil
}
