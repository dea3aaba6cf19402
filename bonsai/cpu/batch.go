package cpu

import (
	"context"
	"fmt"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// scratch holds the activations of one chunk of up to backend.ChunkRows rows, row-major by
// row. The rows are the tokens of the chunk's segments, one after another: each
// segment is a run of consecutive tokens of one sequence of the batch.
type scratch struct {
	x, h, hr, delta []float32 // rows × Embedding
	qkv, z          []float32 // rows × QKVWidth, rows × InnerSize
	alpha, beta     []float32 // rows × VHeads
	mix             []float32 // rows × max(InnerSize, AttentionWidth)
	qg, k, v        []float32 // rows × 2·Heads·HeadDim, rows × KVHeads·HeadDim (×2)
	gate, up        []float32 // rows × FeedForward
	// logits receives the head's rows when they go to more than one sequence, before
	// they are copied out: grown to the most such rows a chunk has had, × Vocab.
	logits []float32

	segs  []segment   // the chunk's segments, in row order (capacity backend.ChunkRows)
	heads []headGroup // the rows whose logits were asked for (capacity backend.ChunkRows)

	gdn  *qwen35.GDNScratch
	attn *qwen35.AttentionScratch

	// The int8 sites: each activation quantised once for every matrix that reads it.
	q8Embed, q8Inner, q8Attn, q8FF *ternary.Q8Batch

	prod   productJob
	rows   rowScratch // the float32 products' decoded weight rows
	rotate rotateJob
	perRow floatRowJob // the chunk's row-wise float work: norms, SwiGLU, residual adds

	prof    backend.OpProfile // the current chunk's, shared out to its states at its end
	opStart time.Time
}

// segment is one sequence's rows of a chunk, its part (tokens [First, First+N) of the
// sequence at rows [Row, Row+N)), starting at the state's position.
type segment struct {
	backend.Part
	seq *backend.Sequence
	st  *cpuState
}

func (g *segment) tokens() []int32 { return g.seq.Tokens[g.First : g.First+g.N] }

// headGroup is a run of rows of one segment whose logits were asked for: chunk rows
// [row, row+n), which are rows [at, at+n) of the head's input, and their destination.
type headGroup struct {
	row, n, at int
	dst        []float32
}

// getScratch takes a free chunk scratch, or makes one.
func (e *cpuEngine) getScratch() *scratch {
	e.mu.Lock()
	if n := len(e.free); n > 0 {
		s := e.free[n-1]
		e.free = e.free[:n-1]
		e.mu.Unlock()
		return s
	}
	e.mu.Unlock()
	return e.newScratch()
}

// putScratch returns s to the free list, dropping its references to the caller's
// sequences.
func (e *cpuEngine) putScratch(s *scratch) {
	clear(s.segs[:cap(s.segs)])
	clear(s.heads[:cap(s.heads)])
	s.segs, s.heads = s.segs[:0], s.heads[:0]
	e.mu.Lock()
	e.free = append(e.free, s)
	e.mu.Unlock()
}

func (e *cpuEngine) newScratch() *scratch {
	c := e.cfg
	const chunk = backend.ChunkRows
	f := func(n int) []float32 { return make([]float32, chunk*n) }
	gs, as := e.gdn.NewScratch(chunk), e.attn.NewScratch(chunk)
	// The GDN heads and the attention KV groups are independent: spread them too.
	gs.Runner, as.Runner = e.pool, e.pool
	s := &scratch{
		x: f(c.Embedding), h: f(c.Embedding), hr: f(c.Embedding), delta: f(c.Embedding),
		qkv: f(c.QKVWidth()), z: f(c.InnerSize),
		alpha: f(c.VHeads), beta: f(c.VHeads),
		mix: f(max(c.InnerSize, c.AttentionWidth())),
		qg:  f(2 * c.Heads * c.HeadDim), k: f(c.KVHeads * c.HeadDim), v: f(c.KVHeads * c.HeadDim),
		gate: f(c.FeedForward), up: f(c.FeedForward),
		segs:    make([]segment, 0, chunk),
		heads:   make([]headGroup, 0, chunk),
		gdn:     gs,
		attn:    as,
		q8Embed: ternary.NewQ8Batch(c.Embedding, chunk),
		q8Inner: ternary.NewQ8Batch(c.InnerSize, chunk),
		q8Attn:  ternary.NewQ8Batch(c.AttentionWidth(), chunk),
		q8FF:    ternary.NewQ8Batch(c.FeedForward, chunk),
	}
	if !e.int8 {
		// The float32 matrix-matrix products decode each weight row once per chunk into
		// a row of K floats: one per goroutine that can run a product at once (the
		// pool's workers, the caller among them), so that a chunk allocates nothing.
		s.rows = newRowScratch(e.pool.Workers(), max(c.Embedding, c.InnerSize, c.AttentionWidth(), c.FeedForward))
	}
	s.prod.rows, s.prod.tiles, s.prod.packed = &s.rows, e.tiles, e.packed
	return s
}

// Forward runs the batch together, in the chunks of backend.Chunks: one chunk may hold
// a decode step of each of several sequences and part of a prompt. Each chunk reads the
// weights once, whatever the batch; the mixers run on each segment with its own
// sequence's state.
func (e *cpuEngine) Forward(ctx context.Context, batch []backend.Sequence) error {
	for i := range batch {
		st, ok := batch[i].State.(*cpuState)
		if !ok || st.e != e {
			return fmt.Errorf("sequence %d: %w", i, backend.ErrForeignState)
		}
		if st.closed {
			return fmt.Errorf("sequence %d: %w", i, backend.ErrClosed)
		}
	}
	for i := range batch {
		batch[i].State.(*cpuState).startKeep(batch[i].Keep)
	}
	s := e.getScratch()
	defer e.putScratch(s)
	for c := range backend.Chunks(batch, backend.ChunkRows) {
		// A cancelled call leaves each state after the last chunk it completed: whole
		// segments, each state at a consistent position.
		if err := ctx.Err(); err != nil {
			return err
		}
		s.segs = s.segs[:0]
		for p := range c.Parts() {
			q := &batch[p.Seq]
			s.segs = append(s.segs, segment{Part: p, seq: q, st: q.State.(*cpuState)})
		}
		if err := e.forwardChunk(s, c.Rows); err != nil {
			return err
		}
	}
	return nil
}
