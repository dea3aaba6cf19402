package ternary

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/x448/float16"
)

// withKernel runs f with the Q8 row kernel k in place of the chosen one.
func withKernel(k q8Kernel, f func()) {
	save := q8Sel
	defer useQ8Kernel(save)
	useQ8Kernel(k)
	f()
}

// forEachKernel runs f with each implementation of the Q8 kernels selected in turn.
func forEachKernel(f func(name string)) {
	for _, k := range q8Kernels {
		withKernel(k, func() { f(k.name) })
	}
}

// q8Shapes are the row widths the kernel tests run: odd block counts below, at and
// around a group of 8, and the model's real widths.
var q8Shapes = []int{128, 256, 384, 640, 896, 1024, 1152, 1920, 2048, 3200, 5120, 6144, 17408}

// randScale returns fp16 scale bits: mostly ordinary magnitudes of either sign, with
// zeros (both signs), unit scales, subnormals and the largest finite value mixed in.
func randScale(r *rand.Rand) uint16 {
	switch r.IntN(16) {
	case 0:
		return 0
	case 1:
		return 0x8000
	case 2:
		return 0x3c00 // 1
	case 3:
		return uint16(1 + r.IntN(0x3ff)) // subnormal
	case 4:
		return 0x7bff // 65504
	}
	h := float16.Fromfloat32(float32(math.Exp(r.NormFloat64()*2 - 4))).Bits()
	if r.IntN(2) == 0 {
		h |= 0x8000
	}
	return h
}

// randPQ2 returns n random PQ2_0 rows of k elements: codes uniform over 0…3 (code 3
// included) and scales from scale.
func randPQ2(r *rand.Rand, k, n int, scale func() uint16) []byte {
	rb := PQ2_0.RowBytes(k)
	w := make([]byte, n*rb)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for b := 0; b < len(w); b += pq2BlockBytes {
		binary.LittleEndian.PutUint16(w[b:], scale())
	}
	return w
}

// randPTQ1 returns n random PTQ1_0 rows of width k: every trit byte equally likely
// (the 13 the encoder never writes included), scales from scale.
func randPTQ1(r *rand.Rand, k, n int, scale func() uint16) []byte {
	w := make([]byte, n*PTQ1_0.RowBytes(k))
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for b := 0; b < len(w); b += ptq1BlockBytes {
		binary.LittleEndian.PutUint16(w[b+26:], scale())
	}
	return w
}

// randQ8 returns a Q8 of width k with D = 1 and random Q in [−127, 127] (extremes
// favoured), the setting in which every kernel's result is an exact integer.
func randQ8(r *rand.Rand, k int) *Q8 {
	x := NewQ8(k)
	for b := range k / BlockSize {
		var s int32
		for i := range BlockSize {
			var v int32
			switch r.IntN(8) {
			case 0:
				v = 127
			case 1:
				v = -127
			default:
				v = int32(r.IntN(255)) - 127
			}
			x.Q[q8Index(b*BlockSize+i)] = int8(v)
			s += v
		}
		x.D[b], x.Sum[b] = 1, s
	}
	return x
}

// exactQ8 returns Σ_b [d_b ≠ 0]·(Σ c·Q − Sum_b) for one PQ2_0 row whose scales are all
// 0, −0 or 1, computed from unpacked codes in element order.
func exactQ8(row []byte, x *Q8) int64 {
	var codes [BlockSize]uint8
	var total int64
	for b := range x.K / BlockSize {
		h := UnpackPQ2_0(&codes, row[b*pq2BlockBytes:])
		if h&0x7fff == 0 {
			continue
		}
		var s int64
		for i, c := range codes {
			s += int64(c) * int64(x.Q[q8Index(b*BlockSize+i)])
		}
		total += s - int64(x.Sum[b])
	}
	return total
}

func TestQ8Kernels(t *testing.T) {
	names := ""
	for _, k := range q8Kernels {
		names += " " + k.name
	}
	t.Logf("kernels on this machine:%s; chosen: %s", names, Q8Kernel())
	if len(q8Kernels) < 1 || q8Kernels[0].name != "generic" {
		t.Fatal("generic kernel missing")
	}
}

// TestQ8KernelsExact checks every implementation against exact integer arithmetic with
// unit (and zero) scales and D = 1, where the whole float computation is exact (every
// partial sum is an integer below 2²⁴): all of them must agree to the last bit.
func TestQ8KernelsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	unit := func() uint16 { return [...]uint16{0x3c00, 0x3c00, 0x3c00, 0, 0x8000}[r.IntN(5)] }
	for _, k := range q8Shapes {
		n := 1 + r.IntN(23)
		if k >= 5120 {
			n = 37
		}
		w := randPQ2(r, k, n, unit)
		x := randQ8(r, k)
		rb := PQ2_0.RowBytes(k)
		want := make([]float32, n)
		for i := range want {
			e := exactQ8(w[i*rb:(i+1)*rb], x)
			if math.Abs(float64(e)) >= 1<<24 {
				t.Fatalf("k=%d: exact sum %d too large for the test", k, e)
			}
			want[i] = float32(e)
		}
		for _, kern := range q8Kernels {
			withKernel(kern, func() {
				// Row ranges that are multiples of nothing, and the whole matrix.
				for _, rg := range [][2]int{{0, n}, {n / 3, n - n/4}, {n - 1, n}, {n / 2, n / 2}} {
					y := make([]float32, n)
					for i := range y {
						y[i] = float32(math.NaN()) // rows outside the range stay untouched
					}
					MatVecQ8Range(PQ2_0, w, k, x, y, rg[0], rg[1])
					for i := range y {
						in := i >= rg[0] && i < rg[1]
						if in && y[i] != want[i] || !in && !math.IsNaN(float64(y[i])) {
							t.Fatalf("%s k=%d rows %v: y[%d] = %v, want %v", kern.name, k, rg, i, y[i], want[i])
						}
					}
				}
			})
		}
	}
}

// TestQ8PTQ1KernelsExact is TestQ8KernelsExact for the PTQ1_0 row kernels: random
// trit bytes (all 256 values, the 13 the encoder never writes included), unit and zero
// scales, against exact integer arithmetic on the codes unpacked in element order
// (UnpackPTQ1_0, the vendor's formula) and the activations in element order (q8Index):
// an independent path from the kernels' trit-ordered copy.
func TestQ8PTQ1KernelsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	unit := func() uint16 { return [...]uint16{0x3c00, 0x3c00, 0x3c00, 0, 0x8000}[r.IntN(5)] }
	for _, k := range q8Shapes {
		n := 1 + r.IntN(23)
		if k >= 5120 {
			n = 37
		}
		w := randPTQ1(r, k, n, unit)
		x := randQ8(r, k)
		rb := PTQ1_0.RowBytes(k)
		want := make([]float32, n)
		for i := range want {
			var codes [BlockSize]uint8
			var e int64
			for b := range k / BlockSize {
				if UnpackPTQ1_0(&codes, w[i*rb+b*ptq1BlockBytes:])&0x7fff == 0 {
					continue
				}
				var s int64
				for j, c := range codes {
					s += int64(c) * int64(x.Q[q8Index(b*BlockSize+j)])
				}
				e += s - int64(x.Sum[b])
			}
			if math.Abs(float64(e)) >= 1<<24 {
				t.Fatalf("k=%d: exact sum %d too large for the test", k, e)
			}
			want[i] = float32(e)
		}
		for _, kern := range q8Kernels {
			withKernel(kern, func() {
				if !ptq1Native() && k == q8Shapes[0] {
					t.Logf("%s: no PTQ1_0 kernel, rows transcoded", kern.name)
				}
				for _, rg := range [][2]int{{0, n}, {n / 3, n - n/4}, {n - 1, n}, {n / 2, n / 2}} {
					y := make([]float32, n)
					for i := range y {
						y[i] = float32(math.NaN())
					}
					MatVecQ8Range(PTQ1_0, w, k, x, y, rg[0], rg[1])
					for i := range y {
						in := i >= rg[0] && i < rg[1]
						if in && y[i] != want[i] || !in && !math.IsNaN(float64(y[i])) {
							t.Fatalf("%s k=%d rows %v: y[%d] = %v, want %v", kern.name, k, rg, i, y[i], want[i])
						}
					}
				}
			})
		}
	}
}

// TestQ8PTQ1Concurrent: goroutines sharing a freshly quantised Q8 derive its PTQ1_0 copy
// once between them (run with -race) and get the sequential result; a second Quantize
// makes the next products see the new values.
func TestQ8PTQ1Concurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	const k, n = 2048, 64
	w := randPTQ1(r, k, n, func() uint16 { return randScale(r) })
	xf := make([]float32, k)
	for round := range 2 {
		for i := range xf {
			xf[i] = float32(r.NormFloat64())
		}
		x := NewQ8(k)
		if round == 1 {
			x.Quantize(make([]float32, k)) // derive a copy of zeros first
			MatVecQ8Range(PTQ1_0, w, k, x, make([]float32, n), 0, n)
		}
		x.Quantize(xf)
		pq := make([]byte, n*PQ2_0.RowBytes(k))
		if err := Transcode(pq, PQ2_0, w, PTQ1_0); err != nil {
			t.Fatal(err)
		}
		want := make([]float32, n)
		MatVecQ8Range(PQ2_0, pq, k, x, want, 0, n)
		got := make([]float32, n)
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				MatVecQ8Range(PTQ1_0, w, k, x, got, g*n/4, (g+1)*n/4)
			}()
		}
		wg.Wait()
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("round %d row %d: %v, want %v", round, i, got[i], want[i])
			}
		}
	}
}

// TestQ8KernelsFloat compares every SIMD implementation with the generic one on random
// scales and quantised activations. They compute the same integers I_b and the same
// float32 scales s_b; only the rounding of the per-lane accumulation differs (FMA
// against multiply-then-add), so |y − y_generic| ≤ (nb/8 + 4)·2⁻²³·Σ_b |s_b·I_b|.
func TestQ8KernelsFloat(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, k := range q8Shapes {
		n := 1 + r.IntN(19)
		if k >= 5120 {
			n = 29
		}
		w := randPQ2(r, k, n, func() uint16 { return randScale(r) })
		xf := make([]float32, k)
		for i := range xf {
			xf[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()))
		}
		x := NewQ8(k)
		x.Quantize(xf)
		nb := k / BlockSize
		rb := PQ2_0.RowBytes(k)
		want := make([]float32, n)
		withKernel(q8Kernels[0], func() { MatVecQ8Range(PQ2_0, w, k, x, want, 0, n) })
		for _, kern := range q8Kernels[1:] {
			withKernel(kern, func() {
				y := make([]float32, n)
				lo, hi := r.IntN(n), n
				MatVecQ8Range(PQ2_0, w, k, x, y, lo, hi)
				for i := lo; i < hi; i++ {
					var mag float64
					row := w[i*rb:]
					for b := range nb {
						blk := row[b*pq2BlockBytes : (b+1)*pq2BlockBytes]
						s := fp16(binary.LittleEndian.Uint16(blk)) * x.D[b]
						mag += math.Abs(float64(s) * float64(q8BlockDot(blk, x.Q, b)-x.Sum[b]))
					}
					tol := float64(nb/8+4) * 0x1p-23 * mag
					if d := math.Abs(float64(y[i] - want[i])); !(d <= tol) {
						t.Fatalf("%s k=%d row %d: %v, generic %v (|Δ| %g > %g)", kern.name, k, i, y[i], want[i], d, tol)
					}
				}
			})
		}
	}
}

// TestMatVecQ8Accuracy checks the Q8 path against the float64 reference on x itself.
// The activation rounding bounds the error per row by
//
//	E = Σ_b 0.5001·D_b·Σ_{j∈b} |w_j|   (|x − D·Q| ≤ 0.5001·D per element)
//
// and the float32 arithmetic adds at most (nb/8+4)·2⁻²³·Σ_b|s_b·I_b| + 2⁻²³·|ref|. On
// Gaussian activations the error is also checked against Σ_j |w_j·x_j|: a random walk of
// roughly 0.008/√(nonzero weights) of it (the quantised Gaussian weights here are about
// 19% nonzero), asserted below 0.1/√k: 1.4·10⁻³ at k = 5120, 7.6·10⁻⁴ at k = 17408.
func TestMatVecQ8Accuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, k := range []int{128, 640, 1024, 5120, 6144, 17408} {
		n := 24
		wf := make([]float32, k*n)
		for i := range wf {
			wf[i] = float32(r.NormFloat64() * 0.02)
		}
		w := make([]byte, n*PQ2_0.RowBytes(k))
		if err := PQ2_0.Quantize(w, wf); err != nil {
			t.Fatal(err)
		}
		dec := make([]float32, k*n)
		if err := PQ2_0.Decode(dec, w); err != nil {
			t.Fatal(err)
		}
		xf := make([]float32, k)
		for i := range xf {
			xf[i] = float32(r.NormFloat64())
		}
		ref := make([]float32, n)
		if err := MatVecRef(PQ2_0, w, k, xf, ref); err != nil {
			t.Fatal(err)
		}
		x := NewQ8(k)
		x.Quantize(xf)
		nb := k / BlockSize
		rb := PQ2_0.RowBytes(k)
		var worst float64
		for _, kern := range q8Kernels {
			withKernel(kern, func() {
				y := make([]float32, n)
				MatVecQ8Range(PQ2_0, w, k, x, y, 0, n)
				for i := range y {
					var eq, mag, absWX float64
					for b := range nb {
						var sw float64
						for j := b * BlockSize; j < (b+1)*BlockSize; j++ {
							sw += math.Abs(float64(dec[i*k+j]))
							absWX += math.Abs(float64(dec[i*k+j]) * float64(xf[j]))
						}
						eq += 0.5001 * float64(x.D[b]) * sw
						blk := w[i*rb+b*pq2BlockBytes:]
						s := fp16(binary.LittleEndian.Uint16(blk)) * x.D[b]
						mag += math.Abs(float64(s) * float64(q8BlockDot(blk, x.Q, b)-x.Sum[b]))
					}
					err := math.Abs(float64(y[i]) - float64(ref[i]))
					bound := eq + float64(nb/8+4)*0x1p-23*mag + 0x1p-23*math.Abs(float64(ref[i]))
					if !(err <= bound) {
						t.Fatalf("%s k=%d row %d: |%v − %v| = %g > bound %g", kern.name, k, i, y[i], ref[i], err, bound)
					}
					rel := err / absWX
					worst = max(worst, rel)
					if !(rel <= 0.1/math.Sqrt(float64(k))) {
						t.Fatalf("%s k=%d row %d: error %g of Σ|w·x|", kern.name, k, i, rel)
					}
				}
			})
		}
		t.Logf("k=%d: worst |y − ref| / Σ|w·x| = %.2g", k, worst)
	}
}

func TestQ8Quantize(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const k = 12 * BlockSize
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Exp(4*r.NormFloat64()))
	}
	clear(x[BlockSize : 2*BlockSize]) // a zero block
	for i := 2 * BlockSize; i < 3*BlockSize; i++ {
		x[i] = float32(r.NormFloat64()) * 1e-41 // subnormals: 127/max|x| overflows
	}
	x[3*BlockSize+5] = float32(math.NaN())
	x[4*BlockSize+77] = float32(math.Inf(-1))
	for i := 5 * BlockSize; i < 6*BlockSize; i++ { // exact halves: ties to even
		x[i] = float32(i%7) - 3.5
	}
	x[5*BlockSize] = 127
	for i := 6 * BlockSize; i < 7*BlockSize; i++ { // one big element
		x[i] = float32(r.NormFloat64()) * 1e-3
	}
	x[6*BlockSize+100] = -3e38
	q := NewQ8(k)
	for i := range q.Q {
		q.Q[i] = 99 // padding and all must be overwritten or stay as written
	}
	q.Quantize(x)
	for b := range k / BlockSize {
		xb := x[b*BlockSize : (b+1)*BlockSize]
		var amax float32
		bad := false
		for _, v := range xb {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				bad = true
			}
			amax = max(amax, abs32(v))
		}
		d := q.D[b]
		var sum int32
		for i, v := range xb {
			qv := q.Q[q8Index(b*BlockSize+i)]
			sum += int32(qv)
			switch {
			case bad || amax == 0:
				if qv != 0 {
					t.Fatalf("block %d element %d: Q = %d, want 0", b, i, qv)
				}
			default:
				if qv < -127 || qv > 127 {
					t.Fatalf("block %d: Q = %d", b, qv)
				}
				if e := math.Abs(float64(v) - float64(d)*float64(qv)); !(e <= 0.5001*float64(d)) {
					t.Fatalf("block %d element %d: |%g − %g·%d| = %g > 0.5001·D", b, i, v, d, qv, e)
				}
			}
		}
		if sum != q.Sum[b] {
			t.Fatalf("block %d: Sum %d, want %d", b, q.Sum[b], sum)
		}
		switch {
		case bad:
			if !math.IsNaN(float64(d)) {
				t.Fatalf("block %d: D = %v, want NaN", b, d)
			}
		case amax == 0:
			if d != 0 {
				t.Fatalf("block %d: D = %v, want 0", b, d)
			}
		default:
			if d != amax/127 {
				t.Fatalf("block %d: D = %v, want %v", b, d, amax/127)
			}
		}
	}
	// Ties go to even: block 5 holds −3.5 … 2.5 and 127, so D = 1.
	for i := 5*BlockSize + 1; i < 6*BlockSize; i++ {
		want := math.RoundToEven(float64(x[i]))
		if got := q.Q[q8Index(i)]; float64(got) != want {
			t.Fatalf("element %d: %v → %d, want %v", i, x[i], got, want)
		}
	}
	// The layout is a permutation of the element indices.
	seen := make([]bool, len(q.Q))
	for e := range k {
		j := q8Index(e)
		if seen[j] {
			t.Fatalf("q8Index(%d) = %d twice", e, j)
		}
		seen[j] = true
	}
	// Odd block counts are padded with zeros.
	q3 := NewQ8(3 * BlockSize)
	if len(q3.Q) != 4*BlockSize {
		t.Fatalf("len(Q) = %d for 3 blocks", len(q3.Q))
	}
	q3.Quantize(x)
	for e := 3 * BlockSize; e < 4*BlockSize; e++ {
		if q3.Q[q8Index(e)] != 0 {
			t.Fatal("padding block not zero")
		}
	}
}

// TestMatVecQ8PTQ1 checks that PTQ1_0 rows give bit for bit the result of their PQ2_0
// transcode, and the block transcoder against Transcode.
func TestMatVecQ8PTQ1(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, k := range []int{128, 384, 1024, 1152, 5120, 17408} {
		n := 13
		wf := make([]float32, k*n)
		for i := range wf {
			wf[i] = float32(r.NormFloat64())
		}
		tq := make([]byte, n*PTQ1_0.RowBytes(k))
		pq := make([]byte, n*PQ2_0.RowBytes(k))
		if err := PTQ1_0.Quantize(tq, wf); err != nil {
			t.Fatal(err)
		}
		if err := Transcode(pq, PQ2_0, tq, PTQ1_0); err != nil {
			t.Fatal(err)
		}
		mine := make([]byte, len(pq))
		ptq1ToPQ2(mine, tq, n*k/BlockSize)
		if !bytes.Equal(mine, pq) {
			t.Fatalf("k=%d: ptq1ToPQ2 differs from Transcode", k)
		}
		xf := make([]float32, k)
		for i := range xf {
			xf[i] = float32(r.NormFloat64())
		}
		x := NewQ8(k)
		x.Quantize(xf)
		for _, kern := range q8Kernels {
			withKernel(kern, func() {
				y1 := make([]float32, n)
				y2 := make([]float32, n)
				MatVecQ8Range(PQ2_0, pq, k, x, y1, 2, n)
				MatVecQ8Range(PTQ1_0, tq, k, x, y2, 2, n)
				for i := range y1 {
					if math.Float32bits(y1[i]) != math.Float32bits(y2[i]) {
						t.Fatalf("%s k=%d row %d: PTQ1_0 %v, PQ2_0 %v", kern.name, k, i, y2[i], y1[i])
					}
				}
			})
		}
	}
	// Every trit byte the decoder can meet, including the 13 non-canonical ones.
	blk := make([]byte, ptq1BlockBytes)
	for v := range 256 {
		for i := range 26 {
			blk[i] = byte(v + 37*i)
		}
		blk[26], blk[27] = 0, 0x3c
		want := make([]byte, pq2BlockBytes)
		var codes [BlockSize]uint8
		h := UnpackPTQ1_0(&codes, blk)
		PackPQ2_0(want, &codes, h)
		got := make([]byte, pq2BlockBytes)
		ptq1ToPQ2(got, blk, 1)
		if !bytes.Equal(got, want) {
			t.Fatalf("byte pattern %d: ptq1ToPQ2 differs from unpack+pack", v)
		}
	}
}

// TestMatMulQ8 checks that the batched product gives, bit for bit, the matrix-vector
// product of each vector, for both formats and every batch size up to 17 (every rest
// after whole tiles of 8 or 6), with row ranges that cut panels anywhere.
func TestMatMulQ8(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const tmax = 17 // every batch size 1…tmax: each rest of a tile of 8 or 6, alone and after whole tiles
	for _, tc := range []struct{ k, n int }{{128, 7}, {640, 33}, {1024, 100}, {5120, 29}, {17408, 9}, {65536, 3}} {
		wf := make([]float32, tc.k*tc.n)
		for i := range wf {
			wf[i] = float32(r.NormFloat64())
		}
		xf := make([]float32, tc.k*tmax)
		for i := range xf {
			xf[i] = float32(r.NormFloat64())
		}
		xb := NewQ8Batch(tc.k, tmax+1)
		xb.Quantize(xf, tmax)
		for _, f := range []Format{PQ2_0, PTQ1_0} {
			w := make([]byte, tc.n*f.RowBytes(tc.k))
			if err := f.Quantize(w, wf); err != nil {
				t.Fatal(err)
			}
			forEachKernel(func(name string) {
				lo, hi := tc.n/5, tc.n-tc.n/7
				want := make([]float32, tmax*tc.n)
				for s := range tmax {
					MatVecQ8Range(f, w, tc.k, xb.Row(s), want[s*tc.n:(s+1)*tc.n], lo, hi)
				}
				for tt := 1; tt <= tmax; tt++ {
					y := make([]float32, tt*tc.n)
					MatMulQ8Range(f, w, tc.k, tc.n, xb, tt, y, lo, hi)
					for i, v := range y {
						if math.Float32bits(v) != math.Float32bits(want[i]) {
							t.Fatalf("%s %s k=%d t=%d vector %d row %d: %v, MatVec %v", name, f, tc.k, tt, i/tc.n, i%tc.n, v, want[i])
						}
					}
				}
			})
		}
	}
}

// TestQ8QuantizeFamilies checks every family's quantisation against the generic code's
// bit for bit (the SIMD kernel leaves zero, non-finite and tiny blocks to it, so those
// sit at either parity, first, last and in runs), over widths with an odd and an even
// number of blocks.
func TestQ8QuantizeFamilies(t *testing.T) {
	for _, kern := range q8Kernels[1:] {
		t.Run(kern.name, func(t *testing.T) { testQ8QuantizeFamily(t, kern) })
	}
}

func testQ8QuantizeFamily(t *testing.T, kern q8Kernel) {
	r := rand.New(rand.NewPCG(27, 28))
	special := []func(xb []float32){
		func(xb []float32) { clear(xb) },
		func(xb []float32) { xb[r.IntN(BlockSize)] = float32(math.NaN()) },
		func(xb []float32) { xb[r.IntN(BlockSize)] = float32(math.Inf(1)) },
		func(xb []float32) {
			for i := range xb {
				xb[i] = float32(r.NormFloat64()) * 1e-41
			}
		},
		func(xb []float32) { // exact halves after scaling: ties to even
			for i := range xb {
				xb[i] = float32(i%9) - 4.5
			}
			xb[0] = 127
		},
		func(xb []float32) { xb[r.IntN(BlockSize)] = -math.MaxFloat32 },
		func(xb []float32) { clear(xb); xb[r.IntN(BlockSize)] = -0.0 },
	}
	for _, k := range []int{BlockSize, 2 * BlockSize, 3 * BlockSize, 5120, 17408} {
		nb := k / BlockSize
		for trial := range 40 {
			x := make([]float32, k)
			for i := range x {
				x[i] = float32(r.NormFloat64() * math.Exp(3*r.NormFloat64()))
			}
			for range trial % 4 {
				b := r.IntN(nb)
				special[r.IntN(len(special))](x[b*BlockSize : (b+1)*BlockSize])
			}
			want, got := NewQ8(k), NewQ8(k)
			withKernel(q8Kernels[0], func() { want.Quantize(x) })
			for i := range got.Q {
				got.Q[i] = 99 // the padding must stay as written
			}
			withKernel(kern, func() { got.Quantize(x) })
			for b := range nb {
				for i := range BlockSize {
					if g, w := got.Q[q8Index(b*BlockSize+i)], want.Q[q8Index(b*BlockSize+i)]; g != w {
						t.Fatalf("k=%d trial %d: block %d element %d: Q %d, want %d", k, trial, b, i, g, w)
					}
				}
				if g, w := math.Float32bits(got.D[b]), math.Float32bits(want.D[b]); g != w {
					t.Fatalf("k=%d trial %d: block %d: D %#x, want %#x", k, trial, b, g, w)
				}
				if got.Sum[b] != want.Sum[b] {
					t.Fatalf("k=%d trial %d: block %d: Sum %d, want %d", k, trial, b, got.Sum[b], want.Sum[b])
				}
			}
			if nb%2 == 1 { // the odd block count's padding half
				for p := range 4 {
					for j := range 32 {
						if v := got.Q[256*(nb/2)+64*p+32+j]; v != 99 {
							t.Fatalf("k=%d: padding byte %d written (%d)", k, 256*(nb/2)+64*p+32+j, v)
						}
					}
				}
			}
		}
	}
}

func TestQ8NoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	const k, n, tt = 5120, 64, 7
	xf := make([]float32, k*tt)
	for i := range xf {
		xf[i] = float32(r.NormFloat64())
	}
	x := NewQ8(k)
	xb := NewQ8Batch(k, tt)
	y := make([]float32, n*tt)
	pq := randPQ2(r, k, n, func() uint16 { return 0x2000 })
	tq := make([]byte, n*PTQ1_0.RowBytes(k))
	wf := make([]float32, k*n)
	for i := range wf {
		wf[i] = float32(r.NormFloat64())
	}
	if err := PTQ1_0.Quantize(tq, wf); err != nil {
		t.Fatal(err)
	}
	// A width repacked in chunks.
	const kw = 19*1024 + 256
	pqw := randPQ2(r, kw, 3, func() uint16 { return 0x2000 })
	xbw := NewQ8Batch(kw, 2)
	xbw.Quantize(make([]float32, 2*kw), 2)
	yw := make([]float32, 6)
	for name, f := range map[string]func(){
		"Q8.Quantize":           func() { x.Quantize(xf) },
		"Q8Batch.Quantize":      func() { xb.Quantize(xf, tt) },
		"MatVecQ8Range(PQ2_0)":  func() { MatVecQ8Range(PQ2_0, pq, k, x, y, 1, n-1) },
		"MatVecQ8Range(PTQ1_0)": func() { MatVecQ8Range(PTQ1_0, tq, k, x, y, 1, n-1) },
		"MatMulQ8Range(PQ2_0)":  func() { MatMulQ8Range(PQ2_0, pq, k, n, xb, tt, y, 1, n-1) },
		"MatMulQ8Range(PTQ1_0)": func() { MatMulQ8Range(PTQ1_0, tq, k, n, xb, tt, y, 1, n-1) },
		"MatMulQ8Range(wide)":   func() { MatMulQ8Range(PQ2_0, pqw, kw, 3, xbw, 2, yw, 0, 3) },
	} {
		if a := testing.AllocsPerRun(20, f); a != 0 {
			t.Errorf("%s: %v allocations", name, a)
		}
	}
}

func TestMemReaders(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	buf := make([]byte, 1<<16)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for _, n := range []int{0, 256, 4096, 1 << 16} {
		want := memReadGeneric(&buf[0], n)
		for _, m := range memReaders {
			if got := m.read(&buf[0], n); got != want {
				t.Errorf("%s n=%d: %x, want %x", m.name, n, got, want)
			}
		}
	}
}

func TestQ8Panics(t *testing.T) {
	x := NewQ8(256)
	w := make([]byte, 2*PQ2_0.RowBytes(256))
	y := make([]float32, 2)
	// Empty ranges are fine, even with no output.
	MatVecQ8Range(PQ2_0, w, 256, x, nil, 0, 0)
	MatMulQ8Range(PQ2_0, w, 256, 2, NewQ8Batch(256, 1), 1, nil, 1, 1)
	for name, f := range map[string]func(){
		"width":  func() { MatVecQ8Range(PQ2_0, w, 128, x, y, 0, 1) },
		"range":  func() { MatVecQ8Range(PQ2_0, w, 256, x, y, 1, 3) },
		"bytes":  func() { MatVecQ8Range(PQ2_0, w[:10], 256, x, y, 0, 1) },
		"format": func() { MatVecQ8Range(Format(9), w, 256, x, y, 0, 1) },
		"NewQ8":  func() { NewQ8(100) },
		"y":      func() { MatVecQ8Range(PQ2_0, w, 256, x, y[:1], 0, 2) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestQ8NonFinite checks that a NaN activation poisons every row in every
// implementation (its block's D is NaN), as it would in the float kernels.
func TestQ8NonFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	const k, n = 2048, 5
	w := randPQ2(r, k, n, func() uint16 { return randScale(r) })
	xf := make([]float32, k)
	for i := range xf {
		xf[i] = float32(r.NormFloat64())
	}
	xf[3*BlockSize+9] = float32(math.NaN())
	x := NewQ8(k)
	x.Quantize(xf)
	for _, kern := range q8Kernels {
		withKernel(kern, func() {
			y := make([]float32, n)
			MatVecQ8Range(PQ2_0, w, k, x, y, 0, n)
			for i, v := range y {
				if !math.IsNaN(float64(v)) {
					t.Errorf("%s row %d: %v, want NaN", kern.name, i, v)
				}
			}
		})
	}
}

// randQ8Batch returns a batch of t vectors of width k with D = 1 and random Q in
// [−127, 127] (as randQ8), its tiled copy filled as Quantize fills it.
func randQ8Batch(r *rand.Rand, k, t int) *Q8Batch {
	xb := NewQ8Batch(k, t)
	for s := range t {
		x := randQ8(r, k)
		row := xb.Row(s)
		copy(row.Q, x.Q)
		copy(row.D, x.D)
		copy(row.Sum, x.Sum)
		xb.derive(s)
	}
	return xb
}

// matMulTs are the batch sizes the batched tests run: every size up to two tiles of 8
// and one more (each rest after whole tiles of 8 or of 6, alone and after one or two
// whole tiles), and around the model's chunk of 64.
var matMulTs = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 63, 64}

// TestQ8TileCalls checks how the vectors of a pass are split into tiled-kernel calls,
// against calls written out by hand: the fewest tiles of at most the widest width, the
// wider ones first and at most one vector wider than the rest.
func TestQ8TileCalls(t *testing.T) {
	for _, c := range []struct {
		tv, nv int
		want   []q8Call
	}{
		{8, 1, []q8Call{{0, 1, 1}}},
		{8, 7, []q8Call{{0, 7, 1}}},
		{8, 8, []q8Call{{0, 8, 1}}},
		{8, 9, []q8Call{{0, 5, 1}, {5, 4, 1}}},
		{8, 13, []q8Call{{0, 7, 1}, {7, 6, 1}}},
		{8, 16, []q8Call{{0, 8, 2}}},
		{8, 72, []q8Call{{0, 8, 9}}},
		{8, 71, []q8Call{{0, 8, 8}, {64, 7, 1}}},
		{8, 65, []q8Call{{0, 8, 2}, {16, 7, 7}}},
		{6, 5, []q8Call{{0, 5, 1}}},
		{6, 8, []q8Call{{0, 4, 2}}},
		{6, 15, []q8Call{{0, 5, 3}}},
		{6, 64, []q8Call{{0, 6, 9}, {54, 5, 2}}},
		{6, 72, []q8Call{{0, 6, 12}}},
		{4, 7, []q8Call{{0, 4, 1}, {4, 3, 1}}},
		{4, 64, []q8Call{{0, 4, 16}}},
	} {
		var calls [2]q8Call
		got := calls[:q8TileCalls(&calls, c.tv, c.nv)]
		if !slices.Equal(got, c.want) {
			t.Errorf("width %d, %d vectors: %v, want %v", c.tv, c.nv, got, c.want)
		}
	}
}

// matMulRanges returns row ranges of n rows that give every tile shape: 1…7 rows (one
// to three row pairs, odd and even), and ranges that cut the tiles anywhere.
func matMulRanges(n int) [][2]int {
	return [][2]int{{0, n}, {1, n - 1}, {5, 6}, {2, 9}, {3, 7}, {0, 3}, {n - 2, n}, {4, 9}, {n / 2, n / 2}}
}

// TestMatMulQ8Exact checks every implementation of the batched product against exact
// integer arithmetic (unit and zero scales, D = 1, as TestQ8KernelsExact does), for
// both formats, every batch size of matMulTs and row ranges of every tile shape, on
// widths with and without blocks after the last whole group of 8 and one wide enough to
// be repacked in chunks. Codes are uniform over 0…3 for PQ2_0 (code 3 included) and
// over 0…2 for PTQ1_0 (which cannot store 3).
func TestMatMulQ8Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	unit := func() uint16 { return [...]uint16{0x3c00, 0x3c00, 0x3c00, 0, 0x8000}[r.IntN(5)] }
	const n = 13
	for _, k := range []int{1024, 1408, 5120, 19 * 1024, 19*1024 + 384} {
		if testing.Short() && k > 5120 {
			continue
		}
		pq := randPQ2(r, k, n, unit)
		tq := make([]byte, n*PTQ1_0.RowBytes(k))
		pq3 := make([]byte, len(pq)) // pq with code 3 turned into 2: tq's PQ2_0 twin
		var codes [BlockSize]uint8
		for b := range n * k / BlockSize {
			h := UnpackPQ2_0(&codes, pq[b*pq2BlockBytes:])
			for i := range codes {
				codes[i] = min(codes[i], 2)
			}
			if err := PackPTQ1_0(tq[b*ptq1BlockBytes:], &codes, h); err != nil {
				t.Fatal(err)
			}
			PackPQ2_0(pq3[b*pq2BlockBytes:], &codes, h)
		}
		xb := randQ8Batch(r, k, 64)
		want := make([]float32, 64*n) // [format][vector][row]
		want3 := make([]float32, 64*n)
		rb := PQ2_0.RowBytes(k)
		for s := range 64 {
			for i := range n {
				e := exactQ8(pq[i*rb:(i+1)*rb], xb.Row(s))
				e3 := exactQ8(pq3[i*rb:(i+1)*rb], xb.Row(s))
				if max(math.Abs(float64(e)), math.Abs(float64(e3))) >= 1<<24 {
					t.Fatalf("k=%d: exact sum too large for the test", k)
				}
				want[s*n+i], want3[s*n+i] = float32(e), float32(e3)
			}
		}
		forEachKernel(func(name string) {
			for _, f := range []Format{PQ2_0, PTQ1_0} {
				w, ref := pq, want
				if f == PTQ1_0 {
					w, ref = tq, want3
				}
				// The same products over tiles made ahead (MatMulQ8TilesRange), where k
				// allows them: the tiles' rows filled in two even halves.
				tiles := []*Tiles{nil}
				if Tiled(k) {
					tl, err := NewTiles(f, k, n)
					if err != nil {
						t.Fatal(err)
					}
					tl.Fill(w, 0, 6)
					tl.Fill(w, 6, n)
					tiles = append(tiles, tl)
				}
				for _, tl := range tiles {
					for _, tt := range matMulTs {
						for _, rg := range matMulRanges(n) {
							y := make([]float32, tt*n)
							for i := range y {
								y[i] = float32(math.NaN()) // rows outside the range stay untouched
							}
							MatMulQ8TilesRange(f, w, tl, k, n, xb, tt, y, rg[0], rg[1])
							for s := range tt {
								for i := range n {
									got := y[s*n+i]
									in := i >= rg[0] && i < rg[1]
									if in && got != ref[s*n+i] || !in && !math.IsNaN(float64(got)) {
										t.Fatalf("%s %s k=%d t=%d rows %v tiles %v: vector %d row %d = %v, want %v",
											name, f, k, tt, rg, tl != nil, s, i, got, ref[s*n+i])
									}
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestMatMulQ8Float checks, on random scales and quantised Gaussian activations, that
// every implementation's batched product gives for every vector bit for bit what its
// matrix-vector product gives, and that the SIMD implementations stay within the float
// tolerance of TestQ8KernelsFloat of the generic one; with batches larger than the
// accumulators of one pass (q8BatchMax) too, on widths repacked whole and in chunks.
func TestMatMulQ8Float(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	const n = 15
	for _, k := range []int{1024, 2176, 6144, 19*1024 + 128} {
		if testing.Short() && k > 6144 {
			continue
		}
		w := randPQ2(r, k, n, func() uint16 { return randScale(r) })
		const tmax = 2*q8BatchMax + 5 // more than one batch of accumulators
		xf := make([]float32, k*tmax)
		for i := range xf {
			xf[i] = float32(r.NormFloat64() * math.Exp(r.NormFloat64()))
		}
		xb := NewQ8Batch(k, tmax)
		xb.Quantize(xf, tmax)
		nb := k / BlockSize
		rb := PQ2_0.RowBytes(k)
		gen := make([]float32, tmax*n)
		withKernel(q8Kernels[0], func() { MatMulQ8Range(PQ2_0, w, k, n, xb, tmax, gen, 0, n) })
		forEachKernel(func(name string) {
			// Every second product runs over tiles made ahead, where k allows them.
			var tl *Tiles
			if Tiled(k) {
				var err error
				if tl, err = NewTiles(PQ2_0, k, n); err != nil {
					t.Fatal(err)
				}
				tl.Fill(w, 0, n)
			}
			for ti, tt := range append(matMulTs[:len(matMulTs):len(matMulTs)], tmax) {
				for _, rg := range [][2]int{{0, n}, {3, 10}} {
					y := make([]float32, tt*n)
					if ti%2 == 1 {
						MatMulQ8TilesRange(PQ2_0, w, tl, k, n, xb, tt, y, rg[0], rg[1])
					} else {
						MatMulQ8Range(PQ2_0, w, k, n, xb, tt, y, rg[0], rg[1])
					}
					for s := range tt {
						mv := make([]float32, n)
						MatVecQ8Range(PQ2_0, w, k, xb.Row(s), mv, rg[0], rg[1])
						for i := rg[0]; i < rg[1]; i++ {
							got := y[s*n+i]
							if math.Float32bits(got) != math.Float32bits(mv[i]) {
								t.Fatalf("%s k=%d t=%d vector %d row %d: %v, MatVec %v", name, k, tt, s, i, got, mv[i])
							}
							var mag float64
							x := xb.Row(s)
							for b := range nb {
								blk := w[i*rb+b*pq2BlockBytes : i*rb+(b+1)*pq2BlockBytes]
								sc := fp16(binary.LittleEndian.Uint16(blk)) * x.D[b]
								mag += math.Abs(float64(sc) * float64(q8BlockDot(blk, x.Q, b)-x.Sum[b]))
							}
							tol := float64(nb/8+4) * 0x1p-23 * mag
							if d := math.Abs(float64(got - gen[s*n+i])); !(d <= tol) {
								t.Fatalf("%s k=%d vector %d row %d: %v, generic %v (|Δ| %g > %g)", name, k, s, i, got, gen[s*n+i], d, tol)
							}
						}
					}
				}
			}
		})
	}
}

// TestMatMulQ8NonFinite checks that a NaN activation poisons every row of its vector,
// and only its vector, in the batched product of every implementation.
func TestMatMulQ8NonFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	const k, n, tt = 2048, 7, 8
	w := randPQ2(r, k, n, func() uint16 { return randScale(r) })
	xf := make([]float32, k*tt)
	for i := range xf {
		xf[i] = float32(r.NormFloat64())
	}
	xf[3*k+5*BlockSize+9] = float32(math.NaN())
	xb := NewQ8Batch(k, tt)
	xb.Quantize(xf, tt)
	for _, kern := range q8Kernels {
		withKernel(kern, func() {
			y := make([]float32, tt*n)
			MatMulQ8Range(PQ2_0, w, k, n, xb, tt, y, 0, n)
			for s := range tt {
				for i := range n {
					if v := y[s*n+i]; math.IsNaN(float64(v)) != (s == 3) {
						t.Errorf("%s vector %d row %d: %v", kern.name, s, i, v)
					}
				}
			}
		})
	}
}

// TestQ8TileActs checks the tiled copy against its definition.
func TestQ8TileActs(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	x := randQ8(r, 3*1024+256)
	dst := make([]int8, q8TileBytes(x.K))
	q8TileActs(dst, x.Q)
	for g := range len(dst) / 1024 {
		for s := range 8 {
			for p := range 4 {
				for l := range 8 {
					for j := range 4 {
						e := (8*g+l)*BlockSize + 16*s + 4*j + p
						if got, want := dst[1024*g+128*s+32*p+4*l+j], x.Q[q8Index(e)]; got != want {
							t.Fatalf("group %d step %d plane %d block %d byte %d: %d, want %d", g, s, p, l, j, got, want)
						}
					}
				}
			}
		}
	}
}

// TestQ8Repack checks every repacking of PQ2_0 rows (the generic one and the SIMD one
// where there is one) against unpacked codes, and the PTQ1_0 one against its PQ2_0
// transcode.
func TestQ8Repack(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 30))
	const k, ng = 3 * 1024, 3
	w := randPQ2(r, k, 2, func() uint16 { return randScale(r) })
	rb := PQ2_0.RowBytes(k)
	const stride = 2 * q8PairBytes // as if in a tile of two row pairs
	want := make([]byte, ng*stride)
	var codes [BlockSize]uint8
	for g := range ng {
		for h := range 2 {
			for l := range 8 {
				blk := w[h*rb+(8*g+l)*pq2BlockBytes:]
				sc := UnpackPQ2_0(&codes, blk)
				for s := range 8 {
					var v uint32
					for e := 16 * s; e < 16*s+16; e++ {
						v |= uint32(codes[e]) << (2 * (e - 16*s))
					}
					binary.LittleEndian.PutUint32(want[g*stride+64*s+32*h+4*l:], v)
				}
				binary.LittleEndian.PutUint32(want[g*stride+512+32*h+4*l:], math.Float32bits(fp16(sc)))
			}
		}
	}
	same := func(name string, got []byte) {
		t.Helper()
		for g := range ng {
			if !bytes.Equal(got[g*stride:g*stride+q8PairBytes], want[g*stride:g*stride+q8PairBytes]) {
				t.Fatalf("%s: group %d differs", name, g)
			}
		}
	}
	for _, kern := range q8Kernels {
		withKernel(kern, func() {
			got := make([]byte, ng*stride)
			q8RepackPQ2(got, stride, w[:rb], w[rb:], ng)
			same(kern.name, got)
		})
	}
	// PTQ1_0: random trit bytes (all 256 values), every kernel, against the codes
	// unpacked in element order.
	tq := randPTQ1(r, k, 2, func() uint16 { return randScale(r) })
	tb := PTQ1_0.RowBytes(k)
	for g := range ng {
		for h := range 2 {
			for l := range 8 {
				sc := UnpackPTQ1_0(&codes, tq[h*tb+(8*g+l)*ptq1BlockBytes:])
				for s := range 8 {
					var v uint32
					for e := 16 * s; e < 16*s+16; e++ {
						v |= uint32(codes[e]) << (2 * (e - 16*s))
					}
					binary.LittleEndian.PutUint32(want[g*stride+64*s+32*h+4*l:], v)
				}
				binary.LittleEndian.PutUint32(want[g*stride+512+32*h+4*l:], math.Float32bits(fp16(sc)))
			}
		}
	}
	for _, kern := range q8Kernels {
		withKernel(kern, func() {
			got := make([]byte, ng*stride)
			q8RepackPTQ1(got, stride, tq[:tb], tq[tb:], ng)
			same("PTQ1_0 "+kern.name, got)
		})
	}
}

// TestQ8TileLayout pins the field offsets the assembly kernels use (the constants of
// matmul_amd64_gen.go and matmul_arm64_gen.go): a change to q8TileArgs or q8TileDesc
// must be made there too.
func TestQ8TileLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the assembly kernels are 64-bit only")
	}
	var a q8TileArgs
	var d q8TileDesc
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"args.w", unsafe.Offsetof(a.w), 0},
		{"args.ng", unsafe.Offsetof(a.ng), 8},
		{"args.facc", unsafe.Offsetof(a.facc), 16},
		{"args.tiles", unsafe.Offsetof(a.tiles), 24},
		{"args.desc", unsafe.Offsetof(a.desc), 32},
		{"args.yoff", unsafe.Offsetof(a.yoff), 40},
		{"args.flags", unsafe.Offsetof(a.flags), 48},
		{"args.pfStep", unsafe.Offsetof(a.pfStep), 56},
		{"args.cur", unsafe.Offsetof(a.cur), 64},
		{"args.cfacc", unsafe.Offsetof(a.cfacc), 72},
		{"args.left", unsafe.Offsetof(a.left), 80},
		{"sizeof args", unsafe.Sizeof(a), 88},
		{"desc.act", unsafe.Offsetof(d.act), 0},
		{"desc.d", unsafe.Offsetof(d.d), 64},
		{"desc.sum", unsafe.Offsetof(d.sum), 128},
		{"desc.y", unsafe.Offsetof(d.y), 192},
		{"desc.pf", unsafe.Offsetof(d.pf), 256},
		{"sizeof desc", unsafe.Sizeof(d), 264},
		{"flags", q8First | q8Last<<8 | q8Odd<<16, 1 | 2<<8 | 4<<16},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, the assembly kernels use %d", c.name, c.got, c.want)
		}
	}
}

// PTQ1_0 → PQ2_0 transcoding gives the same bytes with every kernel family as block by
// block unpacking and packing, over runs of the repacking kernels and the blocks after.
func TestTranscodePTQ1EveryKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const nb = 3*256 + 77
	src := make([]byte, nb*ptq1BlockBytes)
	want := make([]byte, nb*pq2BlockBytes)
	var codes [BlockSize]uint8
	for b := range nb {
		for i := range codes {
			codes[i] = uint8(r.IntN(3))
		}
		scale := randScale(r)
		if err := PackPTQ1_0(src[b*ptq1BlockBytes:], &codes, scale); err != nil {
			t.Fatal(err)
		}
		PackPQ2_0(want[b*pq2BlockBytes:], &codes, scale)
	}
	forEachKernel(func(name string) {
		got := make([]byte, len(want))
		transcodePTQ1ToPQ2(got, src, nb)
		if !bytes.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s: byte %d (block %d) is %#x, want %#x", name, i, i/pq2BlockBytes, got[i], want[i])
				}
			}
		}
	})
}

// ReadMemory is the xor of the whole little-endian words, whatever the length and the
// reader's width, computed here one word at a time.
func TestReadMemory(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	buf := make([]byte, 5000)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	for _, n := range []int{0, 7, 8, 63, 64, 255, 256, 257, 1000, 4096, 5000} {
		var want uint64
		for i := 0; i+8 <= n; i += 8 {
			for j := range 8 {
				want ^= uint64(buf[i+j]) << (8 * j)
			}
		}
		if got := ReadMemory(buf[:n]); got != want {
			t.Errorf("n=%d: %x, want %x", n, got, want)
		}
	}
}
