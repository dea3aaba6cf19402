package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/internal/gpu"
)

// Batches (package metal's doc, the section of that name). A decode step reads every weight
// for one row of arithmetic per weight, so N streams stepped one after another would
// read the weights N times; run together, their rows share each GEMM. The rows of all
// the batch's sequences are packed, in batch order, into command buffers of up to
// backend.ChunkRows rows (backend.Chunks: a sequence that does not fit continues in the next); a command
// buffer holding two or more sequences' rows runs encodeBatch on the engine's batch
// activations, one holding one sequence's rows runs that sequence's own path
// (encodeChunk on its own activations). Each part of a command buffer is one sequence's
// rows; its mixers run on them (seg) with its state at its position, which advances
// when the command buffer has run.
//
// A part's rows go through the same kernels as a chunk of the same rows run alone
// through encodePrefill, and the GEMM computes each output row from that row alone (the
// tile's other rows do not enter it), so a part's results depend on its own rows only.
// They differ from the sequence run alone only where alone runs other kernels: the fused
// decode for one token, mv_norm for a last row's head, gdn_chunk over other spans for a
// prompt that the packing cuts elsewhere than its own chunks.

// part is a sequence's share of one command buffer of a batch, its backend.Part: rows
// [Row, Row+N) of the batch's activations.
type part struct {
	backend.Part
	mode outMode
	head int // its first row of the head's logits
}

// run runs a Forward or ForwardGreedy (next set: one result per sequence).
func (e *engine) run(ctx context.Context, batch []backend.Sequence, next []int32) error {
	live := 0
	for i := range batch {
		if len(batch[i].Tokens) == 0 {
			continue
		}
		live++
		st, err := e.stateOf(batch[i].State)
		if err != nil {
			return inSequence(batch, i, err)
		}
		if err := e.startKeep(st, batch[i].Keep, len(batch[i].Tokens)); err != nil {
			return inSequence(batch, i, err)
		}
	}
	if live < 2 {
		return e.each(ctx, batch, next)
	}
	for i := range batch {
		if _, err := e.stateOf(batch[i].State); err != nil {
			return inSequence(batch, i, err)
		}
	}
	a, err := e.batchActs()
	switch {
	case errors.Is(err, ErrWorkingSet):
		return e.each(ctx, batch, next)
	case err != nil:
		return err
	}
	parts := make([]part, 0, min(live, backend.ChunkRows))
	segs := make([]seg, 0, cap(parts))
	for c := range backend.Chunks(batch, backend.ChunkRows) {
		if err := ctx.Err(); err != nil {
			return err
		}
		parts, segs = parts[:0], segs[:0]
		for p := range c.Parts() {
			s := &batch[p.Seq]
			parts = append(parts, part{Part: p, mode: chunkMode(s, p.Last(batch), next != nil)})
			segs = append(segs, seg{a, s.State.(*state), p.Row, p.N})
		}
		if len(parts) == 1 {
			p, st := parts[0], segs[0].st
			s := &batch[p.Seq]
			if err := e.runChunk(st, s.Tokens[p.First:p.First+p.N], p.mode); err != nil {
				return inSequence(batch, p.Seq, err)
			}
			chunkOut(s, p.First, p.N, p.mode, resultOf(next, p), floats(st.logits.Contents()), st.best.Contents(), e.sizes.vocab)
			continue
		}
		if err := e.runBatch(batch, next, parts, segs, c.Rows); err != nil {
			return fmt.Errorf("sequences %d to %d: %w", parts[0].Seq, parts[len(parts)-1].Seq, err)
		}
	}
	return nil
}

// each runs the sequences of the batch one after another, each alone.
func (e *engine) each(ctx context.Context, batch []backend.Sequence, next []int32) error {
	for i := range batch {
		var n *int32
		if next != nil {
			n = &next[i]
		}
		if err := e.forward(ctx, &batch[i], n); err != nil {
			return inSequence(batch, i, err)
		}
	}
	return nil
}

// resultOf is where p's greedy choice goes, nil when it makes none.
func resultOf(next []int32, p part) *int32 {
	if p.mode != outArgmax {
		return nil
	}
	return &next[p.Seq]
}

// chunkMode is what a chunk of s computes after the layers: last says whether it ends
// s's tokens, greedy whether the call is ForwardGreedy's.
func chunkMode(s *backend.Sequence, last, greedy bool) outMode {
	switch {
	case greedy:
		if last {
			return outArgmax
		}
	case s.Logits == backend.LogitsAll:
		return outAll
	case s.Logits == backend.LogitsLast && last:
		return outLast
	}
	return outNone
}

// runBatch runs the R rows of parts (of two or more sequences; segs their rows) in one
// command buffer — split at layer ends for the watchdog as a prefill chunk is
// (split.go) — waits for it, and delivers each part's logits or choice and
// advances its state.
func (e *engine) runBatch(batch []backend.Sequence, next []int32, parts []part, segs []seg, R int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return backend.ErrClosed
	}
	a := segs[0].a
	for k, p := range parts {
		e.putRows(a, p.Row, segs[k].st.pos, batch[p.Seq].Tokens[p.First:p.First+p.N])
	}
	cb := e.splitter(R)
	e.encodeBatch(cb, a, parts, segs, R)
	cb.Commit()
	if err := cb.Wait(); err != nil {
		last := 0
		for _, s := range segs {
			last = max(last, s.st.pos)
		}
		return e.commandBufferError(err, R, last, cb)
	}
	e.budget.observe(R, cb.layers, time.Since(cb.started))
	V := e.sizes.vocab
	logits, best := floats(a.logits.Contents()), a.best.Contents()
	for k, p := range parts {
		chunkOut(&batch[p.Seq], p.First, p.N, p.mode, resultOf(next, p), logits[p.head*V:], best[4*k:], V)
		st := segs[k].st
		st.setLen(st.pos + p.N)
	}
	return nil
}

// encodeBatch records the R rows of parts through the layers (encodeLayers), then the
// head: each part's rows whose logits it wants (its last, or all) normed into
// consecutive rows of hr, from which one GEMM makes the logits of them all, and per
// greedy part the argmax of its row into its slot of best (part k's: slot k).
func (e *engine) encodeBatch(cb gpu.CommandBuffer, a *acts, parts []part, segs []seg, R int) {
	e.encodeLayers(cb, a, R, segs)
	head := &e.plan.Head
	W := head.Width
	rows := 0
	for k := range parts {
		p := &parts[k]
		from, n := p.Row, p.N
		switch p.mode {
		case outNone:
			continue
		case outLast, outArgmax:
			from, n = p.Row+p.N-1, 1
		}
		e.siteNormAt(cb, a, from, rowAt(a.hr, rows, W), n, W, e.head.norm, true, false)
		p.head = rows
		rows += n
	}
	if rows == 0 {
		return
	}
	e.gemmSite(cb, head, &e.head, rows, a.hr, a.logits)
	for k, p := range parts {
		if p.mode == outArgmax {
			e.argmax(cb, rowAt(a.logits, p.head, e.sizes.vocab), rowAt(a.best, k, 1))
		}
	}
}

// batchActs returns the engine's batch activations — backend.ChunkRows rows, of as many
// sequences — allocated at the first batch and kept until Close. The batches of all
// the engine's states share them: they run under e.mu. They count against the working
// set as a state does; when they do not fit (ErrWorkingSet), batches run their
// sequences one after another instead.
func (e *engine) batchActs() (*acts, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, backend.ErrClosed
	}
	if e.batch != nil {
		return e.batch, nil
	}
	need := e.actsBytes(backend.ChunkRows, backend.ChunkRows)
	if ws := e.workingSet(); ws > 0 && e.resident+need > ws {
		return nil, fmt.Errorf("%w: the activations of a batch of %d rows need %s, %s are left", ErrWorkingSet, backend.ChunkRows, gib(need), gib(max(ws-e.resident, 0)))
	}
	a := &acts{}
	var bufs []gpu.Buffer
	err := e.layoutActs(a, backend.ChunkRows, backend.ChunkRows, func(n int) (gpu.Buffer, error) {
		b, err := e.dev.NewBuffer(max(n, 16))
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, b)
		return b, nil
	})
	if err != nil {
		for _, b := range bufs {
			b.Release()
		}
		return nil, fmt.Errorf("batch activations: %w", err)
	}
	e.owned = append(e.owned, bufs...)
	e.resident += need
	e.batch = a
	return a, nil
}
