package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on a GBNF grammar, against hostile input.
const (
	maxGBNFSize  = 1 << 20
	maxGBNFDepth = 64
)

// ParseGBNF compiles a grammar in llama.cpp's GBNF notation; the start rule is "root".
//
//	root   ::= answer ("\n" answer)*
//	answer ::= "yes" | "no" | [0-9]{1,3} | [^"\n]+   # comments run to the end of a line
//
// Supported: rules (name ::= …), alternatives (|), groups, literals with escapes (\n
// \t \r \\ \" \xHH \uHHHH \UHHHHHHHH), character classes with ranges and negation
// ([^…], matched as UTF-8 code points), any character (.), and the repetitions * + ?
// {m} {m,} {m,n}. A left-recursive rule is an error: the matcher could not run it.
func ParseGBNF(src string) (*Grammar, error) {
	if len(src) > maxGBNFSize {
		return nil, schemaErr("grammar", "", "larger than %d bytes", maxGBNFSize)
	}
	p := &gbnfParser{src: src, b: newBuilder(), rules: map[string]int32{}, defined: map[string]bool{}}
	if err := p.parse(); err != nil {
		return nil, err
	}
	root, ok := p.rules["root"]
	if !ok || !p.defined["root"] {
		return nil, schemaErr("grammar", "", "no root rule")
	}
	for name := range p.rules {
		if !p.defined[name] {
			return nil, schemaErr("grammar", "rule "+name, "used but not defined")
		}
	}
	g, err := p.b.build(root)
	if err != nil {
		return nil, schemaErr("grammar", "", "%v", err)
	}
	return g, nil
}

type gbnfParser struct {
	src     string
	pos     int
	b       *builder
	rules   map[string]int32
	defined map[string]bool
	depth   int
}

func (p *gbnfParser) errf(format string, args ...any) error {
	line := 1 + strings.Count(p.src[:p.pos], "\n")
	return schemaErr("grammar", fmt.Sprintf("line %d, offset %d", line, p.pos), format, args...)
}

// space skips blanks and comments; newlines too when nl.
func (p *gbnfParser) space(nl bool) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '\n' && nl:
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

func isNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func (p *gbnfParser) name() string {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	return p.src[start:p.pos]
}

func (p *gbnfParser) ruleID(name string) int32 {
	if id, ok := p.rules[name]; ok {
		return id
	}
	id := p.b.newRule(name)
	p.rules[name] = id
	return id
}

// atDefinition reports whether a rule definition (name ::=) starts here.
func (p *gbnfParser) atDefinition() bool {
	save := p.pos
	defer func() { p.pos = save }()
	if p.name() == "" {
		return false
	}
	p.space(true)
	return strings.HasPrefix(p.src[p.pos:], "::=")
}

func (p *gbnfParser) parse() error {
	for {
		p.space(true)
		if p.pos >= len(p.src) {
			return nil
		}
		name := p.name()
		if name == "" {
			return p.errf("expected a rule name")
		}
		p.space(true)
		if !strings.HasPrefix(p.src[p.pos:], "::=") {
			return p.errf("expected ::= after %q", name)
		}
		p.pos += 3
		if p.defined[name] {
			return p.errf("rule %q defined twice", name)
		}
		p.defined[name] = true
		id := p.ruleID(name)
		alts, err := p.alternatives(false)
		if err != nil {
			return err
		}
		for _, a := range alts {
			p.b.addAlt(id, a...)
		}
	}
}

// alternatives parses seq (| seq)*, up to a ")" when nested, else up to the next rule.
func (p *gbnfParser) alternatives(nested bool) ([][]elem, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxGBNFDepth {
		return nil, p.errf("nested deeper than %d", maxGBNFDepth)
	}
	var alts [][]elem
	var seq []elem
	for {
		p.space(true)
		if p.pos >= len(p.src) {
			if nested {
				return nil, p.errf("( without )")
			}
			return append(alts, seq), nil
		}
		c := p.src[p.pos]
		switch {
		case c == '|':
			p.pos++
			alts, seq = append(alts, seq), nil
			continue
		case c == ')':
			if !nested {
				return nil, p.errf("unexpected )")
			}
			p.pos++
			return append(alts, seq), nil
		case !nested && isNameByte(c) && p.atDefinition():
			return append(alts, seq), nil
		}
		item, err := p.item()
		if err != nil {
			return nil, err
		}
		item, err = p.postfix(item)
		if err != nil {
			return nil, err
		}
		seq = append(seq, item...)
		if p.b.size+len(seq) > p.b.limit {
			return nil, p.errf("the grammar is too large")
		}
	}
}

// item parses one element: a literal, a class, ., a name or a group.
func (p *gbnfParser) item() ([]elem, error) {
	b := p.b
	c := p.src[p.pos]
	switch {
	case c == '"':
		p.pos++
		var out []elem
		for {
			if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
				return nil, p.errf("unterminated literal")
			}
			if p.src[p.pos] == '"' {
				p.pos++
				return out, nil
			}
			r, err := p.char()
			if err != nil {
				return nil, err
			}
			var buf [4]byte
			out = append(out, b.lit(string(buf[:utf8.EncodeRune(buf[:], r)]))...)
		}
	case c == '[':
		p.pos++
		neg := false
		if p.pos < len(p.src) && p.src[p.pos] == '^' {
			neg = true
			p.pos++
		}
		var ranges [][2]rune
		for {
			if p.pos >= len(p.src) {
				return nil, p.errf("unterminated character class")
			}
			if p.src[p.pos] == ']' {
				p.pos++
				break
			}
			lo, err := p.char()
			if err != nil {
				return nil, err
			}
			hi := lo
			if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
				p.pos++
				if hi, err = p.char(); err != nil {
					return nil, err
				}
				if hi < lo {
					return nil, p.errf("range %q-%q is backwards", lo, hi)
				}
			}
			ranges = append(ranges, [2]rune{lo, hi})
		}
		if neg {
			ranges = complement(ranges)
		}
		return p.classRule(ranges), nil
	case c == '.':
		p.pos++
		return p.classRule([][2]rune{{0, utf8.MaxRune}}), nil
	case c == '(':
		p.pos++
		alts, err := p.alternatives(true)
		if err != nil {
			return nil, err
		}
		r := b.newRule("group")
		for _, a := range alts {
			b.addAlt(r, a...)
		}
		return []elem{ref(r)}, nil
	case isNameByte(c):
		return []elem{ref(p.ruleID(p.name()))}, nil
	}
	return nil, p.errf("unexpected %q", c)
}

// char reads one character of a literal or class, with its escape.
func (p *gbnfParser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		if r == utf8.RuneError && n <= 1 {
			return 0, p.errf("invalid UTF-8")
		}
		p.pos += n
		return r, nil
	}
	p.pos++
	if p.pos >= len(p.src) {
		return 0, p.errf("escape at the end")
	}
	e := p.src[p.pos]
	p.pos++
	hex := 0
	switch e {
	case 'n':
		return '\n', nil
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case '\\', '"', '[', ']', '-', '^', '/':
		return rune(e), nil
	case 'x':
		hex = 2
	case 'u':
		hex = 4
	case 'U':
		hex = 8
	default:
		return 0, p.errf("unknown escape \\%c", e)
	}
	if p.pos+hex > len(p.src) {
		return 0, p.errf("short \\%c escape", e)
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+hex], 16, 32)
	if err != nil || v > utf8.MaxRune {
		return 0, p.errf("bad \\%c escape", e)
	}
	p.pos += hex
	return rune(v), nil
}

func (p *gbnfParser) postfix(item []elem) ([]elem, error) {
	b := p.b
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		var min, max int
		switch c {
		case '*':
			min, max = 0, -1
			p.pos++
		case '+':
			min, max = 1, -1
			p.pos++
		case '?':
			min, max = 0, 1
			p.pos++
		case '{':
			end := strings.IndexByte(p.src[p.pos:], '}')
			if end < 0 {
				return nil, p.errf("{ without }")
			}
			body := strings.TrimSpace(p.src[p.pos+1 : p.pos+end])
			lo, hi, found := strings.Cut(body, ",")
			var err error
			if min, err = strconv.Atoi(strings.TrimSpace(lo)); err != nil || min < 0 {
				return nil, p.errf("bad repetition {%s}", body)
			}
			switch {
			case !found:
				max = min
			case strings.TrimSpace(hi) == "":
				max = -1
			default:
				if max, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || max < min {
					return nil, p.errf("bad repetition {%s}", body)
				}
			}
			if min > maxCount || max > maxCount {
				return nil, p.errf("repetition {%s} above the %d supported", body, maxCount)
			}
			p.pos += end + 1
		default:
			return item, nil
		}
		item = []elem{ref(b.repeat("repeat", item, min, max))}
	}
	return item, nil
}

// complement returns the code points outside ranges.
func complement(ranges [][2]rune) [][2]rune {
	var out [][2]rune
	next := rune(0)
	for _, r := range sortRanges(ranges) {
		if r[0] > next {
			out = append(out, [2]rune{next, r[0] - 1})
		}
		next = max(next, r[1]+1)
	}
	if next <= utf8.MaxRune {
		out = append(out, [2]rune{next, utf8.MaxRune})
	}
	return out
}

func sortRanges(r [][2]rune) [][2]rune {
	s := append([][2]rune(nil), r...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j][0] < s[j-1][0]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

// classRule is a rule matching the UTF-8 encoding of any code point in ranges.
func (p *gbnfParser) classRule(ranges [][2]rune) []elem {
	b := p.b
	r := b.newRule("class")
	var ascii byteSet
	for _, rg := range ranges {
		for _, seq := range utf8Sequences(rg[0], rg[1]) {
			if len(seq) == 1 {
				ascii.addRange(seq[0][0], seq[0][1])
				continue
			}
			alt := make([]elem, len(seq))
			for i, br := range seq {
				var s byteSet
				s.addRange(br[0], br[1])
				alt[i] = b.term(s)
			}
			b.addAlt(r, alt...)
		}
	}
	if !ascii.empty() {
		b.addAlt(r, b.term(ascii))
	}
	return []elem{ref(r)}
}

// utf8Sequences splits the code points [lo, hi] (surrogates left out) into sequences
// of byte ranges whose products are exactly their UTF-8 encodings.
func utf8Sequences(lo, hi rune) [][][2]byte {
	var out [][][2]byte
	var split func(lo, hi rune)
	split = func(lo, hi rune) {
		if lo > hi {
			return
		}
		// Leave out the surrogates.
		if lo <= 0xDFFF && hi >= 0xD800 {
			split(lo, 0xD7FF)
			split(0xE000, hi)
			return
		}
		// One encoded length at a time.
		for _, m := range []rune{0x7F, 0x7FF, 0xFFFF} {
			if lo <= m && hi > m {
				split(lo, m)
				split(m+1, hi)
				return
			}
		}
		if hi <= 0x7F {
			out = append(out, [][2]byte{{byte(lo), byte(hi)}})
			return
		}
		n := utf8.RuneLen(lo)
		for i := 1; i < n; i++ {
			m := rune(1)<<(6*i) - 1
			if lo&^m != hi&^m {
				if lo&m != 0 {
					split(lo, lo|m)
					split((lo|m)+1, hi)
					return
				}
				if hi&m != m {
					split(lo, (hi&^m)-1)
					split(hi&^m, hi)
					return
				}
			}
		}
		var a, z [4]byte
		utf8.EncodeRune(a[:], lo)
		utf8.EncodeRune(z[:], hi)
		seq := make([][2]byte, n)
		for i := range n {
			seq[i] = [2]byte{a[i], z[i]}
		}
		out = append(out, seq)
	}
	split(lo, hi)
	return out
}
