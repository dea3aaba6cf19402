package engine

// The kernel checks' results and options: package metal/kernelcheck presents them
// (kernels_check.go runs the checks, kernels_bench.go the bandwidth measures).

import (
	"fmt"
	"math"
	"time"
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

// Shape is one matrix-vector product: K inputs, N rows.
type Shape struct{ K, N int }

// Rate is the bandwidth of one product shape (PQ2_0 weights) against the device's
// streaming read of the same bytes, both timed the same way: the median wall time of
// Reps command buffers of one dispatch each, after a warm-up.
type Rate struct {
	Shape
	Bytes        int64         // the weights' bytes, what both read
	Time, Stream time.Duration // median of the product, of the streaming read
	Reps         int
	Failure      error
}

// GBps is the product's weight bandwidth, StreamGBps the streaming read's (0 on failure).
func (r Rate) GBps() float64       { return gbps(r.Bytes, r.Time) }
func (r Rate) StreamGBps() float64 { return gbps(r.Bytes, r.Stream) }

func gbps(n int64, t time.Duration) float64 {
	if t <= 0 {
		return 0
	}
	return float64(n) / t.Seconds() / 1e9
}

func (r Rate) String() string {
	s := fmt.Sprintf("%6d × %-6d %9.2f MB  product %8.3f ms = %7.1f GB/s, stream read %8.3f ms = %7.1f GB/s",
		r.K, r.N, float64(r.Bytes)/1e6, float64(r.Time.Microseconds())/1000, r.GBps(), float64(r.Stream.Microseconds())/1000, r.StreamGBps())
	if r.StreamGBps() > 0 {
		s += fmt.Sprintf(" (%.0f%%)", 100*r.GBps()/r.StreamGBps())
	}
	if r.Failure != nil {
		s += ": FAIL " + r.Failure.Error()
	}
	return s
}

// BenchOptions choose the shapes Bench times.
type BenchOptions struct {
	Shapes []Shape // K must be 5120, 6144 or 17408 (the model's input widths)
	Reps   int     // timed runs per shape (default 5)
	Seed   uint64
	Log    func(Rate)
}
