package grammar

import (
	"math/big"
	"strconv"
)

// Numbers with bounds and integers or numbers with multipleOf.
//
// A number with minimum, maximum, exclusiveMinimum or exclusiveMaximum is written
// without an exponent, its integer part bounded as an integer's is; the bounds must be
// integers (0, 100, -1.0): a fractional bound is refused. multipleOf is a positive
// integer up to maxMultiple, or a power of ten below one (0.1, 0.01, …: at most that
// many decimals) on a number; it cannot be combined with bounds.

// maxMultiple is the largest integer multipleOf: its automaton has that many states.
const maxMultiple = 1000

// bound is one side of a range: an integer, exclusive or not (nil value: none).
type bound struct {
	v    *big.Int
	excl bool
}

// numBounds reads a number schema's bounds, which must be integers.
func (c *schemaCompiler) numBounds(s *jv, path string) (lo, hi bound, err error) {
	for _, k := range []struct {
		key       string
		low, excl bool
	}{{"minimum", true, false}, {"exclusiveMinimum", true, true}, {"maximum", false, false}, {"exclusiveMaximum", false, true}} {
		v := s.get(k.key)
		if v == nil {
			continue
		}
		r, ok := new(big.Rat).SetString(v.num.String())
		if v.kind != 'n' || !ok {
			return lo, hi, schemaErr(k.key, pathJoin(path, k.key), "must be a number")
		}
		if !r.IsInt() {
			return lo, hi, schemaErr(k.key, pathJoin(path, k.key), "%s: only integer bounds are supported on numbers", v.num)
		}
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(15), nil)
		n := r.Num()
		if new(big.Int).Abs(n).Cmp(limit) > 0 {
			return lo, hi, schemaErr(k.key, pathJoin(path, k.key), "%s is beyond the ±10^15 supported", v.num)
		}
		b := bound{n, k.excl}
		if k.low && (lo.v == nil || n.Cmp(lo.v) > 0 || n.Cmp(lo.v) == 0 && k.excl) {
			lo = b
		}
		if !k.low && (hi.v == nil || n.Cmp(hi.v) < 0 || n.Cmp(hi.v) == 0 && k.excl) {
			hi = b
		}
	}
	return lo, hi, nil
}

// numberRangeRule is the rule of the numbers in the range, without an exponent; ok is
// false when the range holds no number.
func (c *schemaCompiler) numberRangeRule(lo, hi bound) (int32, bool) {
	b := c.b
	r := b.newRule("number-range")
	zero := big.NewInt(0)
	n := 0
	// Non-negative values: lo raised to 0 (inclusive) when below it.
	if hi.v == nil || hi.v.Sign() > 0 || hi.v.Sign() == 0 && !hi.excl {
		l := lo
		if l.v == nil || l.v.Sign() < 0 {
			l = bound{zero, false}
		}
		for _, seq := range c.nonNeg(l, hi) {
			b.addAlt(r, seq...)
			n++
		}
	}
	// Negative values -y, y > 0: y between -hi and -lo.
	if lo.v == nil || lo.v.Sign() < 0 {
		yl := bound{zero, true}
		if hi.v != nil && hi.v.Sign() < 0 {
			yl = bound{new(big.Int).Neg(hi.v), hi.excl}
		}
		var yh bound
		if lo.v != nil {
			yh = bound{new(big.Int).Neg(lo.v), lo.excl}
		}
		for _, seq := range c.nonNeg(yl, yh) {
			b.addAlt(r, append(b.lit("-"), seq...)...)
			n++
		}
	}
	return r, n > 0
}

// nonNeg returns the sequences of the non-negative decimals x, lo.v <= x (< when
// exclusive) and x <= hi.v (<), lo.v not nil and not negative, hi.v nil or not negative.
func (c *schemaCompiler) nonNeg(lo, hi bound) [][]elem {
	b := c.b
	one := big.NewInt(1)
	var out [][]elem
	// An integer part strictly inside the range: any fraction.
	from := lo.v
	if lo.excl {
		from = new(big.Int).Add(lo.v, one)
	}
	var to *big.Int
	if hi.v != nil {
		to = new(big.Int).Sub(hi.v, one)
	}
	if to == nil || from.Cmp(to) <= 0 {
		for _, seq := range c.natRange(from.String(), to) {
			out = append(out, append(seq, ref(c.fracRule(fracAny))))
		}
	}
	// lo itself, excluded: a non-zero fraction.
	if lo.excl && (hi.v == nil || hi.v.Cmp(lo.v) > 0) {
		out = append(out, append(b.lit(lo.v.String()), ref(c.fracRule(fracNonZero))))
	}
	// hi itself, included: a zero fraction.
	if hi.v != nil && !hi.excl && (hi.v.Cmp(lo.v) > 0 || hi.v.Cmp(lo.v) == 0 && !lo.excl) {
		out = append(out, append(b.lit(hi.v.String()), ref(c.fracRule(fracZero))))
	}
	return out
}

const (
	fracAny     = iota // none, or "." and 1 to 16 digits
	fracZero           // none, or "." and 1 to 16 zeros
	fracNonZero        // "." and digits, one of them not zero
)

func (c *schemaCompiler) fracRule(kind int) int32 {
	if c.fracs == nil {
		c.fracs = map[int]int32{}
	}
	if r, ok := c.fracs[kind]; ok {
		return r
	}
	b := c.b
	d, d19 := digits(b)
	r := b.newRule("fraction")
	switch kind {
	case fracAny:
		b.addAlt(r)
		b.addAlt(r, append(b.lit("."), ref(b.repeat("fdigits", []elem{d}, 1, 16)))...)
	case fracZero:
		b.addAlt(r)
		b.addAlt(r, append(b.lit("."), ref(b.repeat("fzeros", b.lit("0"), 1, 16)))...)
	case fracNonZero:
		b.addAlt(r, append(b.lit("."), ref(b.repeat("fzeros", b.lit("0"), 0, 15)), d19, ref(b.repeat("fdigits", []elem{d}, 0, 15)))...)
	}
	c.fracs[kind] = r
	return r
}

// multipleRule is the rule of the integers that are multiples of k: the states of
// the remainder of the digits read so far, divided by k.
func (c *schemaCompiler) multipleRule(k int) int32 {
	b := c.b
	rem := make([]int32, k)
	for i := range rem {
		rem[i] = b.newRule("rem" + strconv.Itoa(i))
	}
	for i := range rem {
		if i == 0 {
			b.addAlt(rem[i])
		}
		// Digits that lead to the same remainder share an alternative.
		var to = map[int]*byteSet{}
		var order []int
		for dg := range 10 {
			n := (i*10 + dg) % k
			if to[n] == nil {
				to[n] = &byteSet{}
				order = append(order, n)
			}
			to[n].add(byte('0' + dg))
		}
		for _, n := range order {
			b.addAlt(rem[i], b.term(*to[n]), ref(rem[n]))
		}
	}
	// The first digit: 0 alone, or 1-9 then the rest.
	first := b.newRule("multiple")
	b.addAlt(first, b.lit("0")...)
	for dg := 1; dg <= 9; dg++ {
		b.addAlt(first, b.term(single(byte('0'+dg))), ref(rem[dg%k]))
	}
	sign := b.newRule("sign")
	b.addAlt(sign)
	b.addAlt(sign, b.lit("-")...)
	return b.seqRule("multiple-of", ref(sign), ref(first))
}

// decimalsRule is the rule of the numbers with at most n decimals other than trailing
// zeros, without exponent.
func (c *schemaCompiler) decimalsRule(n int) int32 {
	b := c.b
	d, _ := digits(b)
	frac := b.newRule("frac")
	b.addAlt(frac)
	// Zeros may follow: 1.50 is a multiple of 0.01.
	b.addAlt(frac, append(b.lit("."), ref(b.repeat("fdigits", []elem{d}, 1, n)), ref(b.repeat("fzeros", b.lit("0"), 0, 16)))...)
	return b.seqRule("decimals", ref(c.integerRule()), ref(frac))
}

// multipleOf reads multipleOf: an integer k (ok) or 10^-n (decimals n).
func (c *schemaCompiler) multipleOf(s *jv, path string) (k, decimals int, err error) {
	v := s.get("multipleOf")
	if v == nil {
		return 0, 0, nil
	}
	p := pathJoin(path, "multipleOf")
	r, ok := new(big.Rat).SetString(v.num.String())
	if v.kind != 'n' || !ok || r.Sign() <= 0 {
		return 0, 0, schemaErr("multipleOf", p, "must be a positive number")
	}
	for _, key := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
		if s.get(key) != nil {
			return 0, 0, schemaErr("multipleOf", p, "multipleOf beside %s is not supported", key)
		}
	}
	if r.IsInt() {
		if !r.Num().IsInt64() || r.Num().Int64() > maxMultiple {
			return 0, 0, schemaErr("multipleOf", p, "%s is more than the %d supported", v.num, maxMultiple)
		}
		return int(r.Num().Int64()), 0, nil
	}
	// 10^-n: numerator 1, denominator a power of ten.
	if r.Num().Cmp(big.NewInt(1)) == 0 {
		d := new(big.Int).Set(r.Denom())
		n := 0
		ten := big.NewInt(10)
		for d.Cmp(big.NewInt(1)) > 0 && n <= 16 {
			q, m := new(big.Int).DivMod(d, ten, new(big.Int))
			if m.Sign() != 0 {
				break
			}
			d, n = q, n+1
		}
		if d.Cmp(big.NewInt(1)) == 0 && n <= 16 {
			return 0, n, nil
		}
	}
	return 0, 0, schemaErr("multipleOf", p, "%s: only a positive integer or a power of ten (0.1, 0.01, …) is supported", v.num)
}
