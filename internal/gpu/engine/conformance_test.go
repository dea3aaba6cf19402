package engine

import (
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"

	"github.com/bonsai-go/sdk/internal/gpu/enginetest"
)

// batchTolerance and tinyLogitScale are package enginetest's (BatchTolerance says why),
// for this package's batch tests.
const (
	batchTolerance = enginetest.BatchTolerance
	tinyLogitScale = enginetest.TinyLogitScale
)

// TestConformance runs the seam's conformance suite on the emulated backend
// (enginetest.Conformance), its Rewind checks on the f32 cache only: at every
// precision they take 4–7 minutes on the emulator, which would take the package past
// go test's ten minutes; bonsai/vulkan's TestConformance runs them all through the same
// engine code.
func TestConformance(t *testing.T) {
	emulator(t)
	enginetest.Conformance(t, emulatorBackend, backend.KVFloat32)
}
