package ternary

import "fmt"

// q8ID names one implementation of the Q8 row kernel.
type q8ID uint8

const (
	q8Generic q8ID = iota
	q8AVX2
	q8AVX512
	q8GFNI
	q8NEON
	q8NEONDot
)

// q8Kernel is one implementation of the Q8 row kernel.
type q8Kernel struct {
	name string
	id   q8ID
}

var (
	// q8Kernels lists every implementation this machine can run, the generic one first
	// and the preferred one last; tests run all of them.
	q8Kernels []q8Kernel
	// q8Sel is the implementation chosen once at start-up: the last of q8Kernels.
	//
	// It is an id switched on in q8Rows rather than a func variable: a call through a
	// func value makes every pointer argument escape, which would move the stack scratch
	// of the PTQ1_0 and batched paths to the heap on every call.
	q8Sel q8Kernel
)

func init() {
	q8Kernels = append([]q8Kernel{{"generic", q8Generic}}, archQ8Kernels()...)
	useQ8Kernel(q8Kernels[len(q8Kernels)-1])
}

func useQ8Kernel(k q8Kernel) { q8Sel = k }

// q8Rows runs the selected implementation (see q8RowsFunc for the contract).
func q8Rows(w *byte, rowBytes, rows, nb8 int, q *int8, d *float32, sum *int32, y *float32) {
	if q8Sel.id == q8Generic {
		q8RowsGeneric(w, rowBytes, rows, nb8, q, d, sum, y)
		return
	}
	archQ8Rows(q8Sel.id, w, rowBytes, rows, nb8, q, d, sum, y)
}

// q8TilePairs returns the most row pairs the selected tiled kernel takes at once.
func q8TilePairs() int {
	if q8Sel.id == q8Generic {
		return q8TilePairsMax
	}
	return archQ8TilePairs(q8Sel.id)
}

// q8TileWidth returns the widest tile (vectors at once) of the selected tiled kernels;
// they have kernels for every width up to it (q8TileGeneric takes any).
func q8TileWidth() int {
	if q8Sel.id == q8Generic {
		return q8TileVMax
	}
	return archQ8TileWidth(q8Sel.id)
}

// q8Tile runs the selected tiled kernel on rp row pairs and tiles of tv vectors (see
// q8TileGeneric).
func q8Tile(rp, tv int, a *q8TileArgs) {
	if q8Sel.id == q8Generic {
		q8TileGeneric(rp, tv, a)
		return
	}
	archQ8Tile(q8Sel.id, rp, tv, a)
}

// q8RepackPQ2 repacks PQ2_0 rows for the tiled kernels (see q8RepackPQ2Generic).
func q8RepackPQ2(dst []byte, stride int, a, b []byte, ng int) {
	_ = dst[(ng-1)*stride+q8PairBytes-1]
	_ = a[ng*8*pq2BlockBytes-1]
	_ = b[ng*8*pq2BlockBytes-1]
	if q8Sel.id == q8Generic || !archQ8Repack(&dst[0], stride, &a[0], &b[0], ng) {
		q8RepackPQ2Generic(dst, stride, a, b, ng)
	}
}

// Q8Kernel names the implementation of the integer kernels chosen for this machine at
// start-up: "avx512gfni", "avx512vnni", "avx2", "neondot", "neon" or "generic".
func Q8Kernel() string { return q8Sel.name }

// q8Check panics unless the arguments of a Q8 product fit together.
func q8Check(op string, f Format, w []byte, k, n int, x *Q8, lo, hi int) {
	if !f.valid() {
		panic(fmt.Sprintf("ternary: %s: invalid format %d", op, uint8(f)))
	}
	if x.K != k {
		panic(fmt.Sprintf("ternary: %s: activation width %d, matrix row width %d", op, x.K, k))
	}
	if lo < 0 || hi < lo || hi > n {
		panic(fmt.Sprintf("ternary: %s: rows [%d, %d) of %d", op, lo, hi, n))
	}
	if need := hi * f.RowBytes(k); len(w) < need {
		panic(fmt.Sprintf("ternary: %s: rows up to %d of %d×%d %s need %d bytes, have %d", op, hi, k, n, f, need, len(w)))
	}
}

// MatVecQ8Range computes y[i] = Σ_j W[i][j]·x[j] for rows lo ≤ i < hi of a ternary
// matrix of row width k stored in format f, with the activations quantised in x. It is
// the decode kernel: PQ2_0 and PTQ1_0 rows run on the SIMD kernels chosen at start-up
// ([Q8Kernel]), PTQ1_0 rows read in place (see matvec_ptq1.go) and bit-identical to
// their PQ2_0 transcode. (Where a family has no PTQ1_0 kernel, or x was not filled by
// [Q8.Quantize], PTQ1_0 rows are transcoded to PQ2_0 on the stack a chunk at a time:
// slower, and bit-identical for k ≤ 61440.) It does not allocate; goroutines sharing x
// and w give each its own row range.
//
// The result is exact up to float32 rounding for the quantised activations: per block b
// the integer I_b = Σ Q·c − Sum_b is exact, and y[i] = Σ_b fp16(d_b)·D_b·I_b. Against the
// float64 reference on x itself, |y[i] − Σ_j W[i][j]·x[j]| ≤ Σ_b 0.5001·D_b·Σ_{j∈b}|W[i][j]|
// (the activation rounding) plus float32 rounding of the sum.
func MatVecQ8Range(f Format, w []byte, k int, x *Q8, y []float32, lo, hi int) {
	q8Check("MatVecQ8Range", f, w, k, hi, x, lo, hi)
	if len(y) < hi {
		panic(fmt.Sprintf("ternary: MatVecQ8Range: rows up to %d, len(y) = %d", hi, len(y)))
	}
	if lo == hi {
		return
	}
	nb := k / BlockSize
	rb := f.RowBytes(k)
	if f == PTQ1_0 {
		if x.tr == nil || !ptq1Native() {
			matVecQ8PTQ1(w, k, x, y, lo, hi)
			return
		}
		q8RowsPTQ1Range(w[lo*rb:hi*rb], rb, x, nb, y[lo:hi])
		return
	}
	q8RowsPQ2(w[lo*rb:hi*rb], rb, hi-lo, x, 0, nb, y[lo:hi])
}

// q8RowsPQ2 sets y[r] for the len(y) rows of the PQ2_0 bytes w (rowBytes apart) to the
// dot product of blocks b0 … b0+nb−1 of x (b0 even) with the row's first nb blocks.
func q8RowsPQ2(w []byte, rowBytes, rows int, x *Q8, b0, nb int, y []float32) {
	y = y[:rows]
	nb8 := nb / 8
	if nb8 > 0 {
		_ = w[(rows-1)*rowBytes+nb8*8*pq2BlockBytes-1]
		_ = x.Sum[b0+nb8*8-1]
		q8Rows(&w[0], rowBytes, rows, nb8, &x.Q[256*(b0/2)], &x.D[b0], &x.Sum[b0], &y[0])
	} else {
		clear(y)
	}
	if tail := nb - 8*nb8; tail > 0 {
		off := 8 * nb8 * pq2BlockBytes
		for r := range y {
			y[r] += q8TailDot(w[r*rowBytes+off:], x, b0+8*nb8, tail)
		}
	}
}

// ptq1Chunk is how many blocks of a PTQ1_0 row are transcoded at once (on the stack):
// as many as fit a MatMulQ8Range panel, so that both functions take the same path.
const ptq1Chunk = mmPanel / pq2BlockBytes / 8 * 8

func matVecQ8PTQ1(w []byte, k int, x *Q8, y []float32, lo, hi int) {
	var buf [ptq1Chunk * pq2BlockBytes]byte
	nb := k / BlockSize
	rb := PTQ1_0.RowBytes(k)
	for i := lo; i < hi; i++ {
		row := w[i*rb : (i+1)*rb]
		var acc float32
		for b0 := 0; b0 < nb; b0 += ptq1Chunk {
			n := min(ptq1Chunk, nb-b0)
			ptq1ToPQ2(buf[:], row[b0*ptq1BlockBytes:], n)
			var part [1]float32
			q8RowsPQ2(buf[:n*pq2BlockBytes], 0, 1, x, b0, n, part[:])
			if b0 == 0 {
				acc = part[0]
			} else {
				acc += part[0]
			}
		}
		y[i] = acc
	}
}

// mmPanel is the size of the weight panel the narrow-row path of MatMulQ8Range keeps in
// the L1 cache while it runs every activation vector over it, and the widest PQ2_0 row
// the batched kernels take (k ≤ 61440); it also sizes the PTQ1_0 transcoding chunks.
const mmPanel = 16 << 10

// MatMulQ8Range computes rows lo ≤ i < hi of Y = X·Wᵀ for the first t activation
// vectors of x at once: y holds t rows of n values (n = the matrix's row count), and
// y[s·n + i] is what [MatVecQ8Range] gives for vector s and row i, bit for bit (with
// the same kernel family; see [Q8Kernel]). It does not allocate.
//
// It is the prefill kernel, and the decode kernel of a batch of sequences. For k ≥ 1024
// it repacks up to 6 rows at a time (PTQ1_0 rows decoded to 2-bit codes on the way, in
// registers on AVX-512) and multiplies them with up to 8 vectors at a time (a batch's
// rest after whole tiles in narrower tiles, so that the work follows the vectors), each
// extracted code plane and each activation load used several times over, every block's
// integer product landing in its own lane (see matmul_q8.go); x must have been filled
// by [Q8Batch.Quantize]. One vector runs [MatVecQ8Range]; narrower rows run the
// matrix-vector kernel once per vector over panels of weights kept in the L1 cache, and
// rows wider than 61440 one row at a time.
func MatMulQ8Range(f Format, w []byte, k, n int, x *Q8Batch, t int, y []float32, lo, hi int) {
	if t < 0 || t > x.T {
		panic(fmt.Sprintf("ternary: MatMulQ8Range: %d vectors, batch capacity %d", t, x.T))
	}
	q8Check("MatMulQ8Range", f, w, k, n, &x.rows[0], lo, hi)
	if t == 0 || lo == hi {
		return
	}
	if len(y) < (t-1)*n+hi {
		panic(fmt.Sprintf("ternary: MatMulQ8Range: %d vectors of %d rows up to %d, len(y) = %d", t, n, hi, len(y)))
	}
	if t == 1 {
		// One vector: the matrix-vector kernel reads the weights in place, where a tile
		// would repack them first (BenchmarkMatMulQ8Batch), and gives the same bits.
		MatVecQ8Range(f, w, k, &x.rows[0], y, lo, hi)
		return
	}
	nb := k / BlockSize
	rb2 := PQ2_0.RowBytes(k)
	if rb2 > mmPanel {
		// Rows wider than a panel (k > 61440): one row at a time, re-read from L2.
		for i := lo; i < hi; i++ {
			for s := range t {
				MatVecQ8Range(f, w, k, &x.rows[s], y[s*n:(s+1)*n], i, i+1)
			}
		}
		return
	}
	if nb >= 8 {
		matMulQ8Tiled(f, w, k, n, x, t, y, lo, hi)
		return
	}
	// Rows narrower than a group of 8 blocks: the matrix-vector kernel per vector.
	tile := mmPanel / rb2
	if f == PQ2_0 {
		for i0 := lo; i0 < hi; i0 += tile {
			i1 := min(i0+tile, hi)
			p := w[i0*rb2 : i1*rb2]
			for s := range t {
				q8RowsPQ2(p, rb2, i1-i0, &x.rows[s], 0, nb, y[s*n+i0:s*n+i1])
			}
		}
		return
	}
	var buf [mmPanel]byte
	rb := PTQ1_0.RowBytes(k)
	for i0 := lo; i0 < hi; i0 += tile {
		i1 := min(i0+tile, hi)
		ptq1ToPQ2(buf[:], w[i0*rb:i1*rb], (i1-i0)*nb)
		p := buf[:(i1-i0)*rb2]
		for s := range t {
			q8RowsPQ2(p, rb2, i1-i0, &x.rows[s], 0, nb, y[s*n+i0:s*n+i1])
		}
	}
}
