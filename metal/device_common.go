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
	"sync"
	"unicode/utf8"

	"github.com/bonsai-go/sdk/internal/gpu"
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

	mtlEmptyBufferLength = 16 // NewBuffer(0) allocates this much and reports Len 0
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

// mtlResidencySends are the messages the residency logic sends, in the order it sends
// them: the darwin device's objcCaller sends them to the MTLResidencySet (release to the
// MTLBuffer); device_common_test.go records them against a model of the set.
type mtlResidencySends interface {
	addAllocation(set, id uintptr)    // stage an addition: -addAllocation:
	removeAllocation(set, id uintptr) // stage a removal: -removeAllocation:
	commitSet(set uintptr)            // apply the staged changes: -commit
	requestResidency(set uintptr)     // make the committed allocations resident: -requestResidency
	release(id uintptr)               // the buffer's last reference: -release
}

// mtlResidency is the device's residency set (macOS 15): every buffer of the device is
// added when it is made and removed when it is freed, and the set, attached to the
// queue, is made resident once instead of per command buffer.
//
// Additions are staged and committed before the next command buffer, the first that can
// use the new buffer, so that loading hundreds of tensors commits once. A removal is
// committed at once, before the buffer is released (issue 24, defect 3): committed only
// at the next command buffer, the set would go on naming the freed buffer for as long as
// no command buffer comes — e.g. from closing one model to the first step of the next,
// while the next one's weights are loaded, when the memory matters most. Metal does not
// document what a committed set does with an allocation released under it: keep it, and
// its memory, resident, or hold a dangling reference (to pages a wrapped buffer's owner
// then unmaps); neither is acceptable. free sends while other command buffers may be in
// flight, but the freed buffer is in none of them (mtlBuffer.free comes after the last
// Wait that held it), and Apple documents that a set's allocations may change at any time.
type mtlResidency struct {
	resMu     sync.Mutex
	resSet    uintptr // the MTLResidencySet; 0 where the OS has none, or after Close
	resStaged bool    // additions staged since the last commit
}

// residencyAdd stages a new buffer's addition.
func (r *mtlResidency) residencyAdd(s mtlResidencySends, id uintptr) {
	r.resMu.Lock()
	defer r.resMu.Unlock()
	if r.resSet == 0 || id == 0 {
		return
	}
	s.addAllocation(r.resSet, id)
	r.resStaged = true
}

// residencyCommit commits the staged additions, before a command buffer is made; with
// none staged it sends nothing, which is the point of the set.
func (r *mtlResidency) residencyCommit(s mtlResidencySends) {
	r.resMu.Lock()
	defer r.resMu.Unlock()
	if r.resSet != 0 && r.resStaged {
		r.commitLocked(s)
	}
}

// residencyFree removes a buffer from the set and commits the removal (with any staged
// additions), then releases the buffer.
func (r *mtlResidency) residencyFree(s mtlResidencySends, id uintptr) {
	if id == 0 {
		return
	}
	r.resMu.Lock()
	if r.resSet != 0 {
		s.removeAllocation(r.resSet, id)
		r.commitLocked(s)
	}
	r.resMu.Unlock()
	s.release(id)
}

// commitLocked commits, and asks for residency where allocations were added: a removal
// alone leaves the rest as resident as it was. Under resMu.
func (r *mtlResidency) commitLocked(s mtlResidencySends) {
	s.commitSet(r.resSet)
	if r.resStaged {
		s.requestResidency(r.resSet)
		r.resStaged = false
	}
}
