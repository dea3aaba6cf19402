package metal

// The platform-independent half of the Metal device: the error, DeviceInfo, Metal's
// constants and the checks that run before anything reaches Objective-C. The checks
// live here, not in device_darwin.go, so that they are tested on every platform: an
// argument Metal would reject must be caught in Go, because a misused Metal call does
// not return an error — it aborts the process (an Objective-C exception or a Metal
// validation assertion) or silently computes garbage.

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bonsai-go/sdk/metal/internal/gpu"
)

// ErrUnavailable is wrapped by the error of a Metal device that cannot be created on
// this machine: any OS other than macOS on Apple silicon, a Mac without a Metal GPU,
// or macOS older than the version the device needs (macOS 14, for MSL 3.1).
var ErrUnavailable = gpu.ErrUnavailable

// DeviceInfo opens the system's Metal device, describes it and closes it again:
// "Apple M4 Pro (max buffer 27.0 GiB, working set 36.0 GiB, page 16 KiB)". Where Metal is not available the
// error wraps ErrUnavailable (errors.Is(err, metal.ErrUnavailable)).
func DeviceInfo() (string, error) {
	d, err := newDevice()
	if err != nil {
		return "", err
	}
	defer d.Close()
	ws := ""
	if w, ok := d.(gpu.WorkingSet); ok && w.RecommendedWorkingSet() > 0 {
		ws = ", working set " + mtlFormatBytes(int(w.RecommendedWorkingSet()))
	}
	return fmt.Sprintf("%s (max buffer %s%s, page %d KiB)", d.Name(), mtlFormatBytes(d.MaxBufferLength()), ws, d.PageSize()/1024), nil
}

// RecommendedWorkingSet opens the system's Metal device and returns how many bytes its
// work may hold resident at once (recommendedMaxWorkingSetSize): what a model's weights
// and its sequences' state must fit in. Where Metal is not available the error wraps
// ErrUnavailable.
func RecommendedWorkingSet() (int64, error) {
	d, err := newDevice()
	if err != nil {
		return 0, err
	}
	defer d.Close()
	if w, ok := d.(gpu.WorkingSet); ok {
		return w.RecommendedWorkingSet(), nil
	}
	return 0, nil
}

// SystemInfo describes the system's Metal device for a report: what examples/metalcheck
// prints and a person pastes into an issue.
type SystemInfo struct {
	Device          string   `json:"device"`            // MTLDevice name, e.g. "Apple M4 Pro"
	OS              string   `json:"os"`                // NSProcessInfo operatingSystemVersionString, e.g. "Version 15.3 (Build 24D60)"
	Families        []string `json:"families"`          // of Apple7, Apple8, Apple9, Mac2: those supportsFamily: confirms
	WorkingSetBytes int64    `json:"working_set_bytes"` // recommendedMaxWorkingSetSize; 0: not given
	MaxBufferBytes  int64    `json:"max_buffer_bytes"`  // maxBufferLength
	PageBytes       int      `json:"page_bytes"`        // the alignment a wrapped buffer needs
}

// mtlFamilies are the MTLGPUFamily values (MTLDevice.h) System asks about: Apple7 is
// the M1, Apple8 the M2, Apple9 the M3 and M4; Mac2 every Mac GPU of Metal 3.
var mtlFamilies = []struct {
	name  string
	value uintptr
}{{"Apple7", 1007}, {"Apple8", 1008}, {"Apple9", 1009}, {"Mac2", 2002}}

// systemDescriber is implemented by the darwin device.
type systemDescriber interface {
	System() (osVersion string, families []string)
}

// System opens the system's Metal device, describes it and closes it again. Where Metal
// is not available the error wraps ErrUnavailable.
func System() (SystemInfo, error) {
	d, err := newDevice()
	if err != nil {
		return SystemInfo{}, err
	}
	defer d.Close()
	info := SystemInfo{Device: d.Name(), MaxBufferBytes: int64(d.MaxBufferLength()), PageBytes: d.PageSize()}
	if w, ok := d.(gpu.WorkingSet); ok {
		info.WorkingSetBytes = w.RecommendedWorkingSet()
	}
	if s, ok := d.(systemDescriber); ok {
		info.OS, info.Families = s.System()
	}
	return info, nil
}

func mtlFormatBytes(n int) string {
	const gib = 1 << 30
	if n >= gib {
		return fmt.Sprintf("%.1f GiB", float64(n)/gib)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Metal and Foundation constants (values from the SDK headers; they are ABI and do not
// change between OS versions).
const (
	// MTLResourceOptions: storage mode shared (0 << 4: CPU and GPU see the same memory,
	// the mode newBufferWithBytesNoCopy needs), CPU cache mode default (0), hazard
	// tracking tracked (2 << 8: Metal orders the dispatches of one encoder that touch the
	// same buffer, which the host logic relies on).
	mtlResourceStorageModeShared         = 0 << 4
	mtlResourceHazardTrackingModeTracked = 2 << 8
	mtlResourceOptions                   = mtlResourceStorageModeShared | mtlResourceHazardTrackingModeTracked

	mtlLanguageVersion3_1                = 3<<16 + 1 // MTLLanguageVersion3_1 (macOS 14)
	mtlMathModeSafe                      = 0         // MTLMathModeSafe (mathMode, macOS 15)
	mtlMathFloatingPointFunctionsPrecise = 1         // MTLMathFloatingPointFunctionsPrecise (macOS 15)
	mtlCommandBufferStatusCompleted      = 4         // MTLCommandBufferStatusCompleted
	mtlCommandBufferStatusError          = 5         // MTLCommandBufferStatusError
	nsUTF8StringEncoding                 = 4         // NSUTF8StringEncoding
	mtlMinMacOSMajor                     = 14        // MSL 3.1 needs macOS 14 (Sonoma)

	mtlMaxArgIndex            = 31        // argument table entries: [[buffer(0..30)]], [[threadgroup(0..30)]]
	mtlMaxSetBytes            = 4096      // setBytes:length:atIndex: is for at most 4 KiB
	mtlThreadgroupMemoryAlign = 16        // setThreadgroupMemoryLength: lengths are multiples of 16
	mtlEmptyBufferLength      = 16        // NewBuffer(0) allocates this much and reports Len 0
	mtlMaxGridDim             = 1<<32 - 1 // threadgroups per grid dimension
)

// mtlJoinSources concatenates MSL sources (file name → text) into the one program that
// newLibraryWithSource: compiles. Headers (names ending ".h") come first, then the other
// files, each group in name order, so the result does not depend on map order. Each file
// starts with a #line directive, so compiler messages name the file and line the
// programmer wrote ("attn.metal:12:5: error: ..."), not "program_source:812". A line
// `#include "NAME"` whose NAME is one of the sources is replaced by a comment: the file
// is already part of the program (put shared declarations in a .h so that it comes
// first). Any other #include (<metal_stdlib>) is left to the compiler.
func mtlJoinSources(sources map[string]string) (string, error) {
	if len(sources) == 0 {
		return "", errors.New("compile: no sources")
	}
	names := make([]string, 0, len(sources))
	for name, text := range sources {
		if name == "" || strings.ContainsAny(name, "\"\\\n\r\x00") {
			return "", fmt.Errorf("compile: source name %q cannot appear in a #line directive", name)
		}
		if !utf8.ValidString(text) {
			return "", fmt.Errorf("compile: source %s is not valid UTF-8", name)
		}
		if strings.IndexByte(text, 0) >= 0 {
			return "", fmt.Errorf("compile: source %s contains a NUL byte", name)
		}
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		hi, hj := strings.HasSuffix(names[i], ".h"), strings.HasSuffix(names[j], ".h")
		if hi != hj {
			return hi
		}
		return names[i] < names[j]
	})
	var b strings.Builder
	for _, name := range names {
		fmt.Fprintf(&b, "#line 1 \"%s\"\n", name)
		text := sources[name]
		for len(text) > 0 {
			line := text
			if i := strings.IndexByte(text, '\n'); i >= 0 {
				line, text = text[:i+1], text[i+1:]
			} else {
				text = ""
			}
			if inc, ok := mtlLocalInclude(line); ok {
				if _, known := sources[inc]; known {
					// Keep the line count so that #line numbering stays right.
					b.WriteString("// (already in the program) #include \"" + inc + "\"\n")
					continue
				}
			}
			b.WriteString(line)
		}
		if !strings.HasSuffix(sources[name], "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}

// mtlLocalInclude reports the NAME of a line `#include "NAME"` (spaces allowed around
// the # and before the name, a // comment allowed after it).
func mtlLocalInclude(line string) (string, bool) {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "#") {
		return "", false
	}
	s = strings.TrimSpace(s[1:])
	if !strings.HasPrefix(s, "include") {
		return "", false
	}
	s = strings.TrimSpace(s[len("include"):])
	if !strings.HasPrefix(s, "\"") {
		return "", false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", false
	}
	rest := strings.TrimSpace(s[1+end+1:])
	if rest != "" && !strings.HasPrefix(rest, "//") {
		return "", false
	}
	return s[1 : 1+end], true
}

// mtlCheckMacros checks that macro names are C identifiers (Metal passes them to the
// compiler as -DNAME=VALUE) and that names and values are valid UTF-8 without NUL.
func mtlCheckMacros(macros map[string]string) error {
	for name, value := range macros {
		if !mtlIsIdent(name) {
			return fmt.Errorf("compile: macro name %q is not an identifier", name)
		}
		if !utf8.ValidString(value) || strings.ContainsAny(value, "\x00\n\r") {
			return fmt.Errorf("compile: value of macro %s must be one line of UTF-8 text", name)
		}
	}
	return nil
}

func mtlIsIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// mtlCheckKernels checks the kernel names and returns them without duplicates, in order.
func mtlCheckKernels(kernels []string) ([]string, error) {
	seen := make(map[string]bool, len(kernels))
	out := make([]string, 0, len(kernels))
	for _, k := range kernels {
		if !mtlIsIdent(k) {
			return nil, fmt.Errorf("compile: kernel name %q is not an identifier", k)
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out, nil
}

// mtlCheckNoCopy checks memory for newBufferWithBytesNoCopy: its start address and
// length must be multiples of the VM page size (16 KiB on Apple silicon, not 4 KiB),
// and the length must fit the device's largest buffer.
func mtlCheckNoCopy(addr uintptr, n, pageSize, maxLen int) error {
	switch {
	case n == 0:
		return errors.New("WrapNoCopy: empty memory")
	case addr%uintptr(pageSize) != 0:
		return fmt.Errorf("WrapNoCopy: memory at %#x is not aligned to the %d-byte page size (off by %d bytes); map it with mmap or round the start down to a page", addr, pageSize, addr%uintptr(pageSize))
	case n%pageSize != 0:
		return fmt.Errorf("WrapNoCopy: length %d is not a multiple of the %d-byte page size; round it up to %d", n, pageSize, (n+pageSize-1)/pageSize*pageSize)
	case n > maxLen:
		return fmt.Errorf("WrapNoCopy: length %d exceeds the device's maximum buffer length %d; wrap it in parts", n, maxLen)
	}
	return nil
}

// mtlCheckSizes checks a dispatch's threadgroup grid and threadgroup size against the
// pipeline's limit on threads per threadgroup.
func mtlCheckSizes(name string, grid, threads gpu.Size, maxThreads int) error {
	for i := range 3 {
		if grid[i] < 1 || int64(grid[i]) > mtlMaxGridDim {
			return fmt.Errorf("dispatch %s: grid %v: every dimension must be in [1, 2^32-1]", name, grid)
		}
		if threads[i] < 1 {
			return fmt.Errorf("dispatch %s: threadgroup %v: every dimension must be at least 1", name, threads)
		}
	}
	if n := threads[0] * threads[1] * threads[2]; n > maxThreads {
		return fmt.Errorf("dispatch %s: threadgroup %v has %d threads, more than the pipeline's %d", name, threads, n, maxThreads)
	}
	return nil
}

// mtlCheckArg checks one kernel argument: exactly one of a buffer, inline bytes (1 to
// 4096 of them) and a threadgroup memory length; an index below 31; a buffer offset
// within the buffer. It returns the threadgroup memory length rounded up to Metal's
// 16-byte granularity (0 for other arguments). Whether the buffer belongs to the
// device is the device's own check.
func mtlCheckArg(name string, a gpu.Arg) (tg int, err error) {
	if a.Index < 0 || a.Index >= mtlMaxArgIndex {
		return 0, fmt.Errorf("dispatch %s: argument index %d out of range [0, %d)", name, a.Index, mtlMaxArgIndex)
	}
	kinds := 0
	if a.Buf != nil {
		kinds++
	}
	if a.Bytes != nil {
		kinds++
	}
	if a.Threadgroup != 0 {
		kinds++
	}
	if kinds != 1 {
		return 0, fmt.Errorf("dispatch %s: argument %d must set exactly one of Buf, Bytes and Threadgroup", name, a.Index)
	}
	switch {
	case a.Buf != nil:
		if a.Offset < 0 || a.Offset > a.Buf.Len() {
			return 0, fmt.Errorf("dispatch %s: argument %d: offset %d outside the %d-byte buffer", name, a.Index, a.Offset, a.Buf.Len())
		}
	case a.Bytes != nil:
		if a.Offset != 0 {
			return 0, fmt.Errorf("dispatch %s: argument %d: Offset is for buffers, not Bytes", name, a.Index)
		}
		if len(a.Bytes) == 0 || len(a.Bytes) > mtlMaxSetBytes {
			return 0, fmt.Errorf("dispatch %s: argument %d: %d inline bytes; setBytes takes 1 to %d", name, a.Index, len(a.Bytes), mtlMaxSetBytes)
		}
	default:
		if a.Offset != 0 || a.Threadgroup < 0 {
			return 0, fmt.Errorf("dispatch %s: argument %d: threadgroup memory length %d (offset %d)", name, a.Index, a.Threadgroup, a.Offset)
		}
		return (a.Threadgroup + mtlThreadgroupMemoryAlign - 1) &^ (mtlThreadgroupMemoryAlign - 1), nil
	}
	return 0, nil
}

// MTLCommandBufferError codes (MTLCommandBuffer.h) the device maps to gpu errors.
const (
	mtlCommandBufferErrorTimeout     = 2
	mtlCommandBufferErrorPageFault   = 3
	mtlCommandBufferErrorOutOfMemory = 8
)

// mtlCommandBufferFailure turns a failed command buffer's NSError (code and
// localizedDescription) into an error that wraps gpu.ErrTimeout or gpu.ErrOutOfMemory
// where it is one of those. The watchdog's error comes either as the Timeout code or,
// from the IOGPU driver, as "Impacting Interactivity
// (0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity)" or "...Timeout"
// in the description under another code, so both are looked at.
func mtlCommandBufferFailure(code int64, desc string) error {
	msg := fmt.Sprintf("command buffer failed (MTLCommandBufferError %d): %s", code, desc)
	switch {
	case code == mtlCommandBufferErrorTimeout,
		strings.Contains(desc, "ImpactingInteractivity"),
		strings.Contains(desc, "kIOGPUCommandBufferCallbackErrorTimeout"):
		return fmt.Errorf("%w: %s", gpu.ErrTimeout, msg)
	case code == mtlCommandBufferErrorOutOfMemory,
		strings.Contains(desc, "kIOGPUCommandBufferCallbackErrorOutOfMemory"):
		return fmt.Errorf("%w: %s", gpu.ErrOutOfMemory, msg)
	}
	return errors.New(msg)
}
