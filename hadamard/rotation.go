package hadamard

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// A Rotation is the blockwise orthogonal map R = (1/√n)·Hₙ·S of one input
// width: S = diag(signs) over the whole width, and (1/√n)·Hₙ applied to each
// consecutive block of n = BlockSize entries independently.
//
// A Rotation is immutable and safe for concurrent use. Building one copies
// and converts its signs, so build it once per width at load time.
type Rotation struct {
	signs []int8
	block int

	// The float forms of S and of the 1/√n scale, laid out so that the
	// diagonal factors fold into the transform's first and last passes:
	// Forward multiplies by sign before and by scale after the transform,
	// Inverse by sign·scale after it (exact, since sign is ±1).
	sign32, scale32, post32 []float32
	sign64, scale64, post64 []float64
}

// NewRotation returns the rotation with the given signs and block size.
// Every sign must be +1 or −1, and block must be a power of two that divides
// len(signs). The signs are copied.
func NewRotation(signs []int8, block int) (*Rotation, error) {
	if !IsPowerOfTwo(block) {
		return nil, fmt.Errorf("hadamard: block size %d is not a power of two", block)
	}
	if len(signs) == 0 {
		return nil, errors.New("hadamard: no signs")
	}
	if len(signs)%block != 0 {
		return nil, fmt.Errorf("hadamard: width %d is not a multiple of block size %d", len(signs), block)
	}
	for i, s := range signs {
		if s != 1 && s != -1 {
			return nil, fmt.Errorf("hadamard: sign %d is %d, want ±1", i, s)
		}
	}

	scale := 1 / math.Sqrt(float64(block))
	r := &Rotation{
		signs:   append([]int8(nil), signs...),
		block:   block,
		sign32:  make([]float32, len(signs)),
		post32:  make([]float32, len(signs)),
		scale32: make([]float32, block),
		sign64:  make([]float64, len(signs)),
		post64:  make([]float64, len(signs)),
		scale64: make([]float64, block),
	}
	for i, s := range signs {
		r.sign32[i] = float32(s)
		r.post32[i] = float32(s) * float32(scale)
		r.sign64[i] = float64(s)
		r.post64[i] = float64(s) * scale
	}
	for i := range block {
		r.scale32[i] = float32(scale)
		r.scale64[i] = scale
	}
	return r, nil
}

// Width returns the length of the vectors r acts on.
func (r *Rotation) Width() int { return len(r.signs) }

// BlockSize returns n, the size of each Hadamard block.
func (r *Rotation) BlockSize() int { return r.block }

// Signs returns the diagonal of S. The caller must not modify it.
func (r *Rotation) Signs() []int8 { return r.signs }

// Forward replaces x by R·x: signs first, then each block transformed and
// scaled by 1/√n. This is the activation side of a folded linear layer,
// whose stored weight is W·Rᵀ. It panics if len(x) != r.Width().
func (r *Rotation) Forward(x []float32) {
	r.checkLen("Forward", len(x))
	n := r.block
	for i := 0; i < len(x); i += n {
		transform32(x[i:i+n], r.sign32[i:i+n], r.scale32)
	}
}

// Inverse replaces x by Rᵀ·x = R⁻¹·x: each block transformed and scaled by
// 1/√n, then the signs. It undoes the rotation stored in an embedding row or
// a folded weight row. It panics if len(x) != r.Width().
func (r *Rotation) Inverse(x []float32) {
	r.checkLen("Inverse", len(x))
	n := r.block
	for i := 0; i < len(x); i += n {
		transform32(x[i:i+n], nil, r.post32[i:i+n])
	}
}

// Forward64 is [Rotation.Forward] in float64.
func (r *Rotation) Forward64(x []float64) {
	r.checkLen("Forward64", len(x))
	n := r.block
	for i := 0; i < len(x); i += n {
		transform(x[i:i+n], r.sign64[i:i+n], r.scale64)
	}
}

// Inverse64 is [Rotation.Inverse] in float64.
func (r *Rotation) Inverse64(x []float64) {
	r.checkLen("Inverse64", len(x))
	n := r.block
	for i := 0; i < len(x); i += n {
		transform(x[i:i+n], nil, r.post64[i:i+n])
	}
}

func (r *Rotation) checkLen(op string, n int) {
	if n != len(r.signs) {
		panic("hadamard: Rotation." + op + ": length " + strconv.Itoa(n) +
			", want width " + strconv.Itoa(len(r.signs)))
	}
}
