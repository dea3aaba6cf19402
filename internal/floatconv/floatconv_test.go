package floatconv

import (
	"math"
	"testing"
)

func TestBF16RoundTripAll(t *testing.T) {
	// Every bfloat16 widens and narrows back to itself (NaNs to some NaN).
	for b := 0; b < 1<<16; b++ {
		f := BF16ToFloat32(uint16(b))
		got := Float32ToBF16(f)
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(BF16ToFloat32(got))) {
				t.Fatalf("NaN %#04x narrowed to non-NaN %#04x", b, got)
			}
			continue
		}
		if got != uint16(b) {
			t.Fatalf("%#04x -> %g -> %#04x", b, f, got)
		}
	}
}

func TestFloat32ToBF16Rounding(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1.0 exact
		{0x3f808000, 0x3f80}, // halfway, even below: stays
		{0x3f818000, 0x3f82}, // halfway, odd below: rounds up to even
		{0x3f808001, 0x3f81}, // just above halfway
		{0x3f807fff, 0x3f80}, // just below halfway
		{0xbf808001, 0xbf81}, // negative, above halfway in magnitude
		{0x7f7fffff, 0x7f80}, // largest float32 overflows to +Inf
		{0x00000001, 0x0000}, // smallest subnormal rounds to zero
	}
	for _, c := range cases {
		if got := Float32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("Float32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}
