package cpu

import (
	"sync/atomic"

	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// rotateRows rotates each of the T rows of x in place, in parallel over the rows.
func (e *cpuEngine) rotateRows(s *scratch, x []float32, T int, r *hadamard.Rotation) {
	if T == 1 {
		r.Forward(x)
	} else {
		s.rotate = rotateJob{x: x, width: r.Width(), r: r}
		e.pool.For(T, 1, &s.rotate)
	}
	e.lap(s, &s.prof.Transforms)
}

type rotateJob struct {
	x     []float32
	width int
	r     *hadamard.Rotation
}

func (j *rotateJob) Run(lo, hi int) {
	for t := lo; t < hi; t++ {
		j.r.Forward(j.x[t*j.width : (t+1)*j.width])
	}
}

// eachRow runs j over the T rows of a chunk, in parallel over the rows when there are
// several: a prefill's norms, SwiGLU and residual adds would otherwise leave all but
// one core idle between its products (2.5% of a 27B 128-token prefill on two cores).
func (e *cpuEngine) eachRow(s *scratch, T int, j floatRowJob) {
	s.perRow = j
	if T == 1 {
		s.perRow.Run(0, 1)
	} else {
		e.pool.For(T, 1, &s.perRow)
	}
	s.perRow = floatRowJob{} // drop the references to the chunk's buffers
}

// floatRowOp is the operation of a floatRowJob.
type floatRowOp int

const (
	rowNorm     floatRowOp = iota // y = rmsnorm(x)·gain
	rowNormKeep                   // z = rmsnorm(x)·gain, and y a copy of it
	rowSwiGLU                     // x = silu(x)·y
	rowAdd                        // x += y
)

// floatRowJob is one row-wise operation over rows of width w of x, y and z.
type floatRowJob struct {
	op      floatRowOp
	w       int
	x, y, z []float32
	gain    []float32
	eps     float32
}

func (j *floatRowJob) Run(lo, hi int) {
	w := j.w
	for t := lo; t < hi; t++ {
		x := j.x[t*w : (t+1)*w]
		switch j.op {
		case rowNorm:
			qwen35.RMSNorm(j.y[t*w:(t+1)*w], x, j.gain, j.eps)
		case rowNormKeep:
			z := j.z[t*w : (t+1)*w]
			qwen35.RMSNorm(z, x, j.gain, j.eps)
			copy(j.y[t*w:(t+1)*w], z)
		case rowSwiGLU:
			qwen35.SwiGLU(x, x, j.y[t*w:(t+1)*w])
		case rowAdd:
			addInto(x, j.y[t*w:(t+1)*w])
		}
	}
}

func (e *cpuEngine) run(s *scratch, j *productJob) {
	// A grain of 16 rows keeps a chunk's weights (≥ 16 × 1.3 KB) worth a claim. A job
	// that counts in tiles of 64 rows has such chunks at any grain; a decode step's takes
	// two tiles a claim even so, as each claim restarts the weights' stream cold (its
	// kernel's prefetches run ahead of what it reads, not into the first blocks): on the
	// 2-core Zen 3 VM, nine alternated pairs of 27B decodes, the paired ratio 74–89%
	// (median 79.7%) at one tile against 81–89% (83.5%) at two, higher in six pairs of
	// nine; four tiles 73–84% (three pairs).
	grain := 16
	switch {
	case j.tiled && j.t == 1:
		grain = 2
	case j.tiled:
		grain = 1
	}
	e.pool.For(j.total, grain, j)
	e.lap(s, &s.prof.Ternary)
}

// productJob is the set of matrix products that read one activation site, run as one
// parallel loop over the concatenated rows of every matrix: one barrier per site, and
// the workers stream each matrix's rows in order. Products over interleaved copies
// count in their tiles of 64 rows instead, so that every chunk is whole tiles.
type productJob struct {
	t      int
	n      int
	total  int  // rows and tiles of every product
	tiled  bool // some product counts in tiles
	ps     [4]product
	rows   *rowScratch                       // decoded rows for the float32 matrix-matrix products
	tiles  map[*qwen35.Matrix]*ternary.Tiles // the engine's tiles, if it made them
	packed map[*qwen35.Matrix]*packed        // the engine's interleaved copies, if it made any
}

// rowScratch is a set of K-wide rows, one per goroutine that may run a productJob's
// chunks at once: a pool's For runs a loop on at most Workers goroutines (the helpers it
// hands the loop to and the caller), so a free row is always found.
type rowScratch struct {
	busy []atomic.Bool
	rows [][]float32
}

func newRowScratch(n, k int) rowScratch {
	r := rowScratch{busy: make([]atomic.Bool, n), rows: make([][]float32, n)}
	for i := range r.rows {
		r.rows[i] = make([]float32, k)
	}
	return r
}

// get claims a free row, or returns −1 and nil when none is (MatMulRange then allocates
// its own: correct, only slower).
func (r *rowScratch) get() (int, []float32) {
	for i := range r.busy {
		if r.busy[i].CompareAndSwap(false, true) {
			return i, r.rows[i]
		}
	}
	return -1, nil
}

func (r *rowScratch) put(i int) {
	if i >= 0 {
		r.busy[i].Store(false)
	}
}

type product struct {
	tern  *qwen35.Matrix
	bf    *qwen35.BF16Matrix
	q8    *ternary.Q8Batch // the int8 site, or nil for the float32 kernels
	tiles *ternary.Tiles   // tern's tiles, or nil
	pk    *packed          // tern's interleaved copy, if the product reads it; or nil
	x, y  []float32
	first int // global index of the product's first row (or tile)
	rows  int
	units int // rows, or tiles over pk
}

func (j *productJob) reset(t int) { j.t, j.n, j.total, j.tiled = t, 0, 0, false }

func (j *productJob) ternary(m *qwen35.Matrix, x []float32, q8 *ternary.Q8Batch, y []float32) {
	p := product{tern: m, tiles: j.tiles[m], x: x, q8: q8, y: y, first: j.total, rows: m.N, units: m.N}
	// Batches read the interleaved copy only where its batched kernel is native: the
	// twin elsewhere is slower than the tiled kernels, and gives other bits.
	if v := j.packed[m]; v != nil && q8 != nil && (j.t == 1 || v.batchNative()) {
		p.pk, p.units = v, (m.N+v.tile()-1)/v.tile()
		j.tiled = true
	}
	j.ps[j.n] = p
	j.n++
	j.total += p.units
}

func (j *productJob) bf16(m *qwen35.BF16Matrix, x, y []float32) {
	j.ps[j.n] = product{bf: m, x: x, y: y, first: j.total, rows: m.N, units: m.N}
	j.n++
	j.total += m.N
}

func (j *productJob) Run(lo, hi int) {
	for i := 0; i < j.n; i++ {
		p := &j.ps[i]
		a, b := max(lo, p.first)-p.first, min(hi, p.first+p.units)-p.first
		if a >= b {
			continue
		}
		switch {
		case p.pk != nil:
			tr := p.pk.tile()
			p.pk.product(p.q8, j.t, p.y, a*tr, min(b*tr, p.rows))
		case p.q8 != nil && j.t == 1:
			ternary.MatVecQ8Range(p.tern.Format, p.tern.Data, p.tern.K, p.q8.Row(0), p.y, a, b)
		case p.q8 != nil:
			ternary.MatMulQ8TilesRange(p.tern.Format, p.tern.Data, p.tiles, p.tern.K, p.tern.N, p.q8, j.t, p.y, a, b)
		case p.tern != nil && j.t == 1:
			ternary.MatVecRange(p.tern.Format, p.tern.Data, p.tern.K, p.x, p.y, a, b)
		case p.tern != nil:
			ri, row := j.rows.get()
			ternary.MatMulRange(p.tern.Format, p.tern.Data, p.tern.K, p.tern.N, p.x, j.t, p.y, a, b, row)
			j.rows.put(ri)
		default:
			k, n := p.bf.K, p.bf.N
			for t := 0; t < j.t; t++ {
				p.bf.MulVecRange(p.y[t*n:(t+1)*n], p.x[t*k:(t+1)*k], a, b)
			}
		}
	}
}
