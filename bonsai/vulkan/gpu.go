package vulkan

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"

	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vk"
	"github.com/bonsai-go/sdk/bonsai/vulkan/shaders"
	"github.com/bonsai-go/sdk/internal/gpu"
)

// The GPU engine (internal/gpu/engine) records its forward passes against gpu.Device, a
// Metal-shaped interface: buffers with host views, kernels by name, grids of
// threadgroups, arguments by buffer index. gpuDevice implements it on a Context, with
// the GLSL translations of the engine's kernels (package shaders) and this binding:
//
//   - Every buffer has a device address (Vulkan 1.2's bufferDeviceAddress). A dispatch
//     writes a record — the 24 addresses of its [[buffer(i)]] arguments, offsets
//     included, and the words of its argument struct — into an arena of host-visible
//     memory, and pushes the record's address as its only push constant. No descriptor
//     sets, no offset alignment rule, and no maxStorageBufferRange: a kernel reaches a
//     whole allocation.
//   - Dispatches run in order, each after the last's writes (a compute-to-compute
//     barrier after each), as Metal's serial compute encoder runs them; a final barrier
//     makes the writes visible to the host, which reads them after Wait.
//   - Buffers the engine reads or writes from the host (NewBuffer) live in host-visible
//     memory, device-local where the device offers it (resizable BAR, integrated GPUs,
//     lavapipe); the weights (WrapNoCopy) are copied once into device-local memory
//     through a staging buffer, since Vulkan cannot wrap the mapped file.
//   - A kernel's pipeline is specialised on its workgroup size (constant 0), the model's
//     sizes (the Metal library's macros, constants 1 and 3–5) and SG_NATIVE (constant
//     6), and built at its first dispatch.

// Record layout (common.glsl): 16 addresses then 16 argument words.
const (
	recordAddrs = 24
	recordWords = 16
	recordBytes = 8*recordAddrs + 4*recordWords
	recordAlign = 256
	arenaBytes  = 256 * recordAlign
	// maxThreads is the largest workgroup the kernels are written for (their shared
	// scratch is 4 bytes a thread).
	maxThreads = 256
	// stagingBytes is the staging buffer's size for weight uploads.
	stagingBytes = 64 << 20
)

// specIDs maps the Metal library's macros to the kernels' specialization constants
// (constant 2, once the embedding width of a gdn_decode that held it, is free). The
// engine compiles the matrix-vector kernels once per chunk size, BONSAI_MAXCH: each
// Compile's constants make pipelines of their own.
var specIDs = map[string]int{
	"BONSAI_MAXCH": 1, "BONSAI_GDN_D": 3, "BONSAI_GDN_REP": 4, "BONSAI_HD": 5,
}

const (
	specThreads = 0
	specNative  = 6
	specCount   = 7
)

type gpuDevice struct {
	c      *Context
	name   string
	native bool // SG_NATIVE: subgroups of exactly 32 invocations, in order
	layout vk.PipelineLayout

	mu      sync.Mutex // guards everything below, the command pool and the queue
	modules map[string]vk.ShaderModule
	pipes   map[pipeKey]vk.Pipeline
	arenas  []*vkBuffer // free arenas
	fences  []vk.Fence  // free fences
	hostMT  []uint32    // memory types for host-visible buffers, best first
	devMT   []uint32    // memory types for device-local buffers, best first
	maxMem  uint64      // the largest single allocation
	closed  bool
	// piece is the size of an upload's pieces (stagingBytes; tests shrink it), and
	// staging makes uploads go through a staging buffer even to host-visible memory
	// (tests, on devices such as lavapipe whose memory is all host-visible).
	piece   int
	staging bool
	// messages receives the validation layer's reports (WithValidation).
	messages func(Message)
}

// report passes on what the validation layer said since the last call.
func (d *gpuDevice) report() {
	if d.messages == nil {
		return
	}
	for _, m := range d.c.Messages() {
		d.messages(m)
	}
}

type pipeKey struct {
	name string
	spec [specCount]uint32
}

var (
	_ gpu.Device   = (*gpuDevice)(nil)
	_ gpu.Uploader = (*gpuDevice)(nil)
)

// newGPUDevice makes the engine's device of an open context; it takes the context over.
func newGPUDevice(c *Context) (*gpuDevice, error) {
	d := &gpuDevice{c: c, modules: map[string]vk.ShaderModule{}, pipes: map[pipeKey]vk.Pipeline{}, piece: stagingBytes}
	d.maxMem = c.maxAlloc
	var err error
	if d.layout, err = c.dev.CreatePipelineLayout(nil, []vk.PushConstantRange{{StageFlags: vk.SHADER_STAGE_COMPUTE_BIT, Size: 8}}); err != nil {
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	const (
		hv = vk.MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.MEMORY_PROPERTY_HOST_COHERENT_BIT
		dl = vk.MEMORY_PROPERTY_DEVICE_LOCAL_BIT
	)
	d.hostMT = c.memoryTypes(hv|dl, hv)
	d.devMT = c.memoryTypes(dl, hv|dl, hv)
	if len(d.hostMT) == 0 {
		d.Close()
		return nil, fmt.Errorf("vulkan: %s has no host-visible coherent memory: %w", c.Choice.Name, ErrUnavailable)
	}
	sg := "SIMD-groups emulated in shared memory"
	if nativeSubgroups(c) {
		// The probe runs emulated (d.native still false), and the subgroups are used
		// only where it finds them 32 wide and in order.
		switch s, err := d.subgroupLayout(); {
		case err != nil:
			sg = fmt.Sprintf("SIMD-groups emulated (native asked for, but %v)", err)
		case s != 32:
			sg = fmt.Sprintf("SIMD-groups emulated (native asked for, but the probe ran subgroups of %d)", s)
		default:
			d.native = true
			sg = "SIMD-groups as subgroups of 32"
		}
	}
	d.name = fmt.Sprintf("Vulkan %s (%s; %s; %s)", c.Choice.Name, c.Choice.Type, c.Choice.Reason, sg)
	return d, nil
}

// nativeSubgroups reports whether the kernels' 32-lane SIMD-groups run as the device's
// own subgroups (SG_NATIVE): only where BONSAI_VULKAN_SUBGROUPS=native asks for it and
// the device runs subgroups of 32 with arithmetic (NVIDIA's warps) — and then
// newGPUDevice uses them only if subgroupLayout finds them in order. Otherwise they are
// emulated in shared memory, which is correct on any device: that path is the one the
// tests verify on lavapipe (subgroups of 8), and the native one has not yet run on a
// GPU, so it is not the default.
func nativeSubgroups(c *Context) bool {
	return os.Getenv("BONSAI_VULKAN_SUBGROUPS") == "native" && c.Limits.SubgroupSize == 32 && c.Limits.SubgroupArithmetic
}

// subgroupLayout runs the probe sgprobe (shaders/sgprobe.comp) through Dispatch, one
// workgroup of the most threads the kernels take (256) and one of 32, and returns the
// subgroup size S where both ran full subgroups of S in order (subgroupsInOrder). The
// sg_* helpers' SG_NATIVE assumes that layout with S = 32, and Vulkan does not promise
// it.
func (d *gpuDevice) subgroupLayout() (int, error) {
	threads := []int{d.maxWorkgroup(), 32}
	p, err := d.Compile(nil, nil, []string{"sgprobe"})
	if err != nil {
		return 0, err
	}
	out, err := d.NewBuffer(12 * (threads[0] + threads[1]))
	if err != nil {
		return 0, err
	}
	defer out.Release()
	cb, err := d.NewCommandBuffer()
	if err != nil {
		return 0, err
	}
	for i, t := range threads {
		cb.Dispatch(p["sgprobe"], gpu.Size{1, 1, 1}, gpu.Size{t, 1, 1}, gpu.Arg{Index: 1, Buf: out, Offset: 12 * threads[0] * i})
	}
	cb.Commit()
	if err := cb.Wait(); err != nil {
		return 0, fmt.Errorf("the subgroup probe failed: %w", err)
	}
	words := make([]uint32, out.Len()/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(out.Contents()[4*i:])
	}
	size := 0
	for _, t := range threads {
		s, err := subgroupsInOrder(words[:3*t])
		if err != nil {
			return 0, fmt.Errorf("at %d threads, %w", t, err)
		}
		if size != 0 && s != size {
			return 0, fmt.Errorf("subgroups of %d at %d threads but of %d at %d", size, threads[0], s, t)
		}
		size, words = s, words[3*t:]
	}
	return size, nil
}

// subgroupsInOrder reads sgprobe's words for one workgroup — each invocation's subgroup
// size, subgroup id and invocation id — and returns the size S (invocation 0's) where
// invocation i is invocation i%S of subgroup i/S, every one of size S and every
// subgroup full; otherwise an error names the first invocation that is not.
func subgroupsInOrder(words []uint32) (int, error) {
	n := len(words) / 3
	if n == 0 || len(words)%3 != 0 || words[0] == 0 {
		return 0, fmt.Errorf("the probe's %d words are not a workgroup's", len(words))
	}
	s := words[0]
	for i := range uint32(n) {
		w := words[3*i : 3*i+3]
		if w[0] != s || w[1] != i/s || w[2] != i%s {
			return 0, fmt.Errorf("invocation %d is invocation %d of subgroup %d (size %d), not %d of %d (size %d)",
				i, w[2], w[1], w[0], i%s, i/s, s)
		}
	}
	if r := uint32(n) % s; r != 0 {
		return 0, fmt.Errorf("invocation %d begins a partial subgroup (%d of %d)", uint32(n)-r, r, s)
	}
	return int(s), nil
}

func (d *gpuDevice) Name() string { return d.name }

// MaxBufferLength is the largest allocation the device makes in one piece.
func (d *gpuDevice) MaxBufferLength() int {
	return int(min(d.maxMem, uint64(math.MaxInt)))
}

func (d *gpuDevice) PageSize() int { return 4096 }

// RecommendedWorkingSet is the largest device-local heap: the engine refuses a model and
// states that would not fit it.
func (d *gpuDevice) RecommendedWorkingSet() int64 { return int64(d.c.Limits.DeviceLocalHeapBytes) }

// WorkingSetSource names the budget in the engine's messages.
func (d *gpuDevice) WorkingSetSource() string { return "its largest device-local memory heap" }

// vkBuffer is a buffer with its memory, its device address and, when host-visible, its
// mapping.
type vkBuffer struct {
	d    *gpuDevice
	buf  vk.Buffer
	mem  vk.DeviceMemory
	addr uint64
	n    int
	data []byte
}

func (b *vkBuffer) Len() int         { return b.n }
func (b *vkBuffer) Contents() []byte { return b.data }

func (b *vkBuffer) Release() {
	if b == nil || b.buf == 0 {
		return
	}
	b.d.mu.Lock()
	defer b.d.mu.Unlock()
	b.d.free(b)
}

// free destroys b; d.mu is held.
func (d *gpuDevice) free(b *vkBuffer) {
	if b.data != nil {
		d.c.dev.UnmapMemory(b.mem)
		b.data = nil
	}
	d.c.dev.DestroyBuffer(b.buf)
	d.c.dev.FreeMemory(b.mem)
	b.buf, b.mem = 0, 0
}

// alloc makes a buffer of size bytes in the first of the memory types that takes it,
// mapped when host-visible.
func (d *gpuDevice) alloc(size int, types []uint32) (*vkBuffer, error) {
	if size <= 0 {
		size = 16
	}
	size = (size + 15) &^ 15
	if uint64(size) > d.maxMem {
		return nil, fmt.Errorf("vulkan: a %d-byte buffer exceeds the device's largest allocation (%d bytes)", size, d.maxMem)
	}
	dev := d.c.dev
	info := vk.BufferCreateInfo{
		SType: vk.STRUCTURE_TYPE_BUFFER_CREATE_INFO, Size: uint64(size), SharingMode: vk.SHARING_MODE_EXCLUSIVE,
		Usage: vk.BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
			vk.BUFFER_USAGE_TRANSFER_SRC_BIT | vk.BUFFER_USAGE_TRANSFER_DST_BIT,
	}
	h, err := dev.CreateBuffer(&info)
	if err != nil {
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	b := &vkBuffer{d: d, buf: h, n: size}
	req := dev.BufferMemoryRequirements(h)
	var last error = fmt.Errorf("vulkan: no memory type fits a %d-byte buffer", size)
	for _, mt := range types {
		if req.MemoryTypeBits&(1<<mt) == 0 {
			continue
		}
		m, err := dev.AllocateMemoryFlags(req.Size, mt, vk.MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT)
		if err != nil {
			last = fmt.Errorf("vulkan: allocating %d bytes: %w", req.Size, err)
			continue // out of that heap: try the next type
		}
		b.mem = m
		if err := dev.BindBufferMemory(h, m, 0); err != nil {
			d.free(b)
			return nil, fmt.Errorf("vulkan: %w", err)
		}
		if d.c.mem.MemoryTypes[mt].PropertyFlags&vk.MEMORY_PROPERTY_HOST_VISIBLE_BIT != 0 {
			if b.data, err = dev.MapMemory(m, 0, uint64(size)); err != nil {
				d.free(b)
				return nil, fmt.Errorf("vulkan: %w", err)
			}
		}
		b.addr = dev.BufferDeviceAddress(h)
		return b, nil
	}
	dev.DestroyBuffer(h)
	return nil, fmt.Errorf("%w: %w", gpu.ErrOutOfMemory, last)
}

// NewBuffer allocates a zeroed host-visible buffer.
func (d *gpuDevice) NewBuffer(size int) (gpu.Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.alloc(size, d.hostMT)
	if err != nil {
		return nil, err
	}
	clear(b.data)
	return b, nil
}

// WrapNoCopy cannot wrap host memory on Vulkan: it copies, as Upload does.
func (d *gpuDevice) WrapNoCopy(mem []byte) (gpu.Buffer, error) {
	return d.Upload(context.Background(), mem, nil)
}

// Upload copies mem once into device-local memory — directly where that memory is
// host-visible (integrated GPUs, resizable BAR, lavapipe), else through a staging
// buffer — in pieces of stagingBytes, checking ctx and reporting the bytes copied after
// each. The buffer's Contents is nil unless the memory is host-visible.
func (d *gpuDevice) Upload(ctx context.Context, mem []byte, progress func(done int64)) (gpu.Buffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := d.alloc(len(mem), d.devMT)
	if err != nil {
		return nil, err
	}
	var st *vkBuffer
	if b.data == nil || d.staging {
		if st, err = d.alloc(min(d.piece, len(mem)), d.hostMT); err != nil {
			d.free(b)
			return nil, err
		}
		defer d.free(st)
	}
	dev := d.c.dev
	for off := 0; off < len(mem); off += d.piece {
		if err := ctx.Err(); err != nil {
			d.free(b)
			return nil, err
		}
		n := min(d.piece, len(mem)-off)
		if st == nil {
			copy(b.data[off:], mem[off:off+n])
		} else {
			copy(st.data, mem[off:off+n])
			err := d.oneShot(func(cb vk.CommandBuffer) {
				dev.CopyBuffer(cb, st.buf, b.buf, []vk.BufferCopy{{SrcOffset: 0, DstOffset: uint64(off), Size: uint64(n)}})
				dev.Barrier(cb, vk.PIPELINE_STAGE_TRANSFER_BIT, vk.ACCESS_TRANSFER_WRITE_BIT, vk.PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.ACCESS_SHADER_READ_BIT)
			})
			if err != nil {
				d.free(b)
				return nil, fmt.Errorf("vulkan: uploading weights: %w", err)
			}
		}
		if progress != nil {
			progress(int64(off + n))
		}
	}
	return b, nil
}

// oneShot records, submits and waits for one command buffer; d.mu is held.
func (d *gpuDevice) oneShot(rec func(vk.CommandBuffer)) error {
	dev := d.c.dev
	cb, err := dev.AllocateCommandBuffer(d.c.pool)
	if err != nil {
		return err
	}
	defer dev.FreeCommandBuffer(d.c.pool, cb)
	if err := dev.Begin(cb); err != nil {
		return err
	}
	rec(cb)
	if err := dev.End(cb); err != nil {
		return err
	}
	f, err := d.fence()
	if err != nil {
		return err
	}
	defer d.putFence(f)
	if err := dev.Submit(d.c.queue, []vk.CommandBuffer{cb}, f); err != nil {
		return err
	}
	return dev.WaitFence(f, math.MaxUint64)
}

func (d *gpuDevice) fence() (vk.Fence, error) {
	if n := len(d.fences); n > 0 {
		f := d.fences[n-1]
		d.fences = d.fences[:n-1]
		return f, nil
	}
	return d.c.dev.CreateFence()
}

func (d *gpuDevice) putFence(f vk.Fence) {
	if err := d.c.dev.ResetFence(f); err != nil {
		d.c.dev.DestroyFence(f)
		return
	}
	d.fences = append(d.fences, f)
}

// Compile returns the engine's kernels by name, specialised on the macros (the Metal
// library's; the MSL sources themselves are not Vulkan's: each kernel's SPIR-V comes
// from package shaders). A macro the kernels do not take is an error, so that a new
// one is not silently ignored. Pipelines are built at a kernel's first dispatch, when
// its workgroup size is known.
func (d *gpuDevice) Compile(_ map[string]string, macros map[string]string, kernels []string) (map[string]gpu.Pipeline, error) {
	var spec [specCount]uint32
	for name, v := range macros {
		id, ok := specIDs[name]
		if !ok {
			return nil, fmt.Errorf("vulkan: the kernels take no macro %s", name)
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("vulkan: macro %s=%q is not a whole number", name, v)
		}
		spec[id] = uint32(n)
	}
	if d.native {
		spec[specNative] = 1
	}
	out := make(map[string]gpu.Pipeline, len(kernels))
	for _, k := range kernels {
		// A kernel without SPIR-V fails at its first dispatch (TestEveryKernelHasSPIRV
		// keeps that from shipping).
		out[k] = &pipeline{name: k, spec: spec, max: d.maxWorkgroup()}
	}
	return out, nil
}

func (d *gpuDevice) maxWorkgroup() int {
	l := d.c.Limits
	return int(min(maxThreads, l.MaxWorkGroupInvocations, l.MaxWorkGroupSize[0]))
}

// pipeline is a kernel as Compile specialised it.
type pipeline struct {
	name string
	spec [specCount]uint32
	max  int
}

func (p *pipeline) Name() string                  { return p.name }
func (p *pipeline) MaxThreadsPerThreadgroup() int { return p.max }

// ThreadExecutionWidth is the kernels' SIMD-group width: 32 on every device, native or
// emulated (common.glsl).
func (p *pipeline) ThreadExecutionWidth() int { return 32 }

// vkPipeline returns the pipeline of p at a workgroup size; d.mu is held.
func (d *gpuDevice) vkPipeline(p *pipeline, threads int) (vk.Pipeline, error) {
	key := pipeKey{p.name, p.spec}
	key.spec[specThreads] = uint32(threads)
	if pl, ok := d.pipes[key]; ok {
		return pl, nil
	}
	mod, ok := d.modules[p.name]
	if !ok {
		code, err := shaders.Kernel(p.name)
		if err != nil {
			return 0, err
		}
		words := make([]uint32, len(code)/4)
		for i := range words {
			words[i] = binary.LittleEndian.Uint32(code[4*i:])
		}
		if mod, err = d.c.dev.CreateShaderModule(words); err != nil {
			return 0, fmt.Errorf("kernel %s: %w", p.name, err)
		}
		d.modules[p.name] = mod
	}
	pl, err := d.c.dev.CreateComputePipeline(mod, "main", d.layout, key.spec[:])
	if err != nil {
		return 0, fmt.Errorf("kernel %s (%d threads): %w", p.name, threads, err)
	}
	d.pipes[key] = pl
	return pl, nil
}

// NewCommandBuffer starts recording.
func (d *gpuDevice) NewCommandBuffer() (gpu.CommandBuffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("vulkan: the device is closed")
	}
	cb, err := d.c.dev.AllocateCommandBuffer(d.c.pool)
	if err != nil {
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	if err := d.c.dev.Begin(cb); err != nil {
		d.c.dev.FreeCommandBuffer(d.c.pool, cb)
		return nil, fmt.Errorf("vulkan: %w", err)
	}
	return &cmdBuf{d: d, cb: cb}, nil
}

// cmdBuf records dispatches into a Vulkan command buffer and their records into arenas.
type cmdBuf struct {
	d      *gpuDevice
	cb     vk.CommandBuffer
	arenas []*vkBuffer
	used   int // bytes used of the last arena
	n      int
	last   vk.Pipeline
	err    error
	fence  vk.Fence
	state  int // 0 recording, 1 committed, 2 waited
}

// record returns space for one dispatch's record: its bytes and device address; d.mu
// is held.
func (c *cmdBuf) record() ([]byte, uint64, error) {
	d := c.d
	if len(c.arenas) == 0 || c.used+recordAlign > arenaBytes {
		var a *vkBuffer
		if n := len(d.arenas); n > 0 {
			a, d.arenas = d.arenas[n-1], d.arenas[:n-1]
		} else {
			var err error
			if a, err = d.alloc(arenaBytes, d.hostMT); err != nil {
				return nil, 0, err
			}
		}
		c.arenas = append(c.arenas, a)
		c.used = 0
	}
	a := c.arenas[len(c.arenas)-1]
	off := c.used
	c.used += recordAlign
	rec := a.data[off : off+recordBytes]
	clear(rec)
	return rec, a.addr + uint64(off), nil
}

func (c *cmdBuf) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// Dispatch records one kernel launch.
func (c *cmdBuf) Dispatch(p gpu.Pipeline, grid, threads gpu.Size, args ...gpu.Arg) {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	c.n++
	if c.err != nil || c.state != 0 {
		c.fail(errors.New("vulkan: dispatch on a committed command buffer"))
		return
	}
	kp, ok := p.(*pipeline)
	if !ok {
		c.fail(fmt.Errorf("vulkan: dispatch of a pipeline of another device (%T)", p))
		return
	}
	t := threads[0]
	switch {
	case threads[1] > 1 || threads[2] > 1:
		c.fail(fmt.Errorf("vulkan: kernel %s: threadgroup %v: the kernels take one-dimensional threadgroups", kp.name, threads))
		return
	case t <= 0 || t%32 != 0 || t > kp.max:
		c.fail(fmt.Errorf("vulkan: kernel %s: %d threads: the kernels take multiples of 32 up to %d", kp.name, t, kp.max))
		return
	}
	lim := d.c.Limits.MaxWorkGroupCount
	for i := range 3 {
		if grid[i] < 0 || uint64(grid[i]) > uint64(lim[i]) {
			c.fail(fmt.Errorf("vulkan: kernel %s: grid %v exceeds the device's %v", kp.name, grid, lim))
			return
		}
	}
	if grid[0] == 0 || grid[1] == 0 || grid[2] == 0 {
		return
	}
	rec, addr, err := c.record()
	if err != nil {
		c.fail(err)
		return
	}
	for _, a := range args {
		switch {
		case a.Threadgroup > 0:
			c.fail(fmt.Errorf("vulkan: kernel %s: threadgroup memory arguments are not supported", kp.name))
			return
		case a.Bytes != nil:
			if a.Index != 0 || len(a.Bytes) > 4*recordWords {
				c.fail(fmt.Errorf("vulkan: kernel %s: %d argument bytes at index %d (the kernels take up to %d at 0)", kp.name, len(a.Bytes), a.Index, 4*recordWords))
				return
			}
			copy(rec[8*recordAddrs:], a.Bytes)
		case a.Buf != nil:
			b, ok := a.Buf.(*vkBuffer)
			if !ok || a.Index < 0 || a.Index >= recordAddrs || a.Offset < 0 || a.Offset > b.n {
				c.fail(fmt.Errorf("vulkan: kernel %s: buffer argument %d (offset %d) is not one of this device's", kp.name, a.Index, a.Offset))
				return
			}
			binary.LittleEndian.PutUint64(rec[8*a.Index:], b.addr+uint64(a.Offset))
		}
	}
	pl, err := d.vkPipeline(kp, t)
	if err != nil {
		c.fail(fmt.Errorf("vulkan: %w", err))
		return
	}
	dev := d.c.dev
	if pl != c.last {
		dev.BindComputePipeline(c.cb, pl)
		c.last = pl
	}
	var push [8]byte
	binary.LittleEndian.PutUint64(push[:], addr)
	dev.PushConstants(c.cb, d.layout, 0, push[:])
	dev.Dispatch(c.cb, uint32(grid[0]), uint32(grid[1]), uint32(grid[2]))
	dev.ComputeBarrier(c.cb, vk.PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.ACCESS_SHADER_READ_BIT|vk.ACCESS_SHADER_WRITE_BIT)
}

// Commit submits the recorded work; an error met while recording is kept for Wait,
// and nothing is submitted.
func (c *cmdBuf) Commit() {
	d := c.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if c.state != 0 {
		return
	}
	c.state = 1
	if c.err != nil {
		return
	}
	dev := d.c.dev
	dev.ComputeBarrier(c.cb, vk.PIPELINE_STAGE_HOST_BIT, vk.ACCESS_HOST_READ_BIT)
	if err := dev.End(c.cb); err != nil {
		c.fail(fmt.Errorf("vulkan: %w", err))
		return
	}
	f, err := d.fence()
	if err != nil {
		c.fail(fmt.Errorf("vulkan: %w", err))
		return
	}
	if err := dev.Submit(d.c.queue, []vk.CommandBuffer{c.cb}, f); err != nil {
		d.putFence(f)
		c.fail(fmt.Errorf("vulkan: %w", err))
		return
	}
	c.fence = f
}

// Wait waits for the submitted work and releases the command buffer.
func (c *cmdBuf) Wait() error {
	d := c.d
	d.mu.Lock()
	state := c.state
	d.mu.Unlock()
	if state == 0 {
		c.Commit()
	}
	if state == 2 {
		return c.err
	}
	if c.fence != 0 {
		// Wait without the lock, so that other command buffers can record meanwhile.
		if err := d.c.dev.WaitFence(c.fence, math.MaxUint64); err != nil {
			c.fail(fmt.Errorf("vulkan: %w", err))
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c.state = 2
	if c.fence != 0 {
		d.putFence(c.fence)
		c.fence = 0
	}
	d.c.dev.FreeCommandBuffer(d.c.pool, c.cb)
	d.arenas = append(d.arenas, c.arenas...)
	c.arenas = nil
	d.report()
	return c.err
}

func (c *cmdBuf) Dispatches() int { return c.n }

// Close destroys everything the device made and closes its context.
func (d *gpuDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	dev := d.c.dev
	dev.WaitIdle()
	for _, pl := range d.pipes {
		dev.DestroyPipeline(pl)
	}
	for _, m := range d.modules {
		dev.DestroyShaderModule(m)
	}
	for _, a := range d.arenas {
		d.free(a)
	}
	for _, f := range d.fences {
		dev.DestroyFence(f)
	}
	d.pipes, d.modules, d.arenas, d.fences = nil, nil, nil, nil
	if d.layout != 0 {
		dev.DestroyPipelineLayout(d.layout)
	}
	d.c.Close()
	d.report()
	return nil
}
