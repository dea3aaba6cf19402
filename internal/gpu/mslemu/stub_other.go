//go:build !(linux && (amd64 || arm64))

package mslemu

import (
	"fmt"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// New is unavailable on this platform: the emulator runs on linux/amd64 and linux/arm64.
// (CompileCheck works wherever clang++ is installed.)
func New(opts ...Option) (gpu.Device, error) {
	return nil, fmt.Errorf("%w: mslemu runs on linux/amd64 and linux/arm64", gpu.ErrUnavailable)
}
