package ternary_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/ternary"
)

// The blocks in this file were worked out by hand from the layouts in the
// package doc (§ Formats), not by the package's code: they pin the bit order, element order and
// byte arithmetic against an independent reading of the format.

// pq2Hand is a PQ2_0 block with d = 1.5 (fp16 0x3E00, stored little-endian
// FIRST) and 32 qs bytes. Element 4i+k is the two bits at offset 2k of qs[i].
var pq2Hand = []byte{
	0x00, 0x3E, // d = 1.5: sign 0, exponent 01111 (2⁰), mantissa 1000000000 (1.5)
	0x1B, 0xE4, 0x55, 0x00, 0xAA, 0x66, 0x98, 0x24,
	0x91, 0x46, 0x19, 0x86, 0x61, 0x4A, 0xA1, 0x29,
	0x54, 0x15, 0x45, 0x51, 0x65, 0x56, 0x59, 0x95,
	0x05, 0x50, 0xA0, 0x0A, 0x82, 0x28, 0x12, 0x84,
}

// pq2HandValues are (q−1)·1.5 for each element: code 0 → −1.5, 1 → 0,
// 2 → 1.5, 3 → 3. The bit groups are written most significant first, so the
// codes read right to left.
var pq2HandValues = []float32{
	3, 1.5, 0, -1.5, // qs[0]  = 0x1B = 0b00_01_10_11: codes 3,2,1,0
	-1.5, 0, 1.5, 3, // qs[1]  = 0xE4 = 0b11_10_01_00: codes 0,1,2,3
	0, 0, 0, 0, // qs[2]  = 0x55 = 0b01_01_01_01: codes 1,1,1,1
	-1.5, -1.5, -1.5, -1.5, // qs[3]  = 0x00: codes 0,0,0,0
	1.5, 1.5, 1.5, 1.5, // qs[4]  = 0xAA = 0b10_10_10_10: codes 2,2,2,2
	1.5, 0, 1.5, 0, // qs[5]  = 0x66 = 0b01_10_01_10: codes 2,1,2,1
	-1.5, 1.5, 0, 1.5, // qs[6]  = 0x98 = 0b10_01_10_00: codes 0,2,1,2
	-1.5, 0, 1.5, -1.5, // qs[7]  = 0x24 = 0b00_10_01_00: codes 0,1,2,0
	0, -1.5, 0, 1.5, // qs[8]  = 0x91 = 0b10_01_00_01: codes 1,0,1,2
	1.5, 0, -1.5, 0, // qs[9]  = 0x46 = 0b01_00_01_10: codes 2,1,0,1
	0, 1.5, 0, -1.5, // qs[10] = 0x19 = 0b00_01_10_01: codes 1,2,1,0
	1.5, 0, -1.5, 1.5, // qs[11] = 0x86 = 0b10_00_01_10: codes 2,1,0,2
	0, -1.5, 1.5, 0, // qs[12] = 0x61 = 0b01_10_00_01: codes 1,0,2,1
	1.5, 1.5, -1.5, 0, // qs[13] = 0x4A = 0b01_00_10_10: codes 2,2,0,1
	0, -1.5, 1.5, 1.5, // qs[14] = 0xA1 = 0b10_10_00_01: codes 1,0,2,2
	0, 1.5, 1.5, -1.5, // qs[15] = 0x29 = 0b00_10_10_01: codes 1,2,2,0
	-1.5, 0, 0, 0, // qs[16] = 0x54 = 0b01_01_01_00: codes 0,1,1,1
	0, 0, 0, -1.5, // qs[17] = 0x15 = 0b00_01_01_01: codes 1,1,1,0
	0, 0, -1.5, 0, // qs[18] = 0x45 = 0b01_00_01_01: codes 1,1,0,1
	0, -1.5, 0, 0, // qs[19] = 0x51 = 0b01_01_00_01: codes 1,0,1,1
	0, 0, 1.5, 0, // qs[20] = 0x65 = 0b01_10_01_01: codes 1,1,2,1
	1.5, 0, 0, 0, // qs[21] = 0x56 = 0b01_01_01_10: codes 2,1,1,1
	0, 1.5, 0, 0, // qs[22] = 0x59 = 0b01_01_10_01: codes 1,2,1,1
	0, 0, 0, 1.5, // qs[23] = 0x95 = 0b10_01_01_01: codes 1,1,1,2
	0, 0, -1.5, -1.5, // qs[24] = 0x05 = 0b00_00_01_01: codes 1,1,0,0
	-1.5, -1.5, 0, 0, // qs[25] = 0x50 = 0b01_01_00_00: codes 0,0,1,1
	-1.5, -1.5, 1.5, 1.5, // qs[26] = 0xA0 = 0b10_10_00_00: codes 0,0,2,2
	1.5, 1.5, -1.5, -1.5, // qs[27] = 0x0A = 0b00_00_10_10: codes 2,2,0,0
	1.5, -1.5, -1.5, 1.5, // qs[28] = 0x82 = 0b10_00_00_10: codes 2,0,0,2
	-1.5, 1.5, 1.5, -1.5, // qs[29] = 0x28 = 0b00_10_10_00: codes 0,2,2,0
	1.5, -1.5, 0, -1.5, // qs[30] = 0x12 = 0b00_01_00_10: codes 2,0,1,0
	-1.5, 0, -1.5, 1.5, // qs[31] = 0x84 = 0b10_00_01_00: codes 0,1,0,2
}

// ptq1Hand is a PTQ1_0 block with d = 0.75 (fp16 0x3A00, stored LAST). Each
// byte is ceil(q·256/243) for q its trits read as a base-3 number, first
// trit most significant; the elements each trit belongs to follow the three
// regions of the layout.
var ptq1Hand = []byte{
	// Region 1, elements 0–79: trit n of qs[m] is element 16n+m.
	// qs[0]:  elements 0,16,32,48,64  = (1,1,1,0,2): q = 81+27+9+0+2 = 119, ceil(119·256/243) = ceil(125.366) = 126
	// qs[1]:  elements 1,17,33,49,65  = (0,0,0,2,1): q = 6+1 = 7, ceil(7·256/243) = ceil(7.374) = 8
	// qs[2]:  elements 2,18,34,50,66  = (1,0,0,2,1): q = 81+6+1 = 88, ceil(92.708) = 93
	// qs[3]:  elements 3,19,35,51,67  = (2,0,0,2,1): q = 162+6+1 = 169, ceil(178.041) = 179
	// qs[4]:  elements 4,20,36,52,68  = (0,2,2,0,2): q = 54+18+2 = 74, ceil(77.959) = 78
	// qs[5]:  elements 5,21,37,53,69  = (0,1,0,1,1): q = 27+3+1 = 31, ceil(32.658) = 33
	// qs[6]:  elements 6,22,38,54,70  = (2,0,1,0,1): q = 162+9+1 = 172, ceil(181.202) = 182
	// qs[7]:  elements 7,23,39,55,71  = (0,2,1,2,1): q = 54+9+6+1 = 70, ceil(73.745) = 74
	// qs[8]:  elements 8,24,40,56,72  = (1,0,0,2,0): q = 81+6 = 87, ceil(91.654) = 92
	// qs[9]:  elements 9,25,41,57,73  = (2,0,2,0,0): q = 162+18 = 180, ceil(189.630) = 190
	// qs[10]: elements 10,26,42,58,74 = (0,2,0,2,2): q = 54+6+2 = 62, ceil(65.317) = 66
	// qs[11]: elements 11,27,43,59,75 = (2,2,2,0,0): q = 162+54+18 = 234, ceil(246.519) = 247
	// qs[12]: elements 12,28,44,60,76 = (0,2,1,2,0): q = 54+9+6 = 69, ceil(72.691) = 73
	// qs[13]: elements 13,29,45,61,77 = (0,0,2,0,2): q = 18+2 = 20, ceil(21.070) = 22
	// qs[14]: elements 14,30,46,62,78 = (0,2,2,1,1): q = 54+18+3+1 = 76, ceil(80.066) = 81
	// qs[15]: elements 15,31,47,63,79 = (1,2,0,2,2): q = 81+54+6+2 = 143, ceil(150.650) = 151
	126, 8, 93, 179, 78, 33, 182, 74, 92, 190, 66, 247, 73, 22, 81, 151,
	// Region 2, elements 80–119: trit n of qs[16+m] is element 80+8n+m.
	// qs[16]: elements 80,88,96,104,112  = (1,2,2,2,2): q = 81+54+18+6+2 = 161, ceil(169.613) = 170
	// qs[17]: elements 81,89,97,105,113  = (1,1,0,1,2): q = 81+27+3+2 = 113, ceil(119.045) = 120
	// qs[18]: elements 82,90,98,106,114  = (2,0,2,2,0): q = 162+18+6 = 186, ceil(195.951) = 196
	// qs[19]: elements 83,91,99,107,115  = (1,1,2,1,0): q = 81+27+18+3 = 129, ceil(135.901) = 136
	// qs[20]: elements 84,92,100,108,116 = (1,0,1,0,2): q = 81+9+2 = 92, ceil(96.922) = 97
	// qs[21]: elements 85,93,101,109,117 = (2,1,1,0,2): q = 162+27+9+2 = 200, ceil(210.700) = 211
	// qs[22]: elements 86,94,102,110,118 = (0,1,2,1,1): q = 27+18+3+1 = 49, ceil(51.621) = 52
	// qs[23]: elements 87,95,103,111,119 = (0,0,1,1,2): q = 9+3+2 = 14, ceil(14.749) = 15
	170, 120, 196, 136, 97, 211, 52, 15,
	// Region 3, elements 120–127: trit n of qh[h] is element 120+2n+h; four
	// trits, q = 27t0+9t1+3t2+t3, stored as ceil(3q·256/243).
	// qh[0]: elements 120,122,124,126 = (2,1,2,2): q = 54+9+6+2 = 71, 3q = 213, ceil(224.395) = 225
	// qh[1]: elements 121,123,125,127 = (2,1,1,1): q = 54+9+3+1 = 67, 3q = 201, ceil(211.753) = 212
	225, 212,
	0x00, 0x3A, // d = 0.75: exponent 01110 (2⁻¹), mantissa 1000000000 (1.5)
}

// ptq1HandValues are (q−1)·0.75 for each element, in element order.
var ptq1HandValues = []float32{
	0, -0.75, 0, 0.75, -0.75, -0.75, 0.75, -0.75, // 0–7
	0, 0.75, -0.75, 0.75, -0.75, -0.75, -0.75, 0, // 8–15
	0, -0.75, -0.75, -0.75, 0.75, 0, -0.75, 0.75, // 16–23
	-0.75, -0.75, 0.75, 0.75, 0.75, -0.75, 0.75, 0.75, // 24–31
	0, -0.75, -0.75, -0.75, 0.75, -0.75, 0, 0, // 32–39
	-0.75, 0.75, -0.75, 0.75, 0, 0.75, 0.75, -0.75, // 40–47
	-0.75, 0.75, 0.75, 0.75, -0.75, 0, -0.75, 0.75, // 48–55
	0.75, -0.75, 0.75, -0.75, 0.75, -0.75, 0, 0.75, // 56–63
	0.75, 0, 0, 0, 0.75, 0, 0, 0, // 64–71
	-0.75, -0.75, 0.75, -0.75, -0.75, 0.75, 0, 0.75, // 72–79
	0, 0, 0.75, 0, 0, 0.75, -0.75, -0.75, // 80–87
	0.75, 0, -0.75, 0, -0.75, 0, 0, -0.75, // 88–95
	0.75, -0.75, 0.75, 0.75, 0, 0, 0.75, 0, // 96–103
	0.75, 0, 0.75, 0, -0.75, -0.75, 0, 0, // 104–111
	0.75, 0.75, -0.75, -0.75, 0.75, 0.75, 0, 0.75, // 112–119
	0.75, 0.75, 0, 0, 0.75, 0, 0.75, 0, // 120–127
}

func TestPQ2_0HandBlock(t *testing.T) {
	require.Len(t, pq2Hand, 34)
	require.Len(t, pq2HandValues, 128)

	got := make([]float32, 128)
	require.NoError(t, ternary.DecodePQ2_0(got, pq2Hand))
	assert.Equal(t, pq2HandValues, got)

	var codes [128]uint8
	scale := ternary.UnpackPQ2_0(&codes, pq2Hand)
	assert.Equal(t, uint16(0x3E00), scale)
	for j, c := range codes {
		assert.Equal(t, pq2HandValues[j], (float32(c)-1)*1.5, "element %d", j)
	}

	back := make([]byte, 34)
	ternary.PackPQ2_0(back, &codes, scale)
	assert.Equal(t, pq2Hand, back)

	// The word view of PQ2_0 (package doc, § Formats): qs[4i..4i+3] as a
	// little-endian uint32 holds elements 16i..16i+15 at bits 2j.
	for i := range 8 {
		w := binary.LittleEndian.Uint32(pq2Hand[2+4*i:])
		for j := range 16 {
			assert.Equal(t, codes[16*i+j], uint8(w>>(2*j)&3), "word %d element %d", i, j)
		}
	}
}

func TestPTQ1_0HandBlock(t *testing.T) {
	require.Len(t, ptq1Hand, 28)
	require.Len(t, ptq1HandValues, 128)

	got := make([]float32, 128)
	require.NoError(t, ternary.DecodePTQ1_0(got, ptq1Hand))
	assert.Equal(t, ptq1HandValues, got)

	var codes [128]uint8
	scale := ternary.UnpackPTQ1_0(&codes, ptq1Hand)
	assert.Equal(t, uint16(0x3A00), scale)

	back := make([]byte, 28)
	require.NoError(t, ternary.PackPTQ1_0(back, &codes, scale))
	assert.Equal(t, ptq1Hand, back)

	// The values are exactly {−d, 0, d} with max|w| = d = 0.75, so the
	// quantiser must reproduce the hand-made bytes.
	q := make([]byte, 28)
	require.NoError(t, ternary.QuantizePTQ1_0(q, ptq1HandValues))
	assert.Equal(t, ptq1Hand, q)

	// And the same codes as PQ2_0 decode identically.
	pq := make([]byte, 34)
	require.NoError(t, ternary.Transcode(pq, ternary.PQ2_0, ptq1Hand, ternary.PTQ1_0))
	require.NoError(t, ternary.DecodePQ2_0(got, pq))
	assert.Equal(t, ptq1HandValues, got)
}

// TestTritByteWorked checks the worked example of one byte.
//
// Trits (2,0,1,1,2): q = 81·2 + 27·0 + 9·1 + 3·1 + 2 = 176, and
// 176·256/243 = 45056/243 = 185.42, so the byte is 186. Decoding, with the
// product truncated to 8 bits before the ·3 >> 8:
//
//	n=0: 186·1  = 186         → 186·3 = 558 >> 8 = 2
//	n=1: 186·3  = 558  & 255 = 46  → 138 >> 8 = 0
//	n=2: 186·9  = 1674 & 255 = 138 → 414 >> 8 = 1
//	n=3: 186·27 = 5022 & 255 = 158 → 474 >> 8 = 1
//	n=4: 186·81 = 15066 & 255 = 218 → 654 >> 8 = 2
func TestTritByteWorked(t *testing.T) {
	var codes [128]uint8
	for j := range codes {
		codes[j] = 1
	}
	// Elements 0, 16, 32, 48, 64 are trits 0..4 of qs[0].
	codes[0], codes[16], codes[32], codes[48], codes[64] = 2, 0, 1, 1, 2
	// Elements 120, 122, 124, 126 are trits 0..3 of qh[0]: (2,0,1,1) gives
	// q = 54+0+3+1 = 58, 3q = 174, ceil(174·256/243) = ceil(183.31) = 184.
	codes[120], codes[122], codes[124], codes[126] = 2, 0, 1, 1
	block := make([]byte, 28)
	require.NoError(t, ternary.PackPTQ1_0(block, &codes, 0x3C00))
	assert.Equal(t, byte(186), block[0])
	assert.Equal(t, byte(184), block[24])
	// All-ones trits: q = 121, ceil(121·256/243) = ceil(127.47) = 128; for
	// qh, q = 40, 3q = 120, ceil(120·256/243) = ceil(126.42) = 127.
	assert.Equal(t, byte(128), block[1])
	assert.Equal(t, byte(127), block[25])
	assert.Equal(t, []byte{0x00, 0x3C}, block[26:])
}
