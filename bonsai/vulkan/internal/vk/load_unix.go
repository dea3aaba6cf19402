//go:build (linux || darwin) && (amd64 || arm64) && !novulkan

package vk

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// loaderNames are the Vulkan loader's file names, tried in order: the Khronos loader,
// then (on macOS, without the SDK's loader) MoltenVK itself, which exports the same
// entry point.
func loaderNames() []string {
	if runtime.GOOS == "darwin" {
		return []string{"libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib"}
	}
	return []string{"libvulkan.so.1"}
}

func openLoader() (uintptr, error) { return openLoaderFrom(loaderNames()) }

// openLoaderFrom opens the first of the named libraries that loads.
func openLoaderFrom(names []string) (uintptr, error) {
	var failures []string
	for _, name := range names {
		lib, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			return lookup(lib, "vkGetInstanceProcAddr")
		}
		failures = append(failures, err.Error())
	}
	return 0, fmt.Errorf("%w: no Vulkan loader (%s)", ErrUnavailable, strings.Join(failures, "; "))
}

func lookup(lib uintptr, name string) (uintptr, error) {
	fn, err := purego.Dlsym(lib, name)
	if err != nil {
		return 0, fmt.Errorf("%w: the Vulkan loader has no %s: %v", ErrUnavailable, name, err)
	}
	return fn, nil
}

func syscallN(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

func newCallback(fn any) uintptr { return purego.NewCallback(fn) }
