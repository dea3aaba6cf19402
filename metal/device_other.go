//go:build !(darwin && arm64)

package metal

import (
	"fmt"
	"runtime"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// newDevice reports that there is no Metal here: the device is built for macOS on
// Apple silicon (darwin/arm64) only.
func newDevice() (gpu.Device, error) {
	return nil, fmt.Errorf("%w: Metal needs macOS on Apple silicon (darwin/arm64); this is %s/%s", ErrUnavailable, runtime.GOOS, runtime.GOARCH)
}
