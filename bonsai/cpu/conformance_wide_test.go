//go:build !race

// These conformance runs take a model of wide rows or long prompts: minutes under the
// race detector, for code paths the race job already runs on the tiny model's short
// batches (TestConformance, TestConcurrentForward), so they are left out of it.

package cpu_test

import (
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
)

// Past 512 positions attention splits the positions of a call of at most 4 tokens of a
// sequence (qwen35.Attention), so bit-identity there needs each sequence's segments on
// the same side of that line in the batch as alone: decode steps (one token either way)
// and prompts laid out in segments of more than 4 tokens, as this one is (alone 8×64 + 5;
// in the batch 61 rows beside the short prompt, then 7×64 and 8). Float32 activations,
// which no int8 rounding of the attention's output could mask.
func TestConformanceLongContext(t *testing.T) {
	m := synthtest.Weights(t, "tiny", 3, ternary.PQ2_0)
	backendtest.Run(t, cpu.New(), m, backendtest.Options{Lengths: []int{3, 517}, ContextSize: 530,
		Activations: backend.ActivationsFloat32, Precisions: []backend.KVPrecision{backend.KVQ4},
		RewindAt: 505}) // kept passes that cross 512, where a step splits its positions
}

// On a model of 1024 wide rows the int8 products take the tiled GEMM (the tiny model's
// rows are narrower than its groups of 8 blocks): still bit-identical to each sequence
// alone, whose decode steps run the matrix-vector kernel.
func TestConformanceTiledGEMM(t *testing.T) {
	m := synthtest.Weights(t, "small", 4, ternary.PQ2_0)
	// Eight decode streams, and two prompts beside them, the second cut 51 + 9.
	backendtest.Run(t, cpu.New(), m, backendtest.Options{Lengths: []int{1, 1, 1, 1, 1, 1, 1, 1, 5, 60},
		Precisions: []backend.KVPrecision{backend.KVFloat16}})
}

// With the batch tiles the same batches run their products over the tiles, and each
// sequence alone its decode steps over the weights: still bit for bit.
func TestBatchTilesConformance(t *testing.T) {
	m := synthtest.Weights(t, "small", 4, ternary.PQ2_0)
	backendtest.Run(t, cpu.New(cpu.WithBatchTiles()), m, backendtest.Options{Lengths: []int{1, 1, 1, 1, 1, 1, 1, 1, 5, 60},
		Precisions: []backend.KVPrecision{backend.KVFloat16}})
}
