package bonsai_test

import (
	"os"

	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/ternary"
)

func writeGGUF(path string, kv []gguf.KV) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := gguf.NewWriter(f, kv, nil)
	if err != nil {
		f.Close()
		return err
	}
	if err := w.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyWithoutKey rewrites the GGUF file src as dst without the metadata key.
func copyWithoutKey(src, dst, key string) error {
	f, err := gguf.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	var kv []gguf.KV
	for _, x := range f.KV {
		if x.Key != key {
			kv = append(kv, x)
		}
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	w, err := gguf.NewWriter(out, kv, f.Tensors)
	if err != nil {
		out.Close()
		return err
	}
	for _, t := range f.Tensors {
		data, err := f.TensorData(t.Name)
		if err != nil {
			out.Close()
			return err
		}
		if err := w.WriteTensor(t.Name, data); err != nil {
			out.Close()
			return err
		}
	}
	if err := w.Close(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// loadStages returns the progress stages Open reports for the backend's part with a
// PQ2_0 model on the default CPU backend, in the order they first appear: "prepare"
// too where it interleaves the weights (cpu.LayoutAuto on this CPU), within "load".
// With changes, every change of stage: load, prepare, load.
func loadStages(changes bool) []string {
	switch {
	case cpu.LayoutAuto.Resolve(ternary.PQ2_0) != cpu.LayoutInterleaved:
		return []string{"load"}
	case changes:
		return []string{"load", "prepare", "load"}
	}
	return []string{"load", "prepare"}
}
