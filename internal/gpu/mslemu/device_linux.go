//go:build linux && (amd64 || arm64)

package mslemu

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// Limits of Apple GPUs that the emulator enforces.
const (
	maxThreadsPerThreadgroup = 1024
	simdWidth                = 32
	maxThreadgroupMemory     = 32768
	maxInlineBytes           = 4096
	maxBindings              = 32
)

// watchdogAfter is when a dispatch that is still running is reported on stderr.
var watchdogAfter = 2 * time.Minute

// launch mirrors struct mslemu_launch in shim/mslemu_abi.h.
type launch struct {
	Entry       uint64
	Grid        [3]int64
	Tptg        [3]int64
	Order       int64
	Seed        uint64
	WorkerIndex int64
	WorkerCount int64
	Slot        int64
	Flags       int64
	BufPtr      [maxBindings]uint64
	BufLen      [maxBindings]uint64
	TgLen       [maxBindings]uint64
	FaultSig    int64
	FaultAddr   uint64
	FailGroup   [3]int64
	FailThread  [3]int64
	GroupsRun   int64
	Err         [1024]byte
}

// library is a loaded kernel library; libraries stay loaded for the life of the process.
type library struct {
	path   string
	handle uintptr
	run    uintptr
}

var (
	libMu     sync.Mutex
	libs      = map[string]*library{}
	sharedMem []byte // the runtime's process-wide block (see runtime.cpp, Signals)
	slots     = newSlotStack(maxWorkers * 4)
)

// slotStack hands out worker slots last in, first out. Each slot of a library maps its
// own fiber stacks (two map entries per thread), so a serial caller must keep reusing
// the same slot: handing them out in rotation made a long run map every slot's stacks
// and pass Linux's vm.max_map_count (65,530) within a few dozen 1024-thread dispatches.
type slotStack struct {
	mu   sync.Mutex
	cond *sync.Cond
	free []int64
}

func newSlotStack(n int) *slotStack {
	s := &slotStack{}
	s.cond = sync.NewCond(&s.mu)
	for i := int64(n - 1); i >= 0; i-- {
		s.free = append(s.free, i)
	}
	return s
}

func (s *slotStack) get() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.free) == 0 {
		s.cond.Wait()
	}
	v := s.free[len(s.free)-1]
	s.free = s.free[:len(s.free)-1]
	return v
}

func (s *slotStack) put(v int64) {
	s.mu.Lock()
	s.free = append(s.free, v)
	s.mu.Unlock()
	s.cond.Signal()
}

func loadLibrary(path string) (*library, error) {
	libMu.Lock()
	defer libMu.Unlock()
	if l, ok := libs[path]; ok {
		return l, nil
	}
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("mslemu: loading %s: %w", path, err)
	}
	sym := func(name string) (uintptr, error) {
		p, err := purego.Dlsym(h, name)
		if err != nil {
			return 0, fmt.Errorf("mslemu: %s: missing %s: %w", path, name, err)
		}
		return p, nil
	}
	ver, err := sym("mslemu_abi_version")
	if err != nil {
		return nil, err
	}
	if v, _, _ := purego.SyscallN(ver); v != abiVersion {
		return nil, fmt.Errorf("mslemu: %s: runtime ABI %d, want %d", path, v, abiVersion)
	}
	lsize, err := sym("mslemu_launch_size")
	if err != nil {
		return nil, err
	}
	if n, _, _ := purego.SyscallN(lsize); n != unsafe.Sizeof(launch{}) {
		return nil, fmt.Errorf("mslemu: %s: launch record of %d bytes, Go's is %d", path, n, unsafe.Sizeof(launch{}))
	}
	size, err := sym("mslemu_shared_size")
	if err != nil {
		return nil, err
	}
	n, _, _ := purego.SyscallN(size)
	if sharedMem == nil {
		m, err := syscall.Mmap(-1, 0, int(roundUp(uintptr(n), uintptr(os.Getpagesize()))), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			return nil, fmt.Errorf("mslemu: %w", err)
		}
		sharedMem = m
	}
	if int(n) > len(sharedMem) {
		return nil, fmt.Errorf("mslemu: %s: runtime block of %d bytes does not fit", path, n)
	}
	initFn, err := sym("mslemu_init")
	if err != nil {
		return nil, err
	}
	if r, _, _ := purego.SyscallN(initFn, uintptr(unsafe.Pointer(&sharedMem[0]))); r != 0 {
		return nil, fmt.Errorf("mslemu: %s: runtime initialisation failed (another runtime version, or over 4096 libraries in one process)", path)
	}
	run, err := sym("mslemu_run")
	if err != nil {
		return nil, err
	}
	l := &library{path: path, handle: h, run: run}
	libs[path] = l
	return l, nil
}

func roundUp(n, a uintptr) uintptr { return (n + a - 1) / a * a }

// ---------------------------------------------------------------------------------------
// Device

type device struct {
	opts options
	ci   *compilerInfo
	page int

	mu     sync.Mutex
	closed bool
	last   chan struct{} // done channel of the last committed command buffer
	bufs   map[*buffer]struct{}
}

// New creates an emulated Metal device. It fails, wrapping gpu.ErrUnavailable and
// ErrNoCompiler, when no clang++ is installed.
func New(opts ...Option) (gpu.Device, error) {
	o, err := defaultOptions()
	if err != nil {
		return nil, err
	}
	for _, f := range opts {
		f(&o)
	}
	if o.workers < 1 {
		o.workers = 1
	}
	if o.workers > maxWorkers {
		o.workers = maxWorkers
	}
	if o.order < Forward || o.order > Random {
		return nil, fmt.Errorf("mslemu: bad order %d", o.order)
	}
	if o.cacheDir == "" {
		o.cacheDir = defaultCacheDir()
	}
	ci, err := findCompiler(o.compiler)
	if err != nil {
		return nil, err
	}
	d := &device{opts: o, ci: ci, page: os.Getpagesize(), bufs: map[*buffer]struct{}{}}
	done := make(chan struct{})
	close(done)
	d.last = done
	return d, nil
}

func (d *device) Name() string {
	s := fmt.Sprintf("mslemu (CPU emulator, %s order", d.opts.order)
	if d.opts.order == Random {
		s += fmt.Sprintf(", seed %d", d.opts.seed)
	}
	if d.opts.workers > 1 {
		s += fmt.Sprintf(", %d workers", d.opts.workers)
	}
	if !d.opts.strict {
		s += ", alignment unchecked"
	}
	return s + ")"
}

func (d *device) MaxBufferLength() int {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err == nil && si.Totalram > 0 {
		return int(uint64(si.Totalram) * uint64(si.Unit))
	}
	return 1 << 34
}

// RecommendedWorkingSet is what WithWorkingSet set (gpu.WorkingSet); 0 by default.
func (d *device) RecommendedWorkingSet() int64 { return d.opts.workingSet }

// PageSize is the operating system's page size (Apple silicon's is 16 KiB).
func (d *device) PageSize() int { return d.page }

func (d *device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	last := d.last
	d.mu.Unlock()
	<-last
	return nil
}

// ---------------------------------------------------------------------------------------
// Buffers

type buffer struct {
	dev     *device
	mapping []byte // the whole mapping (nil for a wrapped buffer)
	data    []byte
	host    []byte // a wrapped buffer's memory, kept reachable
	guardLo uintptr
	guardHi uintptr // [data end .. guardHi) is slack and guard page
	gone    atomic.Bool
}

// NewBuffer maps size bytes (zeroed) with a guard page before and after; the data ends
// at the upper guard page (within 16 bytes, for alignment), so reading past the end of
// the buffer faults instead of reading a neighbour.
func (d *device) NewBuffer(size int) (gpu.Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("mslemu: NewBuffer(%d): size must be positive", size)
	}
	if size > d.MaxBufferLength() {
		return nil, fmt.Errorf("mslemu: NewBuffer(%d): larger than MaxBufferLength %d", size, d.MaxBufferLength())
	}
	page := uintptr(d.page)
	body := roundUp(uintptr(size), page)
	m, err := syscall.Mmap(-1, 0, int(body+2*page), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("mslemu: NewBuffer(%d): %w", size, err)
	}
	if err := syscall.Mprotect(m[:page], syscall.PROT_NONE); err != nil {
		syscall.Munmap(m)
		return nil, err
	}
	if err := syscall.Mprotect(m[page+body:], syscall.PROT_NONE); err != nil {
		syscall.Munmap(m)
		return nil, err
	}
	start := page + body - roundUp(uintptr(size), 16)
	b := &buffer{dev: d, mapping: m, data: m[start : start+uintptr(size) : start+uintptr(size)]}
	base := uintptr(unsafe.Pointer(&m[0]))
	b.guardLo = base
	b.guardHi = base + uintptr(len(m))
	d.mu.Lock()
	d.bufs[b] = struct{}{}
	d.mu.Unlock()
	return b, nil
}

// WrapNoCopy uses mem directly (no guard pages: an access past its end reads whatever
// memory follows). Its start and length must be PageSize-aligned.
func (d *device) WrapNoCopy(mem []byte) (gpu.Buffer, error) {
	if len(mem) == 0 {
		return nil, errors.New("mslemu: WrapNoCopy: empty memory")
	}
	p := uintptr(unsafe.Pointer(&mem[0]))
	if p%uintptr(d.page) != 0 || len(mem)%d.page != 0 {
		return nil, fmt.Errorf("mslemu: WrapNoCopy: start %#x and length %d must be multiples of the page size %d", p, len(mem), d.page)
	}
	b := &buffer{dev: d, data: mem, host: mem}
	d.mu.Lock()
	d.bufs[b] = struct{}{}
	d.mu.Unlock()
	return b, nil
}

func (b *buffer) Len() int {
	if b.gone.Load() {
		return 0
	}
	return len(b.data)
}

func (b *buffer) Contents() []byte {
	if b.gone.Load() {
		return nil
	}
	return b.data
}

func (b *buffer) Release() {
	if b.gone.Swap(true) {
		return
	}
	b.dev.mu.Lock()
	delete(b.dev.bufs, b)
	b.dev.mu.Unlock()
	if b.mapping != nil {
		syscall.Munmap(b.mapping)
	}
	b.mapping, b.data, b.host = nil, nil, nil
}

func (b *buffer) addr() uintptr { return uintptr(unsafe.Pointer(&b.data[0])) }

// ---------------------------------------------------------------------------------------
// Pipelines

type paramInfo struct {
	kernelParam
	index int64
	size  int64
	align int64
	isRef bool
}

type pipeline struct {
	dev        *device
	lib        *library
	name       string
	entry      uintptr
	params     []paramInfo
	maxThreads int
}

func (p *pipeline) Name() string                  { return p.name }
func (p *pipeline) MaxThreadsPerThreadgroup() int { return p.maxThreads }
func (p *pipeline) ThreadExecutionWidth() int     { return simdWidth }

// Compile builds (or finds in the cache) the library of the sources and returns the
// named kernels' pipelines.
func (d *device) Compile(sources map[string]string, macros map[string]string, kernels []string) (map[string]gpu.Pipeline, error) {
	prog, err := generate(sources)
	if err != nil {
		return nil, err
	}
	for _, k := range kernels {
		if _, ok := prog.kernels[k]; !ok {
			var have []string
			for n := range prog.kernels {
				have = append(have, n)
			}
			return nil, fmt.Errorf("mslemu: kernel %q not found in the sources (kernels: %s)", k, strings.Join(have, ", "))
		}
	}
	path, err := buildLibrary(d.ci, d.opts.cacheDir, prog, macros, d.opts.strict)
	if err != nil {
		return nil, err
	}
	lib, err := loadLibrary(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]gpu.Pipeline, len(kernels))
	for _, k := range kernels {
		decl := prog.kernels[k]
		sym := symbol(k)
		entry, err := purego.Dlsym(lib.handle, "mslemu_k_"+sym)
		if err != nil {
			return nil, fmt.Errorf("mslemu: kernel %s: %w", k, err)
		}
		info, err := purego.Dlsym(lib.handle, "mslemu_i_"+sym)
		if err != nil {
			return nil, fmt.Errorf("mslemu: kernel %s: %w", k, err)
		}
		desc := make([]int64, 4*len(decl.Params)+4)
		purego.SyscallN(info, uintptr(unsafe.Pointer(&desc[0])))
		runtime.KeepAlive(desc)
		p := &pipeline{dev: d, lib: lib, name: k, entry: entry, maxThreads: maxThreadsPerThreadgroup}
		if decl.MaxThreads > 0 && decl.MaxThreads < maxThreadsPerThreadgroup {
			p.maxThreads = decl.MaxThreads
		}
		for i, kp := range decl.Params {
			pi := paramInfo{kernelParam: kp, index: desc[4*i], size: desc[4*i+1], align: desc[4*i+2], isRef: desc[4*i+3] != 0}
			if kp.Kind != paramBuiltin && (pi.index < 0 || pi.index >= maxBindings) {
				return nil, fmt.Errorf("%w: %s:%d: kernel %s: parameter %s: index %d out of range 0..%d", ErrCompile, decl.File, decl.Line, k, kp.Name, pi.index, maxBindings-1)
			}
			for _, q := range p.params {
				if q.Kind == kp.Kind && kp.Kind != paramBuiltin && q.index == pi.index {
					return nil, fmt.Errorf("%w: %s:%d: kernel %s: parameters %s and %s share index %d", ErrCompile, decl.File, decl.Line, k, q.Name, kp.Name, pi.index)
				}
			}
			p.params = append(p.params, pi)
		}
		out[k] = p
	}
	return out, nil
}

// ---------------------------------------------------------------------------------------
// Command buffers

type dispatch struct {
	p       *pipeline
	grid    gpu.Size
	threads gpu.Size
	args    []gpu.Arg
	bad     error
}

type commandBuffer struct {
	dev        *device
	mu         sync.Mutex
	dispatches []*dispatch
	committed  bool
	done       chan struct{}
	err        error // set by the run before done is closed
	lateErr    error // a Dispatch after Commit
}

func (d *device) NewCommandBuffer() (gpu.CommandBuffer, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, errors.New("mslemu: device is closed")
	}
	return &commandBuffer{dev: d, done: make(chan struct{})}, nil
}

func (c *commandBuffer) Dispatch(p gpu.Pipeline, grid, threads gpu.Size, args ...gpu.Arg) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.committed {
		if c.lateErr == nil {
			c.lateErr = fmt.Errorf("%w: Dispatch after Commit", ErrBadDispatch)
		}
		return
	}
	ds := &dispatch{grid: grid, threads: threads}
	pp, ok := p.(*pipeline)
	if !ok || pp == nil || pp.dev != c.dev {
		ds.bad = fmt.Errorf("%w: pipeline %v is not from this device", ErrBadDispatch, p)
	}
	ds.p = pp
	// setBytes copies at encoding time
	ds.args = make([]gpu.Arg, len(args))
	for i, a := range args {
		if a.Bytes != nil {
			a.Bytes = append([]byte(nil), a.Bytes...)
		}
		ds.args[i] = a
	}
	c.dispatches = append(c.dispatches, ds)
}

func (c *commandBuffer) Dispatches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.dispatches)
}

// Commit runs the recorded dispatches in order, after every command buffer committed
// before on the same device (one serial queue), in the background.
func (c *commandBuffer) Commit() {
	c.mu.Lock()
	if c.committed {
		c.mu.Unlock()
		return
	}
	c.committed = true
	dispatches := c.dispatches
	c.mu.Unlock()
	d := c.dev
	d.mu.Lock()
	prev := d.last
	d.last = c.done
	d.mu.Unlock()
	go func() {
		<-prev
		c.err = d.run(dispatches)
		close(c.done)
	}()
}

func (c *commandBuffer) Wait() error {
	c.mu.Lock()
	committed := c.committed
	c.mu.Unlock()
	if !committed {
		return errors.New("mslemu: Wait before Commit")
	}
	<-c.done
	if c.err != nil {
		return c.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lateErr
}

func (d *device) run(dispatches []*dispatch) error {
	for i, ds := range dispatches {
		if err := d.runDispatch(i, ds); err != nil {
			return err
		}
	}
	return nil
}

// binding is what a dispatch binds at one buffer index.
type binding struct {
	buf    *buffer
	offset int
	bytes  []byte
	set    bool
}

func (d *device) runDispatch(di int, ds *dispatch) error {
	if ds.bad != nil {
		return ds.bad
	}
	p := ds.p
	bad := func(format string, a ...any) error {
		return &DispatchError{Kernel: p.name, Dispatch: di, Group: [3]int{-1, -1, -1}, Thread: [3]int{-1, -1, -1},
			Msg: fmt.Sprintf(format, a...), Kind: ErrBadDispatch}
	}
	l := &launch{Entry: uint64(p.entry), Order: int64(d.opts.order), Seed: d.opts.seed}
	if d.opts.lenient {
		l.Flags |= 1
	}
	groups := int64(1)
	threads := int64(1)
	for k := 0; k < 3; k++ {
		if ds.grid[k] < 1 || ds.grid[k] > 1<<31 {
			return bad("grid %v: every dimension must be in 1..2^31", ds.grid)
		}
		if ds.threads[k] < 1 {
			return bad("threads per threadgroup %v: every dimension must be at least 1", ds.threads)
		}
		l.Grid[k] = int64(ds.grid[k])
		l.Tptg[k] = int64(ds.threads[k])
		groups *= int64(ds.grid[k])
		threads *= int64(ds.threads[k])
	}
	if threads > int64(p.maxThreads) {
		return bad("%d threads per threadgroup %v exceed the pipeline's maximum %d", threads, ds.threads, p.maxThreads)
	}
	if groups*threads > 1<<40 {
		return bad("grid %v of %v threads is too large", ds.grid, ds.threads)
	}
	// bindings: the last Arg for an index wins, as with Metal's set calls
	var bufs [maxBindings]binding
	var tgs [maxBindings]int
	for _, a := range ds.args {
		if a.Index < 0 || a.Index >= maxBindings {
			return bad("argument index %d out of range 0..%d", a.Index, maxBindings-1)
		}
		switch {
		case a.Threadgroup > 0:
			if a.Buf != nil || a.Bytes != nil {
				return bad("argument %d sets both threadgroup memory and a buffer", a.Index)
			}
			tgs[a.Index] = a.Threadgroup
		case a.Buf != nil && a.Bytes != nil:
			return bad("argument %d sets both a buffer and bytes", a.Index)
		case a.Buf != nil:
			b, ok := a.Buf.(*buffer)
			if !ok || b.dev != d {
				return bad("buffer(%d) is not a buffer of this device", a.Index)
			}
			bufs[a.Index] = binding{buf: b, offset: a.Offset, set: true}
		case a.Bytes != nil:
			if len(a.Bytes) > maxInlineBytes {
				return bad("buffer(%d): %d inline bytes exceed Metal's %d-byte limit for setBytes", a.Index, len(a.Bytes), maxInlineBytes)
			}
			if len(a.Bytes) == 0 {
				return bad("buffer(%d): empty inline bytes", a.Index)
			}
			bufs[a.Index] = binding{bytes: a.Bytes, set: true}
		default:
			return bad("argument %d binds nothing (no Buf, Bytes or Threadgroup)", a.Index)
		}
	}
	var inline [][]byte // mappings of inline bytes, unmapped after the dispatch
	defer func() {
		for _, m := range inline {
			syscall.Munmap(m)
		}
	}()
	tgTotal := 0
	for _, pi := range p.params {
		switch pi.Kind {
		case paramBuffer:
			bd := bufs[pi.index]
			if !bd.set {
				return bad("buffer(%d) (parameter %s, %s) is not bound", pi.index, pi.Name, pi.Type)
			}
			var ptr uintptr
			var avail int
			what := ""
			if bd.buf != nil {
				if bd.buf.gone.Load() {
					return bad("buffer(%d) (parameter %s) is bound to a released buffer", pi.index, pi.Name)
				}
				n := len(bd.buf.data)
				if bd.offset < 0 || bd.offset >= n {
					return bad("buffer(%d) (parameter %s): offset %d outside the buffer's %d bytes", pi.index, pi.Name, bd.offset, n)
				}
				ptr = bd.buf.addr() + uintptr(bd.offset)
				avail = n - bd.offset
				what = fmt.Sprintf("%d bytes from offset %d", avail, bd.offset)
			} else {
				m, p2, err := d.inlineBytes(bd.bytes)
				if err != nil {
					return err
				}
				inline = append(inline, m)
				ptr = p2
				avail = len(bd.bytes)
				what = fmt.Sprintf("%d inline bytes", avail)
			}
			if pi.align > 1 && ptr%uintptr(pi.align) != 0 {
				return bad("buffer(%d) (parameter %s, %s): offset %d is not a multiple of the %d-byte alignment of the pointee", pi.index, pi.Name, pi.Type, bd.offset, pi.align)
			}
			if pi.isRef && int64(avail) < pi.size {
				return bad("buffer(%d) (parameter %s, %s): %s bound, the parameter needs %d", pi.index, pi.Name, pi.Type, what, pi.size)
			}
			l.BufPtr[pi.index] = uint64(ptr)
			l.BufLen[pi.index] = uint64(avail)
		case paramThreadgroup:
			n := tgs[pi.index]
			if n <= 0 {
				return bad("threadgroup(%d) (parameter %s) has no threadgroup memory length set", pi.index, pi.Name)
			}
			if n%16 != 0 {
				return bad("threadgroup(%d) (parameter %s): length %d is not a multiple of 16", pi.index, pi.Name, n)
			}
			tgTotal += n
			l.TgLen[pi.index] = uint64(n)
		}
	}
	if tgTotal > maxThreadgroupMemory {
		return bad("threadgroup memory arguments total %d bytes, more than Metal's %d", tgTotal, maxThreadgroupMemory)
	}
	workers := int64(d.opts.workers)
	if workers > groups {
		workers = groups
	}
	ls := make([]*launch, workers)
	for w := range ls {
		lw := l
		if w > 0 {
			cp := *l
			lw = &cp
		}
		lw.WorkerIndex = int64(w)
		lw.WorkerCount = workers
		ls[w] = lw
	}
	// The emulator cannot interrupt a kernel: one that waits for another thread (a spin
	// loop on memory) never returns. Say so on stderr rather than hang in silence.
	watchdog := time.AfterFunc(watchdogAfter, func() {
		fmt.Fprintf(os.Stderr, "mslemu: kernel %s (dispatch %d, grid %v, threads %v) is still running after %v; "+
			"a kernel that spins waiting for another thread never finishes in the emulator (threads run one at a time)\n",
			p.name, di, ds.grid, ds.threads, watchdogAfter)
	})
	defer watchdog.Stop()
	rcs := make([]uintptr, workers)
	runOne := func(w int) {
		slot := slots.get()
		ls[w].Slot = slot
		rcs[w], _, _ = purego.SyscallN(p.lib.run, uintptr(unsafe.Pointer(ls[w])))
		slots.put(slot)
	}
	if workers == 1 {
		runOne(0)
	} else {
		var wg sync.WaitGroup
		for w := range ls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runOne(w)
			}()
		}
		wg.Wait()
	}
	runtime.KeepAlive(ds)
	// report the failure of the earliest worker to fail (deterministic for one worker)
	for w, rc := range rcs {
		if rc == 0 {
			continue
		}
		return d.failure(p, di, ls[w], int64(rc), &bufs)
	}
	return nil
}

// inlineBytes copies setBytes data to the end of a fresh mapping, before a guard page.
func (d *device) inlineBytes(data []byte) ([]byte, uintptr, error) {
	page := uintptr(d.page)
	body := roundUp(uintptr(len(data)), page)
	m, err := syscall.Mmap(-1, 0, int(body+page), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, 0, err
	}
	if err := syscall.Mprotect(m[body:], syscall.PROT_NONE); err != nil {
		syscall.Munmap(m)
		return nil, 0, err
	}
	start := body - roundUp(uintptr(len(data)), 16)
	copy(m[start:], data)
	return m, uintptr(unsafe.Pointer(&m[start])), nil
}

func (d *device) failure(p *pipeline, di int, l *launch, rc int64, bufs *[maxBindings]binding) error {
	msg := string(l.Err[:])
	if i := strings.IndexByte(msg, 0); i >= 0 {
		msg = msg[:i]
	}
	e := &DispatchError{Kernel: p.name, Dispatch: di, Msg: msg}
	for k := 0; k < 3; k++ {
		e.Group[k] = int(l.FailGroup[k])
		e.Thread[k] = int(l.FailThread[k])
	}
	switch {
	case rc == -2:
		e.Kind = ErrFault
		if where := d.describeAddr(uintptr(l.FaultAddr), bufs); where != "" {
			e.Msg += ": " + where
		}
	case strings.HasPrefix(msg, "deadlock"):
		e.Kind = ErrDeadlock
	case strings.HasPrefix(msg, "misaligned"):
		e.Kind = ErrMisaligned
		e.Msg = mslTypeNames(msg)
	}
	return e
}

var (
	vecTypeName    = regexp.MustCompile(`(?:const )?metal::vec<([a-z ]+), ([234])>`)
	scalarTypeName = strings.NewReplacer("unsigned char", "uchar", "signed char", "char", "unsigned short", "ushort",
		"unsigned int", "uint", "unsigned long", "ulong")
)

// mslTypeNames writes the C++ type names of the runtime's reports as MSL spells them
// ('metal::vec<unsigned int, 4>' is 'uint4').
func mslTypeNames(msg string) string {
	return vecTypeName.ReplaceAllStringFunc(msg, func(m string) string {
		s := vecTypeName.FindStringSubmatch(m)
		return scalarTypeName.Replace(s[1]) + s[2]
	})
}

// describeAddr explains a fault address in terms of the buffers.
func (d *device) describeAddr(a uintptr, bufs *[maxBindings]binding) string {
	if a < 4096 {
		if a == 0 && !d.opts.strict && runtime.GOARCH == "amd64" {
			// x86 reports an aligned SSE load or store at a misaligned address as a
			// fault at address 0 too
			return "a null pointer, or a misaligned vector access (the strict alignment mode names it)"
		}
		return "a null pointer"
	}
	name := func(b *buffer) string {
		for i, bd := range bufs {
			if bd.buf == b {
				return fmt.Sprintf("buffer(%d)", i)
			}
		}
		return "a buffer not bound to this dispatch"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for b := range d.bufs {
		if b.mapping == nil || len(b.data) == 0 {
			continue
		}
		start := b.addr()
		end := start + uintptr(len(b.data))
		switch {
		case a >= end && a < b.guardHi:
			return fmt.Sprintf("out of bounds: %d bytes past the end of %s (%d bytes)", a-end, name(b), len(b.data))
		case a >= b.guardLo && a < start:
			return fmt.Sprintf("out of bounds: %d bytes before the start of %s (%d bytes)", start-a, name(b), len(b.data))
		}
	}
	return ""
}
