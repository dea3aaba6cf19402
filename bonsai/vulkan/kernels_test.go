package vulkan

import (
	"errors"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vk"
	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vktest"
	"github.com/bonsai-go/sdk/bonsai/vulkan/shaders"
	"github.com/bonsai-go/sdk/internal/gpu/engine"
)

// testDevice is the device the backend tests run on: BONSAI_VULKAN_DEVICE, else a GPU,
// else lavapipe. Without a loader or device the tests skip, unless
// BONSAI_VULKAN_REQUIRE=1 (CI) makes that a failure.
func testDevice(t testing.TB) string {
	t.Helper()
	if want := wantedDevice(Options{}); want != "" {
		return want
	}
	if _, err := Probe(Options{}); err == nil {
		return ""
	} else if !errors.Is(err, ErrUnavailable) {
		t.Fatal(err)
	}
	if _, err := Probe(Options{Device: "llvmpipe"}); err != nil {
		if errors.Is(err, ErrUnavailable) {
			vktest.Missing(t, "no Vulkan device here: %v", err)
		}
		t.Fatal(err)
	}
	return "llvmpipe"
}

// validated returns the backend on the test device with the validation layer on; any
// error the layer reports fails t when the test ends.
func validated(t testing.TB, opts ...Option) backend.Backend {
	t.Helper()
	dev := testDevice(t)
	var mu sync.Mutex
	var errs []Message
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range errs {
			t.Errorf("validation: %s: %s", m.ID, m.Text)
		}
	})
	report := func(m Message) {
		if m.IsError() {
			mu.Lock()
			errs = append(errs, m)
			mu.Unlock()
		}
	}
	if ok, err := vk.LayerPresent(vk.ValidationLayer); err != nil || !ok {
		vktest.Missing(t, "no validation layer (vulkan-validationlayers): %v", err)
	}
	return New(append([]Option{WithDevice(dev), WithValidation(report)}, opts...)...)
}

func runChecks(t *testing.T, real bool) {
	b := validated(t)
	checks, err := engine.RunChecks(b, engine.Options{Seed: 1, Real: real, Log: func(c engine.Check) { t.Log(c) }})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, c := range checks {
		if !c.OK() {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d kernel checks failed", failed, len(checks))
	}
	if len(checks) < 20 {
		t.Errorf("only %d checks ran", len(checks))
	}
}

// Every kernel against the Go code that owns its math, at small odd shapes, on the
// device under the validation layer.
func TestKernelChecks(t *testing.T) { runChecks(t, false) }

// The same at the 27B model's shapes.
func TestKernelChecksReal(t *testing.T) {
	if testing.Short() {
		t.Skip("the 27B shapes take minutes on lavapipe; TestKernelChecks covers every kernel")
	}
	runChecks(t, true)
}

// Every kernel of the engine has its SPIR-V module.
func TestEveryKernelHasSPIRV(t *testing.T) {
	for _, k := range engine.KernelNames() {
		if _, err := shaders.Kernel(k); err != nil {
			t.Error(err)
		}
	}
}
