package grammar

import (
	"math/big"
	"strings"
)

// maxIntDigits is the most digits an integer may have (as integerRule writes them).
const maxIntDigits = 16

// intBounds reads an integer schema's minimum, maximum, exclusiveMinimum and
// exclusiveMaximum as inclusive integer bounds (nil: unbounded).
func (c *schemaCompiler) intBounds(s *jv, path string) (lo, hi *big.Int, err error) {
	read := func(key string) (*big.Rat, error) {
		v := s.get(key)
		if v == nil {
			return nil, nil
		}
		if v.kind != 'n' {
			return nil, schemaErr(key, pathJoin(path, key), "must be a number")
		}
		r, ok := new(big.Rat).SetString(v.num.String())
		if !ok {
			return nil, schemaErr(key, pathJoin(path, key), "must be a number")
		}
		limit := new(big.Rat).SetInt64(1e15)
		if r.Cmp(limit) > 0 || r.Cmp(new(big.Rat).Neg(limit)) < 0 {
			return nil, schemaErr(key, pathJoin(path, key), "%s is beyond the ±10^15 supported", v.num)
		}
		return r, nil
	}
	ceil := func(r *big.Rat) *big.Int {
		q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
		if m.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		return q
	}
	floor := func(r *big.Rat) *big.Int {
		q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
		return q
	}
	for _, k := range []struct {
		key       string
		low, excl bool
	}{{"minimum", true, false}, {"exclusiveMinimum", true, true}, {"maximum", false, false}, {"exclusiveMaximum", false, true}} {
		r, err := read(k.key)
		if err != nil {
			return nil, nil, err
		}
		if r == nil {
			continue
		}
		var b *big.Int
		switch {
		case k.low && k.excl:
			b = new(big.Int).Add(floor(r), big.NewInt(1))
		case k.low:
			b = ceil(r)
		case k.excl:
			b = new(big.Int).Sub(ceil(r), big.NewInt(1))
		default:
			b = floor(r)
		}
		if k.low && (lo == nil || b.Cmp(lo) > 0) {
			lo = b
		}
		if !k.low && (hi == nil || b.Cmp(hi) < 0) {
			hi = b
		}
	}
	if lo != nil && hi != nil && lo.Cmp(hi) > 0 {
		return nil, nil, schemaErr("minimum", path, "no integer lies between the bounds")
	}
	return lo, hi, nil
}

// intRangeRule is the rule of the integers in [lo, hi] (nil: unbounded), written
// without leading zeros.
func (c *schemaCompiler) intRangeRule(lo, hi *big.Int) int32 {
	b := c.b
	r := b.newRule("integer-range")
	zero := big.NewInt(0)
	// The non-negative part: [max(lo, 0), hi].
	if hi == nil || hi.Sign() >= 0 {
		from := zero
		if lo != nil && lo.Sign() > 0 {
			from = lo
		}
		for _, seq := range c.natRange(from.String(), hi) {
			b.addAlt(r, seq...)
		}
	}
	// The negative part: "-" and the magnitudes in [max(1, -hi), -lo].
	if lo == nil || lo.Sign() < 0 {
		from := big.NewInt(1)
		if hi != nil && hi.Sign() < 0 {
			from = new(big.Int).Neg(hi)
		}
		var to *big.Int
		if lo != nil {
			to = new(big.Int).Neg(lo)
		}
		for _, seq := range c.natRange(from.String(), to) {
			b.addAlt(r, append(b.lit("-"), seq...)...)
		}
	}
	return r
}

// natRange returns sequences matching the naturals in [lo, hi] (hi nil: up to
// maxIntDigits digits).
func (c *schemaCompiler) natRange(lo string, hi *big.Int) [][]elem {
	his := strings.Repeat("9", maxIntDigits)
	if hi != nil {
		his = hi.String()
	}
	var out [][]elem
	for n := len(lo); n <= len(his); n++ {
		from, to := lo, his
		if n > len(lo) {
			from = "1" + strings.Repeat("0", n-1)
		}
		if n < len(his) {
			to = strings.Repeat("9", n)
		}
		if from <= to {
			out = append(out, c.sameLength(from, to)...)
		}
	}
	return out
}

// sameLength returns sequences matching the digit strings of one length in [lo, hi].
func (c *schemaCompiler) sameLength(lo, hi string) [][]elem {
	b := c.b
	digit := func(a, z byte) elem {
		var s byteSet
		s.addRange(a, z)
		return b.term(s)
	}
	if lo == "" {
		return [][]elem{nil}
	}
	rest := len(lo) - 1
	any := func(n int) []elem {
		seq := make([]elem, n)
		for i := range seq {
			seq[i] = digit('0', '9')
		}
		return seq
	}
	if lo[0] == hi[0] {
		var out [][]elem
		for _, s := range c.sameLength(lo[1:], hi[1:]) {
			out = append(out, append([]elem{digit(lo[0], lo[0])}, s...))
		}
		return out
	}
	if strings.Trim(lo[1:], "0") == "" && strings.Trim(hi[1:], "9") == "" {
		return [][]elem{append([]elem{digit(lo[0], hi[0])}, any(rest)...)}
	}
	var out [][]elem
	for _, s := range c.sameLength(lo[1:], strings.Repeat("9", rest)) {
		out = append(out, append([]elem{digit(lo[0], lo[0])}, s...))
	}
	if lo[0]+1 <= hi[0]-1 {
		out = append(out, append([]elem{digit(lo[0]+1, hi[0]-1)}, any(rest)...))
	}
	for _, s := range c.sameLength(strings.Repeat("0", rest), hi[1:]) {
		out = append(out, append([]elem{digit(hi[0], hi[0])}, s...))
	}
	return out
}
