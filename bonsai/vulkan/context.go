package vulkan

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vk"
)

// Context is an open Vulkan device with one compute queue.
type Context struct {
	Choice Choice // the device opened, and why it was chosen
	Limits Limits // what the device allows a compute kernel

	in     *vk.Instance
	dev    *vk.Device
	pd     vk.PhysicalDevice
	family uint32
	queue  vk.Queue
	pool   vk.CommandPool
	mem    vk.PhysicalDeviceMemoryProperties
	vendor uint32
	// maxAlloc is the largest single allocation (maxMemoryAllocationSize where the
	// device says, else its largest heap).
	maxAlloc uint64
	// gpuReady: the device has what the engine's kernels need (bufferDeviceAddress,
	// 8- and 16-bit storage, 64-bit integers; 32 KiB of shared memory and workgroups of
	// 256 invocations, kernelLimits); missing names what it lacks.
	gpuReady bool
	missing  string
}

// Open opens the device o asks for (see Options.Device).
func Open(o Options) (*Context, error) {
	io := vk.InstanceOptions{AppName: "bonsai", APIVersion: vk.APIVersion1_2}
	if o.Validation {
		ok, err := vk.LayerPresent(vk.ValidationLayer)
		if err != nil {
			return nil, fmt.Errorf("vulkan: %w", err)
		}
		if !ok {
			return nil, errNoLayer
		}
		io.Layers, io.Messages = []string{vk.ValidationLayer}, true
	}
	in, err := vk.CreateInstance(io)
	if errors.Is(err, ErrUnavailable) {
		return nil, err // its text names Vulkan already
	}
	if err != nil {
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	c := &Context{in: in}
	if err := c.open(wantedDevice(o), o.GPUOnly); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Context) open(want string, gpuOnly bool) error {
	pds, err := c.in.PhysicalDevices()
	if err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	cands := make([]candidate, len(pds))
	for i, pd := range pds {
		props, _ := c.in.Properties(pd)
		_, hasQ := computeFamily(c.in.QueueFamilies(pd))
		cands[i] = candidate{name: vk.CBytes(props.DeviceName[:]), kind: props.DeviceType, computeQ: hasQ}
	}
	i, reason, err := choose(cands, want, gpuOnly)
	if err != nil {
		return err
	}
	c.pd = pds[i]
	c.Choice = Choice{Index: i, Name: cands[i].name, Type: typeName(cands[i].kind), Reason: reason}
	c.Limits = readLimits(c.in, c.pd)
	c.mem = c.in.MemoryProperties(c.pd)
	c.family, _ = computeFamily(c.in.QueueFamilies(c.pd))
	props, _ := c.in.Properties(c.pd)
	c.vendor = props.VendorID
	if c.maxAlloc = c.in.MaxAllocation(c.pd); c.maxAlloc == 0 {
		c.maxAlloc = slices.Max(append(c.Limits.HeapBytes, 0))
	}
	featOK, missing, feat := kernelFeatures(c.in.Features(c.pd))
	var enable *vk.Features
	if featOK {
		enable = &feat
	}
	short := kernelLimits(c.Limits)
	if missing != "" {
		short = append([]string{missing}, short...)
	}
	c.gpuReady, c.missing = len(short) == 0, strings.Join(short, ", ")
	if c.dev, err = c.in.CreateDevice(c.pd, c.family, nil, enable); err != nil {
		return fmt.Errorf("vulkan: %s: %w", c.Choice.Name, err)
	}
	c.queue = c.dev.Queue(c.family, 0)
	if c.pool, err = c.dev.CreateCommandPool(c.family); err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	return nil
}

// kernelFeatures returns the features the engine's kernels need, enabled, and whether
// the device has them all (else which it lacks); the optional ones it has are enabled
// too.
func kernelFeatures(have vk.Features) (bool, string, vk.Features) {
	var f vk.Features
	var missing []string
	need := func(ok uint32, name string, set *uint32) {
		if ok == 0 {
			missing = append(missing, name)
		}
		*set = ok
	}
	need(have.V12.BufferDeviceAddress, "bufferDeviceAddress", &f.V12.BufferDeviceAddress)
	need(have.V11.StorageBuffer16BitAccess, "storageBuffer16BitAccess", &f.V11.StorageBuffer16BitAccess)
	need(have.V12.StorageBuffer8BitAccess, "storageBuffer8BitAccess", &f.V12.StorageBuffer8BitAccess)
	need(have.Base.ShaderInt64, "shaderInt64", &f.Base.ShaderInt64)
	f.Base.ShaderInt16 = have.Base.ShaderInt16
	f.V12.ShaderInt8 = have.V12.ShaderInt8
	if len(missing) > 0 {
		return false, strings.Join(missing, ", "), vk.Features{}
	}
	return true, "", f
}

// kernelSharedMemory is the shared memory a workgroup of the kernels may use at every
// model geometry the engine accepts (common.glsl; the engine's tgMemory).
const kernelSharedMemory = 32768

// kernelLimits returns the limits of l that fall short of the kernels' needs, each
// naming the limit, the device's value and the need: 32 KiB of shared memory and
// workgroups of maxThreads invocations. None when l meets them all.
func kernelLimits(l Limits) []string {
	var short []string
	need := func(name string, have uint32, want int) {
		if int64(have) < int64(want) {
			short = append(short, fmt.Sprintf("%s %d, need %d", name, have, want))
		}
	}
	need("maxComputeSharedMemorySize", l.MaxComputeSharedMemory, kernelSharedMemory)
	need("maxComputeWorkGroupInvocations", l.MaxWorkGroupInvocations, maxThreads)
	need("maxComputeWorkGroupSize[0]", l.MaxWorkGroupSize[0], maxThreads)
	if !l.SubgroupArithmetic { // every module declares it, emulated or not
		short = append(short, "subgroup arithmetic in compute shaders")
	}
	return short
}

// memoryTypes returns the memory types having each of the flag sets in turn, in the
// device's order within each, without repeats.
func (c *Context) memoryTypes(prefs ...uint32) []uint32 {
	var out []uint32
	seen := map[uint32]bool{}
	for _, want := range prefs {
		for i := range c.mem.MemoryTypeCount {
			if !seen[i] && c.mem.MemoryTypes[i].PropertyFlags&want == want {
				seen[i] = true
				out = append(out, i)
			}
		}
	}
	return out
}

// Close waits for the device and destroys everything the context made.
func (c *Context) Close() {
	if c.dev != nil {
		c.dev.WaitIdle()
		c.dev.DestroyCommandPool(c.pool)
		c.dev.Destroy()
		c.dev = nil
	}
	if c.in != nil {
		c.in.Destroy()
	}
}

// Messages returns and forgets what the validation layer reported (nil without
// Options.Validation).
func (c *Context) Messages() []Message { return c.in.TakeMessages() }

// live returns the Vulkan objects the context has not destroyed, by kind.
func (c *Context) live() map[string]int { return c.in.Live() }

// Message is one report of the validation layer.
type Message = vk.Message
