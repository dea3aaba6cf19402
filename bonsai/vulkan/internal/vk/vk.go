// Package vk is a minimal Vulkan binding for compute, without cgo: the loader is opened
// at run time through purego (libvulkan.so.1, vulkan-1.dll, libvulkan.1.dylib or
// MoltenVK) and every command is reached through vkGetInstanceProcAddr and
// vkGetDeviceProcAddr. It binds only what a compute backend needs: an instance (with the
// validation layer and a debug messenger when asked), physical devices and their limits,
// a logical device with one compute queue, buffers and memory, shader modules,
// descriptors, pipeline layouts with push constants, compute pipelines with
// specialization constants, command buffers, barriers, submission and fences.
//
// The C structs are mirrored in ztypes.go, generated from vulkan_core.h (go generate;
// gen.go) and checked against the C compiler's layout by TestLayout. Enum values keep
// their C names without the VK_ prefix, as golang.org/x/sys does. Pointers inside the
// structs are uintptr.
//
// # Memory passed to Vulkan
//
// Vulkan reads the structs it is handed while the command runs, and follows the
// pointers in them. Go's collector neither sees a uintptr as a reference nor promises
// that an unreferenced object stays put, so the rule is: every Go object whose address
// reaches Vulkan, directly or through a pointer stored in a struct, is pinned with a
// runtime.Pinner that is unpinned only after the command returns. The commands here pin
// the struct they are given; the caller pins what it points to, with Ptr, Slice and
// Strings, which pin and return the address in one step. Nothing Go-allocated is kept
// by Vulkan past a command's return (the debug messenger's user data is an integer, not
// a pointer); memory Vulkan keeps, such as a mapping, is Vulkan's own.
//
// # Handle counts
//
// Every object created through an Instance, or a Device made from it, is counted by
// kind until it is destroyed; Instance.Live reports the counts, so that a test can
// assert that closing a context destroys everything it made. Descriptor sets are freed
// with their pool and are not counted.
package vk

//go:generate go run gen.go

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// ErrUnavailable reports that there is no Vulkan here: no loader, no entry point, or no
// binding for the platform.
var ErrUnavailable = errors.New("vulkan: not available")

// API versions, as VK_MAKE_API_VERSION(0, major, minor, 0) makes them.
const (
	APIVersion1_2 = 1<<22 | 2<<12
	APIVersion1_3 = 1<<22 | 3<<12
)

// WholeSize is VK_WHOLE_SIZE.
const WholeSize = ^uint64(0)

// Dispatchable handles are pointers; the others are 64-bit integers.
type (
	PhysicalDevice      uintptr
	Queue               uintptr
	CommandBuffer       uintptr
	Buffer              uint64
	DeviceMemory        uint64
	ShaderModule        uint64
	DescriptorSetLayout uint64
	DescriptorPool      uint64
	DescriptorSet       uint64
	PipelineLayout      uint64
	Pipeline            uint64
	PipelineCache       uint64
	CommandPool         uint64
	Fence               uint64
	Semaphore           uint64
	Sampler             uint64
	BufferView          uint64
	ImageView           uint64
	DebugUtilsMessenger uint64
)

// Result is a VkResult that is not VK_SUCCESS.
type Result int32

func (r Result) Error() string {
	names := map[Result]string{
		NOT_READY: "VK_NOT_READY", TIMEOUT: "VK_TIMEOUT", INCOMPLETE: "VK_INCOMPLETE",
		ERROR_OUT_OF_HOST_MEMORY: "VK_ERROR_OUT_OF_HOST_MEMORY", ERROR_OUT_OF_DEVICE_MEMORY: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
		ERROR_INITIALIZATION_FAILED: "VK_ERROR_INITIALIZATION_FAILED", ERROR_DEVICE_LOST: "VK_ERROR_DEVICE_LOST",
		ERROR_MEMORY_MAP_FAILED: "VK_ERROR_MEMORY_MAP_FAILED", ERROR_LAYER_NOT_PRESENT: "VK_ERROR_LAYER_NOT_PRESENT",
		ERROR_EXTENSION_NOT_PRESENT: "VK_ERROR_EXTENSION_NOT_PRESENT", ERROR_FEATURE_NOT_PRESENT: "VK_ERROR_FEATURE_NOT_PRESENT",
		ERROR_INCOMPATIBLE_DRIVER: "VK_ERROR_INCOMPATIBLE_DRIVER", ERROR_TOO_MANY_OBJECTS: "VK_ERROR_TOO_MANY_OBJECTS",
		ERROR_OUT_OF_POOL_MEMORY: "VK_ERROR_OUT_OF_POOL_MEMORY",
	}
	if n, ok := names[r]; ok {
		return "vulkan: " + n
	}
	return fmt.Sprintf("vulkan: VkResult %d", int32(r))
}

// check turns a VkResult into an error; positive codes other than success are errors
// too, since no command bound here returns one on a path that succeeds.
func check(what string, r uintptr) error {
	if res := int32(r); res != SUCCESS {
		return fmt.Errorf("%s: %w", what, Result(res))
	}
	return nil
}

// Ptr pins v with p and returns its address.
func Ptr[T any](p *runtime.Pinner, v *T) uintptr {
	p.Pin(v)
	return uintptr(unsafe.Pointer(v))
}

// Slice pins s's backing array with p and returns its address, 0 for an empty slice.
func Slice[T any](p *runtime.Pinner, s []T) uintptr {
	if len(s) == 0 {
		return 0
	}
	return Ptr(p, &s[0])
}

// Strings returns, pinned with p, a C array of NUL-terminated copies of ss.
func Strings(p *runtime.Pinner, ss []string) uintptr {
	if len(ss) == 0 {
		return 0
	}
	ptrs := make([]uintptr, len(ss))
	for i, s := range ss {
		ptrs[i] = CString(p, s)
	}
	return Slice(p, ptrs)
}

// CString returns, pinned with p, a NUL-terminated copy of s.
func CString(p *runtime.Pinner, s string) uintptr {
	b := append([]byte(s), 0)
	return Slice(p, b)
}

// GoString reads a NUL-terminated string of at most max bytes from C memory.
func GoString(c uintptr, max int) string {
	if c == 0 {
		return ""
	}
	b := unsafe.Slice((*byte)(fromC(c)), max)
	for i, x := range b {
		if x == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// CBytes returns a NUL-terminated byte array's text.
func CBytes(b []byte) string {
	for i, x := range b {
		if x == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// fromC turns an address from C into a pointer. Its target is C memory, which the
// collector ignores; the double conversion keeps vet's unsafeptr check, which cannot
// know that, quiet.
func fromC(c uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&c)) }

// counts are the live objects by kind, shared by an instance and its devices.
type counts struct {
	mu   sync.Mutex
	live map[string]int
}

func (c *counts) add(kind string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live == nil {
		c.live = map[string]int{}
	}
	c.live[kind] += n
	if c.live[kind] == 0 {
		delete(c.live, kind)
	}
}

func (c *counts) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.live))
	for k, v := range c.live {
		m[k] = v
	}
	return m
}

var loader struct {
	once sync.Once
	gipa uintptr
	err  error
}

// getInstanceProcAddr returns vkGetInstanceProcAddr, opening the loader once.
func getInstanceProcAddr() (uintptr, error) {
	loader.once.Do(func() { loader.gipa, loader.err = openLoader() })
	return loader.gipa, loader.err
}

// procAddr looks a command up with a vkGet*ProcAddr.
func procAddr(get, owner uintptr, name string) uintptr {
	var p runtime.Pinner
	defer p.Unpin()
	return syscallN(get, owner, CString(&p, name))
}
