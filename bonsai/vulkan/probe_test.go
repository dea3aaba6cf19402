package vulkan

import (
	"strings"
	"testing"
)

// The subgroup probe runs on the test device through Dispatch and finds its subgroups
// in order (lavapipe: 8 wide), with no validation error.
func TestSubgroupProbe(t *testing.T) {
	c := open(t)
	d, err := newGPUDevice(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	s, err := d.subgroupLayout()
	if err != nil {
		t.Fatalf("%s: %v", c.Choice.Name, err)
	}
	t.Logf("%s: subgroups of %d in order (device subgroupSize %d)", c.Choice.Name, s, c.Limits.SubgroupSize)
	if s != int(c.Limits.SubgroupSize) {
		t.Errorf("the probe ran subgroups of %d; the device says %d", s, c.Limits.SubgroupSize)
	}
}

// probeWords fabricates sgprobe's words for n invocations in subgroups of s, in order.
func probeWords(n, s int) []uint32 {
	w := make([]uint32, 3*n)
	for i := range n {
		w[3*i], w[3*i+1], w[3*i+2] = uint32(s), uint32(i/s), uint32(i%s)
	}
	return w
}

// subgroupsInOrder passes subgroups in order, of any size, and names the first
// invocation out of place otherwise.
func TestProbeSubgroupsInOrder(t *testing.T) {
	for _, tc := range []struct{ n, s int }{{256, 32}, {32, 32}, {256, 8}, {32, 8}} {
		if s, err := subgroupsInOrder(probeWords(tc.n, tc.s)); err != nil || s != tc.s {
			t.Errorf("%d invocations in order in subgroups of %d: %d, %v", tc.n, tc.s, s, err)
		}
	}
	swapped := probeWords(256, 32)
	swapped[3*37+2], swapped[3*38+2] = 6, 5 // invocations 37 and 38 trade places
	// Subgroup 0 holds 16 invocations: the rest are off by 16.
	partial := probeWords(64, 32)
	for i := 16; i < 64; i++ {
		partial[3*i+1], partial[3*i+2] = uint32((i-16)/32+1), uint32((i-16)%32)
	}
	wrongSize := probeWords(256, 32)
	wrongSize[3*70] = 64
	for _, tc := range []struct {
		name  string
		words []uint32
		want  string
	}{
		{"swapped", swapped, "invocation 37 is invocation 6 of subgroup 1 (size 32), not 5 of 1 (size 32)"},
		{"partial", partial, "invocation 16 is invocation 0 of subgroup 1 (size 32), not 16 of 0 (size 32)"},
		{"partial last", probeWords(48, 32), "invocation 32 begins a partial subgroup (16 of 32)"},
		{"wrong size", wrongSize, "invocation 70 is invocation 6 of subgroup 2 (size 64), not 6 of 2 (size 32)"},
		{"swapped 8", func() []uint32 { w := probeWords(32, 8); w[3*9+1] = 0; return w }(), "invocation 9 is"},
		{"empty", nil, "not a workgroup's"},
	} {
		s, err := subgroupsInOrder(tc.words)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %d, %v; want an error with %q", tc.name, s, err, tc.want)
		}
	}
}
