package backend

import (
	"errors"
	"iter"
)

// ErrForeignState is the error of a state passed to an engine that did not make it.
// Engines return it wrapped once, with the sequence it came in ("sequence 2: the state
// belongs to another engine").
var ErrForeignState = errors.New("the state belongs to another engine")

// ChunkRows is the most rows (tokens, of all a batch's sequences together) that the
// backends of this module carry through the layers in one pass: each pass reads every
// weight once, so more rows share the read, while a chunk's activations (a few hundred
// KB at the 27B model's widths) stay in the caches, and it is the token tile of the
// batched kernels: the CPU's chunked GDN form and Metal's GEMM and gdn_chunk dispatches
// take 64 tokens.
const ChunkRows = 64

// A Part is one sequence's share of a chunk: tokens [First, First+N) of batch[Seq], at
// rows [Row, Row+N) of the chunk.
type Part struct {
	Seq, First, N, Row int
}

// Last reports whether the part holds its sequence's last token.
func (p Part) Last(batch []Sequence) bool { return p.First+p.N == len(batch[p.Seq].Tokens) }

// A Chunk is one pass of the layers: its parts in row order, Rows rows in all.
type Chunk struct {
	Parts []Part
	Rows  int
}

// Chunks lays out the batch's tokens in batch order, each sequence's rows consecutive
// and in order, and cuts them into chunks of at most rows rows: one chunk may hold a
// decode step of each of several sequences and part of a prompt, and a sequence with
// more tokens than a chunk has room for continues in the next. A sequence with no
// tokens has no part; a batch without tokens has no chunk. A chunk's Parts are reused
// by the next: they are valid until the loop continues. Engines check their context
// between chunks, so that a cancelled call leaves each sequence after whole parts.
func Chunks(batch []Sequence, rows int) iter.Seq[Chunk] {
	if rows < 1 {
		panic("backend: Chunks of fewer than 1 row")
	}
	return func(yield func(Chunk) bool) {
		parts := make([]Part, 0, min(len(batch), rows))
		for i, done := 0, 0; i < len(batch); {
			parts = parts[:0]
			n := 0
			for i < len(batch) && n < rows {
				if k := min(len(batch[i].Tokens)-done, rows-n); k > 0 {
					parts = append(parts, Part{Seq: i, First: done, N: k, Row: n})
					n += k
					done += k
				}
				if done == len(batch[i].Tokens) {
					i, done = i+1, 0
				}
			}
			if n == 0 || !yield(Chunk{Parts: parts, Rows: n}) {
				return
			}
		}
	}
}
