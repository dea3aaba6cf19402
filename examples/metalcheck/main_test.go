package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/metal"
	"github.com/bonsai-go/sdk/metal/emulator"
)

type deviceCount struct {
	mu         sync.Mutex
	open, most int
}

// TestEmulator runs the whole program on the emulated device with the tiny model, and
// checks that the engines it times are open one at a time (defect 4 of issue 12).
func TestEmulator(t *testing.T) {
	if err := emulator.Available(); err != nil {
		if os.Getenv("MSLEMU_REQUIRE") != "" {
			t.Fatalf("emulator unavailable: %v", err)
		}
		t.Skipf("emulator unavailable: %v", err)
	}
	count := &deviceCount{}
	newEmulator = func(opts ...metal.Option) bonsai.Backend {
		hooks := emulator.WithDeviceHooks(func() {
			count.mu.Lock()
			count.open++
			count.most = max(count.most, count.open)
			count.mu.Unlock()
		}, func() {
			count.mu.Lock()
			count.open--
			count.mu.Unlock()
		})
		return emulator.New(append(opts, hooks)...)
	}
	defer func() { newEmulator = emulator.New }()
	var out bytes.Buffer
	ok, err := run(context.Background(), &out, config{device: "emulator", preset: "tiny", kv: "f16", cpu: true, variants: true, prompt: 8, gen: 6, seed: 3, ptq1: true})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("a check failed")
	}
	for _, want := range []string{"0 failed", "max |Δlogit|", "tokens identical", "tok/s", "GDN split in two:", "unfused (prefill kernels):", "gemm_t1", "mv_norm_t1", "PTQ1_0 model", "of the PQ2_0 model's decode"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no %q", want)
		}
	}
	if count.most != 1 || count.open != 0 {
		t.Errorf("%d emulated devices open at once at most (want 1), %d left open", count.most, count.open)
	}
}

// The default model follows the working set: the 27B preset where its weights take at
// most 70% of it, real-widths below.
func TestChoosePreset(t *testing.T) {
	n, err := presetBytes("27b")
	if err != nil {
		t.Fatal(err)
	}
	if n < 7e9 || n > 7.5e9 {
		t.Fatalf("the 27B preset is %d bytes, want about 7.2 GB", n)
	}
	for _, c := range []struct {
		ws   int64
		want string
	}{
		{0, "real-widths"},                         // unknown
		{5_726_623_744, "real-widths"},             // an 8 GB Mac (5.33 GiB)
		{11_453_251_584, "27b"},                    // a 16 GB Mac (10.67 GiB)
		{int64(float64(n)/0.7) - 1, "real-widths"}, // just short of the margin
		{int64(float64(n)/0.7) + 1, "27b"},
	} {
		got, err := choosePreset(c.ws)
		if err != nil || got != c.want {
			t.Errorf("working set %d: %q, %v; want %q", c.ws, got, err, c.want)
		}
	}
}

func TestFlags(t *testing.T) {
	var out bytes.Buffer
	if _, err := run(context.Background(), &out, config{device: "gpu"}); err == nil {
		t.Error("-device gpu accepted")
	}
	if _, err := run(context.Background(), &out, config{device: "emulator", kv: "q4"}); err == nil {
		t.Error("-kv q4 accepted")
	}
}
