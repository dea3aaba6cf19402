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

// A Chunk is one pass of the layers: Rows rows, the parts of one or more sequences.
type Chunk struct {
	Rows  int
	batch []Sequence
	seq   int // the chunk starts at token first of batch[seq]
	first int
}

// Chunks lays out the batch's tokens in batch order, each sequence's rows consecutive
// and in order, and cuts them into chunks of at most rows rows: one chunk may hold a
// decode step of each of several sequences and part of a prompt, and a sequence with
// more tokens than a chunk has room for continues in the next. A sequence with no
// tokens has no part; a batch without tokens has no chunk. Engines check their context
// between chunks, so that a cancelled call leaves each sequence after whole parts.
// Neither Chunks nor Parts allocates.
func Chunks(batch []Sequence, rows int) iter.Seq[Chunk] {
	if rows < 1 {
		panic("backend: Chunks of fewer than 1 row")
	}
	return func(yield func(Chunk) bool) {
		for at := (Chunk{Rows: rows, batch: batch}); ; {
			c := at
			c.Rows = 0
			for p := range at.Parts() { // at's parts, up to rows of them: c's
				c.Rows += p.N
				at.seq, at.first = p.Seq, p.First+p.N
			}
			if c.Rows == 0 || !yield(c) {
				return
			}
		}
	}
}

// Parts returns the chunk's parts in row order.
func (c Chunk) Parts() iter.Seq[Part] {
	return func(yield func(Part) bool) {
		row := 0
		for i, first := c.seq, c.first; i < len(c.batch) && row < c.Rows; i, first = i+1, 0 {
			if n := min(len(c.batch[i].Tokens)-first, c.Rows-row); n > 0 {
				if !yield(Part{Seq: i, First: first, N: n, Row: row}) {
					return
				}
				row += n
			}
		}
	}
}
