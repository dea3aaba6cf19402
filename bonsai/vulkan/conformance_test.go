package vulkan

import (
	"testing"

	"github.com/bonsai-go/sdk/internal/gpu/enginetest"
)

// The Vulkan backend passes the seam's conformance suite on the tiny model, at every KV
// precision it holds, under the validation layer (enginetest.Conformance), within the
// engine's enginetest.BatchTolerance: the kernels are the same translations, summing in
// the same orders.
func TestConformance(t *testing.T) { enginetest.Conformance(t, vulkanBackend) }
