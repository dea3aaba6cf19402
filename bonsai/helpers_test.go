package bonsai_test

import (
	"os"

	"github.com/bonsai-go/sdk/gguf"
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
