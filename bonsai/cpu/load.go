package cpu

import (
	"context"
	"fmt"
	"sync"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// New returns the pure-Go backend.
func New(opts ...Option) backend.Backend {
	var b cpuBackend
	for _, o := range opts {
		o(&b)
	}
	return b
}

// An Option configures the backend New returns.
type Option func(*cpuBackend)

// WithWeightFormat stores the model's ternary matrices in format f: those the file holds
// in the other format are transcoded at Load (losslessly; a PQ2_0 matrix holding code 3
// cannot become PTQ1_0, and Load then fails naming it) into memory of the backend's own.
//
// On a machine whose cores cannot decode PTQ1_0's base-3 bytes as fast as memory
// delivers them (AVX2 without AVX-VNNI, arm64 without SDOT), a PTQ1_0 file decodes
// faster as PQ2_0: its rows are read 18% larger but with fewer instructions. A mapped
// file's rows leave memory as they are transcoded, and where the copy is interleaved
// ([WithLayout]) for batches too, the transcoded rows go once the interleaved copy holds
// them: resident memory is one PQ2_0 copy, 1.16× the PTQ1_0 file. On the 2-core Zen 3
// test machine the 27B's PTQ1_0 file decodes at 0.43–0.47 of its PQ2_0 twin's rate
// natively and at PQ2_0's rate transcoded (README, performance). The results are the
// same bits either way.
func WithWeightFormat(f ternary.Format) Option {
	return func(b *cpuBackend) { b.format, b.transcode = f, true }
}

// WithBatchTiles keeps, beside the weights, a copy of every ternary matrix in the layout
// of the batched kernels ([ternary.Tiles]), made at Load: the forward passes of several
// sequences at once (a batched decode step, a prefill chunk) then skip repacking the
// weights on every pass. It pays where a batch is small: on the 2-core Zen 3 test VM a
// 5120×17408 product of 2 vectors ran 1.5–1.9× and of 4 vectors 1.4–1.5× as fast, of 8
// the same (BenchmarkMatMulQ8Batch, mode=tiles). The copy takes 576 bytes for every 544
// of the weights (7.3 GB for the 27B model), and it is made only with int8 activations;
// one sequence's step reads the weights as ever. Matrices whose batches read an
// interleaved copy ([WithLayout]) are not tiled. The results are the same bits.
func WithBatchTiles() Option {
	return func(b *cpuBackend) { b.tiles = true }
}

// WithLayout sets how the backend keeps the ternary matrices (default [LayoutAuto]).
//
// An interleaved matrix is a copy made at Load in the row-interleaved layout of its
// format ([ternary.Interleaved] for PQ2_0, [ternary.Interleaved3] for PTQ1_0): its kernels
// do several times fewer instructions per weight than the file's layout allows, so that
// decode runs at the memory's rate on few cores, and batches read it without repacking.
// Where both its decode and batched kernels are native (PQ2_0 on AVX-512 VNNI, AVX-VNNI,
// AVX2 and NEON; PTQ1_0 on AVX-512 VNNI and AVX-VNNI), the file's rows are released as
// the copy is made ([qwen35.Weights.Release]: their pages leave resident memory, whether
// the file is memory-mapped or was read into memory), so the copy takes their place:
// resident memory stays about the file's size. Where only its decode kernel is
// ([LayoutInterleaved] on AVX2, NEON, or PTQ1_0), batches keep reading the file's rows and
// the copy comes on top of them (7.1 GB for the 27B model). Copies are made only with
// int8 activations. The results are the same bits in every layout.
func WithLayout(l Layout) Option {
	return func(b *cpuBackend) { b.layout = l }
}

type cpuBackend struct {
	format    ternary.Format
	transcode bool
	tiles     bool
	layout    Layout
}

func (cpuBackend) Name() string { return "cpu" }

func (b cpuBackend) Load(ctx context.Context, m backend.Model, opt backend.LoadOptions) (backend.Engine, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w, ok := m.(*qwen35.Weights)
	if !ok {
		return nil, fmt.Errorf("the cpu backend runs %s models, not %s", qwen35.Architecture, m.Architecture())
	}
	c := &w.Config
	e := &cpuEngine{
		w:       w,
		cfg:     c,
		plan:    w.Plan(),
		pool:    parallel.NewPool(max(opt.Threads, 1)),
		gdn:     qwen35.NewGDN(c),
		attn:    qwen35.NewAttention(c),
		int8:    opt.Activations == backend.ActivationsInt8,
		profile: opt.Profile,
		rot:     map[int]*hadamard.Rotation{},
	}
	sites := e.plan.Sites()
	for _, width := range append([]int{e.plan.EmbeddingWidth}, siteWidths(sites)...) {
		r := w.Rotation(width)
		if r == nil {
			e.pool.Close()
			return nil, fmt.Errorf("the model has no rotation of width %d", width)
		}
		e.rot[width] = r
	}
	var from map[*qwen35.Matrix]*qwen35.Matrix
	if _, batch := packNative(b.format); b.transcode && e.int8 && batch && b.layout.Resolve(b.format) == LayoutInterleaved {
		// Every product of a transcoded matrix reads its interleaved copy: the file's rows
		// are transcoded straight into it, a tile at a time (no whole copy in between:
		// one pass and half the memory to touch).
		e.subst, from = transcodePlan(sites, b.format)
	} else if b.transcode {
		subst, frees, err := transcodeMatrices(ctx, sites, b.format, w.Release, max(opt.Threads, 1), opt.Progress)
		if err != nil {
			e.pool.Close()
			return nil, err
		}
		e.subst, e.freeSubst = subst, frees
	}
	if e.int8 && b.layout != LayoutFile {
		pk, free, err := packMatrices(ctx, sites, e.mat, b.layout, w.Release, max(opt.Threads, 1), opt.Progress, from)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.packed, e.freePacked = pk, free
		// A transcoded copy whose products, batches included, all read its interleaved
		// copy is read by nothing any more: without this, a PTQ1_0 model run as
		// interleaved PQ2_0 kept both PQ2_0 copies (2.3× the file).
		for _, t := range e.subst {
			if p := pk[t]; p != nil && p.batchNative() {
				if free := e.freeSubst[t]; free != nil {
					delete(e.freeSubst, t)
					t.Data = nil
					if err := free(); err != nil {
						e.Close()
						return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
					}
				}
			}
		}
	}
	if b.tiles && e.int8 {
		// A matrix whose batches read its interleaved copy needs no tiles.
		skip := func(m *qwen35.Matrix) bool { return e.packed[m] != nil && e.packed[m].batchNative() }
		tiles, err := tileMatrices(ctx, sites, e.mat, skip, max(opt.Threads, 1), opt.Progress)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.tiles = tiles
	}
	e.decodeMem = e.decodeMemory(sites)
	return e, nil
}

func siteWidths(sites []*qwen35.Site) []int {
	var ws []int
	for _, s := range sites {
		ws = append(ws, s.Width)
	}
	return ws
}

type cpuEngine struct {
	w    *qwen35.Weights
	cfg  *qwen35.Config
	plan *qwen35.Plan
	pool *parallel.Pool
	gdn  *qwen35.GDN
	attn *qwen35.Attention

	rot map[int]*hadamard.Rotation // by width, every width of the plan

	// subst holds the matrices transcoded at Load (WithWeightFormat), by the plan's
	// matrix they stand for; nil when none were. freeSubst gives back the memory of
	// those whose rows are still read, by the transcoded matrix (the others have no
	// Data: their interleaved copy replaced them).
	subst     map[*qwen35.Matrix]*qwen35.Matrix
	freeSubst map[*qwen35.Matrix]func() error
	// tiles holds the batched kernels' copies of the matrices (WithBatchTiles), by the
	// matrix the products read; nil without it.
	tiles map[*qwen35.Matrix]*ternary.Tiles
	// packed holds the interleaved copies of the matrices (WithLayout), by the matrix
	// the products read; nil without any.
	packed map[*qwen35.Matrix]*packed
	// freePacked gives back the memory of the interleaved copies (nil without them).
	freePacked func() error

	// decodeMem is the memory of the products a decode step reads, in pieces of at most
	// readPiece bytes (ReadWeights).
	decodeMem [][]byte

	// chunkedGDN selects the chunked GDN form for prefill. The chunked form agrees with
	// the step form but does more scalar arithmetic per token, so on the CPU prefill
	// walks the steps unless a test asks otherwise.
	chunkedGDN bool

	// int8 quantises each activation site once to int8 and runs the integer kernels
	// (the default); otherwise the products run in float32.
	int8 bool
	// profile accounts the time of each kind of operation (a few clock reads per op).
	profile bool

	// free holds the chunk scratches no Forward is using: one is taken per call, so
	// there are as many as calls have ever run at once, and a steady stream of calls
	// allocates none.
	mu     sync.Mutex
	free   []*scratch
	closed bool // ReadWeights's check; bonsai closes no engine a call still uses
	// spareGDN holds the GDN states of closed sequences, at most maxSpareGDN sets, for
	// NewState to zero and reuse (under mu).
	spareGDN [][]*qwen35.GDNState
}

// maxSpareGDN is how many closed sequences' GDN states the engine keeps for new ones. A
// fresh set's first step faults in every page of it (151 MB for the 27B: 0.4 s on a
// virtual machine, even in huge pages), where zeroing a kept one takes tens of
// milliseconds; two cover a program that starts one sequence after another, or keeps
// one aside while it starts the next, without holding much memory for nothing.
const maxSpareGDN = 2

func (e *cpuEngine) Close() error {
	e.pool.Close()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.free, e.decodeMem, e.spareGDN, e.closed = nil, nil, nil, true
	err := freeAll(e.freeSubst)
	e.subst = nil
	if e.freePacked != nil {
		free := e.freePacked
		e.freePacked, e.packed = nil, nil
		if ferr := free(); err == nil {
			err = ferr
		}
	}
	return err
}

// For runs body over [0, n) on the engine's worker pool (backend.Workers).
func (e *cpuEngine) For(n, grain int, body interface{ Run(lo, hi int) }) {
	e.pool.For(n, grain, body)
}
