package synthetic_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/synthetic"
)

// Write the tiny model to a file and open it as a program opens the real one.
func ExampleWriteFile() {
	dir, err := os.MkdirTemp("", "synthetic-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tiny.gguf")
	if err := synthetic.WriteFile(context.Background(), path, synthetic.WithPreset("tiny"), synthetic.WithSeed(1)); err != nil {
		log.Fatal(err)
	}

	m, err := bonsai.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	fmt.Println(m.Architecture(), m.Vocab())
	// Output: qwen35 512
}

func ExamplePresets() {
	fmt.Println(synthetic.Presets())
	// Output: [tiny small real-widths 27b]
}

// testGreeting is a test as a program that uses bonsai writes it with Path: the model
// file lives in the test's temporary directory.
func testGreeting(t *testing.T) {
	m, err := bonsai.Open(synthetic.Path(t)) // the tiny preset, seed 1, PQ2_0
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	// ... sessions, generation, tools, snapshots: the model's text is noise, but every
	// code path runs.
}

// A test asks Path for a model by its options.
func ExamplePath() {
	_ = testGreeting // a test function: func TestGreeting(t *testing.T)
}
