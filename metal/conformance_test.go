package metal

import (
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/qwen35"
)

// The emulated backend passes the seam's conformance suite — among its checks a batch of
// three sequences of different lengths (a decode step, a short prompt, two chunks)
// against each run alone, bit for bit — at the KV precisions it holds, on the tiny model
// mapped from a file (the weights wrapped in place).
func TestConformance(t *testing.T) {
	emulator(t)
	f, err := gguf.Open(writeTiny(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := qwen35.Bind(f)
	if err != nil {
		t.Fatal(err)
	}
	backendtest.Run(t, newEmulator(), w, backendtest.Options{
		Precisions: []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8},
	})
}
