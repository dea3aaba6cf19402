package ternary_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/ternary"
)

var formats = []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0}

func TestFormatBasics(t *testing.T) {
	assert.Equal(t, "PQ2_0", ternary.PQ2_0.String())
	assert.Equal(t, "PTQ1_0", ternary.PTQ1_0.String())
	assert.Equal(t, "Format(9)", ternary.Format(9).String())
	assert.Equal(t, 34, ternary.PQ2_0.BlockBytes())
	assert.Equal(t, 28, ternary.PTQ1_0.BlockBytes())
	assert.Equal(t, 5120/128*34, ternary.PQ2_0.RowBytes(5120))
	assert.Equal(t, 17408/128*28, ternary.PTQ1_0.RowBytes(17408))
	assert.Equal(t, 0, ternary.PQ2_0.RowBytes(0))
	assert.Panics(t, func() { ternary.PQ2_0.RowBytes(100) })
	assert.Panics(t, func() { ternary.PQ2_0.RowBytes(-128) })
	assert.Panics(t, func() { ternary.Format(0).BlockBytes() })
	assert.Panics(t, func() { ternary.Format(0).TensorType() })

	assert.Equal(t, gguf.TensorType(142), ternary.PQ2_0.TensorType())
	assert.Equal(t, gguf.TensorType(143), ternary.PTQ1_0.TensorType())
	for _, f := range formats {
		g, ok := ternary.FormatOf(f.TensorType())
		assert.True(t, ok)
		assert.Equal(t, f, g)
	}
	_, ok := ternary.FormatOf(gguf.TensorType(0))
	assert.False(t, ok)
	_, ok = ternary.FormatOf(gguf.TensorType(141))
	assert.False(t, ok)

	for name, want := range map[string]ternary.Format{"pq2_0": ternary.PQ2_0, "PQ2_0": ternary.PQ2_0, "ptq1_0": ternary.PTQ1_0, "Ptq1_0": ternary.PTQ1_0} {
		got, err := ternary.ParseFormat(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
	for _, name := range []string{"", "pq2", "tq2_0", "ptq1_0 "} {
		_, err := ternary.ParseFormat(name)
		assert.ErrorIs(t, err, ternary.ErrFormat, "%q", name)
		assert.ErrorContains(t, err, fmt.Sprintf("%q", name))
	}
}

// randScale returns fp16 scale bits from a mix of the cases a codec must
// carry through untouched: normal, subnormal, ±0, negative.
func randScale(r *rand.Rand) uint16 {
	switch r.IntN(6) {
	case 0:
		return uint16(1 + r.IntN(0x3ff)) // subnormal
	case 1:
		return uint16(r.IntN(2)) << 15 // ±0
	case 2:
		return 0x8000 | uint16(0x0400+r.IntN(0x7800)) // negative normal
	}
	return uint16(0x0400 + r.IntN(0x7800)) // positive normal
}

// randTernary returns nb blocks of random codes (0..2) and scales.
func randTernary(r *rand.Rand, nb int) ([]uint8, []uint16) {
	codes := make([]uint8, nb*128)
	for i := range codes {
		codes[i] = uint8(r.IntN(3))
	}
	scales := make([]uint16, nb)
	for i := range scales {
		scales[i] = randScale(r)
	}
	return codes, scales
}

func bitsOf(v []float32) []uint32 {
	b := make([]uint32, len(v))
	for i, x := range v {
		b[i] = math.Float32bits(x)
	}
	return b
}

func TestTranscodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// 256 blocks and more run through the repacking kernels (see transcodePTQ1ToPQ2).
	for _, nb := range []int{0, 1, 2, 7, 64, 256, 257, 600} {
		codes, scales := randTernary(r, nb)

		// PTQ1_0 → PQ2_0 → PTQ1_0.
		tq := make([]byte, nb*28)
		require.NoError(t, ternary.PTQ1_0.Pack(tq, codes, scales))
		pq := make([]byte, nb*34)
		require.NoError(t, ternary.Transcode(pq, ternary.PQ2_0, tq, ternary.PTQ1_0))
		tq2 := make([]byte, nb*28)
		require.NoError(t, ternary.Transcode(tq2, ternary.PTQ1_0, pq, ternary.PQ2_0))
		assert.Equal(t, tq, tq2, "nb=%d", nb)

		// PQ2_0 → PTQ1_0 → PQ2_0, starting from an independently packed
		// PQ2_0 tensor.
		pqDirect := make([]byte, nb*34)
		require.NoError(t, ternary.PQ2_0.Pack(pqDirect, codes, scales))
		assert.Equal(t, pqDirect, pq, "nb=%d", nb)
		tq3 := make([]byte, nb*28)
		require.NoError(t, ternary.Transcode(tq3, ternary.PTQ1_0, pqDirect, ternary.PQ2_0))
		pq3 := make([]byte, nb*34)
		require.NoError(t, ternary.Transcode(pq3, ternary.PQ2_0, tq3, ternary.PTQ1_0))
		assert.Equal(t, pqDirect, pq3, "nb=%d", nb)

		// Both unpack to the codes and scales that went in.
		for _, c := range []struct {
			f    ternary.Format
			data []byte
		}{{ternary.PQ2_0, pq}, {ternary.PTQ1_0, tq}} {
			gc := make([]uint8, nb*128)
			gs := make([]uint16, nb)
			require.NoError(t, c.f.Unpack(gc, gs, c.data))
			assert.Equal(t, codes, gc, "%v nb=%d", c.f, nb)
			assert.Equal(t, scales, gs, "%v nb=%d", c.f, nb)
		}

		// And decode to bit-identical values, which are (q−1)·d.
		a := make([]float32, nb*128)
		b := make([]float32, nb*128)
		require.NoError(t, ternary.PQ2_0.Decode(a, pq))
		require.NoError(t, ternary.PTQ1_0.Decode(b, tq))
		assert.Equal(t, bitsOf(a), bitsOf(b), "nb=%d", nb)
		for i, v := range a {
			d := float64(float16.Frombits(scales[i/128]).Float32())
			require.True(t, float64(v) == (float64(codes[i])-1)*d, "element %d: %v", i, v)
		}
	}
}

func TestTranscodeCode3(t *testing.T) {
	codes := make([]uint8, 3*128)
	for i := range codes {
		codes[i] = 1
	}
	codes[2*128+37] = 3
	pq := make([]byte, 3*34)
	require.NoError(t, ternary.PQ2_0.Pack(pq, codes, []uint16{0x3C00, 0x3C00, 0x3C00}))

	tq := make([]byte, 3*28)
	err := ternary.Transcode(tq, ternary.PTQ1_0, pq, ternary.PQ2_0)
	require.ErrorIs(t, err, ternary.ErrCode3)
	assert.Contains(t, err.Error(), "block 2 element 37")
	assert.Contains(t, err.Error(), "tensor element 293")
	assert.Contains(t, err.Error(), "ternary: ")

	err = ternary.PTQ1_0.Pack(tq, codes, []uint16{0, 0, 0})
	require.ErrorIs(t, err, ternary.ErrCode3)
	assert.Contains(t, err.Error(), "block 2 element 37")

	// A single block: the error names the element, the block is untouched.
	block := make([]byte, 28)
	err = ternary.PackPTQ1_0(block, (*[128]uint8)(codes[256:]), 0x3C00)
	require.ErrorIs(t, err, ternary.ErrCode3)
	assert.Contains(t, err.Error(), "element 37")
	assert.Equal(t, make([]byte, 28), block)

	// Codes above 3 fit nowhere.
	codes[5] = 4
	require.ErrorIs(t, ternary.PQ2_0.Pack(pq, codes, []uint16{0, 0, 0}), ternary.ErrCodeRange)
	require.ErrorIs(t, ternary.PTQ1_0.Pack(tq, codes, []uint16{0, 0, 0}), ternary.ErrCodeRange)

	// Same-format transcoding is a copy, code 3 included.
	pq2 := make([]byte, len(pq))
	require.NoError(t, ternary.Transcode(pq2, ternary.PQ2_0, pq, ternary.PQ2_0))
	assert.Equal(t, pq, pq2)
}

// quantize1 quantises one block with f and returns its codes and scale.
func quantize1(t *testing.T, f ternary.Format, w []float32) ([128]uint8, uint16) {
	t.Helper()
	require.Len(t, w, 128)
	dst := make([]byte, f.BlockBytes())
	require.NoError(t, f.Quantize(dst, w))
	codes := make([]uint8, 128)
	scales := make([]uint16, 1)
	require.NoError(t, f.Unpack(codes, scales, dst))
	return [128]uint8(codes), scales[0]
}

func TestQuantizeBoundaries(t *testing.T) {
	below1 := math.Nextafter32(1, 0) // 1 − 2⁻²⁴
	w := make([]float32, 128)
	// d = 2, so 1/d = 0.5 exactly and w·(1/d) is exact: w = ±1 lands on
	// ±0.5, which rounds away from zero.
	copy(w, []float32{2, -2, 1, -1, below1, -below1, 0, float32(math.Copysign(0, -1)), 1.5, -1.5, 0.25})
	for _, f := range formats {
		codes, scale := quantize1(t, f, w)
		assert.Equal(t, uint16(0x4000), scale, "%v: d = 2", f)
		want := []uint8{2, 0, 2, 0, 1, 1, 1, 1, 2, 0, 1}
		assert.Equal(t, want, codes[:len(want)], "%v", f)
		for _, c := range codes[len(want):] {
			require.Equal(t, uint8(1), c)
		}
	}

	// d = 3: 1/d = 0.33333334 (rounded up), and the codes follow the
	// float32 product: 1.5·id rounds to exactly 0.5 (code 2) while
	// (1.5 − 2⁻²³)·id = 0.4999999752 rounds to 0.49999997 (code 1).
	for j := range w {
		w[j] = 0
	}
	copy(w, []float32{-3, 1.5, math.Nextafter32(1.5, 0), -1.5, 2, 1})
	for _, f := range formats {
		codes, scale := quantize1(t, f, w)
		assert.Equal(t, uint16(0x4200), scale, "%v: d = 3", f)
		assert.Equal(t, []uint8{0, 2, 1, 0, 2, 1}, codes[:6], "%v", f)
	}

	// Where the vendor's float32 arithmetic and exact division disagree,
	// the vendor wins.
	// d = 7: id = float32(1/7) = 0.142857149 (rounded up). w = 3.5 − 2⁻²²
	// is below d/2, yet w·id = 0.4999999883 rounds to exactly 0.5: code 2.
	for j := range w {
		w[j] = 0
	}
	w[0], w[1], w[2] = 7, math.Float32frombits(0x405fffff), -math.Float32frombits(0x405fffff)
	for _, f := range formats {
		codes, scale := quantize1(t, f, w)
		assert.Equal(t, uint16(0x4700), scale, "%v: d = 7", f)
		assert.Equal(t, []uint8{2, 2, 0}, codes[:3], "%v", f)
	}
	// d = 0x40492492 (3.142857), w = 0x3fc92492 = d/2 exactly, but
	// id = 0.3181818 is rounded down and w·id rounds to 0.49999997: code 1.
	w[0], w[1], w[2] = math.Float32frombits(0x40492492), math.Float32frombits(0x3fc92492), -math.Float32frombits(0x3fc92492)
	for _, f := range formats {
		codes, _ := quantize1(t, f, w)
		assert.Equal(t, []uint8{2, 1, 1}, codes[:3], "%v", f)
	}
}

func TestQuantizeSpecialBlocks(t *testing.T) {
	zeros := make([]float32, 128)
	// All-zero block: d = 0 and code 1 everywhere. For PQ2_0 that is 0x55
	// (0b01_01_01_01) in every qs byte; for PTQ1_0, 128 and 127 as worked
	// out in TestTritByteWorked.
	pq := make([]byte, 34)
	require.NoError(t, ternary.QuantizePQ2_0(pq, zeros))
	want := append([]byte{0, 0}, make([]byte, 32)...)
	for i := 2; i < 34; i++ {
		want[i] = 0x55
	}
	assert.Equal(t, want, pq)
	tq := make([]byte, 28)
	require.NoError(t, ternary.QuantizePTQ1_0(tq, zeros))
	want = make([]byte, 28)
	for i := range 24 {
		want[i] = 128
	}
	want[24], want[25] = 127, 127
	assert.Equal(t, want, tq)

	// The largest magnitude is negative: d is still max|w| > 0 and that
	// element gets code 0.
	w := make([]float32, 128)
	for j := range w {
		w[j] = float32(j%7-3) * 0.25 // −0.75 .. 0.75
	}
	w[17] = -5
	for _, f := range formats {
		codes, scale := quantize1(t, f, w)
		assert.Equal(t, uint16(0x4500), scale, "%v: d = 5", f) // 5 = 1.25·2²
		assert.Equal(t, uint8(0), codes[17])
		for j, c := range codes {
			if j != 17 {
				require.Equal(t, uint8(1), c, "element %d: |w| ≤ 0.75 < 2.5", j)
			}
		}
	}

	// Tiny blocks: d rounds to an fp16 subnormal or to zero, but the
	// codes still come from the float32 max|w|.
	for _, c := range []struct {
		amax  float32
		scale uint16
	}{
		{0x1p-20, 0x0010},                     // 2⁻²⁰ = 16·2⁻²⁴, subnormal
		{0x1p-30, 0x0000},                     // below half the smallest subnormal
		{0x1p-126, 0x0000},                    // smallest normal float32
		{math.SmallestNonzeroFloat32, 0x0000}, // 1/d overflows float32
	} {
		w := make([]float32, 128)
		copy(w, []float32{c.amax, -c.amax, c.amax / 4})
		for _, f := range formats {
			codes, scale := quantize1(t, f, w)
			assert.Equal(t, c.scale, scale, "%v amax %g", f, c.amax)
			assert.Equal(t, []uint8{2, 0, 1, 1}, codes[:4], "%v amax %g", f, c.amax)
		}
	}
	// The subnormal scale decodes exactly.
	w = make([]float32, 128)
	w[0], w[1] = 0x1p-20, -0x1p-20
	got := make([]float32, 128)
	require.NoError(t, ternary.QuantizePQ2_0(pq, w))
	require.NoError(t, ternary.DecodePQ2_0(got, pq))
	assert.Equal(t, w, got)
}

func TestQuantizeErrors(t *testing.T) {
	for _, f := range formats {
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			w := make([]float32, 3*128)
			w[128+9] = bad
			dst := make([]byte, 3*f.BlockBytes())
			err := f.Quantize(dst, w)
			require.ErrorIs(t, err, ternary.ErrNonFinite, "%v %v", f, bad)
			assert.Contains(t, err.Error(), "block 1 element 9")
			assert.Contains(t, err.Error(), "ternary: ")
		}

		// fp16's largest finite value is 65504; max|w| from 65520 up rounds
		// to +Inf, which the vendor would store and we refuse.
		w := make([]float32, 128)
		w[3] = -65519
		codes, scale := quantize1(t, f, w)
		assert.Equal(t, uint16(0x7BFF), scale)
		assert.Equal(t, uint8(0), codes[3])
		w[3] = -65520
		dst := make([]byte, f.BlockBytes())
		err := f.Quantize(dst, w)
		require.ErrorIs(t, err, ternary.ErrOverflow)
		assert.Contains(t, err.Error(), "block 0")
		assert.Contains(t, err.Error(), "65520")
	}
}

// TestQuantizeErrorBound checks |w − ŵ| ≤ d/2 plus what rounding d to fp16
// costs, on random blocks spanning many magnitudes.
func TestQuantizeErrorBound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const nb = 256
	w := make([]float32, nb*128)
	for i := range nb {
		mag := math.Pow(2, float64(r.IntN(40)-30)) // 2⁻³⁰ .. 2⁹
		for j := range 128 {
			w[i*128+j] = float32(r.NormFloat64() * mag)
		}
	}
	for _, f := range formats {
		dst := make([]byte, nb*f.BlockBytes())
		require.NoError(t, f.Quantize(dst, w))
		got := make([]float32, len(w))
		require.NoError(t, f.Decode(got, dst))
		for i := range nb {
			blk := w[i*128 : (i+1)*128]
			var amax float64
			for _, x := range blk {
				amax = max(amax, math.Abs(float64(x)))
			}
			d16 := float64(float16.Fromfloat32(float32(amax)).Float32())
			bound := amax*(0.5+1e-6) + math.Abs(amax-d16)
			for j, x := range blk {
				e := math.Abs(float64(x) - float64(got[i*128+j]))
				require.LessOrEqual(t, e, bound, "%v block %d element %d: w=%g got %g d=%g", f, i, j, x, got[i*128+j], amax)
			}
		}
	}
}

func TestDecodeScaleEdges(t *testing.T) {
	codes := make([]uint8, 128)
	for j := range codes {
		codes[j] = uint8(j % 4)
	}
	inf, nan := math.Inf(1), math.NaN()
	negZero := math.Copysign(0, -1)
	for _, c := range []struct {
		name  string
		scale uint16
		want  [4]float64 // values of codes 0..3
	}{
		{"smallest subnormal", 0x0001, [4]float64{-0x1p-24, 0, 0x1p-24, 0x1p-23}},
		{"largest subnormal", 0x03FF, [4]float64{-1023 * 0x1p-24, 0, 1023 * 0x1p-24, 2046 * 0x1p-24}},
		{"largest finite", 0x7BFF, [4]float64{-65504, 0, 65504, 131008}},
		{"zero", 0x0000, [4]float64{negZero, 0, 0, 0}},
		{"negative", 0xBC00, [4]float64{1, negZero, -1, -2}},
		{"+Inf", 0x7C00, [4]float64{-inf, nan, inf, inf}},
		{"-Inf", 0xFC00, [4]float64{inf, nan, -inf, -inf}},
		{"NaN", 0x7E00, [4]float64{nan, nan, nan, nan}},
	} {
		for _, f := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
			cs := codes
			if f == ternary.PTQ1_0 {
				cs = make([]uint8, 128)
				for j := range cs {
					cs[j] = uint8(j % 3)
				}
			}
			block := make([]byte, f.BlockBytes())
			require.NoError(t, f.Pack(block, cs, []uint16{c.scale}))
			got := make([]float32, 128)
			require.NoError(t, f.Decode(got, block))
			for j, v := range got {
				want := c.want[cs[j]]
				if math.IsNaN(want) {
					require.True(t, math.IsNaN(float64(v)), "%s %v element %d: %v", c.name, f, j, v)
					continue
				}
				require.Equal(t, want, float64(v), "%s %v element %d", c.name, f, j)
				require.Equal(t, math.Signbit(want), math.Signbit(float64(v)), "%s %v element %d: sign of %v", c.name, f, j, v)
			}
		}
	}
}

func TestSizeErrors(t *testing.T) {
	for _, f := range formats {
		bb := f.BlockBytes()
		for _, c := range []struct {
			name string
			err  error
			want []string // substrings the message must carry
		}{
			{"Decode dst not whole blocks", f.Decode(make([]float32, 100), make([]byte, bb)), []string{"100"}},
			{"Decode src too long", f.Decode(make([]float32, 128), make([]byte, 2*bb)), []string{"128", "need", "have"}},
			{"Decode src too short", f.Decode(make([]float32, 256), make([]byte, bb+1)), []string{"256"}},
			{"Quantize src not whole blocks", f.Quantize(make([]byte, bb), make([]float32, 129)), []string{"129"}},
			{"Quantize dst short", f.Quantize(make([]byte, bb-1), make([]float32, 128)), []string{"128"}},
			{"Unpack src ragged", f.Unpack(make([]uint8, 128), make([]uint16, 1), make([]byte, bb+3)), []string{"not a multiple"}},
			{"Unpack codes short", f.Unpack(make([]uint8, 127), make([]uint16, 1), make([]byte, bb)), []string{"127"}},
			{"Unpack scales long", f.Unpack(make([]uint8, 128), make([]uint16, 2), make([]byte, bb)), []string{"2"}},
			{"Pack dst ragged", f.Pack(make([]byte, bb-2), make([]uint8, 128), make([]uint16, 1)), []string{"not a multiple"}},
			{"Pack codes long", f.Pack(make([]byte, bb), make([]uint8, 256), make([]uint16, 1)), []string{"256"}},
			{"Transcode dst short", ternary.Transcode(make([]byte, 30), ternary.PQ2_0, make([]byte, 2*bb), f), []string{"30"}},
			{"Transcode src ragged", ternary.Transcode(make([]byte, 34), ternary.PQ2_0, make([]byte, bb+1), f), []string{"not a multiple"}},
			{"Scan ragged", scanErr(f, make([]byte, 3*bb-1)), []string{"not a multiple"}},
			{"DotRef x ragged", dotErr(f, make([]byte, bb), make([]float32, 127)), []string{"127"}},
			{"DotRef row short", dotErr(f, make([]byte, bb), make([]float32, 256)), []string{"256"}},
			{"MatVecRef k", ternary.MatVecRef(f, nil, 100, make([]float32, 100), nil), []string{"100"}},
			{"MatVecRef k negative", ternary.MatVecRef(f, nil, -128, nil, nil), []string{"-128"}},
			{"MatVecRef x", ternary.MatVecRef(f, make([]byte, bb), 128, make([]float32, 256), make([]float32, 1)), []string{"256"}},
			{"MatVecRef w", ternary.MatVecRef(f, make([]byte, bb), 128, make([]float32, 128), make([]float32, 2)), []string{"2 rows"}},
		} {
			require.ErrorIs(t, c.err, ternary.ErrSize, "%v %s", f, c.name)
			msg := c.err.Error()
			assert.Contains(t, msg, "ternary: ", "%v %s", f, c.name)
			for _, s := range c.want {
				assert.Contains(t, msg, s, "%v %s", f, c.name)
			}
		}
	}

	// An invalid Format is an error, not a panic.
	bad := ternary.Format(0)
	assert.ErrorIs(t, bad.Decode(make([]float32, 128), make([]byte, 34)), ternary.ErrFormat)
	assert.ErrorIs(t, bad.Quantize(make([]byte, 34), make([]float32, 128)), ternary.ErrFormat)
	assert.ErrorIs(t, bad.Unpack(nil, nil, nil), ternary.ErrFormat)
	assert.ErrorIs(t, bad.Pack(nil, nil, nil), ternary.ErrFormat)
	assert.ErrorIs(t, ternary.Transcode(nil, bad, nil, ternary.PQ2_0), ternary.ErrFormat)
	assert.ErrorIs(t, ternary.Transcode(nil, ternary.PQ2_0, nil, bad), ternary.ErrFormat)
	assert.ErrorIs(t, scanErr(bad, nil), ternary.ErrFormat)
	assert.ErrorIs(t, dotErr(bad, nil, nil), ternary.ErrFormat)
	assert.ErrorIs(t, ternary.MatVecRef(bad, nil, 0, nil, nil), ternary.ErrFormat)

	// The block-level functions document a panic on a short block.
	var codes [128]uint8
	assert.Panics(t, func() { ternary.UnpackPQ2_0(&codes, make([]byte, 33)) })
	assert.Panics(t, func() { ternary.PackPQ2_0(make([]byte, 33), &codes, 0) })
	assert.Panics(t, func() { ternary.UnpackPTQ1_0(&codes, make([]byte, 27)) })
	assert.Panics(t, func() { _ = ternary.PackPTQ1_0(make([]byte, 27), &codes, 0) })
	// Spare capacity is not a block.
	assert.Panics(t, func() { ternary.UnpackPQ2_0(&codes, make([]byte, 33, 64)) })
	assert.Panics(t, func() { ternary.PackPQ2_0(make([]byte, 33, 64), &codes, 0) })
	assert.Panics(t, func() { ternary.UnpackPTQ1_0(&codes, make([]byte, 27, 64)) })
	assert.Panics(t, func() { _ = ternary.PackPTQ1_0(make([]byte, 27, 64), &codes, 0) })

	// Empty tensors are fine.
	assert.NoError(t, ternary.PQ2_0.Decode(nil, nil))
	assert.NoError(t, ternary.PTQ1_0.Quantize(nil, nil))
}

func scanErr(f ternary.Format, data []byte) error {
	_, err := ternary.Scan(f, data)
	return err
}

func dotErr(f ternary.Format, row []byte, x []float32) error {
	_, err := ternary.DotRef(f, row, x)
	return err
}
