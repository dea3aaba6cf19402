//go:build !((linux || darwin || windows) && (amd64 || arm64)) || novulkan

package vk

import (
	"fmt"
	"runtime"
)

// The binding passes 64-bit handles in single arguments, so it needs a 64-bit platform
// that purego can call C on.
func openLoader() (uintptr, error) {
	return 0, fmt.Errorf("%w: no Vulkan binding for %s/%s", ErrUnavailable, runtime.GOOS, runtime.GOARCH)
}

func syscallN(fn uintptr, args ...uintptr) uintptr { panic("vk: no C calls on this platform") }

func newCallback(fn any) uintptr { panic("vk: no C callbacks on this platform") }
