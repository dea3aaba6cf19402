package emulator

import (
	"errors"
	"os"
	"testing"

	"github.com/bonsai-go/sdk/metal"
)

func TestNameAndAvailable(t *testing.T) {
	if got := New().Name(); got != "metal-emulator" {
		t.Errorf("Name = %q, want metal-emulator", got)
	}
	err := Available()
	if err != nil && !errors.Is(err, metal.ErrUnavailable) {
		t.Errorf("Available = %v, which does not wrap metal.ErrUnavailable", err)
	}
	if err != nil && os.Getenv("MSLEMU_REQUIRE") != "" {
		t.Fatalf("emulator unavailable: %v", err)
	}
}
