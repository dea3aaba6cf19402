package metal

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/internal/gpu"
)

func TestDeviceJoinSources(t *testing.T) {
	src, err := mtlJoinSources(map[string]string{
		"z.metal":  "#include \"common.h\"\nkernel void z() {}",
		"a.metal":  "  #  include \"common.h\" // shared\n#include <metal_stdlib>\nkernel void a() {}\n",
		"common.h": "#pragma once\nstruct S { uint n; };\n",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "#line 1 \"common.h\"\n#pragma once\nstruct S { uint n; };\n" +
		"#line 1 \"a.metal\"\n// (already in the program) #include \"common.h\"\n#include <metal_stdlib>\nkernel void a() {}\n" +
		"#line 1 \"z.metal\"\n// (already in the program) #include \"common.h\"\nkernel void z() {}\n"
	if src != want {
		t.Errorf("joined:\n%s\nwant:\n%s", src, want)
	}
	for _, bad := range []map[string]string{
		nil,
		{"": "x"},
		{"a\"b.metal": "x"},
		{"a.metal": "\xff"},
		{"a.metal": "a\x00b"},
	} {
		if _, err := mtlJoinSources(bad); err == nil {
			t.Errorf("mtlJoinSources(%q) accepted", bad)
		}
	}
}

func TestDeviceLocalInclude(t *testing.T) {
	for line, want := range map[string]string{
		"#include \"a.h\"\n":          "a.h",
		"  # include  \"b c.h\"  ":    "b c.h",
		"#include \"x.h\" // why":     "x.h",
		"#include <metal_stdlib>\n":   "",
		"#include \"x.h\" junk":       "",
		"#import \"x.h\"":             "",
		"// #include \"x.h\"":         "",
		"#include \"unterminated.h\n": "",
	} {
		got, ok := mtlLocalInclude(line)
		if got != want || ok != (want != "") {
			t.Errorf("mtlLocalInclude(%q) = %q, %v; want %q", line, got, ok, want)
		}
	}
}

func TestDeviceCheckMacrosAndKernels(t *testing.T) {
	if err := mtlCheckMacros(map[string]string{"QK": "128", "_X1": "", "HAS_F": "1.0f"}); err != nil {
		t.Error(err)
	}
	for _, bad := range []map[string]string{{"1X": "1"}, {"A-B": "1"}, {"": "1"}, {"A": "1\n2"}, {"A": "\x00"}} {
		if err := mtlCheckMacros(bad); err == nil {
			t.Errorf("mtlCheckMacros(%q) accepted", bad)
		}
	}
	ks, err := mtlCheckKernels([]string{"a", "b", "a"})
	if err != nil || strings.Join(ks, ",") != "a,b" {
		t.Errorf("mtlCheckKernels = %v, %v", ks, err)
	}
	if _, err := mtlCheckKernels([]string{"a b"}); err == nil {
		t.Error("kernel name with a space accepted")
	}
}

// The darwin device's mapping of a failed command buffer's NSError.
func TestCommandBufferFailure(t *testing.T) {
	for _, c := range []struct {
		code int64
		desc string
		want error
	}{
		{2, "Caused GPU Timeout Error (00000002:kIOGPUCommandBufferCallbackErrorTimeout)", gpu.ErrTimeout},
		{1, "Internal Error (0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity)", gpu.ErrTimeout},
		{8, "Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)", gpu.ErrOutOfMemory},
		{3, "Caused GPU Address Fault Error (0000000b:kIOGPUCommandBufferCallbackErrorPageFault)", nil},
	} {
		err := mtlCommandBufferFailure(c.code, c.desc)
		if !strings.Contains(err.Error(), c.desc) {
			t.Errorf("%d: %v lacks the description", c.code, err)
		}
		for _, s := range []error{gpu.ErrTimeout, gpu.ErrOutOfMemory} {
			if errors.Is(err, s) != (s == c.want) {
				t.Errorf("%d %q: errors.Is(%v) = %v", c.code, c.desc, s, !(s == c.want))
			}
		}
	}
}

// fakeResidencySet models an MTLResidencySet as Apple documents it — additions and
// removals staged, applied by commit — and records the messages, failing the test on
// any that would be wrong on a Mac: a buffer released while the committed set still
// names it (issue 24, defect 3), a message to a released buffer, a release twice.
type fakeResidencySet struct {
	t                 *testing.T
	mu                sync.Mutex
	set               uintptr
	staged, committed map[uintptr]bool // staged: true to add, false to remove
	released          map[uintptr]bool
	log               []string
	commits, requests int
}

func newFakeResidencySet(t *testing.T, set uintptr) *fakeResidencySet {
	return &fakeResidencySet{t: t, set: set, staged: map[uintptr]bool{}, committed: map[uintptr]bool{}, released: map[uintptr]bool{}}
}

func (f *fakeResidencySet) record(format string, args ...any) {
	f.log = append(f.log, fmt.Sprintf(format, args...))
}

func (f *fakeResidencySet) checkSet(set uintptr) {
	if set != f.set {
		f.t.Errorf("sent to residency set %#x, the device's is %#x", set, f.set)
	}
}

func (f *fakeResidencySet) addAllocation(set, id uintptr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkSet(set)
	if f.released[id] {
		f.t.Errorf("addAllocation of released buffer %#x", id)
	}
	f.staged[id] = true
	f.record("add %#x", id)
}

func (f *fakeResidencySet) removeAllocation(set, id uintptr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkSet(set)
	if f.released[id] {
		f.t.Errorf("removeAllocation of released buffer %#x", id)
	}
	f.staged[id] = false
	f.record("remove %#x", id)
}

func (f *fakeResidencySet) commitSet(set uintptr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkSet(set)
	for id, add := range f.staged {
		if add {
			f.committed[id] = true
		} else {
			delete(f.committed, id)
		}
	}
	clear(f.staged)
	f.commits++
	f.record("commit")
}

func (f *fakeResidencySet) requestResidency(set uintptr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkSet(set)
	f.requests++
	f.record("request")
}

func (f *fakeResidencySet) release(id uintptr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.committed[id] {
		f.t.Errorf("buffer %#x released while the committed residency set holds it (the last messages: %v)", id, f.log[max(0, len(f.log)-6):])
	}
	if f.released[id] {
		f.t.Errorf("buffer %#x released twice", id)
	}
	f.released[id] = true
	f.record("release %#x", id)
}

// The residency set's protocol, as the darwin device drives it: a buffer is in the
// committed set from the command buffer after its creation until it is freed, and out of
// it before it is released; a command buffer with nothing staged sends nothing. Under
// the old order (removal staged, buffer released, commit at the next command buffer)
// release finds the buffer still committed.
func TestResidencyOrder(t *testing.T) {
	const set = 0x5e7
	f := newFakeResidencySet(t, set)
	r := &mtlResidency{resSet: set}
	// Load: two weights and a state buffer, committed once, with one residency request.
	for _, id := range []uintptr{0xa, 0xb, 0xc} {
		r.residencyAdd(f, id)
	}
	r.residencyAdd(f, 0) // a failed allocation: nothing to add
	if len(f.committed) != 0 || f.commits != 0 {
		t.Fatalf("additions committed before a command buffer: %v", f.log)
	}
	r.residencyCommit(f)
	r.residencyCommit(f) // a second command buffer: nothing staged, nothing sent
	if want := "add 0xa,add 0xb,add 0xc,commit,request"; strings.Join(f.log, ",") != want {
		t.Errorf("load and two command buffers sent %v, want %s", f.log, want)
	}
	// A buffer freed: out of the committed set before it is released, with no command
	// buffer after it (a model closed, the next one loading).
	f.log = nil
	r.residencyFree(f, 0xb)
	if want := "remove 0xb,commit,release 0xb"; strings.Join(f.log, ",") != want {
		t.Errorf("free sent %v, want %s", f.log, want)
	}
	if f.committed[0xb] || !f.committed[0xa] || !f.committed[0xc] || f.requests != 1 {
		t.Errorf("committed %v after freeing 0xb; %d residency requests", f.committed, f.requests)
	}
	// A free while an addition is staged commits both, and asks for the addition's
	// residency; the next command buffer then has nothing to do.
	f.log = nil
	r.residencyAdd(f, 0xd)
	r.residencyFree(f, 0xa)
	r.residencyCommit(f)
	if want := "add 0xd,remove 0xa,commit,request,release 0xa"; strings.Join(f.log, ",") != want {
		t.Errorf("add then free sent %v, want %s", f.log, want)
	}
	r.residencyFree(f, 0) // a buffer already freed
	// Without a residency set (macOS 14, or after Close), free only releases.
	g := newFakeResidencySet(t, 0)
	none := &mtlResidency{}
	none.residencyAdd(g, 0xe)
	none.residencyCommit(g)
	none.residencyFree(g, 0xe)
	if want := "release 0xe"; strings.Join(g.log, ",") != want {
		t.Errorf("without a set: %v, want %s", g.log, want)
	}
}

// Buffers made and freed from many goroutines while command buffers are made: every
// release finds its buffer out of the committed set (the fake checks each), and at the
// end the set is empty and every buffer released once. Run with -race.
func TestResidencyConcurrent(t *testing.T) {
	const set, workers, each = 0x5e7, 8, 200
	f := newFakeResidencySet(t, set)
	r := &mtlResidency{resSet: set}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := uintptr(1 + w*each + i)
				r.residencyAdd(f, id)
				if i%3 != 0 { // the others freed before any command buffer
					r.residencyCommit(f)
				}
				r.residencyFree(f, id)
			}
		}()
	}
	wg.Wait()
	r.residencyCommit(f)
	if len(f.committed) != 0 || len(f.staged) != 0 || len(f.released) != workers*each {
		t.Errorf("after all frees: %d committed, %d staged, %d of %d released", len(f.committed), len(f.staged), len(f.released), workers*each)
	}
}
