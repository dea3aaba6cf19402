//go:build darwin && arm64

package metal

// Real-device tests: they run on a Mac with Apple silicon only (this file does not
// compile anywhere else). Run with MTL_DEBUG_LAYER=1 to have Metal's API validation
// check every call as well, and OBJC_DEBUG_MISSING_POOLS=YES to have the runtime report
// an autorelease without a pool.

import (
	"encoding/binary"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego/objc"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// instancesRespondToSelector: is only needed to check the table.
var devSelInstancesRespond = defMsg1("instancesRespondToSelector:", "+NSObject")

const devTestCommonH = `
#include <metal_stdlib>
using namespace metal;
struct AddArgs { uint n; float scale; };
`

const devTestKernels = `
#include "common.h"

kernel void vadd(device const float *a [[buffer(0)]],
                 device const float *b [[buffer(1)]],
                 device float *out [[buffer(2)]],
                 constant AddArgs &args [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) {
    if (i >= args.n) return;
    out[i] = a[i] + b[i] * args.scale * float(MUL);
}

// Every thread writes where it is, to check both MTLSize arguments field by field.
kernel void where_am_i(device uint4 *out [[buffer(0)]],
                       uint3 gid [[thread_position_in_grid]],
                       uint3 grid [[threads_per_grid]],
                       uint3 ntg [[threadgroups_per_grid]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    uint lin = gid.x + grid.x * (gid.y + grid.y * gid.z);
    out[2 * lin] = uint4(gid, 1);
    out[2 * lin + 1] = uint4(ntg.x * 10000 + ntg.y * 100 + ntg.z, tpg.x * 10000 + tpg.y * 100 + tpg.z, 0, 0);
}

// Reverses each threadgroup's slice through dynamic threadgroup memory.
kernel void reverse_tg(device const float *in [[buffer(0)]],
                       device float *out [[buffer(1)]],
                       threadgroup float *tmp [[threadgroup(0)]],
                       uint t [[thread_position_in_threadgroup]],
                       uint g [[threadgroup_position_in_grid]],
                       uint n [[threads_per_threadgroup]]) {
    tmp[t] = in[g * n + t];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[g * n + t] = tmp[n - 1 - t];
}
`

func devTestSources() map[string]string {
	return map[string]string{"common.h": devTestCommonH, "kernels.metal": devTestKernels}
}

func devOpenTestDevice(t *testing.T) *mtlDevice {
	t.Helper()
	d, err := newDevice()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	t.Logf("device: %s, max buffer %d, threadgroup memory %d, page %d", d.Name(), d.MaxBufferLength(), d.(*mtlDevice).maxTGMem, d.PageSize())
	return d.(*mtlDevice)
}

func devCompileTest(t *testing.T, d gpu.Device) map[string]gpu.Pipeline {
	t.Helper()
	ps, err := d.Compile(devTestSources(), map[string]string{"MUL": "2"}, []string{"vadd", "where_am_i", "reverse_tg"})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func devPutFloats(b []byte, v []float32) {
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
}

func devGetFloat(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

func devRun(t *testing.T, d gpu.Device, f func(cb gpu.CommandBuffer)) {
	t.Helper()
	cb, err := d.NewCommandBuffer()
	if err != nil {
		t.Fatal(err)
	}
	f(cb)
	cb.Commit()
	if err := cb.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestDeviceSelectorsAnswered asks each selector's receiver whether it implements it:
// a mistyped selector would otherwise abort the process the first time it is sent.
func TestDeviceSelectorsAnswered(t *testing.T) {
	d := devOpenTestDevice(t)
	ps := devCompileTest(t, d)
	buf, err := d.NewBuffer(64)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Release()

	c := new(objcCaller)
	pool := c.poolPush()
	defer c.poolPop(pool)

	cb := c.msg0(d.queue, selCommandBuffer)
	enc := c.msg0(cb, selComputeCommandEncoder)
	defer c.msg0(enc, selEndEncoding)
	src := c.nsString(devTestCommonH + "kernel void k(device float *x [[buffer(0)]]) { x[0] = 1; }")
	defer c.release(src)
	var nserr uintptr
	lib := c.msgErr3(d.id, selNewLibraryWithSource, src, 0, &nserr)
	if lib == 0 {
		t.Fatal(c.errorText(nserr))
	}
	defer c.release(lib)

	live := map[string]uintptr{
		"<MTLDevice>":                d.id,
		"<MTLCommandQueue>":          d.queue,
		"<MTLCommandBuffer>":         cb,
		"<MTLComputeCommandEncoder>": enc,
		"<MTLLibrary>":               lib,
		"<MTLComputePipelineState>":  ps["vadd"].(*mtlPipeline).id,
		"<MTLBuffer>":                buf.(*mtlBuffer).id,
	}
	if d.resSet != 0 {
		live["<MTLResidencySet>"] = d.resSet
	} else {
		t.Log("no residency set (macOS 14): its selectors are not asked")
	}
	// Present from macOS 15 only, or deprecated; the device asks before sending them.
	optional := map[string]bool{"setMathMode:": true, "setMathFloatingPointFunctions:": true, "setFastMathEnabled:": true,
		"newResidencySetWithDescriptor:error:": true, "addResidencySet:": true, "removeResidencySet:": true}
	for _, s := range objcSelectors {
		var ok bool
		switch {
		case strings.HasPrefix(s.recv, "<"):
			obj, found := live[s.recv]
			if !found && s.recv == "<MTLResidencySet>" && d.resSet == 0 {
				continue
			}
			if !found {
				t.Errorf("%s: no live %s to ask", s.name, s.recv)
				continue
			}
			ok = c.respondsTo(obj, s)
		case strings.HasPrefix(s.recv, "+"):
			ok = c.respondsTo(uintptr(objc.GetClass(s.recv[1:])), s)
		default:
			ok = c.msg1(uintptr(objc.GetClass(s.recv)), devSelInstancesRespond, s.sel)&0xff != 0
		}
		switch {
		case !ok && optional[s.name]:
			t.Logf("%s does not implement %s (optional)", s.recv, s.name)
		case !ok:
			t.Errorf("%s does not implement %s", s.recv, s.name)
		}
	}
}

// System's OS string is NSProcessInfo's ("Version 15.3 (Build 24D60)"), and every Apple
// silicon GPU the device runs on (macOS 14, MSL 3.1) is of family Apple7 or later and
// Mac2; an Apple9 GPU is an Apple8 and Apple7 one too.
func TestSystemOnMac(t *testing.T) {
	s, err := System()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s)
	if s.Device == "" || !strings.Contains(s.OS, "Version") || s.WorkingSetBytes <= 0 || s.MaxBufferBytes < 1<<30 {
		t.Errorf("System() = %+v", s)
	}
	has := map[string]bool{}
	for _, f := range s.Families {
		has[f] = true
	}
	if !has["Apple7"] || !has["Mac2"] || has["Apple9"] && !has["Apple8"] {
		t.Errorf("families %v: want Apple7 and Mac2 at least, and each Apple family implying the ones before", s.Families)
	}
}

func TestDeviceInfoOnMac(t *testing.T) {
	s, err := DeviceInfo()
	if err != nil || !strings.Contains(s, "max buffer") {
		t.Fatalf("DeviceInfo() = %q, %v", s, err)
	}
	t.Log(s)
	d := devOpenTestDevice(t)
	if d.PageSize() != os.Getpagesize() || d.PageSize()%16384 != 0 {
		t.Errorf("page size %d (os.Getpagesize %d); Apple silicon has 16 KiB pages", d.PageSize(), os.Getpagesize())
	}
	if d.MaxBufferLength() < 1<<30 || d.maxTGMem < 16384 {
		t.Errorf("max buffer %d, threadgroup memory %d: implausible", d.MaxBufferLength(), d.maxTGMem)
	}
}

// TestDeviceVectorAdd runs a kernel end to end: sources with a header and a macro,
// buffers, inline argument bytes, a grid of several threadgroups with a ragged end.
func TestDeviceVectorAdd(t *testing.T) {
	d := devOpenTestDevice(t)
	ps := devCompileTest(t, d)
	p := ps["vadd"]
	if p.Name() != "vadd" || p.ThreadExecutionWidth() != 32 || p.MaxThreadsPerThreadgroup() < 256 {
		t.Errorf("pipeline %s: width %d, max threads %d", p.Name(), p.ThreadExecutionWidth(), p.MaxThreadsPerThreadgroup())
	}
	const n = 1000
	bufs := make([]gpu.Buffer, 3)
	for i := range bufs {
		b, err := d.NewBuffer(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		if b.Len() != 4*n || len(b.Contents()) != 4*n {
			t.Fatalf("buffer length %d, contents %d", b.Len(), len(b.Contents()))
		}
		for j, x := range b.Contents() {
			if x != 0 {
				t.Fatalf("new buffer byte %d is %d, not zero", j, x)
			}
		}
		bufs[i] = b
	}
	a, bb := make([]float32, n), make([]float32, n)
	for i := range n {
		a[i], bb[i] = float32(i), float32(i)*0.25+1
	}
	devPutFloats(bufs[0].Contents(), a)
	devPutFloats(bufs[1].Contents(), bb)
	args := make([]byte, 8)
	binary.LittleEndian.PutUint32(args, n)
	binary.LittleEndian.PutUint32(args[4:], math.Float32bits(3))
	devRun(t, d, func(cb gpu.CommandBuffer) {
		cb.Dispatch(p, gpu.Size{(n + 63) / 64, 1, 1}, gpu.Size{64, 1, 1},
			gpu.Arg{Index: 0, Buf: bufs[0]}, gpu.Arg{Index: 1, Buf: bufs[1]},
			gpu.Arg{Index: 2, Buf: bufs[2]}, gpu.Arg{Index: 3, Bytes: args})
		if cb.Dispatches() != 1 {
			t.Errorf("Dispatches() = %d", cb.Dispatches())
		}
	})
	out := bufs[2].Contents()
	for i := range n {
		if got, want := devGetFloat(out, i), a[i]+bb[i]*3*2; got != want {
			t.Fatalf("out[%d] = %v, want %v", i, got, want)
		}
	}
}

// TestDeviceGridShape checks every field of both MTLSize arguments: a struct passed the
// wrong way would show up as a wrong or partial grid.
func TestDeviceGridShape(t *testing.T) {
	d := devOpenTestDevice(t)
	p := devCompileTest(t, d)["where_am_i"]
	grid, threads := gpu.Size{3, 2, 5}, gpu.Size{4, 2, 3}
	gx, gy, gz := grid[0]*threads[0], grid[1]*threads[1], grid[2]*threads[2]
	buf, err := d.NewBuffer(gx * gy * gz * 32)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Release()
	devRun(t, d, func(cb gpu.CommandBuffer) { cb.Dispatch(p, grid, threads, gpu.Arg{Index: 0, Buf: buf}) })
	out := buf.Contents()
	u := func(i int) uint32 { return binary.LittleEndian.Uint32(out[4*i:]) }
	for z := range gz {
		for y := range gy {
			for x := range gx {
				lin := x + gx*(y+gy*z)
				if u(8*lin) != uint32(x) || u(8*lin+1) != uint32(y) || u(8*lin+2) != uint32(z) || u(8*lin+3) != 1 {
					t.Fatalf("thread (%d,%d,%d) wrote %v", x, y, z, [4]uint32{u(8 * lin), u(8*lin + 1), u(8*lin + 2), u(8*lin + 3)})
				}
				if u(8*lin+4) != 30205 || u(8*lin+5) != 40203 {
					t.Fatalf("thread (%d,%d,%d): threadgroups per grid %d, threads per threadgroup %d; want 30205, 40203", x, y, z, u(8*lin+4), u(8*lin+5))
				}
			}
		}
	}
}

// TestDeviceThreadgroupMemoryAndOffsets uses dynamic threadgroup memory, a buffer offset,
// a change of offset on the same buffer (setBufferOffset:) and a pipeline change within
// one command buffer.
func TestDeviceThreadgroupMemoryAndOffsets(t *testing.T) {
	d := devOpenTestDevice(t)
	ps := devCompileTest(t, d)
	const n, tgs = 64, 4
	in, _ := d.NewBuffer(4 * (n*tgs + 8))
	out1, _ := d.NewBuffer(4 * n * tgs)
	out2, _ := d.NewBuffer(4 * n * tgs)
	grid, _ := d.NewBuffer(32 * 4)
	for _, b := range []gpu.Buffer{in, out1, out2, grid} {
		defer b.Release()
	}
	v := make([]float32, n*tgs+8)
	for i := range v {
		v[i] = float32(i)
	}
	devPutFloats(in.Contents(), v)
	devRun(t, d, func(cb gpu.CommandBuffer) {
		r := ps["reverse_tg"]
		cb.Dispatch(r, gpu.Size{tgs, 1, 1}, gpu.Size{n, 1, 1},
			gpu.Arg{Index: 0, Buf: in, Offset: 16}, gpu.Arg{Index: 1, Buf: out1}, gpu.Arg{Index: 0, Threadgroup: 4 * n})
		cb.Dispatch(ps["where_am_i"], gpu.Size{1, 1, 1}, gpu.Size{4, 1, 1}, gpu.Arg{Index: 0, Buf: grid})
		cb.Dispatch(r, gpu.Size{tgs, 1, 1}, gpu.Size{n, 1, 1},
			gpu.Arg{Index: 0, Buf: in, Offset: 32}, gpu.Arg{Index: 1, Buf: out2}, gpu.Arg{Index: 0, Threadgroup: 4*n - 5})
	})
	for g := range tgs {
		for i := range n {
			if got, want := devGetFloat(out1.Contents(), g*n+i), v[4+g*n+n-1-i]; got != want {
				t.Fatalf("first dispatch: out[%d] = %v, want %v", g*n+i, got, want)
			}
			if got, want := devGetFloat(out2.Contents(), g*n+i), v[8+g*n+n-1-i]; got != want {
				t.Fatalf("second dispatch: out[%d] = %v, want %v", g*n+i, got, want)
			}
		}
	}
}

func TestDeviceWrapNoCopy(t *testing.T) {
	d := devOpenTestDevice(t)
	p := devCompileTest(t, d)["vadd"]
	page := d.PageSize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	if _, err := d.WrapNoCopy(mem[16 : 16+page]); err == nil || !strings.Contains(err.Error(), "aligned") {
		t.Errorf("misaligned memory: %v", err)
	}
	if _, err := d.WrapNoCopy(mem[:page-64]); err == nil || !strings.Contains(err.Error(), "multiple") {
		t.Errorf("ragged length: %v", err)
	}
	w, err := d.WrapNoCopy(mem)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release()
	if c := w.Contents(); len(c) != len(mem) || unsafe.SliceData(c) != unsafe.SliceData(mem) {
		t.Fatal("wrapped buffer's contents are not the wrapped memory")
	}
	n := page / 4 // the first page: a; the second: out, written by the GPU into the host memory
	for i := range n {
		binary.LittleEndian.PutUint32(mem[4*i:], math.Float32bits(float32(i)))
	}
	zero, _ := d.NewBuffer(4 * n)
	defer zero.Release()
	args := make([]byte, 8)
	binary.LittleEndian.PutUint32(args, uint32(n))
	devRun(t, d, func(cb gpu.CommandBuffer) {
		cb.Dispatch(p, gpu.Size{n / 256, 1, 1}, gpu.Size{256, 1, 1},
			gpu.Arg{Index: 0, Buf: w}, gpu.Arg{Index: 1, Buf: zero},
			gpu.Arg{Index: 2, Buf: w, Offset: page}, gpu.Arg{Index: 3, Bytes: args})
	})
	for i := range n {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(mem[page+4*i:])); got != float32(i) {
			t.Fatalf("mem[page+%d] = %v, want %d", i, got, i)
		}
	}
}

// TestDeviceWrapNoCopyFile wraps what Load wraps: a read-only shared mapping of a file,
// at an offset of whole pages, the last page partly past the end of the file. The GPU
// reads the file's bytes through it, and the buffer is the mapping (no copy).
func TestDeviceWrapNoCopyFile(t *testing.T) {
	d := devOpenTestDevice(t)
	p := devCompileTest(t, d)["vadd"]
	page := d.PageSize()
	n := page / 4
	data := make([]byte, 2*page+100)
	for i := range len(data) / 4 {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i)))
	}
	path := t.TempDir() + "/weights.bin"
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, 3*page, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	w, err := d.WrapNoCopy(m[page:])
	if err != nil {
		t.Fatal(err)
	}
	defer w.Release()
	if c := w.Contents(); len(c) != 2*page || unsafe.SliceData(c) != &m[page] {
		t.Fatal("the wrapped buffer's contents are not the mapping")
	}
	zero, _ := d.NewBuffer(8 * n)
	defer zero.Release()
	out, _ := d.NewBuffer(8 * n)
	defer out.Release()
	args := make([]byte, 8)
	binary.LittleEndian.PutUint32(args, uint32(2*n))
	devRun(t, d, func(cb gpu.CommandBuffer) {
		cb.Dispatch(p, gpu.Size{2 * n / 256, 1, 1}, gpu.Size{256, 1, 1},
			gpu.Arg{Index: 0, Buf: w}, gpu.Arg{Index: 1, Buf: zero},
			gpu.Arg{Index: 2, Buf: out}, gpu.Arg{Index: 3, Bytes: args})
	})
	got := out.Contents()
	for _, i := range []int{0, 1, n - 1, n, n + 24} {
		if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); v != float32(n+i) {
			t.Errorf("out[%d] = %v, want %d (the file's float %d)", i, v, n+i, n+i)
		}
	}
	if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*(n+25):])); v != 0 {
		t.Errorf("past the end of the file: %v, want 0", v)
	}
}

// TestDeviceReleaseInFlight: command buffers have unretained references, so a buffer
// released between Dispatch and Wait must stay alive (the Go side holds it) until the
// command buffer completes; its result is still written, and the release then happens.
func TestDeviceReleaseInFlight(t *testing.T) {
	d := devOpenTestDevice(t)
	p := devCompileTest(t, d)["vadd"]
	const n = 1024
	a, _ := d.NewBuffer(4 * n)
	bb, _ := d.NewBuffer(4 * n)
	out, _ := d.NewBuffer(4 * n)
	defer out.Release()
	for i := range n {
		binary.LittleEndian.PutUint32(a.Contents()[4*i:], math.Float32bits(float32(i)))
		binary.LittleEndian.PutUint32(bb.Contents()[4*i:], math.Float32bits(1))
	}
	args := make([]byte, 8)
	binary.LittleEndian.PutUint32(args, n)
	binary.LittleEndian.PutUint32(args[4:], math.Float32bits(0.5))
	cb, err := d.NewCommandBuffer()
	if err != nil {
		t.Fatal(err)
	}
	cb.Dispatch(p, gpu.Size{n / 256, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: a}, gpu.Arg{Index: 1, Buf: bb}, gpu.Arg{Index: 2, Buf: out}, gpu.Arg{Index: 3, Bytes: args})
	a.Release()
	bb.Release()
	if a.Contents() != nil {
		t.Error("a released buffer still has contents")
	}
	mb := a.(*mtlBuffer)
	if mb.id == 0 {
		t.Fatal("the Metal buffer was freed while a command buffer holds it")
	}
	cb.Commit()
	if err := cb.Wait(); err != nil {
		t.Fatal(err)
	}
	if mb.id != 0 {
		t.Error("the released buffer was not freed after the command buffer completed")
	}
	for _, i := range []int{0, 1, n - 1} {
		if v := math.Float32frombits(binary.LittleEndian.Uint32(out.Contents()[4*i:])); v != float32(i)+1 {
			t.Errorf("out[%d] = %v, want %d", i, v, i+1)
		}
	}
	// a released buffer cannot be dispatched again
	cb, _ = d.NewCommandBuffer()
	cb.Dispatch(p, gpu.Size{n / 256, 1, 1}, gpu.Size{256, 1, 1},
		gpu.Arg{Index: 0, Buf: a}, gpu.Arg{Index: 1, Buf: out}, gpu.Arg{Index: 2, Buf: out}, gpu.Arg{Index: 3, Bytes: args})
	cb.Commit()
	if err := cb.Wait(); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("dispatch of a released buffer: %v", err)
	}
}

func TestDeviceCompileErrors(t *testing.T) {
	d := devOpenTestDevice(t)
	_, err := d.Compile(map[string]string{"common.h": devTestCommonH, "bad.metal": "kernel void broken( {\n"}, nil, []string{"broken"})
	if err == nil || !strings.Contains(err.Error(), "bad.metal") || !strings.Contains(err.Error(), "error") {
		t.Errorf("syntax error: %v; want the compiler's log naming bad.metal", err)
	}
	_, err = d.Compile(devTestSources(), map[string]string{"MUL": "1"}, []string{"vadd", "missing"})
	if err == nil || !strings.Contains(err.Error(), "missing") || !strings.Contains(err.Error(), "vadd") {
		t.Errorf("missing kernel: %v", err)
	}
	_, err = d.Compile(devTestSources(), nil, []string{"vadd"}) // MUL undefined
	if err == nil || !strings.Contains(err.Error(), "MUL") {
		t.Errorf("undefined macro: %v", err)
	}
}

// TestDeviceCommandBufferErrors: what Dispatch cannot return, Wait does.
func TestDeviceCommandBufferErrors(t *testing.T) {
	d := devOpenTestDevice(t)
	p := devCompileTest(t, d)["vadd"]
	buf, _ := d.NewBuffer(64)
	defer buf.Release()

	cb, _ := d.NewCommandBuffer()
	if err := cb.Wait(); err == nil {
		t.Error("Wait before Commit succeeded")
	}
	cb.Dispatch(p, gpu.Size{1, 1, 1}, gpu.Size{4096, 1, 1}, gpu.Arg{Index: 0, Buf: buf})
	cb.Dispatch(p, gpu.Size{1, 1, 1}, gpu.Size{1, 1, 1}, gpu.Arg{Index: 0, Buf: buf})
	cb.Commit()
	if err := cb.Wait(); err == nil || !strings.Contains(err.Error(), "4096") || cb.Dispatches() != 0 {
		t.Errorf("oversized threadgroup: %v, %d dispatches", err, cb.Dispatches())
	}

	cb, _ = d.NewCommandBuffer()
	cb.Commit()
	cb.Dispatch(p, gpu.Size{1, 1, 1}, gpu.Size{1, 1, 1}, gpu.Arg{Index: 0, Buf: buf})
	if err := cb.Wait(); err == nil || !strings.Contains(err.Error(), "after Commit") {
		t.Errorf("Dispatch after Commit: %v", err)
	}

	other := devOpenTestDevice(t)
	ob, _ := other.NewBuffer(64)
	defer ob.Release()
	cb, _ = d.NewCommandBuffer()
	cb.Dispatch(p, gpu.Size{1, 1, 1}, gpu.Size{1, 1, 1}, gpu.Arg{Index: 0, Buf: ob})
	cb.Commit()
	if err := cb.Wait(); err == nil {
		t.Error("another device's buffer accepted")
	}

	empty, err := d.NewBuffer(0)
	if err != nil || empty.Len() != 0 {
		t.Fatalf("NewBuffer(0) = %v, %v", empty, err)
	}
	empty.Release()
	empty.Release() // twice is harmless
	cb, _ = d.NewCommandBuffer()
	cb.Dispatch(p, gpu.Size{1, 1, 1}, gpu.Size{1, 1, 1}, gpu.Arg{Index: 0, Buf: empty})
	cb.Commit()
	if err := cb.Wait(); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("released buffer: %v", err)
	}

	// An empty command buffer commits and completes.
	devRun(t, d, func(gpu.CommandBuffer) {})
}

// TestDeviceDispatchAllocs: the hot path allocates nothing.
func TestDeviceDispatchAllocs(t *testing.T) {
	d := devOpenTestDevice(t)
	ps := devCompileTest(t, d)
	in, _ := d.NewBuffer(4 * 256)
	out, _ := d.NewBuffer(4 * 256)
	defer in.Release()
	defer out.Release()
	cb, err := d.NewCommandBuffer()
	if err != nil {
		t.Fatal(err)
	}
	args := []gpu.Arg{{Index: 0, Buf: in}, {Index: 1, Buf: out}, {Index: 0, Threadgroup: 4 * 64}}
	off := 0
	allocs := testing.AllocsPerRun(200, func() {
		args[0].Offset = off // alternate setBufferOffset: and the skipped repeat
		off = 64 - off
		cb.Dispatch(ps["reverse_tg"], gpu.Size{2, 1, 1}, gpu.Size{64, 1, 1}, args...)
	})
	cb.Commit()
	if err := cb.Wait(); err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("Dispatch allocates %v times", allocs)
	}
	if cb.Dispatches() != 201 {
		t.Errorf("Dispatches() = %d, want 201", cb.Dispatches())
	}
}

func TestDeviceCloseReleasesPipelines(t *testing.T) {
	d := devOpenTestDevice(t)
	p := devCompileTest(t, d)["vadd"]
	buf, _ := d.NewBuffer(64)
	defer buf.Release() // a buffer outlives its device's Close
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.NewCommandBuffer(); err == nil {
		t.Error("NewCommandBuffer after Close succeeded")
	}
	if p.(*mtlPipeline).id != 0 {
		t.Error("pipeline not released by Close")
	}
	if err := d.Close(); err != nil {
		t.Error("second Close:", err)
	}
}
