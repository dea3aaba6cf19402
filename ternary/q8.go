package ternary

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Q8 is an activation vector quantised for the integer kernels: per 128-element block an
// int8 vector with a float32 scale and the block's sum of int8 values (for the −1 fold),
// in a layout the kernels pair directly with the 2-bit code planes.
//
// Quantise once per activation vector and share the Q8 between every matrix that reads
// it (q, k and v; gate and up): [MatVecQ8Range] only reads it, so any number of
// goroutines may use one Q8 at once.
//
// # Values
//
// Block b (elements 128b … 128b+127) has D[b] = max|x|/127 over the block and
// Q = round(x·(127/max|x|)), rounded to nearest with ties to even, so |Q| ≤ 127 and the
// block stands for the values D[b]·Q. For finite x the error of every element is at most
// 0.5001·D[b]: half a step, plus the float32 rounding of the reciprocal, the product and
// D (together below 2.5·10⁻⁵·D). A block of zeros has D = 0 and Q = 0.
// A block holding a NaN or an infinity has D = NaN and Q = 0, so that every product that
// reads it is NaN, as the float kernels' would be. Sum[b] is the exact sum of the
// block's 128 Q values.
//
// # Layout
//
// The kernels read a PQ2_0 block's 32 code bytes as four planes: plane p = (qs >> 2p) & 3
// holds element 4j+p in byte j (j = 0 … 31). Q is stored so that each plane meets its
// 32 activations as one contiguous run: element 4j+p of block b is at
//
//	Q[256·(b/2) + 64·p + 32·(b%2) + j]
//
// that is, blocks come in pairs (256 bytes), and within a pair the four 64-byte rows are
// the planes, each holding the even block's 32 values then the odd block's. A 32-byte
// load at 256·(b/2) + 64p + 32·(b%2) is plane p of block b (the AVX2 and NEON kernels); a
// 64-byte load at 256·(b/2) + 64p is plane p of both blocks of the pair, matching a
// 64-byte register holding the two blocks' code bytes (the AVX-512 kernel). The pairing
// is why Q is padded to an even number of blocks (the padding is zero).
//
// The PTQ1_0 kernels keep a second copy of the values in their own order, derived from
// Q by the first PTQ1_0 product after Quantize: fill a Q8 through Quantize only. (A Q8
// built as a struct literal has no such copy, and its PTQ1_0 products take a slower
// path; one whose Q was rewritten directly after a PTQ1_0 product would give stale
// PTQ1_0 products.)
type Q8 struct {
	K   int       // elements, a multiple of BlockSize
	Q   []int8    // 256·⌈K/256⌉ bytes in the layout above
	D   []float32 // one scale per block
	Sum []int32   // one sum of Q per block
	// tr is the same values in the order the PTQ1_0 kernels read them (ptq1ActOrder),
	// derived on first use after Quantize (trOK, under trMu), so that PQ2_0 models never
	// pay for it; nil in a Q8 built by hand, whose PTQ1_0 rows then take the slower
	// transcoding path.
	tr   []int8
	trMu sync.Mutex
	trOK atomic.Bool
}

// ptq1Acts returns q.tr, deriving it from Q first if Quantize has run since. Any number
// of goroutines may call it at once (they then share one derivation).
func (q *Q8) ptq1Acts() []int8 {
	if !q.trOK.Load() {
		q.trMu.Lock()
		if !q.trOK.Load() {
			ptq1ActOrder(q.tr, q.Q)
			q.trOK.Store(true)
		}
		q.trMu.Unlock()
	}
	return q.tr
}

// q8Index returns the position in Q8.Q of element e.
func q8Index(e int) int {
	b, i := e/BlockSize, e%BlockSize
	return 256*(b/2) + 64*(i%4) + 32*(b%2) + i/4
}

// q8QBytes returns len(Q8.Q) for k elements.
func q8QBytes(k int) int { return (k + 2*BlockSize - 1) / (2 * BlockSize) * (2 * BlockSize) }

// NewQ8 returns a Q8 of width k (a positive multiple of BlockSize), all zeros.
func NewQ8(k int) *Q8 {
	if k <= 0 || k%BlockSize != 0 {
		panic(fmt.Sprintf("ternary: NewQ8(%d): width is not a positive multiple of %d", k, BlockSize))
	}
	nb := k / BlockSize
	return &Q8{K: k, Q: make([]int8, q8QBytes(k)), D: make([]float32, nb), Sum: make([]int32, nb),
		tr: make([]int8, ptq1ActBytes(k))}
}

// Quantize stores x (len(x) ≥ K; the first K values are used) quantised as described
// at [Q8]. It does not allocate.
func (q *Q8) Quantize(x []float32) {
	if len(x) < q.K {
		panic(fmt.Sprintf("ternary: Q8.Quantize: %d values for width %d", len(x), q.K))
	}
	nb := q.K / BlockSize
	quantizeQ8(q.Q, q.D[:nb], q.Sum[:nb], x[:q.K])
	q.trOK.Store(false)
}

// quantizeQ8 quantises the len(d) blocks of x into q, d and sum: by the selected
// family's SIMD kernel where it has one, and by quantizeQ8Block for the blocks that
// kernel leaves (zeros, NaN or infinities, tiny scales) and everywhere else.
func quantizeQ8(q []int8, d []float32, sum []int32, x []float32) {
	for b := 0; b < len(d); b++ {
		if q8Sel.id != q8Generic {
			if b = archQuantizeQ8(q, d, sum, x, b); b == len(d) {
				return
			}
		}
		d[b], sum[b] = quantizeQ8Block(q, b, x[b*BlockSize:(b+1)*BlockSize])
	}
}

// q8Round is 1.5·2²³: adding and subtracting it rounds a float32 of magnitude below 2²²
// to an integer, to nearest with ties to even (the add is one correctly rounded float32
// operation, and Go neither fuses nor reassociates it).
const q8Round = 12582912

// quantizeQ8Block quantises block b of an activation vector (xb, 128 values) into its
// place in dst and returns its scale and sum.
func quantizeQ8Block(dst []int8, b int, xb []float32) (float32, int32) {
	xb = xb[:BlockSize]
	base := 256*(b/2) + 32*(b%2)
	dst = dst[base : base+256-32]
	// max|x| as an integer max over the bits with the sign cleared (non-negative floats
	// order as their bits do); NaN and infinities show as bits above MaxFloat32's.
	var amaxBits uint32
	for _, v := range xb {
		amaxBits = max(amaxBits, math.Float32bits(v)&^(1<<31))
	}
	if amaxBits == 0 || amaxBits > 0x7f7fffff {
		for p := range 4 {
			clear(dst[64*p : 64*p+32])
		}
		if amaxBits == 0 {
			return 0, 0
		}
		return float32(math.NaN()), 0
	}
	amax := math.Float32frombits(amaxBits)
	id := 127 / amax
	if math.IsInf(float64(id), 0) {
		// amax is a float32 subnormal below 127·2⁻¹²⁸: divide in float64 instead.
		var sum int32
		for j := range 32 {
			for p := range 4 {
				v := int32(math.RoundToEven(float64(xb[4*j+p]) * 127 / float64(amax)))
				dst[64*p+j] = int8(v)
				sum += v
			}
		}
		return amax / 127, sum
	}
	var sum int32
	for j := range 32 {
		xs := xb[4*j : 4*j+4 : 4*j+4]
		// |x·id| ≤ 127·(1+2⁻²³)², which rounds to at most 127.
		v0 := int32((float32(xs[0]*id) + q8Round) - q8Round)
		v1 := int32((float32(xs[1]*id) + q8Round) - q8Round)
		v2 := int32((float32(xs[2]*id) + q8Round) - q8Round)
		v3 := int32((float32(xs[3]*id) + q8Round) - q8Round)
		dst[j] = int8(v0)
		dst[64+j] = int8(v1)
		dst[128+j] = int8(v2)
		dst[192+j] = int8(v3)
		sum += (v0 + v1) + (v2 + v3)
	}
	return amax / 127, sum
}

// Q8Batch holds t activation vectors quantised for the integer kernels, for prefill:
// [MatMulQ8Range] reads each weight row once and uses it for all of them. Row s is an
// ordinary [Q8] (see there for the values and the layout).
//
// Fill a batch with [Q8Batch.Quantize] only: besides the rows it keeps a second copy of
// each vector's int8 values in the order the batched kernels read them (see q8TileActs),
// and where Intel AMX runs a third in the AMX kernel's order (amxActs), which quantising
// a row through [Q8Batch.Row] would leave stale.
type Q8Batch struct {
	K, T int  // width, and capacity in vectors
	rows []Q8 // views into the shared arrays below
	q    []int8
	d    []float32
	sum  []int32
	tq   []int8 // per vector 1024·⌊K/1024⌋ bytes: the tiled copy (q8TileActs)
	tr   []int8 // per vector ptq1ActBytes(K): the rows' PTQ1_0-ordered copies
	// aq is, where AMX runs (amxAvailable), per vector amxActBytes(K) bytes: the AMX
	// kernel's copy (amxActs), for a capacity rounded up to whole groups of amxVectors
	// as d and sum are (the kernel reads a whole group; the vectors past T stay zero).
	aq []int8
}

// NewQ8Batch returns a batch of capacity t vectors of width k.
func NewQ8Batch(k, t int) *Q8Batch {
	if k <= 0 || k%BlockSize != 0 {
		panic(fmt.Sprintf("ternary: NewQ8Batch(%d, %d): width is not a positive multiple of %d", k, t, BlockSize))
	}
	if t < 1 {
		panic(fmt.Sprintf("ternary: NewQ8Batch(%d, %d): need at least one vector", k, t))
	}
	nb, qb, rb := k/BlockSize, q8QBytes(k), ptq1ActBytes(k)
	tg := (t + amxVectors - 1) / amxVectors * amxVectors
	bt := &Q8Batch{K: k, T: t, rows: make([]Q8, t),
		q: make([]int8, t*qb), d: make([]float32, tg*nb), sum: make([]int32, tg*nb),
		tq: make([]int8, t*q8TileBytes(k)), tr: make([]int8, t*rb)}
	if amxAvailable() {
		bt.aq = make([]int8, tg*amxActBytes(k))
	}
	for s := range t {
		bt.rows[s] = Q8{K: k, Q: bt.q[s*qb : (s+1)*qb : (s+1)*qb],
			D: bt.d[s*nb : (s+1)*nb : (s+1)*nb], Sum: bt.sum[s*nb : (s+1)*nb : (s+1)*nb],
			tr: bt.tr[s*rb : (s+1)*rb : (s+1)*rb]}
	}
	return bt
}

// Row returns vector s of the batch (owned by the batch).
func (bt *Q8Batch) Row(s int) *Q8 { return &bt.rows[s] }

// tile returns the tiled copy of vector s.
func (bt *Q8Batch) tile(s int) []int8 {
	n := q8TileBytes(bt.K)
	return bt.tq[s*n : (s+1)*n : (s+1)*n]
}

// Quantize stores the first t vectors of the batch from x, which holds t rows of K
// values. It does not allocate.
func (bt *Q8Batch) Quantize(x []float32, t int) {
	if t < 0 || t > bt.T {
		panic(fmt.Sprintf("ternary: Q8Batch.Quantize: %d vectors, capacity %d", t, bt.T))
	}
	if len(x) < t*bt.K {
		panic(fmt.Sprintf("ternary: Q8Batch.Quantize: %d values for %d vectors of %d", len(x), t, bt.K))
	}
	for s := range t {
		bt.rows[s].Quantize(x[s*bt.K : (s+1)*bt.K])
		bt.derive(s)
	}
}

// derive writes the batch's copies of vector s's int8 values (Quantize does, after
// quantising the row).
func (bt *Q8Batch) derive(s int) {
	q8TileActs(bt.tile(s), bt.rows[s].Q)
	if bt.aq != nil {
		n := amxActBytes(bt.K)
		amxActs(bt.aq[s*n:(s+1)*n], bt.rows[s].Q)
	}
}

// q8TileBytes returns the size of the tiled copy of a vector of k elements: its whole
// groups of 8 blocks (the blocks after the last whole group are read from the row).
func q8TileBytes(k int) int { return k / (8 * BlockSize) * (8 * BlockSize) }

// q8TileActs writes the tiled copy dst of the int8 values q (laid out as in [Q8]) for
// the len(dst)/1024 whole groups of 8 blocks. The batched kernels multiply 8 blocks at
// once, one 32-bit lane per block (see q8RepackPQ2), so the copy interleaves the blocks
// of a group four bytes at a time: for group g, step s (0…7), plane p (0…3), block
// 8g+L (L = 0…7) and j = 0…3,
//
//	dst[1024·g + 128·s + 32·p + 4·L + j] = element 16·s + 4·j + p of block 8g+L,
//
// which is q[256·(b/2) + 64·p + 32·(b%2) + 4·s + j] for b = 8g+L: bytes 4s…4s+3 of the
// block's plane p. So a 32-byte load at 1024g + 128s + 32p holds, in lane L, the four
// activations that meet plane p of the code bytes 4s…4s+3 of block 8g+L.
func q8TileActs(dst, q []int8) {
	d := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst))
	src := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(q))), len(q))
	for g := 0; g+1024 <= len(d); g += 1024 {
		grp := (*[1024]byte)(d[g:])
		in := (*[1024]byte)(src[g:]) // the group's four block pairs, 256 bytes each
		for pr := range 4 {
			for p := range 4 {
				// Plane p of blocks 2pr and 2pr+1: 32 bytes each.
				e := (*[32]byte)(in[256*pr+64*p:])
				o := (*[32]byte)(in[256*pr+64*p+32:])
				for s := range 8 {
					v0 := binary.LittleEndian.Uint32(e[4*s:])
					v1 := binary.LittleEndian.Uint32(o[4*s:])
					binary.LittleEndian.PutUint64(grp[128*s+32*p+8*pr:], uint64(v0)|uint64(v1)<<32)
				}
			}
		}
	}
}
