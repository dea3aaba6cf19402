package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/metal"
	"github.com/bonsai-go/sdk/metal/emulator"
	"github.com/bonsai-go/sdk/metal/kernelcheck"
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
	jsonPath := filepath.Join(t.TempDir(), "report.json")
	ok, err := run(context.Background(), &out, config{device: "emulator", preset: "tiny", kv: "f16", cpu: true, variants: true, prompt: 8, gen: 6, seed: 3, ptq1: true, bench: true, json: jsonPath})
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
	checkJSON(t, jsonPath)
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

// checkJSON reads the report -json wrote and checks it carries every section.
func checkJSON(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("the JSON report does not parse: %v", err)
	}
	if !r.OK || len(r.Failures) != 0 || r.Device != "emulator" || r.System == nil || r.System.Device != "emulator" || r.System.OS == "" || r.Host == "" || r.Model != "synthetic tiny" {
		t.Errorf("report header: ok %v, failures %v, device %q, system %+v, host %q, model %q", r.OK, r.Failures, r.Device, r.System, r.Host, r.Model)
	}
	kernels := map[string]bool{}
	for _, k := range r.Kernels {
		kernels[k.Kernel] = true
		if !k.OK || k.Tol <= 0 && k.Kernel != "argmax" || k.Case == "" {
			t.Errorf("kernel %+v", k)
		}
	}
	for _, k := range metal.KernelNames() {
		// The KV appends run inside the attention checks.
		if !kernels[k] && !strings.HasPrefix(k, "attn_append") {
			t.Errorf("the JSON report has no check of %s", k)
		}
	}
	if len(r.Rates) != 8 || r.RatesNote == "" {
		t.Errorf("%d rates (want the 8 product shapes), note %q", len(r.Rates), r.RatesNote)
	}
	for i, q := range r.Rates {
		if want := kernelcheck.ProductShapes[i]; q.K != want.K || q.ModelN != want.N {
			t.Errorf("rate %d: %d × %d, want %v", i, q.K, q.ModelN, want)
		}
		if q.Failure != "" || q.N != 16 || q.Bytes != int64(q.K*q.N/128*34) || q.GBps <= 0 || q.StreamGBps <= 0 || q.Ratio <= 0 {
			t.Errorf("rate %+v", q)
		}
	}
	formats := map[string]int{}
	for _, p := range r.Parity {
		formats[p.Format]++
		if !p.OK || p.Steps != 8 || p.ArgmaxAgree != 8 || p.GreedyTokens != 6 || p.GreedyDiverges != -1 || p.Bound <= 0 {
			t.Errorf("parity %+v", p)
		}
	}
	for _, s := range r.Speed {
		formats[s.Format] += 10
		if s.PrefillTokS <= 0 || s.DecodeTokS <= 0 || s.PrefillTokens != 8 || s.DecodeTokens != 6 || s.WeightGBps <= 0 {
			t.Errorf("speed %+v", s)
		}
	}
	// PQ2_0: parity and three plans; PTQ1_0: parity and one.
	if formats["PQ2_0"] != 31 || formats["PTQ1_0"] != 11 {
		t.Errorf("parity and speed entries per format: %v", formats)
	}
}

// A run that stops with an error still writes its report, with the error in Failures.
func TestJSONOnFailure(t *testing.T) {
	if err := emulator.Available(); err != nil {
		t.Skipf("emulator unavailable: %v", err)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	var out bytes.Buffer
	_, err := run(context.Background(), &out, config{device: "emulator", kv: "q4", json: path})
	if err == nil {
		t.Fatal("-kv q4 accepted")
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.OK || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "-kv \"q4\"") {
		t.Errorf("report of a stopped run: ok %v, failures %q", r.OK, r.Failures)
	}
	if !strings.Contains(out.String(), "failures:    1") {
		t.Errorf("the printed summary lacks the failure:\n%s", out.String())
	}
}
