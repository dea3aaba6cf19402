package vulkan

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vk"
)

// ErrUnavailable reports that there is no Vulkan loader or no usable device.
var ErrUnavailable = vk.ErrUnavailable

// ErrNoDevice reports that no device fits the request; it wraps ErrUnavailable.
var ErrNoDevice = fmt.Errorf("%w: no suitable device", ErrUnavailable)

// Options say which device to open and how.
type Options struct {
	// Device picks a device by index or by a case-insensitive substring of its name;
	// empty means BONSAI_VULKAN_DEVICE, and that empty means the best GPU: the first
	// discrete one, else integrated, else virtual. A CPU implementation (lavapipe) is
	// used when named, or unnamed when it is the only device and GPUOnly is false.
	Device string
	// GPUOnly refuses a CPU implementation unless it is named: what an automatic
	// choice between Vulkan and the CPU backend wants (lavapipe is slower than the CPU
	// backend).
	GPUOnly bool
	// Validation turns on the Khronos validation layer, whose reports Context.Messages
	// returns; opening fails if the layer is not installed.
	Validation bool
}

// Limits are what the device allows a compute kernel.
type Limits struct {
	SubgroupSize       uint32 // the threads of a subgroup (a warp, a wavefront)
	SubgroupArithmetic bool   // subgroupAdd and friends in compute shaders

	// The VkPhysicalDeviceLimits of these names (maxComputeSharedMemorySize,
	// maxComputeWorkGroupSize, minStorageBufferOffsetAlignment and so on), in bytes
	// where they are sizes.
	MaxStorageBufferRange     uint32
	MaxComputeSharedMemory    uint32
	MaxWorkGroupSize          [3]uint32
	MaxWorkGroupInvocations   uint32
	MaxWorkGroupCount         [3]uint32
	MaxPushConstantsSize      uint32
	MinStorageBufferAlign     uint64
	DeviceLocalHeapBytes      uint64   // the largest device-local heap
	HeapBytes                 []uint64 // the size of every memory heap, in the device's order
	APIVersion, DriverVersion uint32   // as VkPhysicalDeviceProperties encodes them
}

// Choice is the device opened and why.
type Choice struct {
	Index  int    // the device's index among the instance's physical devices
	Name   string // the device's name, as the driver reports it
	Type   string // "discrete", "integrated", "virtual", "cpu" or "other"
	Reason string // why this device was chosen
}

// candidate is what choosing needs to know of a physical device.
type candidate struct {
	name     string
	kind     int32 // a vk.PHYSICAL_DEVICE_TYPE_*
	computeQ bool  // it has a compute queue family
}

var typeNames = map[int32]string{
	vk.PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: "discrete", vk.PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: "integrated",
	vk.PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: "virtual", vk.PHYSICAL_DEVICE_TYPE_CPU: "cpu",
}

func typeName(kind int32) string {
	if n, ok := typeNames[kind]; ok {
		return n
	}
	return "other"
}

// choose picks a device: the one asked for (an index or a name substring), else the
// first discrete GPU, then integrated, then virtual; a CPU device unnamed only when it
// is the only device and gpuOnly is false.
func choose(cands []candidate, want string, gpuOnly bool) (int, string, error) {
	if want != "" {
		if i, err := strconv.Atoi(want); err == nil {
			if i < 0 || i >= len(cands) {
				return 0, "", fmt.Errorf("vulkan: device %d asked for, %d present: %w", i, len(cands), ErrNoDevice)
			}
			if !cands[i].computeQ {
				return 0, "", fmt.Errorf("vulkan: device %d (%s) has no compute queue: %w", i, cands[i].name, ErrNoDevice)
			}
			return i, "asked for by index " + want, nil
		}
		for i, c := range cands {
			if c.computeQ && strings.Contains(strings.ToLower(c.name), strings.ToLower(want)) {
				return i, fmt.Sprintf("asked for by name %q", want), nil
			}
		}
		return 0, "", fmt.Errorf("vulkan: no device with compute named like %q: %w", want, ErrNoDevice)
	}
	for _, kind := range []int32{vk.PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, vk.PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, vk.PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU} {
		for i, c := range cands {
			if c.kind == kind && c.computeQ {
				return i, "the first " + typeName(kind) + " GPU", nil
			}
		}
	}
	if !gpuOnly && len(cands) == 1 && cands[0].kind == vk.PHYSICAL_DEVICE_TYPE_CPU && cands[0].computeQ {
		return 0, "the only device, a CPU implementation (Vulkan was asked for explicitly)", nil
	}
	return 0, "", fmt.Errorf("vulkan: no GPU with compute among %d devices (a CPU device is used only when named, e.g. BONSAI_VULKAN_DEVICE=llvmpipe, or when it is the only one and Vulkan was asked for): %w", len(cands), ErrNoDevice)
}

// wantedDevice is the device asked for: the option, else the environment.
func wantedDevice(o Options) string {
	if o.Device != "" {
		return o.Device
	}
	return os.Getenv("BONSAI_VULKAN_DEVICE")
}

func computeFamily(fams []vk.QueueFamilyProperties) (uint32, bool) {
	// A family with compute but no graphics first: on GPUs that is the async compute queue.
	best, found := uint32(0), false
	for i, f := range fams {
		if f.QueueFlags&vk.QUEUE_COMPUTE_BIT == 0 || f.QueueCount == 0 {
			continue
		}
		if f.QueueFlags&vk.QUEUE_GRAPHICS_BIT == 0 {
			return uint32(i), true
		}
		if !found {
			best, found = uint32(i), true
		}
	}
	return best, found
}

func readLimits(in *vk.Instance, pd vk.PhysicalDevice) Limits {
	props, sub := in.Properties(pd)
	l := props.Limits
	mem := in.MemoryProperties(pd)
	lim := Limits{
		SubgroupSize:            sub.SubgroupSize,
		SubgroupArithmetic:      sub.SupportedStages&vk.SHADER_STAGE_COMPUTE_BIT != 0 && sub.SupportedOperations&vk.SUBGROUP_FEATURE_ARITHMETIC_BIT != 0,
		MaxStorageBufferRange:   l.MaxStorageBufferRange,
		MaxComputeSharedMemory:  l.MaxComputeSharedMemorySize,
		MaxWorkGroupSize:        l.MaxComputeWorkGroupSize,
		MaxWorkGroupInvocations: l.MaxComputeWorkGroupInvocations,
		MaxWorkGroupCount:       l.MaxComputeWorkGroupCount,
		MaxPushConstantsSize:    l.MaxPushConstantsSize,
		MinStorageBufferAlign:   l.MinStorageBufferOffsetAlignment,
		APIVersion:              props.ApiVersion,
		DriverVersion:           props.DriverVersion,
	}
	for _, h := range mem.MemoryHeaps[:mem.MemoryHeapCount] {
		lim.HeapBytes = append(lim.HeapBytes, h.Size)
		if h.Flags&vk.MEMORY_HEAP_DEVICE_LOCAL_BIT != 0 {
			lim.DeviceLocalHeapBytes = max(lim.DeviceLocalHeapBytes, h.Size)
		}
	}
	return lim
}

var errNoLayer = errors.New("vulkan: validation asked for, but " + vk.ValidationLayer + " is not installed")
