// Package cpu is the pure-Go backend (a backend.Backend): it runs on any platform Go
// supports and spreads the large matrix products over a pool of worker goroutines
// started once per model. It is bonsai's default; pass New() to bonsai.WithBackend to
// say so explicitly.
//
// Where this CPU's kernels read it for decode steps and batches alike (AVX-512 VNNI,
// PQ2_0), it keeps the ternary products in a row-interleaved layout made at load
// (ternary.Interleaved: 64-row tiles whose code bytes hold four rows each), whose kernels
// do several times fewer instructions per weight than the file's layout allows, so that
// decode runs at the memory's rate on few cores; the mapped file's pages of those rows
// are released as the copy is made, so resident memory stays the file's size. Elsewhere
// it reads the weights in place from the mapped file. WithLayout chooses otherwise:
// the file's layout always, or the interleaved one wherever a decode kernel reads it
// (AVX2, NEON, PTQ1_0's base-3 ternary.Interleaved3), on top of the file's rows.
// WithWeightFormat makes it keep its own copy of the products in the other ternary
// format. WithBatchTiles makes it keep a second copy of the products that batches read
// from the file in the batched kernels' layout (ternary.Tiles), for servers whose
// batches of a few sequences are bound by arithmetic: a batched pass then skips
// repacking the weights.
//
// A forward pass follows qwen35's plan (qwen35.Weights.Plan) a chunk of up to
// backend.ChunkRows rows at a time, and a batch of sequences runs together: their
// tokens are laid out one sequence after another and cut into chunks (backend.Chunks), so that the decode steps of many
// sequences, and part of a prompt beside them, share one chunk. In a chunk each
// activation site is normalised, rotated and quantised to int8 once per row, and all
// the products that read it run as one parallel loop over their concatenated rows, a
// tiled GEMM over every row of the chunk, so that each chunk reads the weights once
// whatever the batch. The mixers, qwen35's Gated DeltaNet and attention blocks spread
// over the same pool by head, run on each sequence's rows with its own state.
//
// A row's results do not depend on the rows beside it: the batched kernels give each
// row bit for bit what the one-row kernels give it (ternary.MatMulQ8Range and
// MatMulRange), so a sequence run in a batch gets the logits it gets alone. What the
// layout can change is how a sequence's own tokens are cut into segments, and that
// matters in one place, within float32 rounding: attention splits the positions of a
// segment of at most 4 tokens once they pass 512 (qwen35.Attention), so a prompt whose
// last few tokens past position 512 land in a segment of their own in one layout and
// not in the other gets their attention summed in another order. Decode steps, one
// token either way, are bit-identical at any length.
package cpu
