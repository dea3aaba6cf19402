package engine

import (
	"testing"

	"github.com/bonsai-go/sdk/internal/gpu/enginetest"
)

// batchTolerance and tinyLogitScale are package enginetest's (BatchTolerance says why),
// for this package's batch tests.
const (
	batchTolerance = enginetest.BatchTolerance
	tinyLogitScale = enginetest.TinyLogitScale
)

// TestConformance runs the seam's conformance suite on the emulated backend
// (enginetest.Conformance).
func TestConformance(t *testing.T) { emulator(t); enginetest.Conformance(t, emulatorBackend) }
