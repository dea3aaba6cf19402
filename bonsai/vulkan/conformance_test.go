package vulkan

import (
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// The Vulkan backend passes the seam's conformance suite on the tiny model, at every KV
// precision it holds, under the validation layer.
func TestConformance(t *testing.T) {
	b := validated(t)
	f, err := gguf.Open(synthtest.Path(t, "tiny", 1, ternary.PQ2_0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := qwen35.Bind(f)
	if err != nil {
		t.Fatal(err)
	}
	backendtest.Run(t, b, w, backendtest.Options{
		Precisions: []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8},
		Tolerance:  batchTolerance,
	})
}

// batchTolerance is the engine's (internal/gpu/engine's conformance test says why): the
// kernels are the same translations, summing in the same orders.
const batchTolerance = 17 * 512.0 / (1 << 24) * 25
