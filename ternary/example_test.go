package ternary_test

import (
	"fmt"

	"github.com/bonsai-go/sdk/ternary"
)

func ExampleFormat_Quantize() {
	// One block of 128 weights.
	w := make([]float32, ternary.BlockSize)
	copy(w, []float32{0.9, -0.2, 0.5, -0.7, 0.05, -1.25, 0.7})

	packed := make([]byte, ternary.PQ2_0.RowBytes(len(w)))
	if err := ternary.PQ2_0.Quantize(packed, w); err != nil {
		fmt.Println(err)
		return
	}

	// d = max|w| = 1.25; each weight becomes −d, 0 or +d, whichever is
	// nearest.
	got := make([]float32, len(w))
	if err := ternary.PQ2_0.Decode(got, packed); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(packed), "bytes")
	fmt.Println(got[:7])

	// The same block in PTQ1_0 is smaller and decodes identically.
	small := make([]byte, ternary.PTQ1_0.RowBytes(len(w)))
	if err := ternary.Transcode(small, ternary.PTQ1_0, packed, ternary.PQ2_0); err != nil {
		fmt.Println(err)
		return
	}
	if err := ternary.PTQ1_0.Decode(got, small); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(small), "bytes")
	fmt.Println(got[:7])
	// Output:
	// 34 bytes
	// [1.25 0 0 -1.25 0 -1.25 1.25]
	// 28 bytes
	// [1.25 0 0 -1.25 0 -1.25 1.25]
}

func ExampleTiles() {
	// A 4×1024 matrix whose rows hold only −1, 0, +1 and +1, and two activation vectors
	// of ones and of twos.
	const k, n, t = 1024, 4, 2
	w := make([]byte, n*ternary.PQ2_0.RowBytes(k))
	row := make([]float32, k)
	for i := range n {
		for j := range row {
			row[j] = float32(max(-1, min(1, i-1)))
		}
		if err := ternary.PQ2_0.Quantize(w[i*ternary.PQ2_0.RowBytes(k):(i+1)*ternary.PQ2_0.RowBytes(k)], row); err != nil {
			fmt.Println(err)
			return
		}
	}
	x := make([]float32, t*k)
	for j := range k {
		x[j], x[k+j] = 1, 2
	}
	q := ternary.NewQ8Batch(k, t)
	q.Quantize(x, t)

	// The tiles are made once; every batched product then reads them.
	tiles, err := ternary.NewTiles(ternary.PQ2_0, k, n)
	if err != nil {
		fmt.Println(err)
		return
	}
	tiles.Fill(w, 0, n)
	y := make([]float32, t*n)
	ternary.MatMulQ8TilesRange(ternary.PQ2_0, w, tiles, k, n, q, t, y, 0, n)
	fmt.Println(y[:n], y[n:])
	// Output: [-1024 0 1024 1024] [-2048 0 2048 2048]
}

// Timing a prefill with the tile unit and without: the products' results are the
// same bits either way, so only the speed differs.
func ExampleSetAMX() {
	was := ternary.SetAMX(false) // the AVX-512 VNNI kernels, for comparison
	defer ternary.SetAMX(was)
	fmt.Println("AMX for batches:", ternary.InterleavedBatchAMX())
	// Output: AMX for batches: false
}
