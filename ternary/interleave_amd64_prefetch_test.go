//go:build amd64 && !purego

package ternary

import "testing"

// setIlvPrefetch sets the VNNI kernel's prefetch distance and returns the function
// that restores it.
func setIlvPrefetch(n int) func() {
	save := ilvPrefetch
	ilvPrefetch = n
	return func() { ilvPrefetch = save }
}

// TestIlvPrefetchFor checks the distance chosen by vendor, from CPUID's registers as
// the vendors spell them (hand-encoded: "Genu" "ineI" "ntel", "Auth" "enti" "cAMD").
func TestIlvPrefetchFor(t *testing.T) {
	for _, c := range []struct {
		name          string
		ebx, edx, ecx uint32
		want          int
	}{
		{"GenuineIntel", 0x756e6547, 0x49656e69, 0x6c65746e, 2176},
		{"AuthenticAMD", 0x68747541, 0x69746e65, 0x444d4163, 8704},
		{"HygonGenuine", 0x6f677948, 0x6e65476e, 0x656e6975, 8704},
	} {
		if got := ilvPrefetchFor(c.ebx, c.edx, c.ecx); got != c.want {
			t.Errorf("%s: %d bytes ahead, want %d", c.name, got, c.want)
		}
	}
	if ilvPrefetch%2176 != 0 || ilvPrefetch <= 0 {
		t.Errorf("ilvPrefetch = %d: want a positive multiple of a tile × block (2176)", ilvPrefetch)
	}
	// The kernel's results do not depend on the distance.
	defer setIlvPrefetch(ilvPrefetch)()
	for _, d := range []int{0, 2176, 17408} {
		ilvPrefetch = d
		TestMatVecInterleaved(t)
	}
}
