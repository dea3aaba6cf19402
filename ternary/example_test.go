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
