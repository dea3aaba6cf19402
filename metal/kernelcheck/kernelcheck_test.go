package kernelcheck

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
)

func TestRunNeedsMetalBackend(t *testing.T) {
	cs, err := Run(bonsai.CPU(), Options{Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "package metal") || len(cs) != 0 {
		t.Errorf("Run(CPU) = %v, %v; want an error naming package metal", cs, err)
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
