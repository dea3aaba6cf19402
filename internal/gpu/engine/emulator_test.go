package engine

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/gpu/mslemu"
)

// The emulator tests run the backend's kernels, unchanged, on the CPU. They need clang++
// (and linux/amd64 or arm64); without them they skip.

var (
	emuOnce sync.Once
	emuErr  error
)

// emulator skips the test when the emulator cannot run here.
func emulator(t testing.TB) {
	t.Helper()
	emuOnce.Do(func() {
		d, err := mslemu.New()
		if err == nil {
			d.Close()
		}
		emuErr = err
	})
	if emuErr != nil {
		// A missing clang is a real missing capability; CI installs it and sets
		// MSLEMU_REQUIRE so that the tests cannot pass by skipping.
		if os.Getenv("MSLEMU_REQUIRE") != "" {
			t.Fatalf("emulator unavailable: %v", emuErr)
		}
		t.Skipf("emulator unavailable: %v", emuErr)
	}
}

// TestCompileCheck compiles the library with the emulator's CompileCheck (clang against
// the shim, syntax and types) for the 27B geometry and the tiny preset's.
func TestCompileCheck(t *testing.T) {
	for _, g := range []geometry{
		{E: 5120, D: 128, Rep: 3, HD: 256, fusedGDN: true},
		{E: 256, D: 32, Rep: 3, HD: 64, fusedGDN: true},
	} {
		if err := mslemu.CompileCheck(map[string]string{sourceFile: Source()}, g.macros()); err != nil {
			if errors.Is(err, gpu.ErrUnavailable) && os.Getenv("MSLEMU_REQUIRE") == "" {
				t.Skip(err)
			}
			t.Fatalf("%+v: %v", g, err)
		}
	}
	// Each file also compiles on its own (with the headers), as a device that joins the
	// sources itself would compile them.
	src := Sources()
	for name, text := range src {
		if strings.HasSuffix(name, ".h") {
			continue
		}
		one := map[string]string{name: text}
		for h, ht := range src {
			if strings.HasSuffix(h, ".h") {
				one[h] = ht
			}
		}
		if err := mslemu.CompileCheck(one, geometry{E: 5120, D: 128, Rep: 3, HD: 256, fusedGDN: true}.macros()); err != nil {
			t.Errorf("%s alone: %v", name, err)
		}
	}
}

// TestKernels runs every kernel against its Go reference at small odd shapes.
func TestKernels(t *testing.T) {
	emulator(t)
	cs, err := RunChecks(newEmulator(), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	report(t, cs)
	seen := map[string]bool{}
	for _, c := range cs {
		seen[c.Kernel] = true
	}
	// The KV appends run inside the attention checks' prefill, and the merge inside every
	// attention check, reported as the attention.
	within := map[string]string{kAttnAppend16: kAttnF16, kAttnAppend32: kAttnF32, kAttnAppendI8: kAttnI8, kAttnMerge: kAttnF16}
	for _, k := range kernelNames {
		if !seen[k] && !seen[within[k]] {
			t.Errorf("kernel %s has no check", k)
		}
	}
}

// TestKernelsRealShapes runs the kernels at the 27B model's shapes (seconds on the
// emulator).
func TestKernelsRealShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the kernels at the 27B model's shapes (minutes on the emulator) are left to the full go test; TestKernels checks every kernel at small shapes")
	}
	emulator(t)
	cs, err := RunChecks(newEmulator(), Options{Seed: 2, Real: true})
	if err != nil {
		t.Fatal(err)
	}
	report(t, cs)
}

func report(t *testing.T, cs []Check) {
	t.Helper()
	for _, c := range cs {
		if c.OK() {
			t.Log(c)
		} else {
			t.Error(c)
		}
	}
}
