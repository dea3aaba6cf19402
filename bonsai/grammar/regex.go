package grammar

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The pattern keyword: a subset of ECMA-262 regular expressions, parsed here and
// compiled into the rules of a string's content.
//
// Supported: literal characters; the escapes \d \D \w \W \s \S (ECMA's sets: \s
// includes \v and the Unicode spaces), \n \r \t \f \v \0, \xHH, \uHHHH (not a
// surrogate) and a backslash before any punctuation; "." (any character but a line
// terminator: \n, \r, U+2028, U+2029); classes [a-z], [^...], with those escapes and
// \b (backspace) inside; groups (...), (?:...) and (?<name>...); alternation |;
// the quantifiers * + ? {n} {n,} {n,m} and their lazy forms (the same language);
// the anchors ^ and $ at the start and end of the pattern or of one of its top-level
// alternatives. A "{" that does not begin a quantifier is a literal, as in ECMA's
// Annex B.
//
// As JSON Schema reads a pattern, it is unanchored: an alternative that does not begin
// with ^ may be preceded by any text, one that does not end with $ followed by any
// text — the grammar allows exactly the strings that contain a match.
//
// Refused, with an error naming the keyword: backreferences (\1, \k<name>),
// lookaround ((?=, (?!, (?<=, (?<!), word boundaries (\b \B), Unicode properties
// (\p), control escapes (\c), anchors elsewhere, a quantifier above maxRepeat, and
// nested quantifiers whose product exceeds maxExpansion (the automaton would grow
// with it), and a pattern that matches no string (an alternative that matches none,
// such as one with [], is left out).
//
// Characters are written as JSON's shortest form (classRule): the character itself,
// \" \\ \b \f \n \r \t, or \u00xx (lower case) for other control characters; the
// grammar accepts no other escape of them (a subset of the strings JSON allows).

// Limits on what a pattern may ask.
const (
	maxPatternLen = 4096 // bytes of a pattern
	maxRepeat     = 1000 // the largest count of {n,m}
	maxExpansion  = 1000 // the product of nested counts: a state may hold as many parse stacks
	maxReDepth    = 64   // nesting of groups
	maxRune       = utf8.MaxRune
)

type reOp uint8

const (
	reClass  reOp = iota // one character of cls
	reCat                // subs in sequence
	reAlt                // one of subs
	reRepeat             // subs[0], min to max times (max < 0: unbounded)
	reBegin              // ^
	reEnd                // $
)

// rrange is an inclusive range of code points.
type rrange struct{ lo, hi rune }

type reNode struct {
	op       reOp
	cls      []rrange // sorted, disjoint, not adjacent
	subs     []*reNode
	min, max int
}

// regexError is a pattern outside the subset; the caller names the keyword and path.
type regexError struct {
	pos int
	msg string
}

func (e *regexError) Error() string {
	if e.pos < 0 {
		return e.msg
	}
	return fmt.Sprintf("at offset %d: %s", e.pos, e.msg)
}

type reParser struct {
	src   string
	pos   int
	depth int
}

// parseRegex parses an ECMA-262 pattern of the supported subset.
func parseRegex(src string) (n *reNode, err error) {
	if len(src) > maxPatternLen {
		return nil, &regexError{-1, fmt.Sprintf("the pattern is longer than %d bytes", maxPatternLen)}
	}
	if !utf8.ValidString(src) {
		return nil, &regexError{-1, "the pattern is not valid UTF-8"}
	}
	p := &reParser{src: src}
	n, err = p.alt()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) {
		return nil, p.errf("unmatched )")
	}
	return n, nil
}

func (p *reParser) errf(format string, args ...any) error {
	return &regexError{p.pos, fmt.Sprintf(format, args...)}
}

func (p *reParser) more() bool { return p.pos < len(p.src) }
func (p *reParser) peek() rune {
	r, _ := utf8.DecodeRuneInString(p.src[p.pos:])
	return r
}
func (p *reParser) next() rune {
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return r
}

func (p *reParser) alt() (*reNode, error) {
	var alts []*reNode
	for {
		c, err := p.cat()
		if err != nil {
			return nil, err
		}
		alts = append(alts, c)
		if !p.more() || p.peek() != '|' {
			break
		}
		p.pos++
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &reNode{op: reAlt, subs: alts}, nil
}

func (p *reParser) cat() (*reNode, error) {
	n := &reNode{op: reCat}
	for p.more() && p.peek() != '|' && p.peek() != ')' {
		a, err := p.repeat()
		if err != nil {
			return nil, err
		}
		n.subs = append(n.subs, a)
	}
	return n, nil
}

// quantifier reads a quantifier at p.pos, if one is there.
func (p *reParser) quantifier() (min, max int, ok bool, err error) {
	if !p.more() {
		return 0, 0, false, nil
	}
	switch p.peek() {
	case '*':
		p.pos++
		return 0, -1, true, nil
	case '+':
		p.pos++
		return 1, -1, true, nil
	case '?':
		p.pos++
		return 0, 1, true, nil
	case '{':
		rest := p.src[p.pos+1:]
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return 0, 0, false, nil
		}
		body := rest[:end]
		lo, hi, comma := strings.Cut(body, ",")
		if !allDigits(lo) || (comma && hi != "" && !allDigits(hi)) {
			return 0, 0, false, nil // a literal "{", as Annex B reads it
		}
		start := p.pos
		p.pos += end + 2
		min, e1 := strconv.Atoi(lo)
		max = min
		var e2 error
		if comma {
			max = -1
			if hi != "" {
				max, e2 = strconv.Atoi(hi)
			}
		}
		if e1 != nil || e2 != nil || min > maxRepeat || max > maxRepeat {
			p.pos = start
			return 0, 0, false, p.errf("the count of {%s} is more than the %d supported", body, maxRepeat)
		}
		if max >= 0 && max < min {
			p.pos = start
			return 0, 0, false, p.errf("{%s}: the counts are out of order", body)
		}
		return min, max, true, nil
	}
	return 0, 0, false, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (p *reParser) repeat() (*reNode, error) {
	a, err := p.atom()
	if err != nil {
		return nil, err
	}
	min, max, ok, err := p.quantifier()
	if err != nil || !ok {
		return a, err
	}
	if a.op == reBegin || a.op == reEnd {
		return nil, p.errf("a quantifier after an anchor")
	}
	if p.more() && p.peek() == '?' {
		p.pos++ // lazy: the same strings match
	}
	if _, _, again, _ := p.quantifier(); again {
		return nil, p.errf("nothing to repeat")
	}
	return &reNode{op: reRepeat, subs: []*reNode{a}, min: min, max: max}, nil
}

func (p *reParser) atom() (*reNode, error) {
	switch c := p.peek(); c {
	case '(':
		p.pos++
		if p.depth++; p.depth > maxReDepth {
			return nil, p.errf("groups nested deeper than %d", maxReDepth)
		}
		defer func() { p.depth-- }()
		rest := p.src[p.pos:]
		switch {
		case strings.HasPrefix(rest, "?:"):
			p.pos += 2
		case strings.HasPrefix(rest, "?=") || strings.HasPrefix(rest, "?!") ||
			strings.HasPrefix(rest, "?<=") || strings.HasPrefix(rest, "?<!"):
			return nil, p.errf("lookaround is not supported")
		case strings.HasPrefix(rest, "?<"):
			end := strings.IndexByte(rest, '>')
			if end < 3 {
				return nil, p.errf("a malformed group name")
			}
			p.pos += end + 1
		case strings.HasPrefix(rest, "?"):
			return nil, p.errf("an unknown group (?%s", string([]rune(rest[1:] + " ")[0]))
		}
		n, err := p.alt()
		if err != nil {
			return nil, err
		}
		if !p.more() || p.peek() != ')' {
			return nil, p.errf("missing )")
		}
		p.pos++
		return n, nil
	case '[':
		return p.class()
	case '.':
		p.pos++
		return &reNode{op: reClass, cls: negate(lineTerminators)}, nil
	case '^':
		p.pos++
		return &reNode{op: reBegin}, nil
	case '$':
		p.pos++
		return &reNode{op: reEnd}, nil
	case '*', '+', '?':
		return nil, p.errf("nothing to repeat")
	case '{':
		if _, _, ok, err := p.quantifier(); ok || err != nil {
			return nil, p.errf("nothing to repeat")
		}
		p.pos++
		return lit('{'), nil
	case '\\':
		p.pos++
		cls, err := p.escape(false)
		if err != nil {
			return nil, err
		}
		return &reNode{op: reClass, cls: cls}, nil
	default:
		p.next()
		return lit(c), nil
	}
}

func lit(c rune) *reNode { return &reNode{op: reClass, cls: []rrange{{c, c}}} }

var (
	digitSet        = []rrange{{'0', '9'}}
	wordSet         = []rrange{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	spaceSet        = []rrange{{'\t', '\r'}, {' ', ' '}, {0xa0, 0xa0}, {0x1680, 0x1680}, {0x2000, 0x200a}, {0x2028, 0x2029}, {0x202f, 0x202f}, {0x205f, 0x205f}, {0x3000, 0x3000}, {0xfeff, 0xfeff}}
	lineTerminators = []rrange{{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}
	anyChar         = []rrange{{0, maxRune}}
)

// escape reads an escape after its backslash: a set of characters.
func (p *reParser) escape(inClass bool) ([]rrange, error) {
	if !p.more() {
		return nil, p.errf("a trailing backslash")
	}
	start := p.pos
	c := p.next()
	one := func(r rune) ([]rrange, error) { return []rrange{{r, r}}, nil }
	switch c {
	case 'd':
		return digitSet, nil
	case 'D':
		return negate(digitSet), nil
	case 'w':
		return wordSet, nil
	case 'W':
		return negate(wordSet), nil
	case 's':
		return spaceSet, nil
	case 'S':
		return negate(spaceSet), nil
	case 'n':
		return one('\n')
	case 'r':
		return one('\r')
	case 't':
		return one('\t')
	case 'f':
		return one('\f')
	case 'v':
		return one('\v')
	case 'b':
		if inClass {
			return one('\b')
		}
		p.pos = start
		return nil, p.errf(`word boundaries (\b) are not supported`)
	case 'B':
		p.pos = start
		return nil, p.errf(`word boundaries (\B) are not supported`)
	case '0':
		if p.more() && p.peek() >= '0' && p.peek() <= '9' {
			return nil, p.errf("octal escapes are not supported")
		}
		return one(0)
	case 'x', 'u':
		n := 2
		if c == 'u' {
			n = 4
		}
		if p.pos+n > len(p.src) {
			return nil, p.errf(`\%c needs %d hex digits`, c, n)
		}
		v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
		if err != nil || strings.ContainsAny(p.src[p.pos:p.pos+n], "+-") {
			return nil, p.errf(`\%c needs %d hex digits`, c, n)
		}
		p.pos += n
		if v >= 0xd800 && v <= 0xdfff {
			return nil, p.errf(`surrogate escapes (\u%04x) are not supported`, v)
		}
		return one(rune(v))
	case 'c':
		return nil, p.errf(`control escapes (\c) are not supported`)
	case 'k':
		return nil, p.errf(`backreferences (\k) are not supported`)
	case 'p', 'P':
		return nil, p.errf(`Unicode property escapes (\%c) are not supported`, c)
	}
	if c >= '1' && c <= '9' {
		return nil, p.errf(`backreferences (\%c) are not supported`, c)
	}
	if c < utf8.RuneSelf && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
		return nil, p.errf(`unknown escape \%c`, c)
	}
	return one(c) // a backslash before punctuation stands for it
}

func (p *reParser) class() (*reNode, error) {
	p.pos++ // [
	neg := false
	if p.more() && p.peek() == '^' {
		neg = true
		p.pos++
	}
	var set []rrange
	// item reads one class atom: a character (single true) or a set.
	item := func() ([]rrange, bool, error) {
		c := p.next()
		if c != '\\' {
			return []rrange{{c, c}}, true, nil
		}
		switch p.peek() {
		case 'd', 'D', 'w', 'W', 's', 'S':
			s, err := p.escape(true)
			return s, false, err
		}
		if p.more() && p.peek() == '-' {
			p.pos++
			return []rrange{{'-', '-'}}, true, nil
		}
		s, err := p.escape(true)
		return s, true, err
	}
	for {
		if !p.more() {
			return nil, p.errf("missing ]")
		}
		if p.peek() == ']' {
			p.pos++
			break
		}
		lo, single, err := item()
		if err != nil {
			return nil, err
		}
		if single && p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			hi, single2, err := item()
			if err != nil {
				return nil, err
			}
			if !single2 {
				return nil, p.errf("a range ends in a class escape")
			}
			if hi[0].lo < lo[0].lo {
				return nil, p.errf("the range %q-%q is out of order", lo[0].lo, hi[0].lo)
			}
			set = append(set, rrange{lo[0].lo, hi[0].lo})
			continue
		}
		set = append(set, lo...)
	}
	set = normalize(set)
	if neg {
		set = negate(set)
	}
	return &reNode{op: reClass, cls: set}, nil
}

// normalize sorts and merges ranges.
func normalize(s []rrange) []rrange {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b rrange) int { return int(a.lo) - int(b.lo) })
	var out []rrange
	for _, r := range s {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// negate is the complement of a normalized set among the code points.
func negate(s []rrange) []rrange {
	var out []rrange
	next := rune(0)
	for _, r := range s {
		if r.lo > next {
			out = append(out, rrange{next, r.lo - 1})
		}
		next = r.hi + 1
	}
	if next <= maxRune {
		out = append(out, rrange{next, maxRune})
	}
	return out
}

func (n *reNode) nullable() bool {
	switch n.op {
	case reClass:
		return false
	case reCat:
		for _, s := range n.subs {
			if !s.nullable() {
				return false
			}
		}
		return true
	case reAlt:
		for _, s := range n.subs {
			if s.nullable() {
				return true
			}
		}
		return false
	case reRepeat:
		return n.min == 0 || n.subs[0].nullable()
	}
	return true // anchors
}

// nonEmpty is n without the empty string (nil when n matches only it): a star of a
// nullable expression repeats its non-empty part, so that no rule can reach itself
// without reading a byte.
func (n *reNode) nonEmpty() *reNode {
	if !n.nullable() {
		return n
	}
	switch n.op {
	case reCat:
		// The first non-empty element, after empty ones, then the rest as they are.
		var alts []*reNode
		for i, s := range n.subs {
			if f := s.nonEmpty(); f != nil {
				alts = append(alts, &reNode{op: reCat, subs: append([]*reNode{f}, n.subs[i+1:]...)})
			}
		}
		return altOf(alts)
	case reAlt:
		var alts []*reNode
		for _, s := range n.subs {
			if f := s.nonEmpty(); f != nil {
				alts = append(alts, f)
			}
		}
		return altOf(alts)
	case reRepeat:
		f := n.subs[0].nonEmpty()
		if f == nil || n.max == 0 {
			return nil
		}
		rest := &reNode{op: reRepeat, subs: n.subs, min: 0, max: dec(n.max)}
		return &reNode{op: reCat, subs: []*reNode{f, rest}}
	}
	return nil
}

func altOf(alts []*reNode) *reNode {
	switch len(alts) {
	case 0:
		return nil
	case 1:
		return alts[0]
	}
	return &reNode{op: reAlt, subs: alts}
}

// check refuses nested bounded counts whose product exceeds maxExpansion, and
// anchors anywhere but where anchored() took them.
func (n *reNode) check(mult int) error {
	switch n.op {
	case reBegin, reEnd:
		return &regexError{-1, "the anchors ^ and $ are supported only at the start and end of the pattern or of a top-level alternative"}
	case reRepeat:
		k := n.max
		if k < 0 {
			k = max(n.min, 1)
		}
		if mult*max(k, 1) > maxExpansion {
			return &regexError{-1, fmt.Sprintf("nested counts expand to more than %d", maxExpansion)}
		}
		mult *= max(k, 1)
	}
	for _, s := range n.subs {
		if err := s.check(mult); err != nil {
			return err
		}
	}
	return nil
}

// prune returns n without the parts that match nothing, as enc writes characters;
// nil when n matches nothing.
func (n *reNode) prune(enc encoding) *reNode {
	switch n.op {
	case reClass:
		// Some character other than a surrogate (which UTF-8 cannot write) and, in raw
		// text, other than "<".
		for _, r := range n.cls {
			surrogates := r.lo >= 0xd800 && r.hi <= 0xdfff
			if !surrogates && (enc == encJSON || r.lo != '<' || r.hi != '<') {
				return n
			}
		}
		return nil
	case reCat:
		subs := make([]*reNode, len(n.subs))
		for i, s := range n.subs {
			if subs[i] = s.prune(enc); subs[i] == nil {
				return nil
			}
		}
		return &reNode{op: reCat, subs: subs}
	case reAlt:
		var subs []*reNode
		for _, s := range n.subs {
			if p := s.prune(enc); p != nil {
				subs = append(subs, p)
			}
		}
		return altOf(subs)
	case reRepeat:
		sub := n.subs[0].prune(enc)
		switch {
		case sub != nil:
			return &reNode{op: reRepeat, subs: []*reNode{sub}, min: n.min, max: n.max}
		case n.min == 0:
			return &reNode{op: reCat} // only the empty string
		}
		return nil
	}
	return n
}

// anchoredAlt is a top-level alternative of a pattern, its anchors removed, and
// whether it had them.
type anchoredAlt struct {
	body       *reNode
	begin, end bool
}

// anchoredAlts splits a pattern into its top-level alternatives.
func anchoredAlts(n *reNode) []anchoredAlt {
	alts := []*reNode{n}
	if n.op == reAlt {
		alts = n.subs
	}
	var out []anchoredAlt
	for _, a := range alts {
		var aa anchoredAlt
		subs := []*reNode{a}
		if a.op == reCat {
			subs = a.subs
		}
		for len(subs) > 0 && subs[0].op == reBegin {
			aa.begin, subs = true, subs[1:]
		}
		for len(subs) > 0 && subs[len(subs)-1].op == reEnd {
			aa.end, subs = true, subs[:len(subs)-1]
		}
		aa.body = &reNode{op: reCat, subs: subs}
		out = append(out, aa)
	}
	return out
}

// encoding says how a string's characters are written: as JSON string content, or as
// the raw text of a tool-call parameter (where "<" is left out, so that the value
// cannot close its markup).
type encoding uint8

const (
	encJSON encoding = iota
	encRaw
)

// patternRule compiles a pattern into the rule of the string contents (without the
// quotes) whose decoded text contains a match, as JSON Schema reads it.
func (c *schemaCompiler) patternRule(src string, enc encoding) (int32, error) {
	n, err := parseRegex(src)
	if err != nil {
		return 0, err
	}
	var alts []anchoredAlt
	for _, a := range anchoredAlts(n) {
		if err := a.body.check(1); err != nil {
			return 0, err
		}
		// An alternative that matches nothing ([] in it, or only "<" in raw text) is
		// left out: its prefix would be a dead end for the model.
		if a.body = a.body.prune(enc); a.body != nil {
			alts = append(alts, a)
		}
	}
	if len(alts) == 0 {
		return 0, &regexError{-1, "the pattern matches no string that can be written here"}
	}
	b := c.b
	r := b.newRule("pattern")
	var any int32 = -1
	for _, a := range alts {
		body, err := c.reRule(a.body, enc)
		if err != nil {
			return 0, err
		}
		seq := []elem{ref(body)}
		if !a.begin || !a.end {
			if any < 0 {
				any = b.star("any-text", ref(c.classRule(anyChar, enc)))
			}
		}
		if !a.begin {
			seq = append([]elem{ref(any)}, seq...)
		}
		if !a.end {
			seq = append(seq, ref(any))
		}
		b.addAlt(r, seq...)
	}
	return r, nil
}

// reRule compiles a regex node.
func (c *schemaCompiler) reRule(n *reNode, enc encoding) (int32, error) {
	b := c.b
	if b.size > b.limit {
		return 0, errTooLarge
	}
	switch n.op {
	case reClass:
		return c.classRule(n.cls, enc), nil
	case reCat:
		seq := make([]elem, 0, len(n.subs))
		for _, s := range n.subs {
			r, err := c.reRule(s, enc)
			if err != nil {
				return 0, err
			}
			seq = append(seq, ref(r))
		}
		return b.seqRule("re-cat", seq...), nil
	case reAlt:
		r := b.newRule("re-alt")
		for _, s := range n.subs {
			sub, err := c.reRule(s, enc)
			if err != nil {
				return 0, err
			}
			b.addAlt(r, ref(sub))
		}
		return r, nil
	case reRepeat:
		x := n.subs[0]
		if n.max < 0 && x.nullable() {
			// x{min,} = x{min} (x')*, x' its non-empty part.
			head, err := c.reRule(&reNode{op: reRepeat, subs: n.subs, min: n.min, max: n.min}, enc)
			if err != nil {
				return 0, err
			}
			f := x.nonEmpty()
			if f == nil {
				return head, nil
			}
			fr, err := c.reRule(f, enc)
			if err != nil {
				return 0, err
			}
			return b.seqRule("re-star", ref(head), ref(b.star("re-more", ref(fr)))), nil
		}
		sub, err := c.reRule(x, enc)
		if err != nil {
			return 0, err
		}
		return b.repeat("re-repeat", []elem{ref(sub)}, n.min, n.max), nil
	}
	return 0, fmt.Errorf("unexpected anchor")
}

// classRule is the rule of one character of a set, as the encoding writes it: JSON's
// shortest form (the character itself; \" \\ \b \f \n \r \t; \u00xx for the other
// control characters), or raw UTF-8 without "<".
func (c *schemaCompiler) classRule(set []rrange, enc encoding) int32 {
	key := fmt.Sprint(enc, set)
	if r, ok := c.classes[key]; ok {
		return r
	}
	b := c.b
	r := b.newRule("class")
	c.classes[key] = r
	var raw byteSet
	for _, rg := range set {
		for ch := rg.lo; ch <= min(rg.hi, 0x7f); ch++ {
			switch {
			case enc == encRaw:
				if ch != '<' {
					raw.add(byte(ch))
				}
			case ch >= 0x20 && ch != '"' && ch != '\\':
				raw.add(byte(ch))
			default:
				b.addAlt(r, b.lit(jsonEscape(byte(ch)))...)
			}
		}
		if rg.hi >= 0x80 {
			for _, seq := range utf8Sequences(max(rg.lo, 0x80), rg.hi) {
				els := make([]elem, len(seq))
				for i, br := range seq {
					var s byteSet
					s.addRange(br[0], br[1])
					els[i] = b.term(s)
				}
				b.addAlt(r, els...)
			}
		}
	}
	if !raw.empty() {
		b.addAlt(r, b.term(raw))
	}
	return r
}

// jsonEscape is the shortest JSON escape of an ASCII character that needs one.
func jsonEscape(ch byte) string {
	switch ch {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	return fmt.Sprintf(`\u%04x`, ch)
}
