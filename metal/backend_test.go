package metal

import (
	"context"
	"errors"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/qwen35"
)

// TestNewLoad: New's backend is named "metal" and fails to load where there is no Metal,
// with an error wrapping ErrUnavailable.
func TestNewLoad(t *testing.T) {
	c, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/tiny.gguf"
	if err := synth.WriteFile(context.Background(), path, synth.Options{Config: c, Seed: 1}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := qwen35.Bind(f)
	if err != nil {
		t.Fatal(err)
	}
	b := New()
	if b.Name() != "metal" {
		t.Errorf("Name() = %q, want metal", b.Name())
	}
	e, err := b.Load(context.Background(), w, backend.LoadOptions{})
	switch {
	case newDeviceErr() == nil:
		t.Logf("a Mac: metal.New().Load: %v", err)
	case err == nil:
		t.Error("metal.New().Load succeeded on a machine without Metal")
	case !errors.Is(err, ErrUnavailable):
		t.Errorf("metal.New().Load: %v, want an error wrapping ErrUnavailable", err)
	}
	if err == nil {
		e.Close()
	}
}

// newDeviceErr is why the system's Metal device cannot be opened, nil when it can.
func newDeviceErr() error {
	d, err := newDevice()
	if err == nil {
		d.Close()
	}
	return err
}
