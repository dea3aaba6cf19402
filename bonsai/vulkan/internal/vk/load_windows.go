//go:build windows && (amd64 || arm64) && !novulkan

package vk

import (
	"fmt"
	"syscall"

	"github.com/ebitengine/purego"
)

func openLoader() (uintptr, error) {
	lib, err := syscall.LoadLibrary("vulkan-1.dll")
	if err != nil {
		return 0, fmt.Errorf("%w: no Vulkan loader (vulkan-1.dll: %v)", ErrUnavailable, err)
	}
	fn, err := syscall.GetProcAddress(lib, "vkGetInstanceProcAddr")
	if err != nil {
		return 0, fmt.Errorf("%w: vulkan-1.dll has no vkGetInstanceProcAddr: %v", ErrUnavailable, err)
	}
	return fn, nil
}

func syscallN(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

func newCallback(fn any) uintptr { return purego.NewCallback(fn) }
