package vulkan

import (
	"encoding/binary"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/gpu/engine"
)

// The negative test's shader: more shared memory than the device allows.
//
//go:generate glslc --target-env=vulkan1.2 testdata/toobig.comp -o testdata/toobig.spv

// engineMacros returns the macros the engine compiles its library with for a model of
// GDN head dimension dGDN, rep V heads per q/k head and attention head dimension hd
// (geometry.macros, internal/gpu/engine/kernels.go), with BONSAI_MAXCH at the largest
// chunk the engine compiles the matrix-vector kernels for (6144, maxChunk there: its
// variants for smaller chunks hold less) — kept in step by hand (TestPipelinesFit
// checks that the names are the ones Compile takes).
func engineMacros(dGDN, rep, hd int) map[string]string {
	const maxChunk = 6144 // the largest BONSAI_MAXCH: maxChunk in kernels.go
	return map[string]string{
		"BONSAI_MAXCH":   strconv.Itoa(maxChunk),
		"BONSAI_GDN_D":   strconv.Itoa(dGDN),
		"BONSAI_GDN_REP": strconv.Itoa(rep),
		"BONSAI_HD":      strconv.Itoa(hd),
	}
}

// limitsDevice opens the test device with validation (open) and makes the engine's
// device of it.
func limitsDevice(t *testing.T) (*Context, *gpuDevice) {
	t.Helper()
	c := open(t)
	d, err := newGPUDevice(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return c, d
}

// The device meets the kernels' needs, and Load would take it.
func TestLimitsMeetKernels(t *testing.T) {
	c := open(t)
	l := c.Limits
	t.Logf("%s: shared memory %d, workgroup invocations %d, workgroup size %v",
		c.Choice.Name, l.MaxComputeSharedMemory, l.MaxWorkGroupInvocations, l.MaxWorkGroupSize)
	if short := kernelLimits(l); len(short) > 0 {
		t.Errorf("the device's limits fall short of the kernels': %s", strings.Join(short, "; "))
	}
	if !c.gpuReady {
		t.Errorf("%s is not ready for the kernels: %s", c.Choice.Name, c.missing)
	}
}

// kernelLimits passes limits that meet the kernels' needs and names each one short,
// with the device's value and the need.
func TestKernelLimitsReady(t *testing.T) {
	lavapipe := Limits{MaxComputeSharedMemory: 32768, MaxWorkGroupInvocations: 1024, MaxWorkGroupSize: [3]uint32{1024, 1024, 1024}, SubgroupArithmetic: true}
	if short := kernelLimits(lavapipe); len(short) != 0 {
		t.Errorf("lavapipe's limits refused: %v", short)
	}
	nvidia := Limits{MaxComputeSharedMemory: 49152, MaxWorkGroupInvocations: 1024, MaxWorkGroupSize: [3]uint32{1024, 1024, 64}, SubgroupArithmetic: true}
	if short := kernelLimits(nvidia); len(short) != 0 {
		t.Errorf("NVIDIA's limits refused: %v", short)
	}
	exact := Limits{MaxComputeSharedMemory: 32768, MaxWorkGroupInvocations: 256, MaxWorkGroupSize: [3]uint32{256, 1, 1}, SubgroupArithmetic: true}
	if short := kernelLimits(exact); len(short) != 0 {
		t.Errorf("limits exactly the needs refused: %v", short)
	}
	// Vulkan's minimums: every requirement short.
	minimum := Limits{MaxComputeSharedMemory: 16384, MaxWorkGroupInvocations: 128, MaxWorkGroupSize: [3]uint32{128, 128, 64}}
	short := kernelLimits(minimum)
	want := []string{
		"maxComputeSharedMemorySize 16384, need 32768",
		"maxComputeWorkGroupInvocations 128, need 256",
		"maxComputeWorkGroupSize[0] 128, need 256",
		"subgroup arithmetic in compute shaders",
	}
	if !slices.Equal(short, want) {
		t.Errorf("Vulkan's minimum limits: got %q, want %q", short, want)
	}
	// One short by one.
	l := exact
	l.MaxComputeSharedMemory--
	if short := kernelLimits(l); len(short) != 1 || !strings.Contains(short[0], "maxComputeSharedMemorySize 32767") || !strings.Contains(short[0], "32768") {
		t.Errorf("shared memory one byte short: %q", short)
	}
	l = exact
	l.MaxWorkGroupSize[0] = 255
	if short := kernelLimits(l); len(short) != 1 || !strings.Contains(short[0], "maxComputeWorkGroupSize[0] 255") || !strings.Contains(short[0], "256") {
		t.Errorf("workgroup width one short: %q", short)
	}
}

// Every pipeline the engine can build fits the device: every kernel at every workgroup
// size it may be dispatched with (32..256, multiples of 32), at the two geometries of
// the engine's kernel checks (internal/gpu/engine/kernels_check.go: tinyLike and the 27B
// model's realLike), is created without an error and without a validation error. The
// layer checks a pipeline's shared memory, specialization constants applied, against
// maxComputeSharedMemorySize when it is created (TestTooBigSharedMemory shows it
// reporting an overrun), so this is the design rule — at most 32 KiB per workgroup —
// checked on the SPIR-V the device runs.
func TestPipelinesFit(t *testing.T) {
	c, d := limitsDevice(t)
	if !c.gpuReady {
		t.Skipf("%s lacks what the kernels need (%s), so no pipeline is built on it", c.Choice.Name, c.missing)
	}
	geometries := []struct {
		name   string
		macros map[string]string
	}{
		{"tinyLike", engineMacros(32, 3, 64)},   // E 256, D 32, Rep 3, HD 64, block 64
		{"realLike", engineMacros(128, 3, 256)}, // the 27B model: E 5120, D 128, Rep 3, HD 256, block 1024
	}
	if got, want := slices.Sorted(maps.Keys(geometries[0].macros)), slices.Sorted(maps.Keys(specIDs)); !slices.Equal(got, want) {
		t.Fatalf("the test's macros %v are not the ones Compile takes %v", got, want)
	}
	for _, g := range geometries {
		ps, err := d.Compile(nil, g.macros, engine.KernelNames())
		if err != nil {
			t.Fatal(err)
		}
		built := 0
		for _, k := range engine.KernelNames() {
			p := ps[k].(*pipeline)
			for threads := 32; threads <= maxThreads; threads += 32 {
				d.mu.Lock()
				_, err := d.vkPipeline(p, threads)
				d.mu.Unlock()
				if err != nil {
					t.Errorf("%s %v: %s at %d threads: %v", g.name, g.macros, k, threads, err)
				}
				for _, m := range c.Messages() {
					if m.IsError() {
						t.Errorf("%s %v: %s at %d threads: validation: %s: %s", g.name, g.macros, k, threads, m.ID, m.Text)
					}
				}
				built++
			}
		}
		t.Logf("%s: %d pipelines (%d kernels × %d workgroup sizes) built, macros %v", g.name, built, len(ps), maxThreads/32, g.macros)
	}
}

// The check can fail: a pipeline declaring one float more shared memory than the
// device allows (testdata/toobig.comp) draws a validation error, or a creation error,
// at its creation; at exactly the limit it draws none. So does a kernel of the engine
// specialised beyond any geometry the engine accepts (mv_norm holding a chunk of limit/4
// floats): the layer sizes the kernels' spec-constant arrays as specialised.
func TestTooBigSharedMemory(t *testing.T) {
	c, d := limitsDevice(t)
	code, err := os.ReadFile("testdata/toobig.spv")
	if err != nil {
		t.Fatal(err)
	}
	words := make([]uint32, len(code)/4)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(code[4*i:])
	}
	mod, err := c.dev.CreateShaderModule(words)
	if err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	d.modules["toobig"] = mod // vkPipeline builds from it; d.Close destroys it
	d.mu.Unlock()
	limit := c.Limits.MaxComputeSharedMemory
	t.Logf("%s: maxComputeSharedMemorySize %d", c.Choice.Name, limit)

	// build builds p at 32 threads and returns the validation errors it drew and its
	// creation error.
	build := func(p *pipeline) ([]string, error) {
		d.mu.Lock()
		_, err := d.vkPipeline(p, 32)
		d.mu.Unlock()
		var reports []string
		for _, m := range c.Messages() { // taken here: these errors are the test's point
			if m.IsError() {
				reports = append(reports, m.ID+": "+m.Text)
			}
		}
		return reports, err
	}
	aboutShared := func(r string) bool {
		return strings.Contains(r, "Workgroup-06530") || strings.Contains(r, "maxComputeSharedMemorySize")
	}
	slot := specIDs["BONSAI_MAXCH"] // toobig.comp's array length, constant 1

	fits := &pipeline{name: "toobig", max: maxThreads}
	fits.spec[slot] = limit / 4
	if reports, err := build(fits); err != nil || len(reports) > 0 {
		t.Errorf("%d bytes of shared memory, the device's limit: %v, validation %q", 4*(limit/4), err, reports)
	}

	over := &pipeline{name: "toobig", max: maxThreads}
	over.spec[slot] = limit/4 + 1
	reports, err := build(over)
	for _, r := range reports {
		t.Logf("validation (expected): %s", r)
	}
	if err != nil {
		t.Logf("creation error (expected): %v", err)
	}
	switch {
	case err == nil && len(reports) == 0:
		t.Errorf("a pipeline with %d bytes of shared memory (the device allows %d) was created without a validation error", 4*(limit/4+1), limit)
	case len(reports) > 0 && !slices.ContainsFunc(reports, aboutShared):
		t.Errorf("validation errors, none about shared memory: %q", reports)
	}

	m := engineMacros(128, 3, 256)
	m["BONSAI_MAXCH"] = strconv.Itoa(int(limit / 4))
	ps, err := d.Compile(nil, m, []string{"mv_norm"})
	if err != nil {
		t.Fatal(err)
	}
	reports, err = build(ps["mv_norm"].(*pipeline))
	for _, r := range reports {
		t.Logf("mv_norm at BONSAI_MAXCH=%s, validation (expected): %s", m["BONSAI_MAXCH"], r)
	}
	if err == nil && !slices.ContainsFunc(reports, aboutShared) {
		t.Errorf("mv_norm at BONSAI_MAXCH=%s (%d bytes of chunk alone) drew no shared-memory report: %q", m["BONSAI_MAXCH"], 4*(limit/4), reports)
	}
}
