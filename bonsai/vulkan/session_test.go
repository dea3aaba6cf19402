package vulkan

import (
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu/enginetest"
)

// vulkanBackend is the backend on the test device under the validation layer
// (validated), with the engine settings v asks for: WithUnfusedDecode, and, for the
// settings this package has no option for, an Option that sets them on the engine's
// Config.
func vulkanBackend(t testing.TB, v enginetest.Variant) backend.Backend {
	t.Helper()
	return validated(t, WithUnfusedDecode(v.Unfused), func(c *config) {
		c.eng.StepGDN, c.eng.SplitGDN = v.StepGDN, v.SplitGDN
	})
}

// The backend-level tests every backend on the engine passes, against the CPU backend
// on the tiny model (package enginetest says what each checks), on the test device under
// the validation layer.
func TestParity(t *testing.T)                  { enginetest.Parity(t, vulkanBackend) }
func TestParityPTQ1(t *testing.T)              { enginetest.ParityPTQ1(t, vulkanBackend) }
func TestGreedyGeneration(t *testing.T)        { enginetest.GreedyGeneration(t, vulkanBackend) }
func TestSnapshotsAcrossBackends(t *testing.T) { enginetest.SnapshotsAcrossBackends(t, vulkanBackend) }
func TestStates(t *testing.T)                  { enginetest.States(t, vulkanBackend) }
func TestRewindExact(t *testing.T)             { enginetest.RewindExact(t, vulkanBackend) }
func TestLongContext(t *testing.T)             { enginetest.LongContext(t, vulkanBackend) }
func TestUnfusedDecode(t *testing.T)           { enginetest.UnfusedDecode(t, vulkanBackend) }
