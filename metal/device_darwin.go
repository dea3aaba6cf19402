//go:build darwin && arm64

package metal

// The real Metal device, on macOS on Apple silicon, without cgo: purego loads
// libobjc, Foundation, CoreGraphics and Metal with dlopen, and every Objective-C message
// goes through objc_msgSend.
//
// How the calls are made
//
//   - Selectors and classes are resolved once (objc.RegisterName, objc.GetClass) on the
//     first newDevice, from the table in device_selectors.go; nothing is looked up by
//     name afterwards.
//   - objc_msgSend, objc_autoreleasePoolPush and objc_autoreleasePoolPop are called
//     through purego.SyscallN with a reused argument array (objcCaller), wrapped in one
//     typed Go method per C signature (msg0, msg1, ..., msgRefRef2; the table is in
//     device_selectors.go). Not through purego.RegisterLibFunc/RegisterFunc: the function
//     those make is a reflect.MakeFunc, which reflects over its arguments and allocates
//     on every call (3 allocations and ~220 ns per call, measured on linux/amd64 against
//     libc with purego v0.11.3), and SyscallN with a literal argument list allocates its
//     variadic slice (1 allocation, because SyscallN is go:uintptrescapes). SyscallN with
//     a slice of a long-lived array allocates nothing (0 allocations, ~60 ns). So a
//     Dispatch does no reflection and no allocation.
//   - Only MTLCreateSystemDefaultDevice and MTLCopyAllDevices, called once per device,
//     go through purego.RegisterFunc (typed func() uintptr).
//   - MTLSize (and NSOperatingSystemVersion) arguments, C structs of 24 bytes passed by
//     value, are passed as a pointer to a copy: that is how AAPCS64 passes a composite
//     larger than 16 bytes (see device_selectors.go).
//   - A pointer argument is stored in objcCaller.pin for the duration of the call. The
//     store makes the compiler put the pointed-to memory on the heap — which does not
//     move, unlike a goroutine stack, which may be copied between the moment the pointer
//     becomes a uintptr and the call — and keeps it alive during the call.
//
// Ownership (manual retain/release; there is no ARC here)
//
//   - +1, released by us: MTLCreateSystemDefaultDevice, MTLCopyAllDevices (the array),
//     new*/alloc+init* methods (newCommandQueue, newBufferWith..., newLibraryWithSource,
//     newFunctionWithName, newComputePipelineStateWithFunction, [X new], [[NSString
//     alloc] initWithBytes...]) and anything we retain.
//   - +0, autoreleased or owned by the receiver: commandBuffer and computeCommandEncoder
//     (retained at once, released in Wait), name, localizedDescription, UTF8String, error
//     out-parameters, processInfo, objectAtIndex:. They are only used inside the
//     autorelease pool of the call that obtained them.
//   - Every method that sends messages pushes an autorelease pool first and pops it
//     before it returns, with the goroutine locked to its OS thread in between: a pool
//     belongs to a thread, and a goroutine may otherwise move between threads from one
//     call to the next. No pool spans two Go calls, so none is left open across the
//     Dispatch calls of a command buffer; each Dispatch has its own.
//   - The device releases its pipelines, queue and MTLDevice in Close; a buffer is
//     released by Release; a command buffer's MTLCommandBuffer and encoder by Wait (or
//     by a runtime cleanup, if the command buffer is dropped without Wait).
//   - Command buffers come from commandBufferWithUnretainedReferences: Metal does not
//     retain what they bind, so each holds the mtlBuffers it binds until Wait, and a
//     buffer Released meanwhile is freed when the last command buffer holding it
//     completes. Pipelines live until Close, which the engine calls after every Wait.
//   - Where the OS has residency sets (macOS 15), every buffer is added to the device's
//     residency set at creation and removed when freed; additions are committed before
//     the next command buffer, a removal at once, before the buffer is released
//     (mtlResidency, device_common.go); the set is attached to the queue, so the driver
//     does not rebuild the list of resident allocations for every command buffer.
//
// Only a Mac can verify (device_darwin_test.go checks all but the last):
//
//   - that the frameworks load at the paths below under CGO_ENABLED=0 and that
//     MTLCreateSystemDefaultDevice returns a device in a command-line process;
//   - that every selector in the table is answered by its receiver (respondsToSelector:),
//     i.e. no selector string is mistyped — an unknown selector is an uncaught
//     Objective-C exception that aborts the process (TestDeviceSelectorsAnswered);
//   - the struct-by-reference passing of MTLSize and NSOperatingSystemVersion: a wrong
//     convention would dispatch a wrong grid, not fail loudly (TestDeviceGridShape checks
//     all six fields; newDevice's macOS check exercises NSOperatingSystemVersion);
//   - that BOOL results masked to their low byte are right;
//   - that compile errors come back with the compiler log, that the math options and
//     MSL 3.1 are accepted on the installed macOS (TestDeviceCompileErrors);
//   - that newBufferWithBytesNoCopy accepts mmap'd memory and aliases it (TestDeviceWrapNoCopy);
//   - that Dispatch allocates nothing (TestDeviceDispatchAllocs);
//   - the retain/release balance against the real frameworks: run the tests under
//     Instruments (Leaks), and with OBJC_DEBUG_MISSING_POOLS=YES and MTL_DEBUG_LAYER=1
//     (Metal's API validation) in the environment.

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"structs"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"

	"github.com/bonsai-go/sdk/internal/gpu"
)

const (
	pathLibObjC      = "/usr/lib/libobjc.A.dylib"
	pathFoundation   = "/System/Library/Frameworks/Foundation.framework/Foundation"
	pathCoreGraphics = "/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics"
	pathMetal        = "/System/Library/Frameworks/Metal.framework/Metal"
)

var (
	objcLoadOnce sync.Once
	objcLoadErr  error

	fnMsgSend  uintptr // objc_msgSend
	fnPoolPush uintptr // void *objc_autoreleasePoolPush(void)
	fnPoolPop  uintptr // void objc_autoreleasePoolPop(void *)

	mtlCreateSystemDefaultDevice func() uintptr // id<MTLDevice> MTLCreateSystemDefaultDevice(void), +1
	mtlCopyAllDevices            func() uintptr // NSArray<id<MTLDevice>> *MTLCopyAllDevices(void), +1
)

// objcLoad loads the libraries and resolves every symbol, selector and class, once.
func objcLoad() error {
	objcLoadOnce.Do(func() { objcLoadErr = objcLoadAll() })
	return objcLoadErr
}

func objcLoadAll() error {
	const flags = purego.RTLD_NOW | purego.RTLD_GLOBAL
	libobjc, err := purego.Dlopen(pathLibObjC, flags)
	if err != nil {
		return fmt.Errorf("%w: dlopen %s: %v", ErrUnavailable, pathLibObjC, err)
	}
	if _, err := purego.Dlopen(pathFoundation, flags); err != nil {
		return fmt.Errorf("%w: dlopen %s: %v", ErrUnavailable, pathFoundation, err)
	}
	// Apple: "In macOS, in order for the system to provide a default Metal device object,
	// you must link to the CoreGraphics framework" — a command-line program does not by
	// itself. Best effort: MTLCopyAllDevices is the fallback.
	_, _ = purego.Dlopen(pathCoreGraphics, flags)
	metal, err := purego.Dlopen(pathMetal, flags)
	if err != nil {
		return fmt.Errorf("%w: dlopen %s: %v", ErrUnavailable, pathMetal, err)
	}
	for _, s := range []struct {
		lib  uintptr
		name string
		fn   *uintptr
	}{
		{libobjc, "objc_msgSend", &fnMsgSend},
		{libobjc, "objc_autoreleasePoolPush", &fnPoolPush},
		{libobjc, "objc_autoreleasePoolPop", &fnPoolPop},
	} {
		if *s.fn, err = purego.Dlsym(s.lib, s.name); err != nil || *s.fn == 0 {
			return fmt.Errorf("%w: dlsym %s: %v", ErrUnavailable, s.name, err)
		}
	}
	for _, s := range []struct {
		name string
		fn   *func() uintptr
	}{
		{"MTLCreateSystemDefaultDevice", &mtlCreateSystemDefaultDevice},
		{"MTLCopyAllDevices", &mtlCopyAllDevices},
	} {
		sym, err := purego.Dlsym(metal, s.name)
		if err != nil || sym == 0 {
			return fmt.Errorf("%w: dlsym %s: %v", ErrUnavailable, s.name, err)
		}
		purego.RegisterFunc(s.fn, sym)
	}
	for _, s := range objcSelectors {
		if s.sel = uintptr(objc.RegisterName(s.name)); s.sel == 0 {
			return fmt.Errorf("%w: sel_registerName(%q) failed", ErrUnavailable, s.name)
		}
	}
	for _, c := range objcClasses {
		if c.cls = uintptr(objc.GetClass(c.name)); c.cls == 0 && !c.optional {
			return fmt.Errorf("%w: Objective-C class %s not found", ErrUnavailable, c.name)
		}
	}
	return nil
}

// objcCaller holds the argument words of one C call. purego.SyscallN is given a slice of
// a, which lives as long as the caller does, so that no call allocates. A caller serves
// one goroutine at a time: each command buffer has its own; device methods make one per
// call.
type objcCaller struct {
	a   [6]uintptr
	pin [2]unsafe.Pointer // the pointer arguments of the call in flight (see the file comment)
}

func (c *objcCaller) call(fn uintptr, n int) uintptr {
	r, _, _ := purego.SyscallN(fn, c.a[:n]...)
	return r
}

func (c *objcCaller) unpin() { c.pin = [2]unsafe.Pointer{} }

// ptrResult turns a C pointer result into an unsafe.Pointer (the double indirection keeps
// go vet's unsafeptr check quiet about memory that is not Go's).
func ptrResult(r uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&r)) }

// The typed senders, one per signature in device_selectors.go.

func (c *objcCaller) msg0(obj uintptr, s sigMsg0) uintptr {
	c.a[0], c.a[1] = obj, s.sel
	return c.call(fnMsgSend, 2)
}

func (c *objcCaller) msgPtr0(obj uintptr, s sigMsgPtr0) unsafe.Pointer {
	c.a[0], c.a[1] = obj, s.sel
	return ptrResult(c.call(fnMsgSend, 2))
}

func (c *objcCaller) msg1(obj uintptr, s sigMsg1, x uintptr) uintptr {
	c.a[0], c.a[1], c.a[2] = obj, s.sel, x
	return c.call(fnMsgSend, 3)
}

func (c *objcCaller) msgRef1(obj uintptr, s sigMsgRef1, p unsafe.Pointer) uintptr {
	c.pin[0] = p
	c.a[0], c.a[1], c.a[2] = obj, s.sel, uintptr(p)
	r := c.call(fnMsgSend, 3)
	c.unpin()
	return r
}

func (c *objcCaller) msg2(obj uintptr, s sigMsg2, x, y uintptr) uintptr {
	c.a[0], c.a[1], c.a[2], c.a[3] = obj, s.sel, x, y
	return c.call(fnMsgSend, 4)
}

func (c *objcCaller) msgErr2(obj uintptr, s sigMsgErr2, x uintptr, errOut *uintptr) uintptr {
	c.pin[0] = unsafe.Pointer(errOut)
	c.a[0], c.a[1], c.a[2], c.a[3] = obj, s.sel, x, uintptr(unsafe.Pointer(errOut))
	r := c.call(fnMsgSend, 4)
	c.unpin()
	return r
}

func (c *objcCaller) msgRefRef2(obj uintptr, s sigMsgRefRef2, p, q unsafe.Pointer) uintptr {
	c.pin[0], c.pin[1] = p, q
	c.a[0], c.a[1], c.a[2], c.a[3] = obj, s.sel, uintptr(p), uintptr(q)
	r := c.call(fnMsgSend, 4)
	c.unpin()
	return r
}

func (c *objcCaller) msg3(obj uintptr, s sigMsg3, x, y, z uintptr) uintptr {
	c.a[0], c.a[1], c.a[2], c.a[3], c.a[4] = obj, s.sel, x, y, z
	return c.call(fnMsgSend, 5)
}

func (c *objcCaller) msgErr3(obj uintptr, s sigMsgErr3, x, y uintptr, errOut *uintptr) uintptr {
	c.pin[0] = unsafe.Pointer(errOut)
	c.a[0], c.a[1], c.a[2], c.a[3], c.a[4] = obj, s.sel, x, y, uintptr(unsafe.Pointer(errOut))
	r := c.call(fnMsgSend, 5)
	c.unpin()
	return r
}

func (c *objcCaller) msgPtr3(obj uintptr, s sigMsgPtr3, p unsafe.Pointer, y, z uintptr) uintptr {
	c.pin[0] = p
	c.a[0], c.a[1], c.a[2], c.a[3], c.a[4] = obj, s.sel, uintptr(p), y, z
	r := c.call(fnMsgSend, 5)
	c.unpin()
	return r
}

func (c *objcCaller) msgPtr4(obj uintptr, s sigMsgPtr4, p unsafe.Pointer, x, y, z uintptr) uintptr {
	c.pin[0] = p
	c.a[0], c.a[1], c.a[2], c.a[3], c.a[4], c.a[5] = obj, s.sel, uintptr(p), x, y, z
	r := c.call(fnMsgSend, 6)
	c.unpin()
	return r
}

// poolPush locks the goroutine to its thread and pushes an autorelease pool; poolPop
// pops it and unlocks. Always in pairs, in the same Go call.
func (c *objcCaller) poolPush() uintptr {
	runtime.LockOSThread()
	return c.call(fnPoolPush, 0)
}

func (c *objcCaller) poolPop(pool uintptr) {
	c.a[0] = pool
	c.call(fnPoolPop, 1)
	runtime.UnlockOSThread()
}

func (c *objcCaller) release(obj uintptr) {
	if obj != 0 {
		c.msg0(obj, selRelease)
	}
}

// respondsTo asks obj whether it implements s. BOOL is one byte; the rest of the
// register is not defined.
func (c *objcCaller) respondsTo(obj uintptr, s *objcSel) bool {
	return c.msg1(obj, selRespondsToSelector, s.sel)&0xff != 0
}

// nsString returns a new NSString (+1) holding s, or 0.
func (c *objcCaller) nsString(s string) uintptr {
	obj := c.msg0(clsNSString.cls, selAlloc)
	if obj == 0 {
		return 0
	}
	var p unsafe.Pointer
	if len(s) > 0 {
		p = unsafe.Pointer(unsafe.StringData(s))
	}
	return c.msgPtr3(obj, selInitWithBytes, p, uintptr(len(s)), nsUTF8StringEncoding)
}

// goString copies an NSString into Go. The UTF8String pointer lives as long as the
// current autorelease pool; it is copied at once.
func (c *objcCaller) goString(ns uintptr) string {
	if ns == 0 {
		return ""
	}
	n := c.msg1(ns, selLengthOfBytes, nsUTF8StringEncoding)
	p := c.msgPtr0(ns, selUTF8String)
	if n == 0 || p == nil {
		return ""
	}
	return string(unsafe.Slice((*byte)(p), n))
}

// errorText is an NSError's localizedDescription (for a compile error, the compiler log).
func (c *objcCaller) errorText(nserr uintptr) string {
	if nserr == 0 {
		return "unknown error (no NSError)"
	}
	if s := c.goString(c.msg0(nserr, selLocalizedDesc)); s != "" {
		return s
	}
	return "unknown error (empty description)"
}

// nsOperatingSystemVersion is Foundation's NSOperatingSystemVersion: three NSIntegers.
type nsOperatingSystemVersion struct {
	_                   structs.HostLayout
	major, minor, patch int64
}

// mtlSize is Metal's MTLSize: three NSUIntegers.
type mtlSize struct {
	_                    structs.HostLayout
	width, height, depth uint64
}

func (c *objcCaller) osAtLeast(major int) bool {
	v := &nsOperatingSystemVersion{major: int64(major)}
	info := c.msg0(clsNSProcessInfo.cls, selProcessInfo)
	return c.msgRef1(info, selIsOSAtLeast, unsafe.Pointer(v))&0xff != 0
}

// mtlDevice implements gpu.Device.
type mtlDevice struct {
	id, queue uintptr
	name      string
	maxBuf    int
	maxTGMem  int
	page      int
	workSet   int64    // recommendedMaxWorkingSetSize (macOS 10.12+, so always there)
	osVersion string   // NSProcessInfo's operatingSystemVersionString
	families  []string // the GPU families of mtlFamilies the device supports

	mu        sync.Mutex
	closed    bool
	pipelines []*mtlPipeline

	// The residency set (macOS 15): every buffer of the device, made resident once
	// instead of per command buffer; resSet is 0 where the OS has none.
	mtlResidency

	serial atomic.Uint64 // numbers command buffers, for mtlBuffer.heldBy
}

func newDevice() (gpu.Device, error) {
	if err := objcLoad(); err != nil {
		return nil, err
	}
	c := new(objcCaller)
	pool := c.poolPush()
	defer c.poolPop(pool)
	if !c.osAtLeast(mtlMinMacOSMajor) {
		return nil, fmt.Errorf("%w: the Metal device needs macOS %d or later (it compiles MSL 3.1)", ErrUnavailable, mtlMinMacOSMajor)
	}
	id := mtlCreateSystemDefaultDevice()
	if id == 0 {
		id = c.firstDevice()
	}
	if id == 0 {
		return nil, fmt.Errorf("%w: MTLCreateSystemDefaultDevice and MTLCopyAllDevices found no Metal GPU", ErrUnavailable)
	}
	d := &mtlDevice{id: id, page: os.Getpagesize()}
	d.name = c.goString(c.msg0(id, selName))
	d.maxBuf = int(c.msg0(id, selMaxBufferLength))
	d.maxTGMem = int(c.msg0(id, selMaxThreadgroupMemLength))
	d.workSet = int64(c.msg0(id, selRecommendedWorkingSet))
	d.osVersion = c.goString(c.msg0(c.msg0(clsNSProcessInfo.cls, selProcessInfo), selOSVersionString))
	for _, f := range mtlFamilies {
		if c.msg1(id, selSupportsFamily, f.value)&0xff != 0 {
			d.families = append(d.families, f.name)
		}
	}
	if d.queue = c.msg0(id, selNewCommandQueue); d.queue == 0 {
		c.release(id)
		return nil, errors.New("newCommandQueue returned nil")
	}
	if d.name == "" {
		d.name = "Metal device"
	}
	d.resSet = c.newResidencySet(id, d.queue)
	return d, nil
}

// newResidencySet makes the device's residency set and adds it to the queue, where the
// OS has residency sets (macOS 15: the class, the device's and the queue's methods);
// otherwise it returns 0 and Metal makes each command buffer's allocations resident.
func (c *objcCaller) newResidencySet(dev, queue uintptr) uintptr {
	if clsMTLResidencySetDesc.cls == 0 || !c.respondsTo(dev, selNewResidencySet.objcSel) || !c.respondsTo(queue, selAddResidencySet.objcSel) {
		return 0
	}
	desc := c.msg0(clsMTLResidencySetDesc.cls, selNew)
	if desc == 0 {
		return 0
	}
	var nserr uintptr
	set := c.msgErr2(dev, selNewResidencySet, desc, &nserr)
	c.release(desc)
	if set == 0 {
		return 0 // not fatal: the per-command-buffer residency still works
	}
	c.msg1(queue, selAddResidencySet, set)
	return set
}

// The messages of mtlResidencySends: mtlResidency decides when they are sent.
func (c *objcCaller) addAllocation(set, id uintptr)    { c.msg1(set, selAddAllocation, id) }
func (c *objcCaller) removeAllocation(set, id uintptr) { c.msg1(set, selRemoveAllocation, id) }
func (c *objcCaller) commitSet(set uintptr)            { c.msg0(set, selCommit) }
func (c *objcCaller) requestResidency(set uintptr)     { c.msg0(set, selRequestResidency) }

// residentAllocations is the committed residency set's allocationCount (false where
// there is no set): the darwin tests' view of what the set holds.
func (d *mtlDevice) residentAllocations() (int, bool) {
	d.resMu.Lock()
	defer d.resMu.Unlock()
	if d.resSet == 0 {
		return 0, false
	}
	c := new(objcCaller)
	pool := c.poolPush()
	defer c.poolPop(pool)
	return int(c.msg0(d.resSet, selAllocationCount)), true
}

// firstDevice returns the first of MTLCopyAllDevices, retained, or 0.
func (c *objcCaller) firstDevice() uintptr {
	arr := mtlCopyAllDevices()
	if arr == 0 {
		return 0
	}
	defer c.release(arr)
	if c.msg0(arr, selCount) == 0 {
		return 0
	}
	return c.msg0(c.msg1(arr, selObjectAtIndex, 0), selRetain)
}

func (d *mtlDevice) Name() string         { return d.name }
func (d *mtlDevice) MaxBufferLength() int { return d.maxBuf }
func (d *mtlDevice) PageSize() int        { return d.page }

// RecommendedWorkingSet implements gpu.WorkingSet.
func (d *mtlDevice) RecommendedWorkingSet() int64 { return d.workSet }

// System reports the OS version and the GPU families the device supports.
func (d *mtlDevice) System() (osVersion string, families []string) {
	return d.osVersion, d.families
}

func (d *mtlDevice) usable() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return errors.New("device is closed")
	}
	return nil
}

func (d *mtlDevice) NewBuffer(size int) (gpu.Buffer, error) {
	if size < 0 || size > d.maxBuf {
		return nil, fmt.Errorf("NewBuffer(%d): size must be in [0, %d]", size, d.maxBuf)
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	n := size
	if n == 0 {
		n = mtlEmptyBufferLength
	}
	c := new(objcCaller)
	pool := c.poolPush()
	defer c.poolPop(pool)
	// Documented to be zero-filled ("Creates a buffer the method clears with zero values").
	id := c.msg2(d.id, selNewBufferWithLength, uintptr(n), mtlResourceOptions)
	if id == 0 {
		return nil, fmt.Errorf("newBufferWithLength:%d returned nil (out of memory?)", n)
	}
	ptr := c.msgPtr0(id, selContents)
	if ptr == nil {
		c.release(id)
		return nil, errors.New("a shared buffer has no contents pointer")
	}
	d.residencyAdd(c, id)
	return &mtlBuffer{dev: d, id: id, ptr: ptr, n: size}, nil
}

func (d *mtlDevice) WrapNoCopy(mem []byte) (gpu.Buffer, error) {
	p := unsafe.Pointer(unsafe.SliceData(mem))
	if err := gpu.CheckNoCopy(uintptr(p), len(mem), d.page, d.maxBuf); err != nil {
		return nil, err
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	c := new(objcCaller)
	pool := c.poolPush()
	defer c.poolPop(pool)
	// deallocator nil: the memory stays the caller's.
	id := c.msgPtr4(d.id, selNewBufferNoCopy, p, uintptr(len(mem)), mtlResourceOptions, 0)
	if id == 0 {
		return nil, fmt.Errorf("newBufferWithBytesNoCopy refused %d bytes at %p (the memory must come from mmap or vm_allocate)", len(mem), p)
	}
	ptr := c.msgPtr0(id, selContents)
	if ptr != p {
		c.release(id)
		return nil, fmt.Errorf("newBufferWithBytesNoCopy buffer's contents are at %p, not at the wrapped %p", ptr, p)
	}
	d.residencyAdd(c, id)
	return &mtlBuffer{dev: d, id: id, ptr: ptr, n: len(mem), keep: mem}, nil
}

func (d *mtlDevice) Compile(sources map[string]string, macros map[string]string, kernels []string) (map[string]gpu.Pipeline, error) {
	src, err := mtlJoinSources(sources)
	if err != nil {
		return nil, err
	}
	if err := mtlCheckMacros(macros); err != nil {
		return nil, err
	}
	names, err := mtlCheckKernels(kernels)
	if err != nil {
		return nil, err
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	c := new(objcCaller)
	pool := c.poolPush()
	defer c.poolPop(pool)

	opts := c.msg0(clsMTLCompileOptions.cls, selNew)
	if opts == 0 {
		return nil, errors.New("compile: [MTLCompileOptions new] returned nil")
	}
	defer c.release(opts)
	// IEEE arithmetic, as the emulator and the CPU reference compute: fast math off
	// (deprecated switch, still honoured), and on macOS 15+ the new switches: math mode
	// safe and the precise versions of the math functions.
	if c.respondsTo(opts, selSetFastMathEnabled.objcSel) {
		c.msg1(opts, selSetFastMathEnabled, 0)
	}
	if c.respondsTo(opts, selSetMathMode.objcSel) {
		c.msg1(opts, selSetMathMode, mtlMathModeSafe)
	}
	if c.respondsTo(opts, selSetMathFloatingPointFns.objcSel) {
		c.msg1(opts, selSetMathFloatingPointFns, mtlMathFloatingPointFunctionsPrecise)
	}
	c.msg1(opts, selSetLanguageVersion, mtlLanguageVersion3_1)
	if len(macros) > 0 {
		dict := c.msg0(clsNSMutableDictionary.cls, selNew)
		if dict == 0 {
			return nil, errors.New("compile: [NSMutableDictionary new] returned nil")
		}
		for k, v := range macros {
			ks, vs := c.nsString(k), c.nsString(v)
			if ks != 0 && vs != 0 {
				c.msg2(dict, selSetObjectForKey, vs, ks) // the dictionary copies the key and retains the value
			}
			c.release(ks)
			c.release(vs)
			if ks == 0 || vs == 0 {
				c.release(dict)
				return nil, fmt.Errorf("compile: macro %s: cannot make an NSString", k)
			}
		}
		c.msg1(opts, selSetPreprocessorMacros, dict) // a copy property
		c.release(dict)
	}
	srcStr := c.nsString(src)
	if srcStr == 0 {
		return nil, errors.New("compile: cannot make an NSString of the source")
	}
	defer c.release(srcStr)

	var nserr uintptr // autoreleased NSError, valid until the pool pops
	lib := c.msgErr3(d.id, selNewLibraryWithSource, srcStr, opts, &nserr)
	if lib == 0 {
		return nil, fmt.Errorf("compile: %s", c.errorText(nserr))
	}
	defer c.release(lib)
	// A library can come back with warnings in nserr; they are not errors.

	out := make(map[string]gpu.Pipeline, len(names))
	made := make([]*mtlPipeline, 0, len(names))
	fail := func(err error) (map[string]gpu.Pipeline, error) {
		for _, p := range made {
			c.release(p.id)
		}
		return nil, err
	}
	for _, k := range names {
		ks := c.nsString(k)
		fn := c.msg1(lib, selNewFunctionWithName, ks)
		c.release(ks)
		if fn == 0 {
			return fail(fmt.Errorf("compile: no kernel %s in the library (it has: %s)", k, c.functionNames(lib)))
		}
		nserr = 0
		ps := c.msgErr2(d.id, selNewPipelineWithFunction, fn, &nserr)
		c.release(fn)
		if ps == 0 {
			return fail(fmt.Errorf("compile: pipeline of %s: %s", k, c.errorText(nserr)))
		}
		p := &mtlPipeline{
			dev:        d,
			id:         ps,
			name:       k,
			maxThreads: int(c.msg0(ps, selMaxTotalThreadsPerTG)),
			width:      int(c.msg0(ps, selThreadExecutionWidth)),
			staticTG:   int(c.msg0(ps, selStaticThreadgroupMemLen)),
		}
		made = append(made, p)
		out[k] = p
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fail(errors.New("device closed during Compile"))
	}
	d.pipelines = append(d.pipelines, made...)
	return out, nil
}

// functionNames lists a library's functions, for the error of a missing kernel.
func (c *objcCaller) functionNames(lib uintptr) string {
	arr := c.msg0(lib, selFunctionNames) // +0 NSArray<NSString>
	if arr == 0 {
		return "nothing"
	}
	n := int(c.msg0(arr, selCount))
	names := make([]string, 0, n)
	for i := range n {
		names = append(names, c.goString(c.msg1(arr, selObjectAtIndex, uintptr(i))))
	}
	if len(names) == 0 {
		return "nothing"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func (d *mtlDevice) NewCommandBuffer() (gpu.CommandBuffer, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	b := &mtlCommandBuffer{dev: d, serial: d.serial.Add(1)}
	c := &b.c
	pool := c.poolPush()
	defer c.poolPop(pool)
	d.residencyCommit(c)
	// Unretained references: the command buffer does not retain the buffers and
	// pipelines it uses (no retain/release per binding); the Go side keeps them alive
	// instead (mtlBuffer.hold, released in Wait), and pipelines live until Close.
	cb := c.msg0(d.queue, selCommandBufferUnretained)
	if cb == 0 {
		return nil, errors.New("commandBufferWithUnretainedReferences returned nil")
	}
	c.msg0(cb, selRetain)
	enc := c.msg0(cb, selComputeCommandEncoder)
	if enc == 0 {
		c.release(cb)
		return nil, errors.New("computeCommandEncoder returned nil")
	}
	c.msg0(enc, selRetain)
	b.objs = &mtlCommandObjects{cb: cb, enc: enc, held: make([]*mtlBuffer, 0, 64)} // room for a decode step's buffers: Dispatch does not allocate
	b.cleanup = runtime.AddCleanup(b, mtlReleaseCommandObjects, b.objs)
	return b, nil
}

func (d *mtlDevice) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	ps := d.pipelines
	d.pipelines = nil
	d.mu.Unlock()
	c := new(objcCaller)
	pool := c.poolPush()
	defer c.poolPop(pool)
	for _, p := range ps {
		c.release(p.id)
		p.id = 0
	}
	d.resMu.Lock()
	if d.resSet != 0 {
		c.msg1(d.queue, selRemoveResidencySet, d.resSet)
		c.msg0(d.resSet, selEndResidency)
		c.release(d.resSet)
		d.resSet = 0
	}
	d.resMu.Unlock()
	c.release(d.queue)
	c.release(d.id)
	d.queue, d.id = 0, 0
	return nil
}

// mtlBuffer implements gpu.Buffer.
//
// Command buffers are made with unretained references, so a command buffer does not
// keep the Metal buffers it uses alive: each one holds the mtlBuffers it binds (uses)
// until its Wait, and Release of a buffer in use only marks it, the Metal object (and
// the wrapped memory) going when the last command buffer using it has completed.
type mtlBuffer struct {
	dev    *mtlDevice
	id     uintptr        // the MTLBuffer; 0 once released
	ptr    unsafe.Pointer // contents: fixed for the life of a shared buffer
	n      int
	keep   []byte        // WrapNoCopy's memory, referenced so that Go memory is not collected under Metal
	heldBy atomic.Uint64 // serial of the last command buffer that holds it (to hold once per command buffer)

	mu   sync.Mutex
	uses int  // command buffers holding it
	gone bool // Release was called
}

func (b *mtlBuffer) Len() int { return b.n }

func (b *mtlBuffer) released() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gone || b.id == 0
}

func (b *mtlBuffer) Contents() []byte {
	if b.n == 0 || b.released() {
		return nil
	}
	return unsafe.Slice((*byte)(b.ptr), b.n)
}

func (b *mtlBuffer) Release() {
	b.mu.Lock()
	if b.gone || b.id == 0 {
		b.mu.Unlock()
		return
	}
	b.gone = true
	free := b.uses == 0
	b.mu.Unlock()
	if free {
		b.free()
	}
}

// hold counts a command buffer that uses b; unhold ends it, freeing a released buffer
// with the last.
func (b *mtlBuffer) hold() {
	b.mu.Lock()
	b.uses++
	b.mu.Unlock()
}

func (b *mtlBuffer) unhold() {
	b.mu.Lock()
	b.uses--
	free := b.uses == 0 && b.gone
	b.mu.Unlock()
	if free {
		b.free()
	}
}

func (b *mtlBuffer) free() {
	b.mu.Lock()
	id := b.id
	b.id, b.ptr, b.keep = 0, nil, nil
	b.mu.Unlock()
	if id == 0 {
		return
	}
	c := new(objcCaller)
	pool := c.poolPush()
	b.dev.residencyFree(c, id) // removes it from the residency set, commits, then releases it
	c.poolPop(pool)
}

// mtlPipeline implements gpu.Pipeline.
type mtlPipeline struct {
	dev        *mtlDevice
	id         uintptr // 0 once the device is closed
	name       string
	maxThreads int
	width      int
	staticTG   int // threadgroup memory the kernel declares itself
}

func (p *mtlPipeline) Name() string                  { return p.name }
func (p *mtlPipeline) MaxThreadsPerThreadgroup() int { return p.maxThreads }
func (p *mtlPipeline) ThreadExecutionWidth() int     { return p.width }

// Command buffer states.
const (
	mtlOpen = iota
	mtlCommitted
	mtlWaited
)

// mtlCommandObjects are a command buffer's Metal objects, apart from the Go value so
// that a runtime cleanup can release them if the command buffer is dropped without Wait.
type mtlCommandObjects struct {
	cb, enc uintptr
	ended   bool
	sent    bool
	held    []*mtlBuffer // the buffers it uses, held until it completes
}

func mtlReleaseCommandObjects(o *mtlCommandObjects) {
	c := new(objcCaller)
	pool := c.poolPush()
	defer c.poolPop(pool)
	if !o.ended && o.enc != 0 {
		c.msg0(o.enc, selEndEncoding)
		o.ended = true
	}
	if o.sent && o.cb != 0 {
		// Dropped without Wait: its buffers must outlive its execution.
		c.msg0(o.cb, selWaitUntilCompleted)
	}
	o.unholdAll()
	c.release(o.enc)
	c.release(o.cb)
	o.enc, o.cb = 0, 0
}

func (o *mtlCommandObjects) unholdAll() {
	for _, b := range o.held {
		b.unhold()
	}
	o.held = nil
}

type mtlBinding struct {
	buf *mtlBuffer
	id  uintptr
	off int
}

// mtlCommandBuffer implements gpu.CommandBuffer: one MTLCommandBuffer with one compute
// encoder (serial dispatch: each dispatch sees the writes of the ones before it), open
// from NewCommandBuffer to Commit. Dispatch validates everything in Go first and records
// the first error, which Wait returns; a command buffer with an error is not committed.
type mtlCommandBuffer struct {
	c       objcCaller
	serial  uint64
	sizes   [2]mtlSize // dispatchThreadgroups' MTLSize arguments, passed by reference
	dev     *mtlDevice
	objs    *mtlCommandObjects
	cleanup runtime.Cleanup
	state   int
	sent    bool // committed to the GPU
	err     error
	n       int
	pipe    uintptr                 // pipeline state set on the encoder
	bound   [gpu.MaxArgs]mtlBinding // buffers set on the encoder, to skip repeats
}

func (b *mtlCommandBuffer) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

func (b *mtlCommandBuffer) Dispatches() int { return b.n }

func (b *mtlCommandBuffer) Dispatch(p gpu.Pipeline, grid, threads gpu.Size, args ...gpu.Arg) {
	if b.err != nil {
		return
	}
	if b.state != mtlOpen {
		b.fail(errors.New("Dispatch after Commit"))
		return
	}
	pl, ok := p.(*mtlPipeline)
	if !ok || pl == nil || pl.dev != b.dev || pl.id == 0 {
		b.fail(fmt.Errorf("Dispatch: pipeline %T is not a live pipeline of this device", p))
		return
	}
	if err := gpu.CheckSizes(pl.name, grid, threads, pl.maxThreads); err != nil {
		b.fail(err)
		return
	}
	tg := pl.staticTG
	for i := range args {
		a := &args[i]
		if a.Buf != nil {
			mb, ok := a.Buf.(*mtlBuffer)
			if !ok || mb == nil || mb.dev != b.dev {
				b.fail(fmt.Errorf("dispatch %s: argument %d: buffer %T is not one of this device's", pl.name, a.Index, a.Buf))
				return
			}
			if mb.released() {
				b.fail(fmt.Errorf("dispatch %s: argument %d: buffer was released", pl.name, a.Index))
				return
			}
			if mb.heldBy.Swap(b.serial) != b.serial {
				mb.hold()
				b.objs.held = append(b.objs.held, mb)
			}
		}
		n, err := gpu.CheckArg(pl.name, *a)
		if err != nil {
			b.fail(err)
			return
		}
		tg += n
	}
	if tg > b.dev.maxTGMem {
		b.fail(fmt.Errorf("dispatch %s: %d bytes of threadgroup memory, more than the device's %d", pl.name, tg, b.dev.maxTGMem))
		return
	}

	c := &b.c
	enc := b.objs.enc
	pool := c.poolPush()
	defer c.poolPop(pool)
	if pl.id != b.pipe {
		c.msg1(enc, selSetComputePipelineState, pl.id)
		b.pipe = pl.id
	}
	for i := range args {
		a := &args[i]
		switch {
		case a.Buf != nil:
			mb := a.Buf.(*mtlBuffer)
			bd := &b.bound[a.Index]
			switch {
			case bd.buf == mb && bd.id == mb.id && bd.off == a.Offset:
			case bd.buf == mb && bd.id == mb.id:
				c.msg2(enc, selSetBufferOffset, uintptr(a.Offset), uintptr(a.Index))
				bd.off = a.Offset
			default:
				c.msg3(enc, selSetBuffer, mb.id, uintptr(a.Offset), uintptr(a.Index))
				*bd = mtlBinding{buf: mb, id: mb.id, off: a.Offset}
			}
		case a.Bytes != nil:
			c.msgPtr3(enc, selSetBytes, unsafe.Pointer(unsafe.SliceData(a.Bytes)), uintptr(len(a.Bytes)), uintptr(a.Index))
			b.bound[a.Index] = mtlBinding{} // setBytes replaces the buffer at that index
		default:
			n := (a.Threadgroup + gpu.ThreadgroupMemoryAlign - 1) &^ (gpu.ThreadgroupMemoryAlign - 1)
			c.msg2(enc, selSetThreadgroupMemLength, uintptr(n), uintptr(a.Index))
		}
	}
	b.sizes[0] = mtlSize{width: uint64(grid[0]), height: uint64(grid[1]), depth: uint64(grid[2])}
	b.sizes[1] = mtlSize{width: uint64(threads[0]), height: uint64(threads[1]), depth: uint64(threads[2])}
	c.msgRefRef2(enc, selDispatchThreadgroups, unsafe.Pointer(&b.sizes[0]), unsafe.Pointer(&b.sizes[1]))
	b.n++
}

func (b *mtlCommandBuffer) Commit() {
	if b.state != mtlOpen {
		b.fail(errors.New("Commit called twice"))
		return
	}
	b.state = mtlCommitted
	c := &b.c
	pool := c.poolPush()
	defer c.poolPop(pool)
	c.msg0(b.objs.enc, selEndEncoding)
	b.objs.ended = true
	if b.err == nil {
		c.msg0(b.objs.cb, selCommit)
		b.sent = true
		b.objs.sent = true
	}
}

func (b *mtlCommandBuffer) Wait() error {
	switch b.state {
	case mtlOpen:
		return errors.New("Wait before Commit")
	case mtlWaited:
		return b.err
	}
	b.state = mtlWaited
	c := &b.c
	pool := c.poolPush()
	defer c.poolPop(pool)
	if b.sent {
		cb := b.objs.cb
		c.msg0(cb, selWaitUntilCompleted)
		switch st := c.msg0(cb, selStatus); st {
		case mtlCommandBufferStatusCompleted:
		case mtlCommandBufferStatusError:
			nserr := c.msg0(cb, selError)
			code := int64(-1)
			if nserr != 0 {
				code = int64(c.msg0(nserr, selCode))
			}
			b.fail(mtlCommandBufferFailure(code, c.errorText(nserr)))
		default:
			b.fail(fmt.Errorf("command buffer ended in status %d, not completed", st))
		}
	}
	b.cleanup.Stop()
	b.objs.unholdAll()
	c.release(b.objs.enc)
	c.release(b.objs.cb)
	b.objs.enc, b.objs.cb = 0, 0
	b.bound = [gpu.MaxArgs]mtlBinding{}
	return b.err
}
