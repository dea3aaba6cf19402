package hadamard_test

import (
	"fmt"

	"github.com/bonsai-go/sdk/hadamard"
)

func ExampleRotation() {
	// Two blocks of four; in a real model the block is 1024 and the signs
	// come from the file's contract (Contract.Rotation).
	r, err := hadamard.NewRotation([]int8{1, -1, 1, 1, -1, -1, 1, -1}, 4)
	if err != nil {
		panic(err)
	}

	x := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	r.Forward(x) // signs, then H₄/2 on each block: what a folded weight expects
	fmt.Println(x)
	r.Inverse(x) // H₄/2 on each block, then signs: undoes Forward
	fmt.Println(x)
	// Output:
	// [3 1 -4 2 -6 8 -5 -7]
	// [1 2 3 4 5 6 7 8]
}

func ExampleFWHT() {
	x := []float32{1, 2, 3, 4}
	hadamard.FWHT(x) // unnormalised: rows ++++, +-+-, ++--, +--+
	fmt.Println(x)
	// Output: [10 -2 -4 0]
}
