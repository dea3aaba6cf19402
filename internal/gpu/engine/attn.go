package engine

import (
	"fmt"

	"github.com/bonsai-go/sdk/internal/gpu"
)

// Attention on the device (shaders/attn.metal says what each kernel does). A query
// head of a long context reads every cached position of its KV head: with one
// threadgroup per (head, token), as before this file, the rep query heads and the
// tokens of a prefill chunk that share a KV head each read its rows again — at 100K
// positions about 150 GB for one layer of one 64-token chunk of the 27B model — and a
// decode step ran only H threadgroups, whatever the context. So the positions are cut
// into blocks (flash-decoding, as qwen35's attention does on the CPU): a threadgroup
// takes one KV head, one block and a tile of tokens, handles all the queries that read
// that KV head there, and writes their partial softmaxes; attn_merge combines the
// blocks exactly. A long attention is recorded as several dispatches over ranges of
// blocks and tiles, each under the command buffer's budget (split.go), so that no
// command buffer has to hold a whole layer's attention.

const (
	kAttnMerge = "attn_merge"
	// attnSG is ATT_SG, the most SIMD-groups of an attn_* threadgroup.
	attnSG = 8
	// attnMaxBlocks is ATT_MAXB: the most blocks a token's positions are cut into.
	attnMaxBlocks = 64
	// attnMinSpan is the shortest block worth a threadgroup of its own (qwen35's
	// attnSplitLen): below it a block's threadgroup spends more on its queries' set-up
	// and its partial result than on the positions.
	attnMinSpan = 256
	// attnPartsPerRow is the partial results a row of the activations has room for, per
	// head: a chunk of T rows cuts its positions into at most rows·8/T blocks (8 for a
	// full prefill chunk, 64 for a decode step), so the partials of a 64-row chunk take
	// 8 × 64 × H × (HD + 2) floats (12.7 MB for the 27B model).
	attnPartsPerRow = 8
)

// attnQPS is ATT_QPS: the queries a SIMD-group holds in registers.
func attnQPS(hd int) int {
	if hd > 256 {
		return 2
	}
	return 4
}

// attnPartFloats is the size of the partials buffer of activations of rows rows.
func attnPartFloats(rows, heads, hd int) int { return rows * attnPartsPerRow * heads * (hd + 2) }

// attnPlan is how one attention call is cut: blocks of span positions over the
// positions 0..pos0+T−1, and tiles of tt tokens, each threadgroup nt threads.
type attnPlan struct {
	pos0, T   int
	span, nb  int
	tt, tiles int
	nt        int
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// planAttention cuts an attention of T tokens at positions pos0.. whose partials have
// room for parts results per head, for the pipeline p (its thread limit bounds the
// SIMD-groups, and so the queries, of a threadgroup).
func (e *engine) planAttention(p gpu.Pipeline, pos0, T, parts int) attnPlan {
	c := e.cfg
	rep := c.Heads / c.KVHeads
	end := pos0 + T
	nb := min(max(1, ceilDiv(end, attnMinSpan)), attnMaxBlocks, max(1, parts/T))
	span := ceilDiv(ceilDiv(end, nb), 32) * 32
	nb = ceilDiv(end, span)
	qps := attnQPS(c.HeadDim)
	// As many tokens a tile as the SIMD-groups' registers hold queries for.
	nt := threads(p, simdWidth*min(attnSG, rep*T))
	tt := min(T, max(1, (nt/simdWidth)*qps/rep))
	nt = threads(p, simdWidth*min(attnSG, rep*tt))
	if rep*tt > (nt/simdWidth)*qps {
		// newGeometry refuses such a model; a pipeline of fewer threads than attnSG
		// SIMD-groups could still lead here.
		panic(fmt.Sprintf("attention: %d queries per threadgroup, %d threads hold %d", rep*tt, nt, (nt/simdWidth)*qps))
	}
	return attnPlan{pos0: pos0, T: T, span: span, nb: nb, tt: tt, tiles: ceilDiv(T, tt), nt: nt}
}

// pieceCost bounds the cost of a dispatch of bn blocks × yn tiles: every threadgroup
// reads a whole block's keys and values (an int8 cache's scales too) for its tile, and
// every query of the tile scores and weights every position of the block (4·HD FLOPs:
// the dot product and the weighted sum), writing its partial result.
func (e *engine) pieceCost(pl attnPlan, kvElem, bn, yn int) cost {
	c := e.cfg
	row := float64(c.HeadDim * kvElem)
	if kvElem == 1 {
		row += float64(4 * c.HeadDim / 32)
	}
	pos := float64(bn * pl.span)
	tokens := float64(min(yn*pl.tt, pl.T))
	return cost{
		bytes: float64(c.KVHeads*yn)*pos*2*row + tokens*float64(c.Heads*bn*(c.HeadDim+2)*4),
		flops: float64(c.Heads) * tokens * pos * float64(4*c.HeadDim),
	}
}

// mergeCost is attn_merge's: every partial read, the output written.
func (e *engine) mergeCost(pl attnPlan) cost {
	c := e.cfg
	return cost{bytes: float64(pl.T*c.Heads) * (float64(pl.nb*(c.HeadDim+2)) + float64(3*c.HeadDim)) * 4,
		flops: float64(pl.T*c.Heads*pl.nb*c.HeadDim) * 2}
}

// pieces returns the blocks and tiles per dispatch: all of them unless one dispatch
// would cost more than limit (0: no limit), then halves of the blocks, down to one,
// then of the tiles.
func (e *engine) pieces(pl attnPlan, kvElem int, limit float64) (bPer, yPer int) {
	bPer, yPer = pl.nb, pl.tiles
	for limit > 0 && e.pieceCost(pl, kvElem, bPer, yPer).seconds() > limit {
		switch {
		case bPer > 1:
			bPer = ceilDiv(bPer, 2)
		case yPer > 1:
			yPer = ceilDiv(yPer, 2)
		default:
			return bPer, yPer
		}
	}
	return bPer, yPer
}

// attnFLOPs is the arithmetic an attention of T tokens at pos0.. does at least: each
// query head scores and weights every position up to its own, 4·HD FLOPs each (the
// cost test's independent count).
func attnFLOPs(heads, hd, pos0, T int) float64 {
	n := float64(T)*float64(pos0) + float64(T)*float64(T+1)/2
	return n * float64(heads) * float64(4*hd)
}
