package vulkan

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"
	"unsafe"

	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vk"
	"github.com/bonsai-go/sdk/bonsai/vulkan/shaders"
)

// hostBuffer is a storage buffer in host-visible, coherent memory, mapped.
type hostBuffer struct {
	buf  vk.Buffer
	mem  vk.DeviceMemory
	data []byte
}

func (c *Context) memoryType(bits, want uint32) (uint32, error) {
	for i := range c.mem.MemoryTypeCount {
		if bits&(1<<i) != 0 && c.mem.MemoryTypes[i].PropertyFlags&want == want {
			return i, nil
		}
	}
	return 0, fmt.Errorf("vulkan: %s has no memory type with flags %#x", c.Choice.Name, want)
}

func (c *Context) newHostBuffer(size uint64) (*hostBuffer, error) {
	b := &hostBuffer{}
	var err error
	info := vk.BufferCreateInfo{
		SType: vk.STRUCTURE_TYPE_BUFFER_CREATE_INFO, Size: size,
		Usage: vk.BUFFER_USAGE_STORAGE_BUFFER_BIT, SharingMode: vk.SHARING_MODE_EXCLUSIVE,
	}
	if b.buf, err = c.dev.CreateBuffer(&info); err != nil {
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	req := c.dev.BufferMemoryRequirements(b.buf)
	mt, err := c.memoryType(req.MemoryTypeBits, vk.MEMORY_PROPERTY_HOST_VISIBLE_BIT|vk.MEMORY_PROPERTY_HOST_COHERENT_BIT)
	if err != nil {
		c.freeHostBuffer(b)
		return nil, err
	}
	alloc := vk.MemoryAllocateInfo{SType: vk.STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, AllocationSize: req.Size, MemoryTypeIndex: mt}
	if b.mem, err = c.dev.AllocateMemory(&alloc); err == nil {
		if err = c.dev.BindBufferMemory(b.buf, b.mem, 0); err == nil {
			b.data, err = c.dev.MapMemory(b.mem, 0, size)
		}
	}
	if err != nil {
		c.freeHostBuffer(b)
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	return b, nil
}

func (c *Context) freeHostBuffer(b *hostBuffer) {
	if b.data != nil {
		c.dev.UnmapMemory(b.mem)
	}
	c.dev.DestroyBuffer(b.buf)
	c.dev.FreeMemory(b.mem)
}

func (b *hostBuffer) floats() []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b.data))), len(b.data)/4)
}

// kernel is a compute pipeline over storage buffers of set 0 with push constants.
type kernel struct {
	module vk.ShaderModule
	set    vk.DescriptorSetLayout
	layout vk.PipelineLayout
	pipe   vk.Pipeline
}

func (c *Context) newKernel(spirv []byte, buffers int, pushBytes uint32, spec []uint32) (*kernel, error) {
	k := &kernel{}
	words := make([]uint32, len(spirv)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(spirv[4*i:])
	}
	var err error
	if k.module, err = c.dev.CreateShaderModule(words); err != nil {
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	bindings := make([]vk.DescriptorSetLayoutBinding, buffers)
	for i := range bindings {
		bindings[i] = vk.DescriptorSetLayoutBinding{
			Binding: uint32(i), DescriptorType: vk.DESCRIPTOR_TYPE_STORAGE_BUFFER, DescriptorCount: 1, StageFlags: vk.SHADER_STAGE_COMPUTE_BIT,
		}
	}
	if k.set, err = c.dev.CreateDescriptorSetLayout(bindings); err == nil {
		push := []vk.PushConstantRange{{StageFlags: vk.SHADER_STAGE_COMPUTE_BIT, Size: pushBytes}}
		if k.layout, err = c.dev.CreatePipelineLayout([]vk.DescriptorSetLayout{k.set}, push); err == nil {
			k.pipe, err = c.dev.CreateComputePipeline(k.module, "main", k.layout, spec)
		}
	}
	if err != nil {
		c.freeKernel(k)
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	return k, nil
}

func (c *Context) freeKernel(k *kernel) {
	c.dev.DestroyPipeline(k.pipe)
	c.dev.DestroyPipelineLayout(k.layout)
	c.dev.DestroyDescriptorSetLayout(k.set)
	c.dev.DestroyShaderModule(k.module)
}

// record is what a run records into its command buffer, given the bound descriptor set.
type record func(cb vk.CommandBuffer, set vk.DescriptorSet)

// run binds bufs to a fresh descriptor set of k, records with rec, submits and waits.
// bind is false only for the test that leaves the set unbound on purpose.
func (c *Context) run(ctx context.Context, k *kernel, bufs []*hostBuffer, bind bool, rec record) error {
	pool, err := c.dev.CreateDescriptorPool(1, []vk.DescriptorPoolSize{{Type: vk.DESCRIPTOR_TYPE_STORAGE_BUFFER, DescriptorCount: uint32(len(bufs))}})
	if err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	defer c.dev.DestroyDescriptorPool(pool)
	sets, err := c.dev.AllocateDescriptorSets(pool, []vk.DescriptorSetLayout{k.set})
	if err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	var p runtime.Pinner
	infos := make([]vk.DescriptorBufferInfo, len(bufs))
	writes := make([]vk.WriteDescriptorSet, len(bufs))
	for i, b := range bufs {
		infos[i] = vk.DescriptorBufferInfo{Buffer: b.buf, Range: vk.WholeSize}
		writes[i] = vk.WriteDescriptorSet{
			SType: vk.STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, DstSet: sets[0], DstBinding: uint32(i),
			DescriptorCount: 1, DescriptorType: vk.DESCRIPTOR_TYPE_STORAGE_BUFFER, PBufferInfo: vk.Ptr(&p, &infos[i]),
		}
	}
	c.dev.UpdateDescriptorSets(writes)
	p.Unpin()

	cb, err := c.dev.AllocateCommandBuffer(c.pool)
	if err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	defer c.dev.FreeCommandBuffer(c.pool, cb)
	if err := c.dev.Begin(cb); err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	c.dev.BindComputePipeline(cb, k.pipe)
	if bind {
		c.dev.BindDescriptorSets(cb, k.layout, 0, sets)
	}
	rec(cb, sets[0])
	c.dev.ComputeBarrier(cb, vk.PIPELINE_STAGE_HOST_BIT, vk.ACCESS_HOST_READ_BIT)
	if err := c.dev.End(cb); err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	fence, err := c.dev.CreateFence()
	if err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	defer c.dev.DestroyFence(fence)
	if err := c.dev.Submit(c.queue, []vk.CommandBuffer{cb}, fence); err != nil {
		return fmt.Errorf("vulkan: %w", err)
	}
	// Wait in slices so that a cancelled context is noticed; the work itself cannot be
	// withdrawn, so a cancelled run still waits for it before freeing what it uses.
	for {
		err := c.dev.WaitFence(fence, uint64(50*time.Millisecond))
		if err == nil {
			return ctx.Err()
		}
		if !errors.Is(err, vk.Result(vk.TIMEOUT)) {
			return fmt.Errorf("vulkan: %w", err)
		}
	}
}

// rmsNorm runs shaders.RMSNorm over rows of x (each len(w) long) on the device.
func (c *Context) rmsNorm(ctx context.Context, x, w []float32, eps float32, bind bool) ([]float32, error) {
	n := len(w)
	if n == 0 || len(x)%n != 0 {
		return nil, fmt.Errorf("vulkan: rmsnorm of %d values in rows of %d", len(x), n)
	}
	group := min(256, c.Limits.MaxWorkGroupInvocations, c.Limits.MaxWorkGroupSize[0])
	k, err := c.newKernel(shaders.RMSNorm, 3, 8, []uint32{group})
	if err != nil {
		return nil, err
	}
	defer c.freeKernel(k)
	var bufs []*hostBuffer
	defer func() {
		for _, b := range bufs {
			c.freeHostBuffer(b)
		}
	}()
	for _, size := range []int{len(x), n, len(x)} {
		b, err := c.newHostBuffer(uint64(4 * size))
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, b)
	}
	copy(bufs[0].floats(), x)
	copy(bufs[1].floats(), w)
	push := binary.LittleEndian.AppendUint32(nil, uint32(n))
	push = binary.LittleEndian.AppendUint32(push, math.Float32bits(eps))
	err = c.run(ctx, k, bufs, bind, func(cb vk.CommandBuffer, _ vk.DescriptorSet) {
		c.dev.PushConstants(cb, k.layout, 0, push)
		c.dev.Dispatch(cb, uint32(len(x)/n), 1, 1)
	})
	if err != nil {
		return nil, err
	}
	return append([]float32(nil), bufs[2].floats()...), nil
}
