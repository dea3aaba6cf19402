package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/metal"
	"github.com/bonsai-go/sdk/metal/emulator"
	"github.com/bonsai-go/sdk/metal/kernelcheck"
	"github.com/bonsai-go/sdk/ternary"
)

type deviceCount struct {
	mu         sync.Mutex
	open, most int
}

// TestEmulator runs the whole program on the emulated device with the tiny model, and
// checks that the engines it times are open one at a time (defect 4 of issue 12) and
// that one temporary model is on disk at a time, none left after (defect 4 of issue 24).
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
	tempRoot = t.TempDir()
	defer func() { tempRoot, writeModel = "", synth.WriteFile }()
	var written []string // per write: the models already on disk
	writeModel = func(ctx context.Context, path string, opt synth.Options, p synth.Progress) error {
		written = append(written, strings.Join(models(t, tempRoot), " "))
		return synth.WriteFile(ctx, path, opt, p)
	}
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
	for _, want := range []string{"0 failed", "max |Δlogit|", "tokens identical", "tok/s", "GDN recurrence per head group:", "unfused (prefill kernels):", "gemm_t1", "mv_norm_t1", "PTQ1_0 model", "of the PQ2_0 model's decode"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no %q", want)
		}
	}
	checkJSON(t, jsonPath)
	if len(written) != 2 || written[0] != "" || written[1] != "" {
		t.Errorf("%d temporary models written; on disk as each was: %q (want 2, each alone)", len(written), written)
	}
	if left := models(t, tempRoot); len(left) != 0 {
		t.Errorf("temporary models left: %v", left)
	}
	if count.most != 1 || count.open != 0 {
		t.Errorf("%d emulated devices open at once at most (want 1), %d left open", count.most, count.open)
	}
}

// The default model follows the working set and the free disk: 27b where its weights
// take at most half the working set and its file leaves 2 GiB free, else real-widths on
// the same terms, else tiny. The sizes are the tensor tables' (hand-checked: 27b is
// 7,195,047,936 bytes as PQ2_0, 6.70 GiB; real-widths 418,636,416, 0.39 GiB), so the
// 27B model needs a working set of 13.4 GiB and 8.72 GiB of free disk.
func TestChoosePreset(t *testing.T) {
	n, err := presetBytes("27b", ternary.PQ2_0)
	if err != nil {
		t.Fatal(err)
	}
	if n != 7_195_047_936 {
		t.Fatalf("the 27B preset is %d bytes, want 7,195,047,936 (its tensor table changed: check the cases below)", n)
	}
	if m, err := presetBytes("27b", ternary.PTQ1_0); err != nil || m >= n {
		t.Fatalf("the 27B preset as PTQ1_0: %d bytes, %v; want fewer than as PQ2_0", m, err)
	}
	file, err := tempBytes("27b", true)
	if err != nil || file != n+16<<20 {
		t.Fatalf("the 27B preset's temporary file: %d, %v; want the PQ2_0 one, %d", file, err, n+16<<20)
	}
	const gib = 1 << 30
	small, large := int64(5*gib), int64(500*gib)
	for _, c := range []struct {
		ws, free int64
		want     string
	}{
		// An 8 GB Mac reports 5.33 GiB; 8 GiB is a 12 GB one: the 27B weights are 84%.
		{8 * gib, large, "real-widths"},
		{8 * gib, small, "real-widths"},
		{8 * gib, gib, "tiny"},
		{8 * gib, -1, "real-widths"},
		// A 16 GB Mac: 10.67 GiB, the 27B weights 63% of it (issue 24, defect 4).
		{11_453_251_584, large, "real-widths"},
		{11_453_251_584, gib, "tiny"},
		// A 24 GB Mac's working set is about 16 GiB, a 32–36 GB one's about 24 GiB: 28%.
		{24 * gib, large, "27b"},
		{24 * gib, small, "real-widths"}, // 5 GiB: the 27B file would leave none
		{24 * gib, gib, "tiny"},          // 1 GiB: real-widths' 0.41 GiB would leave 0.6
		{24 * gib, -1, "real-widths"},    // the disk unknown: not the 27B model
		{0, large, "real-widths"},        // the working set unknown
		{0, -1, "real-widths"},
		// The margins, to the byte.
		{2 * n, large, "27b"},
		{2*n - 1, large, "real-widths"},
		{24 * gib, file + diskSpare, "27b"},
		{24 * gib, file + diskSpare - 1, "real-widths"},
	} {
		got, err := choosePreset(c.ws, c.free)
		if err != nil || got != c.want {
			t.Errorf("working set %.2f GiB, %.2f GiB free: %q, %v; want %q", float64(c.ws)/gib, float64(c.free)/gib, got, err, c.want)
		}
	}
}

// The disk's free bytes are statfs's, as df reports them.
func TestFreeDisk(t *testing.T) {
	dir := t.TempDir()
	got := diskFree(dir)
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		if got != -1 {
			t.Errorf("diskFree = %d, want -1 (unknown) on %s", got, runtime.GOOS)
		}
		return
	}
	if got <= 0 {
		t.Fatalf("diskFree(%s) = %d", dir, got)
	}
	if diskFree(filepath.Join(dir, "absent")) != -1 {
		t.Error("diskFree of a missing directory is not -1")
	}
	out, err := exec.Command("df", "-k", dir).Output()
	if err != nil {
		t.Skipf("df: %v", err)
	}
	// POSIX df -k: a header line, then "filesystem blocks used available ...".
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 4 {
		t.Fatalf("df -k: %q", out)
	}
	kib, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		t.Fatalf("df -k: %q: %v", out, err)
	}
	// Other processes write meanwhile: 64 MiB of slack.
	if d := got - kib*1024; d < -64<<20 || d > 64<<20 {
		t.Errorf("diskFree = %d bytes, df says %d KiB available", got, kib)
	}
}

// Degenerate flag values stop the run with one line, before anything runs (no emulator
// needed), instead of a panic or a meaningless run.
func TestFlags(t *testing.T) {
	defer func(f func(string) int64) { freeDisk = f }(freeDisk)
	freeDisk = func(string) int64 { return 1 << 30 } // a disk with 1 GiB free
	absent := filepath.Join(t.TempDir(), "absent.gguf")
	good := config{device: "emulator", preset: "tiny", kv: "f16", prompt: 24, gen: 32, ptq1: true, cpu: true}
	for _, c := range []struct {
		change func(*config)
		want   string
	}{
		{func(c *config) { c.device = "gpu" }, "-device \"gpu\""},
		{func(c *config) { c.kv = "q4" }, "-kv \"q4\""},
		{func(c *config) { c.prompt = 0 }, "-prompt 0"}, // panicked: prompt[:1] of none
		{func(c *config) { c.prompt = -3 }, "-prompt -3"},
		{func(c *config) { c.gen = -1 }, "-gen -1"},
		{func(c *config) { c.bandwidth = -245 }, "-bandwidth -245"},
		{func(c *config) { c.bandwidth = math.NaN() }, "-bandwidth NaN"},
		{func(c *config) { c.bandwidth = math.Inf(1) }, "-bandwidth +Inf"},
		{func(c *config) { c.preset = "70b" }, "-preset \"70b\""},
		{func(c *config) { c.model = absent }, "-model and -preset"},
		{func(c *config) { c.model, c.preset = absent, "" }, "-model: "},
		{func(c *config) { c.ptq1Model = absent }, "-ptq1-model: "},
		{func(c *config) { c.ptq1Model, c.ptq1 = absent, false }, "-ptq1-model with -ptq1=false"},
		{func(c *config) { c.prompt = 4096 }, "model's context of 4096"}, // tiny's context
		{func(c *config) { c.gen = math.MaxInt }, "model's context of 4096"},
		{func(c *config) { c.preset = "27b" }, "-preset 27b: its temporary model takes 6.72 GiB"},
	} {
		cfg := good
		c.change(&cfg)
		var out bytes.Buffer
		_, err := run(context.Background(), &out, cfg)
		switch {
		case err == nil:
			t.Errorf("%+v accepted", cfg)
		case !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%+v: %q, want one line with %q", cfg, err, c.want)
		}
	}
	// The same checks pass the flags' defaults, and real-widths on that small disk.
	for _, preset := range []string{"tiny", "real-widths"} {
		cfg := good
		cfg.preset = preset
		if _, err := validate(cfg); err != nil {
			t.Errorf("validate(%+v): %v", cfg, err)
		}
		if err := checkModel(cfg); err != nil {
			t.Errorf("checkModel(%+v): %v", cfg, err)
		}
	}
}

// models lists the model files under dir.
func models(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".gguf") {
			out = append(out, filepath.Base(path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
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
		// Every check has a tolerance but those held exact: argmax's index and
		// copy_f32's floats.
		exact := k.Kernel == "argmax" || k.Kernel == "copy_f32"
		if !k.OK || k.Tol <= 0 && !exact || k.Case == "" {
			t.Errorf("kernel %+v", k)
		}
	}
	for _, k := range metal.KernelNames() {
		// The KV appends and the merge of the position blocks run inside the attention
		// checks.
		if !kernels[k] && !strings.HasPrefix(k, "attn_append") && k != "attn_merge" {
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
	_, err := run(context.Background(), &out, config{device: "emulator", kv: "q4", prompt: 24, json: path})
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
