//go:build !(darwin && arm64)

package metal

import (
	"errors"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/gpu"
)

func TestDeviceUnavailableHere(t *testing.T) {
	d, err := newDevice()
	if d != nil || !errors.Is(err, ErrUnavailable) || !errors.Is(err, gpu.ErrUnavailable) {
		t.Fatalf("newDevice() = %v, %v; want nil and an error wrapping ErrUnavailable", d, err)
	}
	if !strings.Contains(err.Error(), "Apple silicon") {
		t.Errorf("error %q does not say what Metal needs", err)
	}
	if s, err := DeviceInfo(); s != "" || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("DeviceInfo() = %q, %v; want an error wrapping ErrUnavailable", s, err)
	}
}
