package ternary

import (
	"encoding/binary"
	"fmt"
)

// Stats summarises the blocks of a ternary tensor: the numbers worth
// checking on a downloaded file before trusting it.
type Stats struct {
	Blocks int64    // blocks scanned
	Codes  [4]int64 // histogram of codes 0..3 over all elements

	// ZeroFraction is the fraction of elements holding code 1, whose value
	// is an exact zero whatever the scale.
	ZeroFraction float64

	// MinScale and MaxScale are the extremes, by value, of the finite
	// scales (a file may hold negative ones). Both are 0 when no scale is
	// finite.
	MinScale, MaxScale float32

	ZeroScales      int64 // scales equal to ±0
	SubnormalScales int64 // nonzero scales below the smallest normal fp16, 2⁻¹⁴
	NegativeScales  int64 // scales below zero, −Inf included
	NonFiniteScales int64 // ±Inf and NaN scales
	Code3           int64 // blocks holding at least one code 3 (Codes[3] counts elements)

	// NonCanonical counts PTQ1_0 bytes that the encoder never writes (13 of
	// the 256 qs values, and qh values whose unused fifth trit is not 0).
	// They decode to valid trits, but do not survive a round trip through
	// codes bit for bit.
	NonCanonical int64
}

// Scan gathers the Stats of the blocks in data, stored in format f. It
// returns an error wrapping [ErrSize] if data is not a whole number of
// blocks. Scan reports what it finds and judges nothing; [Stats.Check]
// applies the rules a ternary checkpoint must meet.
func Scan(f Format, data []byte) (Stats, error) {
	nb, err := f.blocks("Scan data", data)
	if err != nil {
		return Stats{}, err
	}
	var s Stats
	s.Blocks = int64(nb)
	var sc scaleStats
	bb := f.BlockBytes()
	for i := range nb {
		b := data[i*bb : (i+1)*bb]
		if f == PQ2_0 {
			before := s.Codes[3]
			histPQ2_0(&s.Codes, b[2:])
			if s.Codes[3] != before {
				s.Code3++
			}
			sc.add(&s, binary.LittleEndian.Uint16(b))
			continue
		}
		var sum uint32
		var odd int64
		for _, v := range b[:24] {
			sum += countQS[v]
			if !canonQS[v] {
				odd++
			}
		}
		for _, v := range b[24:26] {
			sum += countQH[v]
			if !canonQH[v] {
				odd++
			}
		}
		s.Codes[0] += int64(sum & 0xff)
		s.Codes[1] += int64(sum >> 8 & 0xff)
		s.Codes[2] += int64(sum >> 16 & 0xff)
		s.NonCanonical += odd
		sc.add(&s, binary.LittleEndian.Uint16(b[26:]))
	}
	s.zeroFraction()
	return s, nil
}

// scaleStats tracks whether a finite scale has been seen yet.
type scaleStats struct{ seen bool }

func (sc *scaleStats) add(s *Stats, h uint16) {
	exp, mant, neg := h>>10&0x1f, h&0x3ff, h>>15 != 0
	if exp == 0x1f {
		s.NonFiniteScales++
		if mant == 0 && neg {
			s.NegativeScales++
		}
		return
	}
	switch {
	case exp == 0 && mant == 0:
		s.ZeroScales++
		neg = false // −0 is not below zero
	case exp == 0:
		s.SubnormalScales++
	}
	if neg {
		s.NegativeScales++
	}
	d := fp16(h)
	if !sc.seen {
		s.MinScale, s.MaxScale, sc.seen = d, d, true
		return
	}
	s.MinScale = min(s.MinScale, d)
	s.MaxScale = max(s.MaxScale, d)
}

func (s *Stats) zeroFraction() {
	s.ZeroFraction = 0
	if s.Blocks > 0 {
		s.ZeroFraction = float64(s.Codes[1]) / float64(s.Blocks*BlockSize)
	}
}

// Merge adds the counts of o to s, as if the blocks o describes had been
// scanned together with those of s: use it for a tensor scanned in pieces.
func (s *Stats) Merge(o Stats) {
	sFinite := s.Blocks - s.NonFiniteScales
	oFinite := o.Blocks - o.NonFiniteScales
	switch {
	case sFinite == 0:
		s.MinScale, s.MaxScale = o.MinScale, o.MaxScale
	case oFinite > 0:
		s.MinScale = min(s.MinScale, o.MinScale)
		s.MaxScale = max(s.MaxScale, o.MaxScale)
	}
	s.Blocks += o.Blocks
	for i := range s.Codes {
		s.Codes[i] += o.Codes[i]
	}
	s.ZeroScales += o.ZeroScales
	s.SubnormalScales += o.SubnormalScales
	s.NegativeScales += o.NegativeScales
	s.NonFiniteScales += o.NonFiniteScales
	s.Code3 += o.Code3
	s.NonCanonical += o.NonCanonical
	s.zeroFraction()
}

// Check returns an error if the scanned blocks break the ternary contract:
// a non-finite scale (its elements decode to NaN or ±Inf) or code 3 (a
// value of +2d, which the quantiser never writes). Zero, subnormal and
// negative scales still decode to well-defined ternary values and pass.
func (s Stats) Check() error {
	switch {
	case s.NonFiniteScales > 0:
		return fmt.Errorf("ternary: %d of %d blocks have a non-finite scale", s.NonFiniteScales, s.Blocks)
	case s.Codes[3] > 0:
		return fmt.Errorf("%w: %d elements in %d of %d blocks", ErrCode3, s.Codes[3], s.Code3, s.Blocks)
	}
	return nil
}
