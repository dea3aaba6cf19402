// Package clitest writes the model files a loader must refuse, for the example programs'
// tests.
package clitest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// BadModel is a file a loader must refuse, with words its one-line error must contain.
type BadModel struct {
	Name, Path, Want string
}

// BadModels writes, into a temporary directory, a file that is not GGUF, a GGUF of
// another architecture, a truncated Bonsai model and one whose output norm holds a NaN,
// a directory, and names a file that does not exist.
func BadModels(t testing.TB) []BadModel {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var llama bytes.Buffer
	w, err := gguf.NewWriter(&llama, []gguf.KV{{Key: "general.architecture", Value: gguf.MustValue("llama")}}, nil)
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(synthtest.Path(t, "tiny", 1, ternary.PQ2_0))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	norm, ok := f.Tensor("output_norm.weight")
	if !ok {
		t.Fatal("no output_norm.weight")
	}
	nan := bytes.Clone(good)
	at := f.DataOffset + int64(norm.Offset)
	copy(nan[at:], []byte{0x00, 0x00, 0xc0, 0x7f}) // a float32 NaN
	sub := filepath.Join(dir, "models.gguf")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	return []BadModel{
		{"directory", sub, "models.gguf is a directory"},
		{"missing", filepath.Join(dir, "missing.gguf"), "does not exist"},
		{"not GGUF", write("notes.txt", []byte("hello, this is not a model\n")), "not a GGUF file"},
		{"not Bonsai", write("llama.gguf", llama.Bytes()), "not a Ternary Bonsai model"},
		{"truncated", write("truncated.gguf", good[:len(good)*2/3]), "damaged"},
		{"corrupt", write("nan.gguf", nan), "damaged"},
	}
}
