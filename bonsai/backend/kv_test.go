package backend_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/x448/float16"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

var precisions = []backend.KVPrecision{backend.KVFloat16, backend.KVFloat32, backend.KVInt8, backend.KVQ4}

func TestRowBytes(t *testing.T) {
	// Sizes worked out by hand from the layout RowBytes documents: blocks of 32 values
	// per head, int8 = codes + a float32 per block, q4 = 16 code bytes + a half per block.
	for _, c := range []struct {
		heads, dim          int
		f32, f16, int8, tq4 int
	}{
		{2, 40, 320, 160, 80 + 2*2*4, 2 * 2 * 18}, // 2 blocks a head, the second 8 values
		{1, 32, 128, 64, 32 + 4, 18},
		{4, 64, 1024, 512, 256 + 8*4, 8 * 18},
		{3, 1, 12, 6, 3 + 3*4, 3 * 18}, // a block of one value still costs a whole q4 block
		{4, 256, 4096, 2048, 1024 + 32*4, 32 * 18},
	} {
		for p, want := range map[backend.KVPrecision]int{
			backend.KVFloat32: c.f32, backend.KVFloat16: c.f16, backend.KVInt8: c.int8, backend.KVQ4: c.tq4,
		} {
			if got := p.RowBytes(c.heads, c.dim); got != want {
				t.Errorf("%v.RowBytes(%d, %d) = %d, want %d", p, c.heads, c.dim, got, want)
			}
		}
	}
	if got := backend.KVPrecision(4).RowBytes(2, 40); got != 0 {
		t.Errorf("RowBytes of an unknown precision = %d, want 0", got)
	}
}

func TestKVPrecisionValid(t *testing.T) {
	for _, p := range precisions {
		if !p.Valid() {
			t.Errorf("%v.Valid() = false", p)
		}
	}
	for _, p := range []backend.KVPrecision{4, 255} {
		if p.Valid() {
			t.Errorf("%v.Valid() = true", p)
		}
	}
}

// int8Head is one head of 40 values (two blocks, the second of 8) with the codes and
// scales worked out by hand: block 0's absmax is 63.5 = 127·0.5, block 1's 31.75 =
// 127·0.25, so x/scale is exact and the codes are x/scale rounded half away from zero.
var int8Head = struct {
	src    []float32
	codes  []int8
	scales []float32
}{
	src: append([]float32{
		63.5, -63.5, 0.25, -0.25, 0.75, 10, -3, 0.1, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5},
		-31.75, 1, 0.125, -0.375, 2.5, 0, 0, 31.75),
	codes: append([]int8{
		127, -127, 1, -1, 2, 20, -6, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10},
		-127, 4, 1, -2, 10, 0, 0, 127),
	scales: []float32{0.5, 0.25},
}

func TestQuantizeInt8(t *testing.T) {
	codes := make([]int8, 40)
	scales := make([]float32, 2)
	backend.QuantizeInt8(codes, scales, int8Head.src)
	if !slices.Equal(codes, int8Head.codes) {
		t.Errorf("codes\n%v, want\n%v", codes, int8Head.codes)
	}
	if !slices.Equal(scales, int8Head.scales) {
		t.Errorf("scales %v, want %v", scales, int8Head.scales)
	}

	// A block of zeros: scale 0, every code 0 (whatever the buffer held).
	for i := range codes {
		codes[i] = 99
	}
	backend.QuantizeInt8(codes[:5], scales[:1], make([]float32, 5))
	if !slices.Equal(codes[:5], make([]int8, 5)) || scales[0] != 0 {
		t.Errorf("a zero block: codes %v scale %v, want zeros", codes[:5], scales[0])
	}
}

// q4Head is one head of 40 values with its codes and half scales worked out by hand.
// Block 0: m = −4, d = −4/−8 = 0.5; code = round(x/d) + 8. Block 1 (8 values, the rest
// padded with code 8): m = 1.0001, m/−8 = −0.1250125 rounds to the half −0.125, so m is
// round(−8.0008)+8 = 0; −1 would be code 16 and clamps to 15; 0.0625/d = −0.5 rounds
// away from zero to −1.
var q4Head = struct {
	src    []float32
	codes  []byte // 16 a block: value j < 16 the low nibble of byte j, j ≥ 16 the high nibble of byte j−16
	scales []uint16
}{
	src: append([]float32{
		3.5, 0, 1, -4, -0.25, 0.25, 0.74, -2, 0, 0, 0, 0, 0, 0, 0, 0,
		2, -3.5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5},
		1.0001, -0.875, -1, 0.5, 0.0625, 0, -0.3, 0.2),
	codes: []byte{
		// block 0: codes 15 8 10 0 7 9 9 4 8… (low) and 12 1 8… 9 (high)
		0xCF, 0x18, 0x8A, 0x80, 0x87, 0x89, 0x89, 0x84, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x98,
		// block 1: codes 0 15 15 4 7 8 10 6, then padding 8
		0x80, 0x8F, 0x8F, 0x84, 0x87, 0x88, 0x8A, 0x86, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
	},
	scales: []uint16{0x3800, 0xB000}, // the halves 0.5 and −0.125
}

func TestQuantizeQ4(t *testing.T) {
	codes := make([]byte, 32)
	scales := make([]uint16, 2)
	backend.QuantizeQ4(codes, scales, q4Head.src)
	if !bytes.Equal(codes, q4Head.codes) {
		t.Errorf("codes\n% x, want\n% x", codes, q4Head.codes)
	}
	if !slices.Equal(scales, q4Head.scales) {
		t.Errorf("scales %#04x, want %#04x", scales, q4Head.scales)
	}

	// A block of zeros: a zero scale and every code 8.
	backend.QuantizeQ4(codes[:16], scales[:1], make([]float32, 32))
	if !bytes.Equal(codes[:16], bytes.Repeat([]byte{0x88}, 16)) {
		t.Errorf("a zero block's codes % x, want all 0x88", codes[:16])
	}
	if d := float16.Frombits(scales[0]).Float32(); d != 0 {
		t.Errorf("a zero block's scale %v, want 0", d)
	}
}

// Encode lays out a row of two heads head by head: the second head is the first
// negated, so its int8 codes are negated under the same scales, and its q4 codes are
// the same under negated scales.
func TestEncodeLayout(t *testing.T) {
	src := append(slices.Clone(int8Head.src), neg(int8Head.src)...)
	c := backend.NewKVRowCodec(2, 40)
	got := make([]byte, backend.KVInt8.RowBytes(2, 40))
	c.Encode(backend.KVInt8, got, src)
	var want []byte
	for _, q := range int8Head.codes {
		want = append(want, byte(q))
	}
	for _, q := range int8Head.codes {
		want = append(want, byte(-q))
	}
	for range 2 {
		for _, s := range int8Head.scales {
			want = binary.LittleEndian.AppendUint32(want, math.Float32bits(s))
		}
	}
	if !bytes.Equal(got, want) {
		t.Errorf("int8 row\n% x, want\n% x", got, want)
	}

	src = append(slices.Clone(q4Head.src), neg(q4Head.src)...)
	got = make([]byte, backend.KVQ4.RowBytes(2, 40))
	c.Encode(backend.KVQ4, got, src)
	want = append(slices.Clone(q4Head.codes), q4Head.codes...)
	for _, s := range q4Head.scales {
		want = binary.LittleEndian.AppendUint16(want, s)
	}
	for _, s := range q4Head.scales {
		want = binary.LittleEndian.AppendUint16(want, s^0x8000)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("q4 row\n% x, want\n% x", got, want)
	}

	src = []float32{1, -2.5, 0, 65504, 1e-8, 3, 4, 5} // 2 heads × 4
	c = backend.NewKVRowCodec(2, 4)
	got = make([]byte, backend.KVFloat16.RowBytes(2, 4))
	c.Encode(backend.KVFloat16, got, src)
	want = nil
	for _, h := range []uint16{0x3C00, 0xC100, 0x0000, 0x7BFF, 0x0000, 0x4200, 0x4400, 0x4500} {
		want = binary.LittleEndian.AppendUint16(want, h)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("f16 row\n% x, want\n% x", got, want)
	}
	got = make([]byte, backend.KVFloat32.RowBytes(2, 4))
	c.Encode(backend.KVFloat32, got, src)
	want = nil
	for _, x := range src {
		want = binary.LittleEndian.AppendUint32(want, math.Float32bits(x))
	}
	if !bytes.Equal(got, want) {
		t.Errorf("f32 row\n% x, want\n% x", got, want)
	}
}

func neg(x []float32) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = -v
	}
	return y
}

// randomRow returns heads × dim values, each block of a head with its own magnitude
// (some blocks all zero), so that the blocks' scales differ.
func randomRow(rng *rand.Rand, heads, dim int) []float32 {
	x := make([]float32, heads*dim)
	for h := range heads {
		for lo := 0; lo < dim; lo += backend.KVBlock {
			mag := float32(math.Pow(10, rng.Float64()*4-2))
			if rng.IntN(8) == 0 {
				mag = 0
			}
			for i := lo; i < min(lo+backend.KVBlock, dim); i++ {
				x[h*dim+i] = (2*rng.Float32() - 1) * mag
			}
		}
	}
	return x
}

func TestKVRowCodecRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, shape := range [][2]int{{2, 40}, {1, 32}, {3, 70}, {2, 5}} {
		heads, dim := shape[0], shape[1]
		c := backend.NewKVRowCodec(heads, dim)
		for trial := range 50 {
			src := randomRow(rng, heads, dim)
			for _, p := range precisions {
				in := slices.Clone(src)
				if p == backend.KVFloat16 {
					for i, v := range in { // values a half represents
						in[i] = float16.Fromfloat32(v).Float32()
					}
				}
				enc := make([]byte, p.RowBytes(heads, dim))
				c.Encode(p, enc, in)
				dec := make([]float32, heads*dim)
				if err := c.Decode(p, dec, enc); err != nil {
					t.Fatalf("%v %dx%d trial %d: Decode: %v", p, heads, dim, trial, err)
				}
				switch p {
				case backend.KVFloat32, backend.KVFloat16:
					for i := range in {
						if math.Float32bits(dec[i]) != math.Float32bits(in[i]) {
							t.Fatalf("%v %dx%d: value %d decodes to %v, want %v", p, heads, dim, i, dec[i], in[i])
						}
					}
				case backend.KVInt8:
					checkInt8Bound(t, heads, dim, in, dec)
				case backend.KVQ4:
					checkQ4Bound(t, heads, dim, in, dec, enc)
				}
				// What the snapshot codec relies on when it converts: a decoded row
				// encodes back to the same bytes.
				again := make([]byte, len(enc))
				c.Encode(p, again, dec)
				if !bytes.Equal(again, enc) {
					t.Fatalf("%v %dx%d trial %d: re-encoding the decoded row changes it\n% x\n% x", p, heads, dim, trial, again, enc)
				}
			}
		}
	}
}

// blocks calls f with the bounds of every block of every head.
func blocks(heads, dim int, f func(h, b, lo, hi int)) {
	for h := range heads {
		for b, lo := 0, 0; lo < dim; b, lo = b+1, lo+backend.KVBlock {
			f(h, b, h*dim+lo, h*dim+min(lo+backend.KVBlock, dim))
		}
	}
}

// checkInt8Bound: each value within half a step (absmax/127) of the original.
func checkInt8Bound(t *testing.T, heads, dim int, in, dec []float32) {
	t.Helper()
	blocks(heads, dim, func(h, b, lo, hi int) {
		amax := 0.0
		for _, x := range in[lo:hi] {
			amax = max(amax, math.Abs(float64(x)))
		}
		lim := amax/127/2 + amax*1e-6 // half a step, and float32 rounding
		for i := lo; i < hi; i++ {
			if d := math.Abs(float64(dec[i]) - float64(in[i])); d > lim {
				t.Fatalf("int8 head %d block %d: value %v decodes to %v, off by %.3g > %.3g", h, b, in[i], dec[i], d, lim)
			}
		}
	})
}

// checkQ4Bound: the block's scale is its largest magnitude m over −8, to a half's
// precision; m decodes to −8·d, and every value within half a step of the original,
// but for values beyond the top code 15 = +7·d, which decode to 7·d.
func checkQ4Bound(t *testing.T, heads, dim int, in, dec []float32, enc []byte) {
	t.Helper()
	nb := (dim + backend.KVBlock - 1) / backend.KVBlock
	blocks(heads, dim, func(h, b, lo, hi int) {
		m := 0.0
		for _, x := range in[lo:hi] {
			if math.Abs(float64(x)) > math.Abs(m) {
				m = float64(x)
			}
		}
		d := float64(float16.Frombits(binary.LittleEndian.Uint16(enc[16*heads*nb+2*(h*nb+b):])).Float32())
		if math.Abs(d-m/-8) > math.Abs(m/8)/2048 {
			t.Fatalf("q4 head %d block %d: scale %v, want %v to a half's precision", h, b, d, m/-8)
		}
		for i := lo; i < hi; i++ {
			x, got := float64(in[i]), float64(dec[i])
			if x/d > 7.5 {
				if got != 7*d {
					t.Fatalf("q4 head %d block %d: value %v beyond the top code decodes to %v, want 7·d = %v", h, b, x, got, 7*d)
				}
				continue
			}
			if diff := math.Abs(got - x); diff > math.Abs(d)/2*(1+1e-6) {
				t.Fatalf("q4 head %d block %d: value %v decodes to %v, off by %.3g > d/2 = %.3g", h, b, x, got, diff, math.Abs(d)/2)
			}
		}
	})
}

func TestKVRowCodecDecodeRefuses(t *testing.T) {
	const heads, dim = 2, 40
	c := backend.NewKVRowCodec(heads, dim)
	src := randomRow(rand.New(rand.NewPCG(1, 1)), heads, dim)
	src[0] = 1 // no zero block at the start
	n, nb := heads*dim, heads*2
	dst := make([]float32, n)

	i8 := make([]byte, backend.KVInt8.RowBytes(heads, dim))
	c.Encode(backend.KVInt8, i8, src)
	setScale := func(b int, s float32) []byte {
		r := slices.Clone(i8)
		binary.LittleEndian.PutUint32(r[n+4*b:], math.Float32bits(s))
		return r
	}
	code := slices.Clone(i8)
	code[45] = 0x80 // −128
	for name, row := range map[string][]byte{
		"code −128":      code,
		"negative scale": setScale(0, -0.5),
		"NaN scale":      setScale(3, float32(math.NaN())),
		"+Inf scale":     setScale(1, float32(math.Inf(1))),
		"−Inf scale":     setScale(2, float32(math.Inf(-1))),
	} {
		if err := c.Decode(backend.KVInt8, dst, row); !errors.Is(err, backend.ErrKVRow) {
			t.Errorf("int8 row with a %s: Decode: %v, want ErrKVRow", name, err)
		}
	}

	q4 := make([]byte, backend.KVQ4.RowBytes(heads, dim))
	c.Encode(backend.KVQ4, q4, src)
	for _, s := range []uint16{0x7C00, 0xFC00, 0x7E00, 0xFC01} { // +Inf, −Inf, NaNs
		row := slices.Clone(q4)
		binary.LittleEndian.PutUint16(row[16*nb+2*1:], s)
		if err := c.Decode(backend.KVQ4, dst, row); !errors.Is(err, backend.ErrKVRow) {
			t.Errorf("q4 row with scale %#04x: Decode: %v, want ErrKVRow", s, err)
		}
	}
	// A negative q4 scale is what the quantiser writes for a block whose largest
	// magnitude is positive: accepted.
	row := slices.Clone(q4)
	binary.LittleEndian.PutUint16(row[16*nb:], 0xB800)
	if err := c.Decode(backend.KVQ4, dst, row); err != nil {
		t.Errorf("q4 row with scale −0.5: %v", err)
	}

	if err := c.Decode(backend.KVPrecision(9), dst, i8); !errors.Is(err, backend.ErrKVRow) {
		t.Errorf("Decode of an unknown precision: %v, want ErrKVRow", err)
	}
}

func TestKVPrecisionString(t *testing.T) {
	for p, want := range map[backend.KVPrecision]string{
		backend.KVFloat16: "f16", backend.KVFloat32: "f32", backend.KVInt8: "int8", backend.KVQ4: "q4", backend.KVPrecision(9): "KVPrecision(9)",
	} {
		if got := p.String(); got != want {
			t.Errorf("KVPrecision(%d).String() = %q, want %q", uint8(p), got, want)
		}
	}
	if backend.KVPrecision(0) != backend.KVFloat16 {
		t.Error("the zero KVPrecision is not KVFloat16: fp16 is the default")
	}
}
