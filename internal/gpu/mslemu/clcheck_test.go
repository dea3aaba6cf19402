package mslemu

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

func clCheckOrSkip(t *testing.T, src, macros map[string]string) error {
	t.Helper()
	err := AddressSpaceCheck(src, macros)
	if errors.Is(err, ErrNoCompiler) && os.Getenv("MSLEMU_REQUIRE") == "" {
		t.Skip("no clang: install clang (CI sets MSLEMU_REQUIRE, which turns this into a failure)")
	}
	return err
}

// TestAddressSpaceCheckNegative: every deliberate mismatch of the negative file is an
// error on its own line, and nothing else is.
func TestAddressSpaceCheckNegative(t *testing.T) {
	data, err := os.ReadFile("testdata/addrspace_bad.metal.txt")
	if err != nil {
		t.Fatal(err)
	}
	src := string(data)
	want := map[int]bool{}
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "// ERROR") {
			want[i+1] = true
		}
	}
	if len(want) != 9 {
		t.Fatalf("%d marked lines, want 9", len(want))
	}
	err = clCheckOrSkip(t, map[string]string{"bad.metal": src}, nil)
	if !errors.Is(err, ErrCompile) {
		t.Fatalf("the negative file compiled: %v", err)
	}
	got := map[int]bool{}
	for _, m := range regexp.MustCompile(`bad\.metal:(\d+):\d+: error:`).FindAllStringSubmatch(err.Error(), -1) {
		var n int
		fmt.Sscan(m[1], &n)
		got[n] = true
	}
	for l := range want {
		if !got[l] {
			t.Errorf("line %d: the mismatch was not reported", l)
		}
	}
	for l := range got {
		if !want[l] {
			t.Errorf("line %d: an error on a line without a mismatch", l)
		}
	}
	if t.Failed() {
		t.Log(err)
	}
	// The same file with the mismatches removed compiles: the errors come from the
	// address spaces, not from the prelude.
	var ok []string
	for _, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "// ERROR") {
			l = ""
		}
		ok = append(ok, l)
	}
	fixed := strings.Join(ok, "\n")
	fixed = strings.Replace(fixed, "+ p[0] + q[0]", "", 1)
	if err := clCheckOrSkip(t, map[string]string{"bad.metal": fixed}, nil); err != nil {
		t.Errorf("without the mismatches: %v", err)
	}
	// and the emulator's C++ build accepts the mismatches (all but those from constant,
	// which it sees as const): the check is needed
	var emu []string
	for _, l := range strings.Split(src, "\n") {
		if strings.Contains(l, "// ERROR constant") {
			l = ""
		}
		emu = append(emu, l)
	}
	emuSrc := strings.Replace(strings.Join(emu, "\n"), "+ q[0]", "", 1)
	if err := checkOrSkip(t, map[string]string{"bad.metal": emuSrc}, nil); err != nil {
		t.Errorf("the emulator's C++ build refuses the negative file (%v); the test no longer shows why AddressSpaceCheck exists", err)
	}
}

// The prelude declares simdgroup_matrix with Metal's address spaces: loads and stores
// from device and threadgroup memory pass, a store through a thread pointer fails.
func TestAddressSpaceCheckSIMDGroupMatrix(t *testing.T) {
	src := `#include <metal_stdlib>
using namespace metal;
kernel void g(device const float* a [[buffer(0)]], device float* c [[buffer(1)]], ushort sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float tile[64];
  simdgroup_float8x8 ma, mb;
  simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_load(ma, a, 8);
  simdgroup_load(mb, tile, 8, ulong2(0, 0), true);
  simdgroup_multiply_accumulate(acc, ma, mb, acc);
  simdgroup_store(acc, c, 8);
  simdgroup_store(acc, tile, 8);
  c[sg] = acc.thread_elements()[0];
#ifdef BAD
  float local_copy[64];
  simdgroup_store(acc, local_copy, 8);
#endif
}
`
	if err := clCheckOrSkip(t, map[string]string{"g.metal": src}, nil); err != nil {
		t.Fatal(err)
	}
	err := clCheckOrSkip(t, map[string]string{"g.metal": src}, map[string]string{"BAD": "1"})
	if !errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), "g.metal:15:") {
		t.Errorf("a store to thread memory: %v", err)
	}
}
