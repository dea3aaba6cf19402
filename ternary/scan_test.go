package ternary_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/ternary"
)

// scanFixture builds nine blocks whose statistics are counted by hand
// below. With code3 false, the one code 3 becomes a code 0, so that the
// tensor also fits PTQ1_0.
func scanFixture(code3 bool) ([]uint8, []uint16) {
	codes := make([]uint8, 9*128)
	fill := func(b int, from, to int, c uint8) {
		for j := from; j < to; j++ {
			codes[b*128+j] = c
		}
	}
	fill(0, 0, 128, 1)   // d = 1: 128 zeros
	fill(1, 0, 64, 0)    // d = 0.5: 64 × code 0,
	fill(1, 64, 128, 2)  //          64 × code 2
	fill(2, 0, 100, 1)   // d = 3·2⁻²⁴ (subnormal): 100 × code 1,
	fill(2, 100, 128, 2) //          28 × code 2
	fill(3, 0, 128, 1)   // d = +0: 128 × code 1
	fill(4, 0, 128, 0)   // d = −2: 127 × code 0 and one code 3
	if code3 {
		codes[4*128+77] = 3
	}
	fill(5, 0, 128, 1) // d = +Inf: 128 × code 1
	fill(6, 0, 128, 2) // d = NaN: 128 × code 2
	fill(7, 0, 128, 0) // d = −Inf: 128 × code 0
	fill(8, 0, 128, 1) // d = −0: 128 × code 1
	scales := []uint16{0x3C00, 0x3800, 0x0003, 0x0000, 0xC000, 0x7C00, 0x7E00, 0xFC00, 0x8000}
	return codes, scales
}

func TestScan(t *testing.T) {
	codes, scales := scanFixture(true)
	pq := make([]byte, 9*34)
	require.NoError(t, ternary.PQ2_0.Pack(pq, codes, scales))
	st, err := ternary.Scan(ternary.PQ2_0, pq)
	require.NoError(t, err)

	// code 0: 64 (b1) + 127 (b4) + 128 (b7)             = 319
	// code 1: 128 (b0) + 100 (b2) + 128 (b3, b5, b8 each) = 612
	// code 2: 64 (b1) + 28 (b2) + 128 (b6)              = 220
	// code 3: 1 (b4); total 1152 = 9·128.
	want := ternary.Stats{
		Blocks:          9,
		Codes:           [4]int64{319, 612, 220, 1},
		ZeroFraction:    612.0 / 1152,
		MinScale:        -2,
		MaxScale:        1,
		ZeroScales:      2, // +0, −0
		SubnormalScales: 1,
		NegativeScales:  2, // −2, −Inf
		NonFiniteScales: 3, // +Inf, NaN, −Inf
		Code3:           1,
	}
	assert.Equal(t, want, st)
	require.ErrorContains(t, st.Check(), "non-finite")

	// The same blocks as PTQ1_0, with the code 3 turned into a code 0.
	codes, scales = scanFixture(false)
	tq := make([]byte, 9*28)
	require.NoError(t, ternary.PTQ1_0.Pack(tq, codes, scales))
	st, err = ternary.Scan(ternary.PTQ1_0, tq)
	require.NoError(t, err)
	want.Codes = [4]int64{320, 612, 220, 0}
	want.Code3 = 0
	assert.Equal(t, want, st)
	require.NoError(t, ternary.PQ2_0.Pack(pq, codes, scales))
	st2, err := ternary.Scan(ternary.PQ2_0, pq)
	require.NoError(t, err)
	assert.Equal(t, st, st2)

	// Scanned in pieces and merged, including a piece whose scales are all
	// non-finite (its MinScale and MaxScale must not count) and an empty one.
	for _, cuts := range [][]int{{0, 3, 9}, {0, 5, 8, 9}, {0, 0, 1, 9}, {0, 5, 5, 9}} {
		var m ternary.Stats
		for i := 1; i < len(cuts); i++ {
			piece, err := ternary.Scan(ternary.PTQ1_0, tq[cuts[i-1]*28:cuts[i]*28])
			require.NoError(t, err)
			m.Merge(piece)
		}
		assert.Equal(t, want, m, "cuts %v", cuts)
	}
	var fromNonFinite ternary.Stats
	for i := 5; i < 8; i++ { // the Inf, NaN, −Inf blocks first
		piece, _ := ternary.Scan(ternary.PTQ1_0, tq[i*28:(i+1)*28])
		fromNonFinite.Merge(piece)
	}
	assert.Equal(t, float32(0), fromNonFinite.MaxScale)
	for _, i := range []int{0, 1, 2, 3, 4, 8} {
		piece, _ := ternary.Scan(ternary.PTQ1_0, tq[i*28:(i+1)*28])
		fromNonFinite.Merge(piece)
	}
	assert.Equal(t, want, fromNonFinite)

	// Check passes a clean tensor and names code 3.
	clean, cleanScales := scanFixture(false)
	cleanScales[5], cleanScales[6], cleanScales[7] = 0x3C00, 0x3C00, 0x3C00
	require.NoError(t, ternary.PQ2_0.Pack(pq, clean, cleanScales))
	st, err = ternary.Scan(ternary.PQ2_0, pq)
	require.NoError(t, err)
	assert.NoError(t, st.Check())
	clean[100] = 3
	clean[300] = 3
	clean[301] = 3
	require.NoError(t, ternary.PQ2_0.Pack(pq, clean, cleanScales))
	st, err = ternary.Scan(ternary.PQ2_0, pq)
	require.NoError(t, err)
	assert.Equal(t, int64(3), st.Codes[3])
	assert.Equal(t, int64(2), st.Code3)
	assert.ErrorIs(t, st.Check(), ternary.ErrCode3)

	// Empty.
	st, err = ternary.Scan(ternary.PQ2_0, nil)
	require.NoError(t, err)
	assert.Equal(t, ternary.Stats{}, st)
}

// TestScanNonCanonical plants PTQ1_0 bytes the encoder never writes.
func TestScanNonCanonical(t *testing.T) {
	qs := map[byte]bool{}
	for q := range 243 {
		qs[byte(ceilDiv(q*256, 243))] = true
	}
	qh := map[byte]bool{}
	for q := range 81 {
		qh[byte(ceilDiv(3*q*256, 243))] = true
	}
	var badQS, badQH []byte
	for b := range 256 {
		if !qs[byte(b)] {
			badQS = append(badQS, byte(b))
		}
		if !qh[byte(b)] {
			badQH = append(badQH, byte(b))
		}
	}
	require.Len(t, badQS, 13)
	require.Len(t, badQH, 256-81)

	block := make([]byte, 2*28)
	require.NoError(t, ternary.PTQ1_0.Quantize(block, make([]float32, 256)))
	st, err := ternary.Scan(ternary.PTQ1_0, block)
	require.NoError(t, err)
	assert.Zero(t, st.NonCanonical)

	block[3] = badQS[0]
	block[28+20] = badQS[len(badQS)-1]
	block[28+25] = badQH[7]
	st, err = ternary.Scan(ternary.PTQ1_0, block)
	require.NoError(t, err)
	assert.Equal(t, int64(3), st.NonCanonical)
	assert.Equal(t, int64(256), st.Codes[0]+st.Codes[1]+st.Codes[2])
	assert.Zero(t, st.Codes[3])
}
