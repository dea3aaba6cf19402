package kernelcheck

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/metal/emulator"
)

// otherBackend is a backend of another package.
type otherBackend struct{}

func (otherBackend) Name() string { return "other" }
func (otherBackend) Load(context.Context, backend.Model, backend.LoadOptions) (backend.Engine, error) {
	return nil, errors.New("not loaded")
}

func TestRunNeedsMetalBackend(t *testing.T) {
	cs, err := Run(otherBackend{}, Options{Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "package metal") || len(cs) != 0 {
		t.Errorf("Run(another backend) = %v, %v; want an error naming package metal", cs, err)
	}
}

func TestCheckOKAndFormat(t *testing.T) {
	cs := []Check{
		{Kernel: "mv_norm", Case: "E 256", Err: 1e-7, Tol: 2e-5, Metric: "L1 ", Time: 1500 * time.Microsecond},
		{Kernel: "gemm", Case: "over", Err: 3e-5, Tol: 2e-5, Metric: "L1 "},
		{Kernel: "attn", Case: "nan", Err: math.NaN(), Tol: 1e-4, Metric: "rel"},
		{Kernel: "argmax", Case: "failed", Metric: "idx", Failure: errors.New("boom")},
	}
	for i, want := range []bool{true, false, false, false} {
		if cs[i].OK() != want {
			t.Errorf("%s: OK = %v, want %v", cs[i].Kernel, !want, want)
		}
	}
	lines := strings.Split(strings.TrimSuffix(Format(cs), "\n"), "\n")
	if len(lines) != len(cs) {
		t.Fatalf("Format: %d lines for %d checks", len(lines), len(cs))
	}
	if !strings.HasPrefix(lines[0], "ok   mv_norm") || !strings.Contains(lines[0], "1.00e-07 (tol 2e-05)") || !strings.HasSuffix(lines[0], "1.50 ms") {
		t.Errorf("line 0: %q", lines[0])
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "FAIL ") {
			t.Errorf("not marked FAIL: %q", l)
		}
	}
	if !strings.HasSuffix(lines[3], ": boom") {
		t.Errorf("the failure is not shown: %q", lines[3])
	}
}

// Bench runs on the emulator at subsampled shapes (the speeds mean nothing there; the
// test checks the plumbing: bytes, times and both rates present).
func TestBenchEmulator(t *testing.T) {
	if err := emulator.Available(); err != nil {
		if os.Getenv("MSLEMU_REQUIRE") != "" {
			t.Fatalf("emulator unavailable: %v", err)
		}
		t.Skipf("emulator unavailable: %v", err)
	}
	rs, err := Bench(emulator.New(), BenchOptions{Shapes: []Shape{{K: 5120, N: 8}, {K: 17408, N: 4}, {K: 100, N: 4}}, Reps: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d rates, want 3", len(rs))
	}
	for _, r := range rs[:2] {
		t.Log(r)
		if want := int64(r.N * r.K / 128 * 34); r.Failure != nil || r.Bytes != want || r.GBps() <= 0 || r.StreamGBps() <= 0 {
			t.Errorf("%v: bytes %d (want %d)", r, r.Bytes, want)
		}
	}
	if rs[2].Failure == nil {
		t.Error("K 100 accepted")
	}
}
