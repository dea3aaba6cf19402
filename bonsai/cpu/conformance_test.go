package cpu_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth"
)

func tinyModel(t *testing.T, seed uint64) backend.Model {
	t.Helper()
	cfg, err := synth.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := synth.Write(context.Background(), &buf, synth.Options{Config: cfg, Seed: seed}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	arch, err := backend.Lookup(f.Architecture())
	if err != nil {
		t.Fatal(err)
	}
	m, err := arch.Bind(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// The CPU backend passes the seam's conformance suite, int8 and float32.
func TestConformance(t *testing.T) {
	m := tinyModel(t, 3)
	t.Run("int8", func(t *testing.T) { backendtest.Run(t, cpu.New(), m, backendtest.Options{}) })
	t.Run("float32", func(t *testing.T) {
		backendtest.Run(t, cpu.New(), m, backendtest.Options{Activations: backend.ActivationsFloat32})
	})
}
