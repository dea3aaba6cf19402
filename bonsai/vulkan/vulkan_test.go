package vulkan

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vk"
	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vktest"
)

// open opens the device the tests run on, with the validation layer, and fails the
// test on any validation error it reports. Without a loader or device it skips, unless
// BONSAI_VULKAN_REQUIRE=1 (CI) makes that a failure. BONSAI_VULKAN_DEVICE picks the
// device; unset, a GPU, else lavapipe.
func open(t *testing.T) *Context {
	t.Helper()
	c, err := Open(Options{Validation: true})
	if errors.Is(err, ErrNoDevice) && wantedDevice(Options{}) == "" {
		c, err = Open(Options{Validation: true, Device: "llvmpipe"})
	}
	if err != nil {
		if errors.Is(err, ErrUnavailable) || errors.Is(err, errNoLayer) {
			vktest.Missing(t, "no Vulkan with validation here: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		for _, m := range c.Messages() {
			if m.IsError() {
				t.Errorf("validation: %s: %s", m.ID, m.Text)
			}
		}
	})
	return c
}

func TestChoose(t *testing.T) {
	lvp := candidate{name: "llvmpipe (LLVM 15.0.6, 256 bits)", kind: vk.PHYSICAL_DEVICE_TYPE_CPU, computeQ: true}
	igpu := candidate{name: "Intel(R) UHD Graphics 770", kind: vk.PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, computeQ: true}
	dgpu := candidate{name: "NVIDIA GeForce RTX 3090", kind: vk.PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, computeQ: true}
	for _, tc := range []struct {
		cands   []candidate
		want    string
		index   int // -1: ErrNoDevice
		gpuOnly bool
	}{
		{[]candidate{lvp, igpu, dgpu}, "", 2, false},
		{[]candidate{lvp, igpu}, "", 1, false},
		{[]candidate{lvp}, "", 0, false},       // the only device, Vulkan asked for
		{[]candidate{lvp}, "", -1, true},       // a CPU device never chosen automatically
		{[]candidate{lvp, lvp}, "", -1, false}, // nor when it is not the only one
		{[]candidate{lvp}, "llvm", 0, true},
		{[]candidate{lvp, dgpu}, "LLVMpipe", 0, false},
		{[]candidate{lvp, dgpu}, "0", 0, false},
		{[]candidate{lvp, dgpu}, "2", -1, false},
		{[]candidate{lvp, dgpu}, "radeon", -1, false},
		{[]candidate{{name: "no compute", kind: vk.PHYSICAL_DEVICE_TYPE_DISCRETE_GPU}, igpu}, "", 1, false},
	} {
		i, reason, err := choose(tc.cands, tc.want, tc.gpuOnly)
		if tc.index < 0 {
			if !errors.Is(err, ErrNoDevice) || !errors.Is(err, ErrUnavailable) {
				t.Errorf("choose(%d devices, %q) = %d, %v; want ErrNoDevice", len(tc.cands), tc.want, i, err)
			}
			continue
		}
		if err != nil || i != tc.index || reason == "" {
			t.Errorf("choose(%d devices, %q) = %d (%q), %v; want %d", len(tc.cands), tc.want, i, reason, err, tc.index)
		}
	}
}

// The limits read are the device's and within what Vulkan 1.2 guarantees.
func TestLimits(t *testing.T) {
	c := open(t)
	l := c.Limits
	t.Logf("%s (%s, %s): subgroup %d, storage range %d, shared %d, invocations %d, heaps %v",
		c.Choice.Name, c.Choice.Type, c.Choice.Reason, l.SubgroupSize, l.MaxStorageBufferRange,
		l.MaxComputeSharedMemory, l.MaxWorkGroupInvocations, l.HeapBytes)
	if l.SubgroupSize == 0 || l.SubgroupSize&(l.SubgroupSize-1) != 0 || l.SubgroupSize > 128 {
		t.Errorf("subgroup size %d", l.SubgroupSize)
	}
	if l.MaxStorageBufferRange < 1<<27 || l.MaxComputeSharedMemory < 16384 || l.MaxWorkGroupInvocations < 128 ||
		l.MaxWorkGroupSize[0] < 128 || l.MaxPushConstantsSize < 128 || len(l.HeapBytes) == 0 || l.HeapBytes[0] == 0 {
		t.Errorf("limits below Vulkan's minimums: %+v", l)
	}
	if l.APIVersion < vk.APIVersion1_2 {
		t.Errorf("API version %#x below 1.2", l.APIVersion)
	}
	if c.Choice.Type == "cpu" && !strings.Contains(c.Choice.Reason, "asked for") {
		t.Errorf("a CPU device chosen unasked: %+v", c.Choice)
	}
}

// RMSNorm on the device matches a float64 reference within 2e-6 relative (float32 sums
// of up to 1000 squares and inversesqrt's 2 ULP).
func TestRMSNorm(t *testing.T) {
	c := open(t)
	if !c.Limits.SubgroupArithmetic {
		t.Skip("the device has no subgroup arithmetic in compute")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 256, 1000} {
		const rows = 5
		x := make([]float32, rows*n)
		w := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64()) * float32(1+i%3)
		}
		for i := range w {
			w[i] = float32(0.5 + rng.Float64())
		}
		const eps = 1e-6
		y, err := c.rmsNorm(context.Background(), x, w, eps, true)
		if err != nil {
			t.Fatal(err)
		}
		for r := range rows {
			ss := 0.0
			for _, v := range x[r*n : (r+1)*n] {
				ss += float64(v) * float64(v)
			}
			scale := 1 / math.Sqrt(ss/float64(n)+eps)
			for i := range n {
				want := float64(x[r*n+i]) * scale * float64(w[i])
				if got := float64(y[r*n+i]); math.Abs(got-want) > 2e-6*math.Abs(want)+1e-7 {
					t.Fatalf("n=%d row %d [%d]: got %v, want %v", n, r, i, got, want)
				}
			}
		}
	}
}

// The validation layer reports a wrong call: a dispatch with the pipeline's descriptor
// set left unbound.
func TestValidationReportsUnboundSet(t *testing.T) {
	c := open(t)
	_, err := c.rmsNorm(context.Background(), make([]float32, 8), make([]float32, 8), 1e-6, false)
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	var ids []string
	for _, m := range c.Messages() { // taken here: these errors are the test's point
		ids = append(ids, m.ID)
		if m.IsError() && strings.Contains(m.ID, "vkCmdDispatch") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no validation error for a dispatch without its descriptor set; reports: %v", ids)
	}
}

// Closing a context destroys every Vulkan object it and its kernel runs made.
func TestClosedContextLeaksNothing(t *testing.T) {
	c := open(t)
	if _, err := c.rmsNorm(context.Background(), make([]float32, 16), make([]float32, 16), 1e-6, true); err != nil {
		t.Fatal(err)
	}
	live := c.live()
	for _, kind := range []string{"instance", "debug messenger", "device", "command pool"} {
		if live[kind] != 1 {
			t.Errorf("open context: %d %s, want 1 (all: %v)", live[kind], kind, live)
		}
	}
	if len(live) != 4 {
		t.Errorf("after a run, live objects beyond the context's own: %v", live)
	}
	c.Close()
	if live := c.live(); len(live) != 0 {
		t.Errorf("closed context leaves %v", live)
	}
}
