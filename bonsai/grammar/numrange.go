package grammar

import (
	"math/big"
)

// Numbers with bounds and integers or numbers with multipleOf.
//
// A number with minimum, maximum, exclusiveMinimum or exclusiveMaximum is written
// without an exponent; its bounds are decimals within ±10^15 of at most
// maxBoundDecimals decimals. The integer part is bounded as an integer's is, and the
// fraction, of at most maxFracDigits digits, digit by digit (fracDigits). multipleOf
// is a positive integer up to maxMultiple (the multiple then has at most maxIntDigits
// digits), or a power of ten below one (0.1, 0.01, …: at most that many decimals, and
// trailing zeros) on a number; it cannot be combined with bounds. No digit is allowed
// from which the number cannot end.

// maxMultiple is the largest integer multipleOf: its grammar has maxIntDigits rules
// for each remainder.
const maxMultiple = 1000

// maxBoundDecimals is the most decimals a number's bound may have, and
// maxFracDigits the most a bounded number's fraction is written with: a model cannot
// spend its tokens on digits.
const (
	maxBoundDecimals = 16
	maxFracDigits    = maxBoundDecimals + 2
)

// bound is one side of a range, exclusive or not (nil value: none).
type bound struct {
	v    *big.Rat
	excl bool
}

// numBounds reads a number schema's bounds.
func (c *schemaCompiler) numBounds(s *jv, path string) (lo, hi bound, err error) {
	limit := new(big.Rat).SetInt64(1e15)
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
		if new(big.Rat).Abs(r).Cmp(limit) > 0 {
			return lo, hi, schemaErr(k.key, pathJoin(path, k.key), "%s is beyond the ±10^15 supported", v.num)
		}
		if _, frac := splitDecimal(new(big.Rat).Abs(r)); len(frac) > maxBoundDecimals {
			return lo, hi, schemaErr(k.key, pathJoin(path, k.key), "%s has more than the %d decimals supported", v.num, maxBoundDecimals)
		}
		b := bound{r, k.excl}
		if k.low && (lo.v == nil || r.Cmp(lo.v) > 0 || r.Cmp(lo.v) == 0 && k.excl) {
			lo = b
		}
		if !k.low && (hi.v == nil || r.Cmp(hi.v) < 0 || r.Cmp(hi.v) == 0 && k.excl) {
			hi = b
		}
	}
	return lo, hi, nil
}

// splitDecimal splits a non-negative finite decimal into its integer part and the
// digits of its fraction, without trailing zeros (at most maxBoundDecimals+1 of them:
// more only says there are too many).
func splitDecimal(r *big.Rat) (*big.Int, string) {
	n, rem := new(big.Int).QuoRem(r.Num(), r.Denom(), new(big.Int))
	var digits []byte
	ten := big.NewInt(10)
	for rem.Sign() != 0 && len(digits) <= maxBoundDecimals {
		rem.Mul(rem, ten)
		d, m := new(big.Int).QuoRem(rem, r.Denom(), new(big.Int))
		digits = append(digits, byte('0'+d.Int64()))
		rem = m
	}
	return n, string(digits)
}

// numberRangeRule is the rule of the numbers in the range, without an exponent; ok is
// false when the range holds no number.
func (c *schemaCompiler) numberRangeRule(lo, hi bound) (int32, bool) {
	b := c.b
	r := b.newRule("number-range")
	zero := new(big.Rat)
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
			yl = bound{new(big.Rat).Neg(hi.v), hi.excl}
		}
		var yh bound
		if lo.v != nil {
			yh = bound{new(big.Rat).Neg(lo.v), lo.excl}
		}
		for _, seq := range c.nonNeg(yl, yh) {
			b.addAlt(r, append(b.lit("-"), seq...)...)
			n++
		}
	}
	return r, n > 0
}

// nonNeg returns the sequences of the non-negative decimals x, lo.v <= x (< when
// exclusive) and x <= hi.v (<), lo.v not nil and not negative, hi.v nil or not
// negative: x = I.F, I the integer part, F the fraction's digits.
func (c *schemaCompiler) nonNeg(lo, hi bound) [][]elem {
	b := c.b
	one := big.NewInt(1)
	// with adds the integer part ip and the fractions of spec, when there are some: a
	// sequence that cannot be completed would be a trap for the model.
	with := func(out [][]elem, ip []elem, spec fracSpec) [][]elem {
		if f, ok := c.fracRule(spec); ok {
			out = append(out, append(ip, ref(f)))
		}
		return out
	}
	a, bf := splitDecimal(lo.v)
	var out [][]elem
	if hi.v == nil {
		// I above lo's integer part: any fraction; I equal: a fraction above lo's.
		free, _ := c.fracRule(fracSpec{free: true})
		for _, seq := range c.natRange(new(big.Int).Add(a, one).String(), nil) {
			out = append(out, append(seq, ref(free)))
		}
		return with(out, b.lit(a.String()), fracSpec{lo: bf, loEx: lo.excl, hasLo: true})
	}
	ci, df := splitDecimal(hi.v)
	switch a.Cmp(ci) {
	case 1:
		return nil
	case 0:
		return with(nil, b.lit(a.String()), fracSpec{lo: bf, loEx: lo.excl, hasLo: true, hi: df, hiEx: hi.excl, hasHi: true})
	}
	if from, to := new(big.Int).Add(a, one), new(big.Int).Sub(ci, one); from.Cmp(to) <= 0 {
		free, _ := c.fracRule(fracSpec{free: true})
		for _, seq := range c.natRange(from.String(), to) {
			out = append(out, append(seq, ref(free)))
		}
	}
	out = with(out, b.lit(a.String()), fracSpec{lo: bf, loEx: lo.excl, hasLo: true})
	return with(out, b.lit(ci.String()), fracSpec{hi: df, hiEx: hi.excl, hasHi: true})
}

// fracSpec says which fractions 0.F a range allows: above lo (digits without trailing
// zeros; exclusive or not) when hasLo, below hi when hasHi, or any (free).
type fracSpec struct {
	lo, hi             string
	loEx, hiEx         bool
	hasLo, hasHi, free bool
	n                  int // digits read
}

// fracRule is the rule of the fractions of spec, as JSON writes them: nothing (a
// fraction of 0) or "." and digits; ok is false when spec allows none.
func (c *schemaCompiler) fracRule(spec fracSpec) (int32, bool) {
	if spec.free {
		spec = fracSpec{free: true}
	}
	if c.fracs == nil {
		c.fracs = map[fracSpec]int32{}
	}
	if r, ok := c.fracs[spec]; ok {
		return r, r >= 0
	}
	digits, empty := c.fracDigits(spec, map[fracSpec]int32{})
	if digits < 0 && !empty {
		c.fracs[spec] = -1
		return -1, false
	}
	b := c.b
	r := b.newRule("fraction")
	c.fracs[spec] = r
	if empty {
		b.addAlt(r)
	}
	if digits >= 0 {
		b.addAlt(r, b.term(single('.')), ref(digits))
	}
	return r, true
}

// fracDigits returns the rule of the non-empty digit strings F with 0.F in spec
// (-1 when none), and whether the empty string, 0, is in it too. The digits are
// read one at a time: while F follows lo's (or hi's) digits, the bound holds on; a
// digit above lo's (below hi's) frees that side. Past a bound's last digit it reads
// as zeros. At most maxFracDigits are read, and only the digits from which the
// fraction can still end are allowed.
func (c *schemaCompiler) fracDigits(spec fracSpec, memo map[fracSpec]int32) (int32, bool) {
	// The empty rest: the value 0 from here.
	empty := (!spec.hasLo || spec.lo == "" && !spec.loEx) && (!spec.hasHi || spec.hi != "" || !spec.hiEx)
	// Past both bounds' digits, or past hi's when it is exclusive, only zeros are
	// left: 0 itself when both sides include it, else nothing (zeros would loop on).
	if spec.hasHi && spec.hi == "" && (spec.hiEx || spec.hasLo && spec.lo == "" && spec.loEx) {
		return -1, false
	}
	if r, ok := memo[spec]; ok {
		return r, empty
	}
	if spec.n == maxFracDigits {
		return -1, empty
	}
	b := c.b
	r := b.newRule("fraction-digits")
	memo[spec] = r
	groups := map[fracSpec]*byteSet{}
	var order []fracSpec
	for d := byte('0'); d <= '9'; d++ {
		next := fracSpec{free: spec.free, n: spec.n + 1}
		if spec.hasLo && !spec.free {
			l := byte('0')
			rest := ""
			if spec.lo != "" {
				l, rest = spec.lo[0], spec.lo[1:]
			}
			switch {
			case d < l:
				continue
			case d == l:
				next.lo, next.loEx, next.hasLo = rest, spec.loEx, true
			}
		}
		if spec.hasHi && !spec.free {
			h := byte('0')
			rest := ""
			if spec.hi != "" {
				h, rest = spec.hi[0], spec.hi[1:]
			}
			switch {
			case d > h:
				continue
			case d == h:
				next.hi, next.hiEx, next.hasHi = rest, spec.hiEx, true
			}
		}
		if !spec.free && !next.hasLo && !next.hasHi {
			next.free = true
		}
		if groups[next] == nil {
			groups[next] = &byteSet{}
			order = append(order, next)
		}
		groups[next].add(d)
	}
	alts := 0
	for _, next := range order {
		sub, subEmpty := c.fracDigits(next, memo)
		t := b.term(*groups[next])
		if subEmpty {
			b.addAlt(r, t)
			alts++
		}
		if sub >= 0 {
			b.addAlt(r, t, ref(sub))
			alts++
		}
	}
	if alts == 0 {
		return -1, empty
	}
	return r, empty
}

// multipleRule is the rule of the integers of at most maxIntDigits digits that are
// multiples of k: the states of the remainder of the digits read so far, divided by
// k, one layer a digit.
func (c *schemaCompiler) multipleRule(k int) int32 {
	b := c.b
	// live[n][i]: remainder i can reach 0 within n more digits; only those are
	// allowed, so that no digit leads where the number cannot end.
	live := make([][]bool, maxIntDigits)
	for n := range live {
		live[n] = make([]bool, k)
		live[n][0] = true
		for i := 1; n > 0 && i < k; i++ {
			for dg := range 10 {
				live[n][i] = live[n][i] || live[n-1][(i*10+dg)%k]
			}
		}
	}
	// rem[n][i]: n more digits at most, remainder i so far.
	rem := make([][]int32, maxIntDigits)
	for n := range rem {
		rem[n] = make([]int32, k)
		for i := range k {
			rem[n][i] = b.newRule("rem")
		}
	}
	for n := range rem {
		for i := range k {
			if i == 0 {
				b.addAlt(rem[n][i])
			}
			if n == 0 {
				continue
			}
			// Digits that lead to the same remainder share an alternative.
			to := map[int]*byteSet{}
			var order []int
			for dg := range 10 {
				m := (i*10 + dg) % k
				if !live[n-1][m] {
					continue
				}
				if to[m] == nil {
					to[m] = &byteSet{}
					order = append(order, m)
				}
				to[m].add(byte('0' + dg))
			}
			for _, m := range order {
				b.addAlt(rem[n][i], b.term(*to[m]), ref(rem[n-1][m]))
			}
		}
	}
	// The first digit: 0 alone, or 1-9 then the rest.
	first := b.newRule("multiple")
	b.addAlt(first, b.lit("0")...)
	for dg := 1; dg <= 9; dg++ {
		if live[maxIntDigits-1][dg%k] {
			b.addAlt(first, b.term(single(byte('0'+dg))), ref(rem[maxIntDigits-1][dg%k]))
		}
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
