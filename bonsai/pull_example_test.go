package bonsai_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/bonsai-go/sdk/bonsai"
)

// Pull the model from the Hugging Face Hub (once: later calls find it in the cache that
// huggingface-cli shares), showing the download's progress, then open it.
func ExamplePull() {
	ctx := context.Background()
	path, err := bonsai.Pull(ctx, "prism-ml/Ternary-Bonsai-2-27B-GGUF", "Ternary-Bonsai-2-27B-PQ2_0.gguf",
		bonsai.WithPullProgress(func(p bonsai.PullProgress) {
			fmt.Fprintf(os.Stderr, "\r%d of %d bytes", p.Done, p.Total)
		}))
	if err != nil {
		log.Fatal(err) // errors.Is ErrHubAuth: set HF_TOKEN; ErrChecksum: run again
	}
	m, err := bonsai.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
}
