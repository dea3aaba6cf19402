package ternary

import (
	"fmt"

	"github.com/bonsai-go/sdk/hadamard"
	"github.com/x448/float16"
)

// Linear is one folded ternary linear layer y = W′·(R x): N rows of K ternary weights
// stored in place (a view of the model file), and the Hadamard rotation R of its input
// width. It needs no model around it.
//
// Linear is the standalone form of the product the model engine runs; the engine does not
// build Linear values. The CPU backend binds each weight as a qwen35.Matrix (a view of the
// same bytes), rotates an activation once per site with the same hadamard.Rotation
// (bonsai's cpuEngine.rotateRows), and spreads the rows of the matrices that share the
// site over its worker pool (bonsai's productJob), calling the kernels of this package:
// [MatVecRange] for one token in float32 — exactly what [Linear.Forward] and
// [Linear.Apply] call, so their results are bit-identical to the engine's float32 decode
// step — [MatMulRange] for a float32 prefill chunk (bit-identical to MatVecRange, token
// by token), and, with int8 activations (the engine's default),
// [MatVecQ8Range] and [MatMulQ8Range] on the site quantised once (within the activations'
// quantisation error). bonsai TestFidelityLinearMatchesEngine checks all three at the
// real widths.
type Linear struct {
	Format   Format             // the rows' ternary format
	K, N     int                // the input width and the row count
	Weights  []byte             // N rows of Format.RowBytes(K) bytes
	Rotation *hadamard.Rotation // the rotation folded into the rows; nil if none
}

// NewLinear checks the sizes and returns the linear. rot may be nil for a matrix that is
// not folded (its input is then used as given).
func NewLinear(format Format, weights []byte, k, n int, rot *hadamard.Rotation) (*Linear, error) {
	if format != PQ2_0 && format != PTQ1_0 {
		return nil, fmt.Errorf("%w: %d", ErrFormat, format)
	}
	if k <= 0 || n <= 0 || k%BlockSize != 0 {
		return nil, fmt.Errorf("%w: linear %d×%d: K must be a positive multiple of %d", ErrSize, k, n, BlockSize)
	}
	if want := n * format.RowBytes(k); len(weights) != want {
		return nil, fmt.Errorf("%w: linear %d×%d %s needs %d bytes, have %d", ErrSize, k, n, format, want, len(weights))
	}
	if rot != nil && rot.Width() != k {
		return nil, fmt.Errorf("%w: linear input width %d, rotation width %d", ErrSize, k, rot.Width())
	}
	return &Linear{Format: format, K: k, N: n, Weights: weights, Rotation: rot}, nil
}

// Forward computes y = W′·(R x) for one input vector. It allocates a site; a caller
// applying several linears to the same x, or calling repeatedly, uses a Site and Apply.
func (l *Linear) Forward(y, x []float32) {
	s := NewSite(l.Rotation, l.K)
	s.Set(x)
	l.Apply(y, s)
}

// Apply computes y = W′·x′ for the rotated input held by the site.
func (l *Linear) Apply(y []float32, s *Site) {
	if len(s.x) != l.K {
		panic(fmt.Sprintf("ternary: linear input width %d, site width %d", l.K, len(s.x)))
	}
	MatVecRange(l.Format, l.Weights, l.K, s.x, y[:l.N], 0, l.N)
}

// ApplyRange computes rows [lo, hi) of the product: y[i] for lo ≤ i < hi. Callers
// spreading the rows over several goroutines give each its own range.
func (l *Linear) ApplyRange(y []float32, s *Site, lo, hi int) {
	MatVecRange(l.Format, l.Weights, l.K, s.x, y[:l.N], lo, hi)
}

// Site is an activation rotated once, x′ = R x, and shared by every linear that reads
// it (q, k and v; qkv and z; gate and up): the rotation is the expensive half of a small
// product and must not be repeated per matrix.
type Site struct {
	rot *hadamard.Rotation
	x   []float32
}

// NewSite returns a site of width k with rotation rot (nil: no rotation).
func NewSite(rot *hadamard.Rotation, k int) *Site {
	if rot != nil && rot.Width() != k {
		panic(fmt.Sprintf("ternary: site width %d, rotation width %d", k, rot.Width()))
	}
	return &Site{rot: rot, x: make([]float32, k)}
}

// Set stores R x.
func (s *Site) Set(x []float32) {
	copy(s.x, x[:len(s.x)])
	if s.rot != nil {
		s.rot.Forward(s.x)
	}
}

// SetRotated stores an input that is already rotated (a fused kernel produced it).
func (s *Site) SetRotated(xr []float32) { copy(s.x, xr[:len(s.x)]) }

// Rotated returns x′ (owned by the site; do not modify).
func (s *Site) Rotated() []float32 { return s.x }

// codeValues maps a PQ2_0 byte to the values (q−1) of its four codes, element j%4 at
// index j%4, so that a byte costs one table load instead of four shifts and masks.
var codeValues = func() (t [256][4]float32) {
	for b := 0; b < 256; b++ {
		for j := 0; j < 4; j++ {
			t[b][j] = float32(int(b>>(2*j)&3) - 1)
		}
	}
	return t
}()

// MatVecRange computes y[i] = Σ_j W[i][j]·x[j] for rows lo ≤ i < hi of a ternary matrix
// of row width k, in float32. It is the portable kernel; faster ones are tested against
// it and against MatVecRef.
func MatVecRange(f Format, w []byte, k int, x, y []float32, lo, hi int) {
	rb := f.RowBytes(k)
	_ = w[hi*rb-1]
	_ = x[k-1]
	_ = y[hi-1]
	switch f {
	case PQ2_0:
		for i := lo; i < hi; i++ {
			y[i] = dotPQ2_0(w[i*rb:(i+1)*rb], x)
		}
	case PTQ1_0:
		var codes [BlockSize]uint8
		for i := lo; i < hi; i++ {
			y[i] = dotPTQ1_0(w[i*rb:(i+1)*rb], x, &codes)
		}
	default:
		panic(fmt.Sprintf("ternary: invalid format %d", f))
	}
}

// The dot products (these two and MatMulRange's) add the same products in the same
// order, so that a PTQ1_0 model and its PQ2_0 transcode, and one token and a batch,
// give bit-identical results: per block four partial sums, element j in sum j mod 4,
// folded into the row's sum by foldBlock.

// foldBlock adds one block's partial sums, times its scale d, to a row's sum. (The
// products of a code value and an activation are exact, so only this fold and the
// partial sums' order decide the rounding.)
func foldBlock(sum, a0, a1, a2, a3, d float32) float32 {
	return sum + ((a0+a1)+(a2+a3))*d
}

func dotPQ2_0(row []byte, x []float32) float32 {
	var sum float32
	for b := 0; b+34 <= len(row); b += 34 {
		d := float16.Frombits(uint16(row[b]) | uint16(row[b+1])<<8).Float32()
		qs := row[b+2 : b+34]
		xb := x[(b/34)*BlockSize : (b/34+1)*BlockSize]
		_ = xb[127]
		// Four partial sums break the add dependency chain.
		var a0, a1, a2, a3 float32
		for j := 0; j < 32; j++ {
			v := &codeValues[qs[j]]
			xs := xb[4*j : 4*j+4]
			a0 += v[0] * xs[0]
			a1 += v[1] * xs[1]
			a2 += v[2] * xs[2]
			a3 += v[3] * xs[3]
		}
		sum = foldBlock(sum, a0, a1, a2, a3, d)
	}
	return sum
}

func dotPTQ1_0(row []byte, x []float32, codes *[BlockSize]uint8) float32 {
	var sum float32
	for b := 0; b+28 <= len(row); b += 28 {
		d := float16.Frombits(UnpackPTQ1_0(codes, row[b:b+28])).Float32()
		xb := x[(b/28)*BlockSize : (b/28+1)*BlockSize]
		_ = xb[127]
		var a0, a1, a2, a3 float32
		for j := 0; j < 128; j += 4 {
			a0 += float32(int(codes[j])-1) * xb[j]
			a1 += float32(int(codes[j+1])-1) * xb[j+1]
			a2 += float32(int(codes[j+2])-1) * xb[j+2]
			a3 += float32(int(codes[j+3])-1) * xb[j+3]
		}
		sum = foldBlock(sum, a0, a1, a2, a3, d)
	}
	return sum
}

// MatMulRange computes rows lo ≤ i < hi of Y = X·Wᵀ for t input vectors at once: x holds
// t rows of k values, y t rows of n values (n = the matrix's row count). Each weight row
// is decoded once and used for all t inputs, so a prefill chunk reads the weights once.
// scratch holds one decoded row (k values); nil allocates it.
//
// y[s·n + i] is what [MatVecRange] gives for vector s and row i, bit for bit: the row is
// decoded to its code values q−1 and each block's sums are folded in with the block's
// scale as the matrix-vector kernel folds them. So a token's products do not depend on
// how many others share its batch.
func MatMulRange(f Format, w []byte, k, n int, x []float32, t int, y []float32, lo, hi int, scratch []float32) {
	rb := f.RowBytes(k)
	_ = w[hi*rb-1]
	_ = x[t*k-1]
	_ = y[(t-1)*n+hi-1]
	row := scratch
	if len(row) < k {
		row = make([]float32, k)
	}
	row = row[:k]
	nb := k / BlockSize
	bb := f.BlockBytes()
	for i := lo; i < hi; i++ {
		wr := w[i*rb : (i+1)*rb]
		for b := range nb {
			if f == PTQ1_0 {
				decodePTQ1With(row[b*BlockSize:], wr[b*bb:], unitLUT)
			} else {
				decodePQ2With(row[b*BlockSize:], wr[b*bb:], unitLUT)
			}
		}
		for s := 0; s < t; s++ {
			xs := x[s*k : (s+1)*k]
			var sum float32
			for b := range nb {
				c := row[b*BlockSize : (b+1)*BlockSize : (b+1)*BlockSize]
				xb := xs[b*BlockSize : (b+1)*BlockSize : (b+1)*BlockSize]
				var a0, a1, a2, a3 float32
				for j := 0; j < BlockSize; j += 4 {
					a0 += c[j] * xb[j]
					a1 += c[j+1] * xb[j+1]
					a2 += c[j+2] * xb[j+2]
					a3 += c[j+3] * xb[j+3]
				}
				sum = foldBlock(sum, a0, a1, a2, a3, blockScale(f, wr, b))
			}
			y[s*n+i] = sum
		}
	}
}

// blockScale returns the scale of block b of a row stored in format f.
func blockScale(f Format, row []byte, b int) float32 {
	if f == PTQ1_0 {
		o := b*ptq1BlockBytes + 26
		return fp16(uint16(row[o]) | uint16(row[o+1])<<8)
	}
	o := b * pq2BlockBytes
	return fp16(uint16(row[o]) | uint16(row[o+1])<<8)
}
