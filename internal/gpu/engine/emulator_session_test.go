package engine

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
	"github.com/bonsai-go/sdk/internal/gpu/enginetest"
	"github.com/bonsai-go/sdk/internal/gpu/mslemu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// The tests of this file run the emulated backend through bonsai's API, against the CPU
// backend on the same file. Those every backend on the engine passes are package
// enginetest's, run here on the emulator.

// emulatorBackend is the emulated backend with the settings v asks for (package metal's
// options), for package enginetest's tests.
func emulatorBackend(_ testing.TB, v enginetest.Variant) backend.Backend {
	var opts []Option
	if v.StepGDN {
		opts = append(opts, stepGDN)
	}
	if v.Unfused {
		opts = append(opts, unfused)
	}
	if v.SplitGDN {
		opts = append(opts, splitGDN)
	}
	return newEmulator(opts...)
}

// The backend-level tests every backend on the engine passes, on the emulator (package
// enginetest says what each checks).
func TestParity(t *testing.T)           { emulator(t); enginetest.Parity(t, emulatorBackend) }
func TestParityPTQ1(t *testing.T)       { emulator(t); enginetest.ParityPTQ1(t, emulatorBackend) }
func TestGreedyGeneration(t *testing.T) { emulator(t); enginetest.GreedyGeneration(t, emulatorBackend) }
func TestStates(t *testing.T)           { emulator(t); enginetest.States(t, emulatorBackend) }
func TestLongContext(t *testing.T)      { emulator(t); enginetest.LongContext(t, emulatorBackend) }
func TestLongStepWalk(t *testing.T)     { emulator(t); enginetest.LongStepWalk(t, emulatorBackend) }
func TestSnapshotsAcrossBackends(t *testing.T) {
	emulator(t)
	enginetest.SnapshotsAcrossBackends(t, emulatorBackend)
}

// TestUnfusedDecode checks the fused decode kernels against the prefill kernels run one
// token at a time (enginetest.UnfusedDecode), and the emulator's thread orders against
// each other (a missing barrier or a race shows as a difference).
func TestUnfusedDecode(t *testing.T) {
	emulator(t)
	fused := enginetest.UnfusedDecode(t, emulatorBackend)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	ids := enginetest.PromptIDs(len(fused))
	for _, o := range []mslemu.Order{mslemu.Reverse, mslemu.Random} {
		b := newEmulator(onDevice("metal-emulator", func() (gpu.Device, error) { return mslemu.New(mslemu.WithOrder(o), mslemu.WithSeed(7)) }))
		got := enginetest.StepAll(t, enginetest.NewSession(t, enginetest.OpenTiny(t, path, b, bonsai.KVFloat16, 16)), ids)
		for i := range got {
			if dd := enginetest.MaxAbsDiff(got[i], fused[i]); dd != 0 {
				t.Errorf("order %s: step %d differs from forward order by %g", o, i, dd)
				break
			}
		}
	}
}

// smallDevice reports a small largest buffer, so that the model is wrapped as several
// overlapping views.
type smallDevice struct {
	gpu.Device
	max int
}

func (d smallDevice) MaxBufferLength() int { return d.max }

func (d smallDevice) WrapNoCopy(mem []byte) (gpu.Buffer, error) { return d.Device.WrapNoCopy(mem) }

// TestSplitViews runs the tiny model wrapped as views of 64 KiB.
func TestSplitViews(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	b := newEmulator(onDevice("metal-emulator", func() (gpu.Device, error) {
		d, err := mslemu.New()
		if err != nil {
			return nil, err
		}
		return smallDevice{d, 64 << 10}, nil
	}))
	dev := enginetest.OpenTiny(t, path, b, bonsai.KVFloat16, 16)
	cpu := enginetest.OpenTiny(t, path, bonsai.CPU(), bonsai.KVFloat16, 16)
	ids := enginetest.PromptIDs(5)
	got, err := enginetest.NewSession(t, dev).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	want, err := enginetest.NewSession(t, cpu).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	d := 0.0
	for i := range got {
		d = math.Max(d, enginetest.MaxAbsDiff(got[i], want[i]))
	}
	if d > enginetest.TolLogit {
		t.Errorf("split views: |Δlogit| %.2e", d)
	}
}

// The same logits from a mapped and an in-memory file, on the emulator.
func TestUnmappedWeightsEmulator(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	open := func(mmap bool) *bonsai.Model {
		m, err := bonsai.Open(path, bonsai.WithBackend(newEmulator()), bonsai.WithThreads(1), bonsai.WithMmap(mmap),
			bonsai.WithActivations(bonsai.ActivationsFloat32), bonsai.WithKVCache(bonsai.KVFloat16), bonsai.WithContextSize(16))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	ids := enginetest.PromptIDs(5)
	a, err := enginetest.NewSession(t, open(true)).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	b, err := enginetest.NewSession(t, open(false)).PrefillAll(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if d := enginetest.MaxAbsDiff(a[i], b[i]); d != 0 {
			t.Errorf("token %d: |Δlogit| %g between the mapped and the in-memory file", i, d)
		}
	}
}

// The emulator's working set (mslemu.WithWorkingSet) reaches Load through bonsai.Open:
// a 1 MiB GPU cannot hold the tiny model.
func TestWorkingSetEmulator(t *testing.T) {
	emulator(t)
	path := synthtest.Path(t, "tiny", 1, ternary.PQ2_0)
	b := newEmulator(onDevice("metal-emulator", func() (gpu.Device, error) { return mslemu.New(mslemu.WithWorkingSet(1 << 20)) }))
	m, err := bonsai.Open(path, bonsai.WithBackend(b), bonsai.WithContextSize(16))
	if err == nil {
		m.Close()
		t.Fatal("the tiny model loaded on a 1 MiB working set")
	}
	if !errors.Is(err, ErrWorkingSet) || !strings.Contains(err.Error(), "1.0 MiB") {
		t.Errorf("got %v", err)
	}
}
