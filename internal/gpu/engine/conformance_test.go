package engine

import (
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// batchTolerance is the |Δlogit| allowed between a sequence run in a batch and run alone
// on the tiny model. A batch runs its rows through the prefill kernels
// (batch.go): a decode token through the GEMM where alone it runs the fused
// matrix-vector kernels, a last row's head through the GEMM instead of mv_norm, a prompt
// cut at other points through gdn_chunk over other spans — the same float32 products
// and recurrences, summed in another order. Reordering a float32 sum of K terms moves it
// by at most γ_K ≈ K·2⁻²⁴ of the sum of its terms' magnitudes: with K ≤ 512 (the tiny
// model's widest product), 3.1·10⁻⁵ of the logits' scale per product, and a logit
// depends on 17 products in sequence (4 layers of 4 sites, the head), the norms between
// them keeping the scale: 17 × 3.1·10⁻⁵ ≈ 5.2·10⁻⁴ of tinyLogitScale, 1.3·10⁻². Measured
// (the logs of TestBatchMatchesUnfused and TestStates): 2.6·10⁻⁵ for four decode streams,
// 9·10⁻⁵ for two sessions stepping together. Where the kernels are the same the batch is
// bit-identical, as TestBatchMatchesUnfused checks.
const batchTolerance = 17 * 512.0 / (1 << 24) * tinyLogitScale

// tinyLogitScale bounds the |logit| of the tiny model (seed 1): TestBatchMatchesUnfused
// checks it on its batches' tokens, TestParity logs the scale on its prompt (about 20).
const tinyLogitScale = 25

// The emulated backend passes the seam's conformance suite — among its checks a batch of
// three sequences of different lengths (a decode step, a short prompt, two chunks)
// against each run alone, within batchTolerance — at the KV precisions it holds, on the
// tiny model mapped from a file (the weights wrapped in place).
func TestConformance(t *testing.T) {
	emulator(t)
	f, err := gguf.Open(synthtest.Path(t, "tiny", 1, ternary.PQ2_0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := qwen35.Bind(f)
	if err != nil {
		t.Fatal(err)
	}
	backendtest.Run(t, newEmulator(), w, backendtest.Options{
		Precisions: []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8},
		Tolerance:  batchTolerance,
	})
}
