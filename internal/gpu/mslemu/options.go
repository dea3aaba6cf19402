package mslemu

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Order is the order in which the emulator runs the threads of a threadgroup (each pass
// over the runnable threads) and the threadgroups of a dispatch. A correct kernel gives
// the same results in every order; comparing Forward with Reverse and Random finds
// missing barriers and other races between threads.
type Order int

const (
	// Forward runs threads and threadgroups in increasing index order.
	Forward Order = iota
	// Reverse runs them in decreasing index order.
	Reverse
	// Random runs them in a seeded pseudo-random order (a new permutation per pass and
	// per threadgroup), the same for the same seed.
	Random
)

func (o Order) String() string {
	switch o {
	case Forward:
		return "forward"
	case Reverse:
		return "reverse"
	case Random:
		return "random"
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

type options struct {
	order      Order
	seed       uint64
	workers    int
	cacheDir   string
	compiler   string
	lenient    bool
	workingSet int64
	strict     bool
}

// Option configures New.
type Option func(*options)

// WithOrder sets the execution order (default Forward, or $MSLEMU_ORDER: forward,
// reverse, random or random:SEED).
func WithOrder(o Order) Option { return func(op *options) { op.order = o } }

// WithSeed sets the seed of the Random order.
func WithSeed(seed uint64) Option { return func(op *options) { op.seed = seed } }

// WithWorkers runs a dispatch's threadgroups on n OS threads (default 1, or
// $MSLEMU_WORKERS). Threads of one threadgroup always run on one OS thread; with n > 1
// the interleaving of threadgroups, which only device atomics can observe, is no longer
// deterministic.
func WithWorkers(n int) Option { return func(op *options) { op.workers = n } }

// WithCacheDir sets where compiled kernel libraries are kept (default
// $MSLEMU_CACHE, else os.UserCacheDir()/bonsai-mslemu).
func WithCacheDir(dir string) Option { return func(op *options) { op.cacheDir = dir } }

// WithCompiler sets the C++ compiler (default $MSLEMU_CXX, else clang++ on the PATH).
func WithCompiler(path string) Option { return func(op *options) { op.compiler = path } }

// WithWorkingSet makes the device report n bytes as its recommended working set
// (gpu.WorkingSet, Metal's recommendedMaxWorkingSetSize), so that tests can play a Mac
// of any size; the default, 0, reports none.
func WithWorkingSet(n int64) Option { return func(op *options) { op.workingSet = n } }

// WithLenientBarriers lets threads that returned count as arrived at a
// threadgroup_barrier. By default a barrier that some threads of the threadgroup never
// reach is reported as a deadlock, which it is on a GPU.
func WithLenientBarriers() Option { return func(op *options) { op.lenient = true } }

// WithStrictAlignment makes the device as strict as Apple's compiler about alignment
// (default on, or $MSLEMU_STRICT_ALIGN=0|1). Metal aligns a threadgroup variable only to
// its own type, so a kernel that stores a float4 into `threadgroup float x[]` through a
// cast pointer is undefined there, yet runs on a CPU (and, by luck of placement, often on
// a GPU). In the strict mode each threadgroup variable of alignment a < 16 is placed at
// an offset ≡ a (mod 2a), aligned for its type and misaligned for anything wider, and the
// kernel library is built with clang's alignment sanitizer (-fsanitize=alignment, its
// reports handled by the runtime), so that any load or store through a pointer
// misaligned for its type, in threadgroup or device memory, fails the dispatch with
// ErrMisaligned naming the MSL file, line, type and variable or buffer. Off, threadgroup
// variables sit at their natural alignment and nothing is checked.
func WithStrictAlignment(on bool) Option { return func(op *options) { op.strict = on } }

// maxWorkers bounds WithWorkers (the runtime has this many worker slots per process).
const maxWorkers = 16

func defaultOptions() (options, error) {
	o := options{order: Forward, seed: 1, workers: 1, strict: true}
	if s := os.Getenv("MSLEMU_STRICT_ALIGN"); s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return o, fmt.Errorf("mslemu: MSLEMU_STRICT_ALIGN=%q: want 0 or 1", s)
		}
		o.strict = v
	}
	if s := os.Getenv("MSLEMU_ORDER"); s != "" {
		name, seed, hasSeed := strings.Cut(s, ":")
		switch strings.ToLower(name) {
		case "forward":
			o.order = Forward
		case "reverse":
			o.order = Reverse
		case "random":
			o.order = Random
		default:
			return o, fmt.Errorf("mslemu: MSLEMU_ORDER=%q: want forward, reverse, random or random:SEED", s)
		}
		if hasSeed {
			v, err := strconv.ParseUint(seed, 10, 64)
			if err != nil {
				return o, fmt.Errorf("mslemu: MSLEMU_ORDER=%q: bad seed", s)
			}
			o.seed = v
		}
	}
	if s := os.Getenv("MSLEMU_WORKERS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return o, fmt.Errorf("mslemu: MSLEMU_WORKERS=%q: want a positive integer", s)
		}
		o.workers = v
	}
	return o, nil
}

// Errors that dispatch errors wrap (test them with errors.Is).
var (
	// ErrFault: a kernel accessed invalid memory (past the end of a buffer into its
	// guard page, a null pointer, a stack overflow) or divided an integer by zero.
	ErrFault = errors.New("mslemu: kernel fault")
	// ErrDeadlock: threads of a threadgroup wait at a barrier that others never reach.
	ErrDeadlock = errors.New("mslemu: deadlock")
	// ErrBadDispatch: a dispatch the GPU would reject or misexecute: a missing or
	// too short binding, a misaligned offset, a threadgroup too large, and so on.
	ErrBadDispatch = errors.New("mslemu: invalid dispatch")
	// ErrMisaligned: in the strict alignment mode (WithStrictAlignment), a kernel
	// loaded or stored through a pointer not aligned for its type, undefined behaviour in
	// MSL (a float4 store into a threadgroup float array, a uint read at an odd byte).
	ErrMisaligned = errors.New("mslemu: misaligned access")
)

// DispatchError describes a failed dispatch.
type DispatchError struct {
	Kernel   string
	Dispatch int    // index of the dispatch in its command buffer
	Group    [3]int // the threadgroup, when the failure is in one (else -1s)
	Thread   [3]int // the thread in the threadgroup, when known (else -1s)
	Msg      string
	Kind     error // ErrFault, ErrDeadlock, ErrBadDispatch or nil
}

func (e *DispatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mslemu: kernel %s (dispatch %d)", e.Kernel, e.Dispatch)
	if e.Group[0] >= 0 {
		fmt.Fprintf(&b, ", threadgroup (%d,%d,%d)", e.Group[0], e.Group[1], e.Group[2])
	}
	if e.Thread[0] >= 0 {
		fmt.Fprintf(&b, ", thread (%d,%d,%d)", e.Thread[0], e.Thread[1], e.Thread[2])
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

func (e *DispatchError) Unwrap() error { return e.Kind }
