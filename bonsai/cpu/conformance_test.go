package cpu_test

import (
	"fmt"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// The batches the conformance runs lay out: the suite's default (a decode step, a short
// prompt, a prompt of more than one chunk), eight decode streams in one chunk, a decode
// step beside a prompt that spans two chunks and a short prompt that shares the second,
// and a full chunk with a decode step pushed into the next. The default runs the
// suite's checks of states at every KV precision; the others, which differ only in the
// batch, at one.
var batchLengths = [][]int{nil, {1, 1, 1, 1, 1, 1, 1, 1}, {1, 70, 3}, {64, 1}}

// The CPU backend passes the seam's conformance suite, int8 and float32, for each batch
// layout, bit-identical to each sequence run alone (Tolerance 0): every row's
// normalisation, rotation and quantisation is its own, the int8 GEMM gives each row
// bit for bit what the matrix-vector kernel gives it (ternary.MatMulQ8Range), as does
// the float32 one (ternary.MatMulRange), and the mixers run on each sequence's own rows
// and state.
func TestConformance(t *testing.T) {
	m := synthtest.Weights(t, "tiny", 3, ternary.PQ2_0)
	for _, lengths := range batchLengths {
		t.Run(fmt.Sprint(lengths), func(t *testing.T) {
			opt := backendtest.Options{Lengths: lengths}
			if lengths != nil {
				opt.Precisions = []backend.KVPrecision{backend.KVFloat16}
			}
			t.Run("int8", func(t *testing.T) { backendtest.Run(t, cpu.New(), m, opt) })
			opt.Activations = backend.ActivationsFloat32
			t.Run("float32", func(t *testing.T) { backendtest.Run(t, cpu.New(), m, opt) })
		})
	}
}
