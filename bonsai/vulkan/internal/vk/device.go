package vk

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Device is a VkDevice with its commands, made for compute on one queue family.
type Device struct {
	handle uintptr
	in     *Instance
	fn     deviceCommands
}

type deviceCommands struct {
	destroyDevice, getDeviceQueue, deviceWaitIdle                               uintptr
	createBuffer, destroyBuffer, bufferMemoryRequirements                       uintptr
	allocateMemory, freeMemory, bindBufferMemory, mapMemory, unmapMemory        uintptr
	createShaderModule, destroyShaderModule                                     uintptr
	createDescriptorSetLayout, destroyDescriptorSetLayout                       uintptr
	createDescriptorPool, destroyDescriptorPool, resetDescriptorPool            uintptr
	allocateDescriptorSets, updateDescriptorSets                                uintptr
	createPipelineLayout, destroyPipelineLayout                                 uintptr
	createComputePipelines, destroyPipeline                                     uintptr
	createCommandPool, destroyCommandPool, allocateCommandBuffers, freeCommands uintptr
	beginCommandBuffer, endCommandBuffer, resetCommandBuffer                    uintptr
	cmdBindPipeline, cmdBindDescriptorSets, cmdPushConstants, cmdDispatch       uintptr
	cmdPipelineBarrier, cmdCopyBuffer, cmdFillBuffer                            uintptr
	createFence, destroyFence, waitForFences, resetFences                       uintptr
	queueSubmit, queueWaitIdle                                                  uintptr
	getBufferDeviceAddress                                                      uintptr
}

func (f *deviceCommands) table() []struct {
	fn   *uintptr
	name string
} {
	return []struct {
		fn   *uintptr
		name string
	}{
		{&f.destroyDevice, "vkDestroyDevice"}, {&f.getDeviceQueue, "vkGetDeviceQueue"}, {&f.deviceWaitIdle, "vkDeviceWaitIdle"},
		{&f.createBuffer, "vkCreateBuffer"}, {&f.destroyBuffer, "vkDestroyBuffer"},
		{&f.bufferMemoryRequirements, "vkGetBufferMemoryRequirements"},
		{&f.allocateMemory, "vkAllocateMemory"}, {&f.freeMemory, "vkFreeMemory"},
		{&f.bindBufferMemory, "vkBindBufferMemory"}, {&f.mapMemory, "vkMapMemory"}, {&f.unmapMemory, "vkUnmapMemory"},
		{&f.createShaderModule, "vkCreateShaderModule"}, {&f.destroyShaderModule, "vkDestroyShaderModule"},
		{&f.createDescriptorSetLayout, "vkCreateDescriptorSetLayout"}, {&f.destroyDescriptorSetLayout, "vkDestroyDescriptorSetLayout"},
		{&f.createDescriptorPool, "vkCreateDescriptorPool"}, {&f.destroyDescriptorPool, "vkDestroyDescriptorPool"},
		{&f.resetDescriptorPool, "vkResetDescriptorPool"},
		{&f.allocateDescriptorSets, "vkAllocateDescriptorSets"}, {&f.updateDescriptorSets, "vkUpdateDescriptorSets"},
		{&f.createPipelineLayout, "vkCreatePipelineLayout"}, {&f.destroyPipelineLayout, "vkDestroyPipelineLayout"},
		{&f.createComputePipelines, "vkCreateComputePipelines"}, {&f.destroyPipeline, "vkDestroyPipeline"},
		{&f.createCommandPool, "vkCreateCommandPool"}, {&f.destroyCommandPool, "vkDestroyCommandPool"},
		{&f.allocateCommandBuffers, "vkAllocateCommandBuffers"}, {&f.freeCommands, "vkFreeCommandBuffers"},
		{&f.beginCommandBuffer, "vkBeginCommandBuffer"}, {&f.endCommandBuffer, "vkEndCommandBuffer"},
		{&f.resetCommandBuffer, "vkResetCommandBuffer"},
		{&f.cmdBindPipeline, "vkCmdBindPipeline"}, {&f.cmdBindDescriptorSets, "vkCmdBindDescriptorSets"},
		{&f.cmdPushConstants, "vkCmdPushConstants"}, {&f.cmdDispatch, "vkCmdDispatch"},
		{&f.cmdPipelineBarrier, "vkCmdPipelineBarrier"}, {&f.cmdCopyBuffer, "vkCmdCopyBuffer"}, {&f.cmdFillBuffer, "vkCmdFillBuffer"},
		{&f.createFence, "vkCreateFence"}, {&f.destroyFence, "vkDestroyFence"},
		{&f.waitForFences, "vkWaitForFences"}, {&f.resetFences, "vkResetFences"},
		{&f.queueSubmit, "vkQueueSubmit"}, {&f.queueWaitIdle, "vkQueueWaitIdle"},
		{&f.getBufferDeviceAddress, "vkGetBufferDeviceAddress"},
	}
}

// CreateDevice creates a logical device on pd with one queue from queueFamily, the
// given device extensions and, when features is not nil, the features it enables
// (chained as VkPhysicalDeviceFeatures2, Vulkan 1.1 and 1.2 features; its PNext fields
// are set here).
func (in *Instance) CreateDevice(pd PhysicalDevice, queueFamily uint32, extensions []string, features *Features) (*Device, error) {
	var p runtime.Pinner
	defer p.Unpin()
	priority := float32(1)
	queue := DeviceQueueCreateInfo{
		SType: STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, QueueFamilyIndex: queueFamily,
		QueueCount: 1, PQueuePriorities: Ptr(&p, &priority),
	}
	info := DeviceCreateInfo{
		SType: STRUCTURE_TYPE_DEVICE_CREATE_INFO, QueueCreateInfoCount: 1, PQueueCreateInfos: Ptr(&p, &queue),
		EnabledExtensionCount: uint32(len(extensions)), PpEnabledExtensionNames: Strings(&p, extensions),
	}
	if features != nil {
		f := *features
		f.V11.SType, f.V12.SType = STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES
		f.V12.PNext = 0
		f.V11.PNext = Ptr(&p, &f.V12)
		f2 := PhysicalDeviceFeatures2{SType: STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, PNext: Ptr(&p, &f.V11), Features: f.Base}
		info.PNext = Ptr(&p, &f2)
	}
	d := &Device{in: in}
	if err := check("vkCreateDevice", syscallN(in.createDevice, uintptr(pd), Ptr(&p, &info), 0, Ptr(&p, &d.handle))); err != nil {
		return nil, err
	}
	in.counts.add("device", 1)
	for _, f := range d.fn.table() {
		if *f.fn = procAddr(in.getDeviceProcAddr, d.handle, f.name); *f.fn == 0 {
			d.Destroy()
			return nil, fmt.Errorf("%w: the device has no %s", ErrUnavailable, f.name)
		}
	}
	return d, nil
}

// Destroy destroys the device; everything made from it must be destroyed first.
func (d *Device) Destroy() {
	if d.handle != 0 {
		syscallN(d.fn.destroyDevice, d.handle, 0)
		d.handle = 0
		d.in.counts.add("device", -1)
	}
}

// Queue returns queue index of family.
func (d *Device) Queue(family, index uint32) Queue {
	var q Queue
	var p runtime.Pinner
	defer p.Unpin()
	syscallN(d.fn.getDeviceQueue, d.handle, uintptr(family), uintptr(index), Ptr(&p, &q))
	return q
}

// WaitIdle waits until the device has finished all its work.
func (d *Device) WaitIdle() error {
	return check("vkDeviceWaitIdle", syscallN(d.fn.deviceWaitIdle, d.handle))
}

// create calls a vkCreate* command of the form (device, info, allocator, out) and counts
// the object.
func create[T any, H ~uint64](d *Device, kind string, fn uintptr, info *T, p *runtime.Pinner) (H, error) {
	var h H
	if err := check("vkCreate "+kind, syscallN(fn, d.handle, Ptr(p, info), 0, Ptr(p, &h))); err != nil {
		return 0, err
	}
	d.in.counts.add(kind, 1)
	return h, nil
}

// destroy calls a vkDestroy* or vkFree* command of the form (device, handle, allocator).
func destroy[H ~uint64](d *Device, kind string, fn uintptr, h H) {
	if h != 0 {
		syscallN(fn, d.handle, uintptr(h), 0)
		d.in.counts.add(kind, -1)
	}
}

// CreateBuffer creates a buffer; info's pointers must be pinned by the caller.
func (d *Device) CreateBuffer(info *BufferCreateInfo) (Buffer, error) {
	var p runtime.Pinner
	defer p.Unpin()
	return create[BufferCreateInfo, Buffer](d, "buffer", d.fn.createBuffer, info, &p)
}

// DestroyBuffer destroys a buffer.
func (d *Device) DestroyBuffer(b Buffer) { destroy(d, "buffer", d.fn.destroyBuffer, b) }

// BufferMemoryRequirements returns what memory a buffer needs.
func (d *Device) BufferMemoryRequirements(b Buffer) MemoryRequirements {
	var r MemoryRequirements
	var p runtime.Pinner
	defer p.Unpin()
	syscallN(d.fn.bufferMemoryRequirements, d.handle, uintptr(b), Ptr(&p, &r))
	return r
}

// AllocateMemory allocates device memory.
func (d *Device) AllocateMemory(info *MemoryAllocateInfo) (DeviceMemory, error) {
	var p runtime.Pinner
	defer p.Unpin()
	return create[MemoryAllocateInfo, DeviceMemory](d, "memory", d.fn.allocateMemory, info, &p)
}

// FreeMemory frees device memory.
func (d *Device) FreeMemory(m DeviceMemory) { destroy(d, "memory", d.fn.freeMemory, m) }

// BindBufferMemory binds memory at offset to a buffer.
func (d *Device) BindBufferMemory(b Buffer, m DeviceMemory, offset uint64) error {
	return check("vkBindBufferMemory", syscallN(d.fn.bindBufferMemory, d.handle, uintptr(b), uintptr(m), uintptr(offset)))
}

// MapMemory maps size bytes of host-visible memory from offset. The bytes are
// Vulkan's: they stay valid until UnmapMemory or FreeMemory.
func (d *Device) MapMemory(m DeviceMemory, offset, size uint64) ([]byte, error) {
	var addr uintptr
	var p runtime.Pinner
	defer p.Unpin()
	if err := check("vkMapMemory", syscallN(d.fn.mapMemory, d.handle, uintptr(m), uintptr(offset), uintptr(size), 0, Ptr(&p, &addr))); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(fromC(addr)), size), nil
}

// UnmapMemory unmaps memory.
func (d *Device) UnmapMemory(m DeviceMemory) { syscallN(d.fn.unmapMemory, d.handle, uintptr(m)) }

// CreateShaderModule creates a shader module from SPIR-V words.
func (d *Device) CreateShaderModule(code []uint32) (ShaderModule, error) {
	var p runtime.Pinner
	defer p.Unpin()
	info := ShaderModuleCreateInfo{SType: STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, CodeSize: uintptr(4 * len(code)), PCode: Slice(&p, code)}
	return create[ShaderModuleCreateInfo, ShaderModule](d, "shader module", d.fn.createShaderModule, &info, &p)
}

// DestroyShaderModule destroys a shader module.
func (d *Device) DestroyShaderModule(m ShaderModule) {
	destroy(d, "shader module", d.fn.destroyShaderModule, m)
}

// CreateDescriptorSetLayout creates a descriptor set layout of bindings.
func (d *Device) CreateDescriptorSetLayout(bindings []DescriptorSetLayoutBinding) (DescriptorSetLayout, error) {
	var p runtime.Pinner
	defer p.Unpin()
	info := DescriptorSetLayoutCreateInfo{
		SType: STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, BindingCount: uint32(len(bindings)), PBindings: Slice(&p, bindings),
	}
	return create[DescriptorSetLayoutCreateInfo, DescriptorSetLayout](d, "descriptor set layout", d.fn.createDescriptorSetLayout, &info, &p)
}

// DestroyDescriptorSetLayout destroys a descriptor set layout.
func (d *Device) DestroyDescriptorSetLayout(l DescriptorSetLayout) {
	destroy(d, "descriptor set layout", d.fn.destroyDescriptorSetLayout, l)
}

// CreateDescriptorPool creates a pool of maxSets sets drawing on sizes.
func (d *Device) CreateDescriptorPool(maxSets uint32, sizes []DescriptorPoolSize) (DescriptorPool, error) {
	var p runtime.Pinner
	defer p.Unpin()
	info := DescriptorPoolCreateInfo{
		SType: STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, MaxSets: maxSets,
		PoolSizeCount: uint32(len(sizes)), PPoolSizes: Slice(&p, sizes),
	}
	return create[DescriptorPoolCreateInfo, DescriptorPool](d, "descriptor pool", d.fn.createDescriptorPool, &info, &p)
}

// DestroyDescriptorPool destroys a descriptor pool and frees its sets.
func (d *Device) DestroyDescriptorPool(pool DescriptorPool) {
	destroy(d, "descriptor pool", d.fn.destroyDescriptorPool, pool)
}

// AllocateDescriptorSets allocates one set per layout from pool.
func (d *Device) AllocateDescriptorSets(pool DescriptorPool, layouts []DescriptorSetLayout) ([]DescriptorSet, error) {
	var p runtime.Pinner
	defer p.Unpin()
	sets := make([]DescriptorSet, len(layouts))
	info := DescriptorSetAllocateInfo{
		SType: STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, DescriptorPool: pool,
		DescriptorSetCount: uint32(len(layouts)), PSetLayouts: Slice(&p, layouts),
	}
	if err := check("vkAllocateDescriptorSets", syscallN(d.fn.allocateDescriptorSets, d.handle, Ptr(&p, &info), Slice(&p, sets))); err != nil {
		return nil, err
	}
	return sets, nil
}

// UpdateDescriptorSets writes descriptors; the writes' pointers must be pinned by the
// caller.
func (d *Device) UpdateDescriptorSets(writes []WriteDescriptorSet) {
	var p runtime.Pinner
	defer p.Unpin()
	syscallN(d.fn.updateDescriptorSets, d.handle, uintptr(len(writes)), Slice(&p, writes), 0, 0)
}

// CreatePipelineLayout creates a pipeline layout of set layouts and push constant ranges.
func (d *Device) CreatePipelineLayout(sets []DescriptorSetLayout, push []PushConstantRange) (PipelineLayout, error) {
	var p runtime.Pinner
	defer p.Unpin()
	info := PipelineLayoutCreateInfo{
		SType:          STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		SetLayoutCount: uint32(len(sets)), PSetLayouts: Slice(&p, sets),
		PushConstantRangeCount: uint32(len(push)), PPushConstantRanges: Slice(&p, push),
	}
	return create[PipelineLayoutCreateInfo, PipelineLayout](d, "pipeline layout", d.fn.createPipelineLayout, &info, &p)
}

// DestroyPipelineLayout destroys a pipeline layout.
func (d *Device) DestroyPipelineLayout(l PipelineLayout) {
	destroy(d, "pipeline layout", d.fn.destroyPipelineLayout, l)
}

// CreateComputePipeline creates a compute pipeline running entry of module under
// layout, with 32-bit specialization constants spec (constant ID i is spec[i]).
func (d *Device) CreateComputePipeline(module ShaderModule, entry string, layout PipelineLayout, spec []uint32) (Pipeline, error) {
	var p runtime.Pinner
	defer p.Unpin()
	entries := make([]SpecializationMapEntry, len(spec))
	for i := range spec {
		entries[i] = SpecializationMapEntry{ConstantID: uint32(i), Offset: uint32(4 * i), Size: 4}
	}
	si := SpecializationInfo{
		MapEntryCount: uint32(len(spec)), PMapEntries: Slice(&p, entries),
		DataSize: uintptr(4 * len(spec)), PData: Slice(&p, spec),
	}
	info := ComputePipelineCreateInfo{
		SType: STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		Stage: PipelineShaderStageCreateInfo{
			SType: STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, Stage: SHADER_STAGE_COMPUTE_BIT,
			Module: module, PName: CString(&p, entry), PSpecializationInfo: Ptr(&p, &si),
		},
		Layout: layout,
	}
	var pl Pipeline
	if err := check("vkCreateComputePipelines", syscallN(d.fn.createComputePipelines, d.handle, 0, 1, Ptr(&p, &info), 0, Ptr(&p, &pl))); err != nil {
		return 0, err
	}
	d.in.counts.add("pipeline", 1)
	return pl, nil
}

// DestroyPipeline destroys a pipeline.
func (d *Device) DestroyPipeline(pl Pipeline) { destroy(d, "pipeline", d.fn.destroyPipeline, pl) }

// CreateCommandPool creates a command pool for queueFamily whose buffers can be reset.
func (d *Device) CreateCommandPool(queueFamily uint32) (CommandPool, error) {
	var p runtime.Pinner
	defer p.Unpin()
	info := CommandPoolCreateInfo{
		SType: STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, Flags: COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, QueueFamilyIndex: queueFamily,
	}
	return create[CommandPoolCreateInfo, CommandPool](d, "command pool", d.fn.createCommandPool, &info, &p)
}

// DestroyCommandPool destroys a command pool; free its buffers first.
func (d *Device) DestroyCommandPool(pool CommandPool) {
	destroy(d, "command pool", d.fn.destroyCommandPool, pool)
}

// AllocateCommandBuffer allocates one primary command buffer from pool.
func (d *Device) AllocateCommandBuffer(pool CommandPool) (CommandBuffer, error) {
	var p runtime.Pinner
	defer p.Unpin()
	info := CommandBufferAllocateInfo{
		SType: STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, CommandPool: pool, Level: COMMAND_BUFFER_LEVEL_PRIMARY, CommandBufferCount: 1,
	}
	var cb CommandBuffer
	if err := check("vkAllocateCommandBuffers", syscallN(d.fn.allocateCommandBuffers, d.handle, Ptr(&p, &info), Ptr(&p, &cb))); err != nil {
		return 0, err
	}
	d.in.counts.add("command buffer", 1)
	return cb, nil
}

// FreeCommandBuffer frees a command buffer of pool.
func (d *Device) FreeCommandBuffer(pool CommandPool, cb CommandBuffer) {
	if cb != 0 {
		var p runtime.Pinner
		defer p.Unpin()
		syscallN(d.fn.freeCommands, d.handle, uintptr(pool), 1, Ptr(&p, &cb))
		d.in.counts.add("command buffer", -1)
	}
}

// Begin begins recording cb for one submission.
func (d *Device) Begin(cb CommandBuffer) error {
	var p runtime.Pinner
	defer p.Unpin()
	info := CommandBufferBeginInfo{SType: STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, Flags: COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT}
	return check("vkBeginCommandBuffer", syscallN(d.fn.beginCommandBuffer, uintptr(cb), Ptr(&p, &info)))
}

// End ends recording cb.
func (d *Device) End(cb CommandBuffer) error {
	return check("vkEndCommandBuffer", syscallN(d.fn.endCommandBuffer, uintptr(cb)))
}

// BindComputePipeline records binding a compute pipeline.
func (d *Device) BindComputePipeline(cb CommandBuffer, pl Pipeline) {
	syscallN(d.fn.cmdBindPipeline, uintptr(cb), PIPELINE_BIND_POINT_COMPUTE, uintptr(pl))
}

// BindDescriptorSets records binding sets from set number first for compute.
func (d *Device) BindDescriptorSets(cb CommandBuffer, layout PipelineLayout, first uint32, sets []DescriptorSet) {
	var p runtime.Pinner
	defer p.Unpin()
	syscallN(d.fn.cmdBindDescriptorSets, uintptr(cb), PIPELINE_BIND_POINT_COMPUTE, uintptr(layout),
		uintptr(first), uintptr(len(sets)), Slice(&p, sets), 0, 0)
}

// PushConstants records setting push constants for the compute stage from offset.
func (d *Device) PushConstants(cb CommandBuffer, layout PipelineLayout, offset uint32, data []byte) {
	var p runtime.Pinner
	defer p.Unpin()
	syscallN(d.fn.cmdPushConstants, uintptr(cb), uintptr(layout), SHADER_STAGE_COMPUTE_BIT, uintptr(offset), uintptr(len(data)), Slice(&p, data))
}

// Dispatch records a dispatch of x·y·z workgroups.
func (d *Device) Dispatch(cb CommandBuffer, x, y, z uint32) {
	syscallN(d.fn.cmdDispatch, uintptr(cb), uintptr(x), uintptr(y), uintptr(z))
}

// ComputeBarrier records a memory barrier making compute shader writes visible to the
// stages and accesses in dstStage and dstAccess.
func (d *Device) ComputeBarrier(cb CommandBuffer, dstStage, dstAccess uint32) {
	var p runtime.Pinner
	defer p.Unpin()
	b := MemoryBarrier{SType: STRUCTURE_TYPE_MEMORY_BARRIER, SrcAccessMask: ACCESS_SHADER_WRITE_BIT, DstAccessMask: dstAccess}
	syscallN(d.fn.cmdPipelineBarrier, uintptr(cb), PIPELINE_STAGE_COMPUTE_SHADER_BIT, uintptr(dstStage), 0, 1, Ptr(&p, &b), 0, 0, 0, 0)
}

// Barrier records a global memory barrier from (srcStage, srcAccess) to (dstStage,
// dstAccess).
func (d *Device) Barrier(cb CommandBuffer, srcStage, srcAccess, dstStage, dstAccess uint32) {
	var p runtime.Pinner
	defer p.Unpin()
	b := MemoryBarrier{SType: STRUCTURE_TYPE_MEMORY_BARRIER, SrcAccessMask: srcAccess, DstAccessMask: dstAccess}
	syscallN(d.fn.cmdPipelineBarrier, uintptr(cb), uintptr(srcStage), uintptr(dstStage), 0, 1, Ptr(&p, &b), 0, 0, 0, 0)
}

// CopyBuffer records copying regions from src to dst.
func (d *Device) CopyBuffer(cb CommandBuffer, src, dst Buffer, regions []BufferCopy) {
	var p runtime.Pinner
	defer p.Unpin()
	syscallN(d.fn.cmdCopyBuffer, uintptr(cb), uintptr(src), uintptr(dst), uintptr(len(regions)), Slice(&p, regions))
}

// CreateFence creates an unsignalled fence.
func (d *Device) CreateFence() (Fence, error) {
	var p runtime.Pinner
	defer p.Unpin()
	info := FenceCreateInfo{SType: STRUCTURE_TYPE_FENCE_CREATE_INFO}
	return create[FenceCreateInfo, Fence](d, "fence", d.fn.createFence, &info, &p)
}

// DestroyFence destroys a fence.
func (d *Device) DestroyFence(f Fence) { destroy(d, "fence", d.fn.destroyFence, f) }

// WaitFence waits up to timeout nanoseconds for f; a timeout is an error wrapping
// Result(TIMEOUT).
func (d *Device) WaitFence(f Fence, timeout uint64) error {
	var p runtime.Pinner
	defer p.Unpin()
	return check("vkWaitForFences", syscallN(d.fn.waitForFences, d.handle, 1, Ptr(&p, &f), 1, uintptr(timeout)))
}

// ResetFence returns f to unsignalled.
func (d *Device) ResetFence(f Fence) error {
	var p runtime.Pinner
	defer p.Unpin()
	return check("vkResetFences", syscallN(d.fn.resetFences, d.handle, 1, Ptr(&p, &f)))
}

// Submit submits command buffers to q, signalling fence when they finish.
func (d *Device) Submit(q Queue, cbs []CommandBuffer, fence Fence) error {
	var p runtime.Pinner
	defer p.Unpin()
	info := SubmitInfo{SType: STRUCTURE_TYPE_SUBMIT_INFO, CommandBufferCount: uint32(len(cbs)), PCommandBuffers: Slice(&p, cbs)}
	return check("vkQueueSubmit", syscallN(d.fn.queueSubmit, uintptr(q), 1, Ptr(&p, &info), uintptr(fence)))
}

// BufferDeviceAddress returns the device address of b, whose memory was allocated with
// MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT and which was made with
// BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT.
func (d *Device) BufferDeviceAddress(b Buffer) uint64 {
	var p runtime.Pinner
	defer p.Unpin()
	info := BufferDeviceAddressInfo{SType: STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO, Buffer: b}
	return uint64(syscallN(d.fn.getBufferDeviceAddress, d.handle, Ptr(&p, &info)))
}

// AllocateMemoryFlags allocates memory with VkMemoryAllocateFlagsInfo flags (such as
// MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT).
func (d *Device) AllocateMemoryFlags(size uint64, typeIndex, flags uint32) (DeviceMemory, error) {
	var p runtime.Pinner
	defer p.Unpin()
	fi := MemoryAllocateFlagsInfo{SType: STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO, Flags: flags}
	info := MemoryAllocateInfo{SType: STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, PNext: Ptr(&p, &fi), AllocationSize: size, MemoryTypeIndex: typeIndex}
	return create[MemoryAllocateInfo, DeviceMemory](d, "memory", d.fn.allocateMemory, &info, &p)
}
