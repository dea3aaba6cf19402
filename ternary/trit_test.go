package ternary_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/ternary"
)

// ones returns a code block of all 1s (all zeros when decoded).
func ones() *[128]uint8 {
	var c [128]uint8
	for j := range c {
		c[j] = 1
	}
	return &c
}

// ceilDiv returns ceil(a/b) for non-negative a and positive b.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// TestAllFiveTritBytes packs every five-trit group into qs[0] and qs[16] (the
// first byte of region 1 and of region 2) and checks the byte against the
// formula and the round trip back to trits.
func TestAllFiveTritBytes(t *testing.T) {
	seen := map[byte]int{}
	for q := range 243 {
		tr := [5]uint8{uint8(q / 81), uint8(q / 27 % 3), uint8(q / 9 % 3), uint8(q / 3 % 3), uint8(q % 3)}
		codes := ones()
		for n, v := range tr {
			codes[16*n] = v   // region 1, byte 0
			codes[80+8*n] = v // region 2, byte 16
		}
		block := make([]byte, 28)
		require.NoError(t, ternary.PackPTQ1_0(block, codes, 0))
		want := byte(ceilDiv(q*256, 243))
		require.Equal(t, want, block[0], "q=%d", q)
		require.Equal(t, want, block[16], "q=%d", q)
		if prev, dup := seen[want]; dup {
			t.Fatalf("q=%d and q=%d share byte %d", prev, q, want)
		}
		seen[want] = q

		var back [128]uint8
		ternary.UnpackPTQ1_0(&back, block)
		assert.Equal(t, *codes, back, "q=%d", q)
	}
	assert.Len(t, seen, 243)
}

// TestAllFourTritBytes does the same for the 81 four-trit qh groups.
func TestAllFourTritBytes(t *testing.T) {
	seen := map[byte]bool{}
	for q := range 81 {
		tr := [4]uint8{uint8(q / 27), uint8(q / 9 % 3), uint8(q / 3 % 3), uint8(q % 3)}
		codes := ones()
		for n, v := range tr {
			codes[120+2*n] = v // qh[0]
			codes[121+2*n] = 2 - v
		}
		block := make([]byte, 28)
		require.NoError(t, ternary.PackPTQ1_0(block, codes, 0))
		want := byte(ceilDiv(3*q*256, 243))
		require.Equal(t, want, block[24], "q=%d", q)
		require.False(t, seen[want], "q=%d", q)
		seen[want] = true

		var back [128]uint8
		ternary.UnpackPTQ1_0(&back, block)
		assert.Equal(t, *codes, back, "q=%d", q)
	}
}

// TestTritDecodeAllBytes decodes every byte value in each of the three
// regions, including the 13 values the encoder never writes, and checks the
// trits against the formula evaluated independently in float64:
// floor((b·3ⁿ mod 256)·3/256).
func TestTritDecodeAllBytes(t *testing.T) {
	for b := range 256 {
		block := make([]byte, 28)
		block[5] = byte(b)  // region 1: element 16n+5
		block[21] = byte(b) // region 2: element 80+8n+5
		block[25] = byte(b) // region 3: element 120+2n+1
		var codes [128]uint8
		ternary.UnpackPTQ1_0(&codes, block)
		for n := range 5 {
			want := math.Floor(math.Mod(float64(b)*math.Pow(3, float64(n)), 256) * 3 / 256)
			require.LessOrEqual(t, want, 2.0)
			got1 := codes[16*n+5]
			got2 := codes[80+8*n+5]
			require.LessOrEqual(t, got1, uint8(2), "b=%d n=%d", b, n)
			require.Equal(t, uint8(want), got1, "region 1 b=%d n=%d", b, n)
			require.Equal(t, uint8(want), got2, "region 2 b=%d n=%d", b, n)
			if n < 4 {
				require.Equal(t, uint8(want), codes[120+2*n+1], "region 3 b=%d n=%d", b, n)
			}
		}
		// Byte 0 decodes to five 0 trits, and nothing else leaked.
		assert.Equal(t, uint8(0), codes[0])
	}
}
