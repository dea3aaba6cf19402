// Package kcheck holds the types of the Metal kernel checks and the hook through which
// package metal, whose engine the checks drive, runs them for package metal/kernelcheck.
package kcheck

import (
	"fmt"
	"math"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
)

// Check is one kernel run on the device and compared with the Go code that owns its
// math (ternary, hadamard, qwen35), on random inputs of one shape.
type Check struct {
	Kernel string // the kernel, e.g. "mv_norm"
	Case   string // what ran: shape and variant
	// Err is the largest error, measured as Metric says; Tol the largest allowed.
	Err, Tol float64
	Metric   string
	Time     time.Duration // the command buffer's wall time (one run)
	Failure  error         // the run itself failed
}

// OK reports whether the kernel ran and agreed within the tolerance.
func (k Check) OK() bool { return k.Failure == nil && k.Err <= k.Tol && !math.IsNaN(k.Err) }

func (k Check) String() string {
	status := "ok  "
	if !k.OK() {
		status = "FAIL"
	}
	s := fmt.Sprintf("%s %-16s %-44s %s %.2e (tol %.0e) %8.2f ms", status, k.Kernel, k.Case, k.Metric, k.Err, k.Tol, float64(k.Time.Microseconds())/1000)
	if k.Failure != nil {
		s += ": " + k.Failure.Error()
	}
	return s
}

// Options choose the shapes the checks run.
type Options struct {
	// Real adds the 27B model's shapes: inputs of 5120, 6144 and 17408, a 17408-row
	// product, the GDN group at d = 128 and the attention at 24 × 256 heads. They take
	// seconds on the emulator.
	Real bool
	// Seed seeds the random inputs.
	Seed uint64
	// Log, when set, receives each check as it completes.
	Log func(Check)
}

// Run runs the checks on a backend of package metal; package metal sets it.
var Run func(b bonsai.Backend, opt Options) ([]Check, error)
