// Package kernelcheck runs every kernel of the Metal backend on its device and compares
// it with the Go code that owns its math (ternary, hadamard, qwen35), at small odd shapes
// and, if asked, at the 27B model's: the check examples/metalcheck runs on a Mac, and the
// backend's tests run on the emulator (metal/emulator).
//
//	checks, err := kernelcheck.Run(metal.New(), kernelcheck.Options{Seed: 1})
//	fmt.Print(kernelcheck.Format(checks))
//
// The checks drive the backend's own dispatch helpers, so they exercise the host's
// argument layouts too; they live beside them in the backend's engine, which Metal
// programs link without them, and this package presents them.
package kernelcheck

import (
	"strings"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu/engine"
)

// Check is one kernel run on the device and compared with its Go reference, on random
// inputs of one shape: the kernel, the case, the largest error and the tolerance (Err,
// Tol, as Metric says), the command buffer's wall time and any failure of the run
// itself. OK reports whether the kernel ran and agreed within the tolerance; String
// renders it as one line.
type Check = engine.Check

// Options choose the shapes Run runs: Real adds the 27B model's shapes (inputs of 5120,
// 6144 and 17408, a 17408-row product, the GDN group at d = 128, the attention at 24 ×
// 256 heads; seconds on the emulator), Seed seeds the random inputs, and Log, when set,
// receives each check as it completes.
type Options = engine.Options

// Run opens the backend's device (b must be one of package metal's backends, such as
// metal.New() or emulator.New()), compiles the library and runs every kernel against
// its Go reference. It returns the checks run so far with an error that stopped them.
//
// Tolerances: the products are compared in float64 against the float32 inputs the Go
// code forms, the error of each output scaled by Σ|w·x| of its row (float32 summation
// in another order: a few 1e-7; allowed 2e-5). The transforms and the embedding follow
// the Go butterflies exactly (allowed 1e-6 of the vector's largest value). The GDN and
// attention cores are compared elementwise relative to their outputs' largest value
// (allowed 1e-4; 3e-3 for an fp16 KV cache, where a key may round to the other
// neighbouring half; 2e-2 for an int8 cache, where a code may round the other way).
func Run(b backend.Backend, opt Options) ([]Check, error) { return engine.RunChecks(b, opt) }

// Format renders checks one per line.
func Format(cs []Check) string {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Shape is one matrix-vector product: K inputs (5120, 6144 or 17408), N rows.
type Shape = engine.Shape

// Rate is one shape's weight bandwidth against the streaming read of the same bytes on
// the same device (the stream_read kernel), both the median wall time of Reps command
// buffers after a warm-up; String renders it as one line.
type Rate = engine.Rate

// BenchOptions choose the shapes Bench times, the repetitions (default 5) and the seed
// of the random weights; Log, when set, receives each rate as it completes.
type BenchOptions = engine.BenchOptions

// ProductShapes are the 27B model's matrix-vector products, K × N.
var ProductShapes = []Shape{
	{K: 5120, N: 10240}, {K: 5120, N: 6144}, {K: 6144, N: 5120}, {K: 5120, N: 12288},
	{K: 5120, N: 1024}, {K: 5120, N: 17408}, {K: 17408, N: 5120}, {K: 5120, N: 248320},
}

// Bench times each shape's product (PQ2_0 weights, in the decode's kernel for its input
// width) and a streaming read of as many bytes on the backend's device. A shape's
// failure is in its Rate; the error is one that stopped them all.
func Bench(b backend.Backend, opt BenchOptions) ([]Rate, error) { return engine.Bench(b, opt) }
