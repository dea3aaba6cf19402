package ternary

import "fmt"

// DotRef returns the dot product of the k = len(x) elements of row, stored
// in format f, with x: the sum over i of value(i)·x[i], each product formed
// exactly in float64 and summed in element order. It is the plain reference
// that faster kernels are tested against, not a fast path. len(x) must be a
// multiple of BlockSize and row exactly f.RowBytes(len(x)) bytes, or DotRef
// returns an error wrapping [ErrSize].
func DotRef(f Format, row []byte, x []float32) (float64, error) {
	nb, err := f.pair("DotRef", len(x), len(row))
	if err != nil {
		return 0, err
	}
	return dotRef(f, nb, row, x), nil
}

// dotRef is DotRef after the checks.
func dotRef(f Format, nb int, row []byte, x []float32) float64 {
	var buf [BlockSize]float32
	bb := f.BlockBytes()
	decode := decodePQ2_0
	if f == PTQ1_0 {
		decode = decodePTQ1_0
	}
	var sum float64
	for i := range nb {
		decode(buf[:], row[i*bb:])
		xb := x[i*BlockSize : (i+1)*BlockSize]
		for j, v := range buf {
			// Both factors are float32 values of at most 24 significant
			// bits (the weight has 11 times a small integer), so the
			// float64 product is exact.
			sum += float64(v) * float64(xb[j])
		}
	}
	return sum
}

// MatVecRef computes y = W·x for the matrix W stored row after row in w in
// format f, with k elements per row and len(y) rows: y[i] is DotRef of row i
// rounded to float32. k must be a non-negative multiple of BlockSize,
// len(x) must be k and len(w) must be len(y)·f.RowBytes(k), or MatVecRef
// returns an error wrapping [ErrSize] and leaves y unchanged.
func MatVecRef(f Format, w []byte, k int, x []float32, y []float32) error {
	if !f.valid() {
		return fmt.Errorf("%w %d", ErrFormat, uint8(f))
	}
	if k < 0 || k%BlockSize != 0 {
		return fmt.Errorf("%w: %s MatVecRef: row length %d is not a multiple of %d", ErrSize, f, k, BlockSize)
	}
	if len(x) != k {
		return fmt.Errorf("%w: %s MatVecRef: row length %d but len(x) = %d", ErrSize, f, k, len(x))
	}
	rb := f.RowBytes(k)
	if want := len(y) * rb; len(w) != want {
		return fmt.Errorf("%w: %s MatVecRef: %d rows of %d elements need %d bytes, have %d",
			ErrSize, f, len(y), k, want, len(w))
	}
	nb := k / BlockSize
	for i := range y {
		y[i] = float32(dotRef(f, nb, w[i*rb:(i+1)*rb], x))
	}
	return nil
}
