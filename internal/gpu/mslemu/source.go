package mslemu

import (
	"fmt"
	"sort"
	"strings"
)

// This file turns MSL source text into C++ the shim can compile, without changing line
// numbers (so clang's diagnostics and the runtime's barrier sites point at the MSL line):
//
//   - attributes ([[buffer(0)]], [[thread_position_in_grid]], [[host_name("x")]], ...) are
//     recorded and blanked out;
//   - threadgroup variable declarations in function bodies become references to
//     per-threadgroup storage from the runtime;
//   - unsuffixed floating literals get an f (in MSL they are float, in C++ double), and
//     half literals (1.0h) become half(1.0f);
//   - kernel functions are found with their parameters, so the driver can generate the
//     entry points that bind arguments.

type tokKind int

const (
	tIdent tokKind = iota
	tNumber
	tString
	tPunct
	tDirective
)

type token struct {
	kind     tokKind
	s        string
	pos, end int
	line     int
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// lex splits src into tokens, skipping whitespace and comments. A preprocessor directive
// (with its continuation lines) is one token.
func lex(src string) ([]token, error) {
	var toks []token
	line := 1
	lineStart := true
	i := 0
	n := len(src)
	for i < n {
		c := src[i]
		switch {
		case c == '\n':
			line++
			lineStart = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '/' && i+1 < n && src[i+1] == '/':
			for i < n && src[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < n && src[i+1] == '*':
			j := strings.Index(src[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
			line += strings.Count(src[i:i+2+j+2], "\n")
			i += 2 + j + 2
			continue
		}
		start := i
		startLine := line
		if c == '#' && lineStart {
			for i < n && src[i] != '\n' {
				if src[i] == '\\' && i+1 < n && src[i+1] == '\n' {
					i += 2
					line++
					continue
				}
				if src[i] == '/' && i+1 < n && src[i+1] == '*' {
					j := strings.Index(src[i+2:], "*/")
					if j < 0 {
						return nil, fmt.Errorf("line %d: unterminated comment", line)
					}
					line += strings.Count(src[i:i+2+j+2], "\n")
					i += 2 + j + 2
					continue
				}
				i++
			}
			toks = append(toks, token{tDirective, src[start:i], start, i, startLine})
			continue
		}
		lineStart = false
		switch {
		case isIdentStart(c):
			for i < n && isIdentChar(src[i]) {
				i++
			}
			// string literal prefixes (u8"", L"", R"()") are rare in MSL; treat as identifiers
			toks = append(toks, token{tIdent, src[start:i], start, i, startLine})
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(src[i+1])):
			for i < n {
				d := src[i]
				if (d == '+' || d == '-') && i > start && strings.ContainsRune("eEpP", rune(src[i-1])) &&
					!(strings.HasPrefix(strings.ToLower(src[start:i]), "0x") && (src[i-1] == 'e' || src[i-1] == 'E')) {
					i++
					continue
				}
				if isIdentChar(d) || d == '.' || d == '\'' {
					i++
					continue
				}
				break
			}
			toks = append(toks, token{tNumber, src[start:i], start, i, startLine})
		case c == '"' || c == '\'':
			q := c
			i++
			for i < n && src[i] != q {
				if src[i] == '\\' {
					i++
				}
				if i < n && src[i] == '\n' {
					return nil, fmt.Errorf("line %d: newline in literal", line)
				}
				i++
			}
			if i >= n {
				return nil, fmt.Errorf("line %d: unterminated literal", startLine)
			}
			i++
			toks = append(toks, token{tString, src[start:i], start, i, startLine})
		default:
			if c == ':' && i+1 < n && src[i+1] == ':' {
				i += 2
			} else if c == '-' && i+1 < n && src[i+1] == '>' {
				i += 2
			} else {
				i++
			}
			toks = append(toks, token{tPunct, src[start:i], start, i, startLine})
		}
	}
	return toks, nil
}

// floatLiteral rewrites a pp-number that is an MSL floating literal; ok is false for
// integers and literals that need no change.
func floatLiteral(s string) (string, bool) {
	lower := strings.ToLower(s)
	hex := strings.HasPrefix(lower, "0x")
	isFloat := false
	if hex {
		isFloat = strings.ContainsAny(lower, "p")
	} else {
		isFloat = strings.ContainsAny(lower, ".e")
	}
	if !isFloat {
		return "", false
	}
	body := s
	for len(body) > 0 && strings.ContainsRune("fFhHlL", rune(body[len(body)-1])) {
		body = body[:len(body)-1]
	}
	suffix := strings.ToLower(s[len(body):])
	switch suffix {
	case "":
		return s + "f", true
	case "h":
		return "::half(" + body + "f)", true
	}
	return "", false
}

type edit struct {
	start, end int
	text       string
}

type attribute struct {
	name string
	args string // the text between the parentheses, if any
}

type attrGroup struct {
	first, last int // token indices of the first '[' and the last ']'
	attrs       []attribute
}

// kernelParam is one parameter of a kernel function.
type kernelParam struct {
	Name  string
	Type  string // the parameter's type as written (address-space keywords included)
	Kind  paramKind
	Index string // the [[buffer(i)]] or [[threadgroup(i)]] index expression
	Attr  string // the builtin attribute
}

type paramKind int

const (
	paramBuffer paramKind = iota
	paramThreadgroup
	paramBuiltin
)

// kernelDecl is a kernel function found in the sources.
type kernelDecl struct {
	Name       string // the host name: the function name, or [[host_name]] of an instantiation
	Call       string // how the entry point calls it: name or name<args>
	File       string
	Line       int
	Params     []kernelParam
	MaxThreads int // [[max_total_threads_per_threadgroup(n)]], 0 when absent
	// Template is set for a kernel template's definition: not a kernel itself, but the
	// source of the parameters of instantiations written `kernel k_t name<T>;`.
	Template bool
	// Base names the template whose parameters an instantiation without a parameter
	// list uses.
	Base string
	// Threadgroup lists the threadgroup variables declared in the kernel's body, as the
	// C++ type of each (for the 32 KiB check, evaluated by clang with the real macros).
	Threadgroup []string
	// Namespaced is set for a kernel defined inside a namespace.
	Namespaced bool

	bodyStart, bodyEnd int // token indices of the body's braces; 0 when there is none
}

var builtinAttrs = map[string]string{
	"thread_position_in_grid":             "B_TPIG",
	"threadgroup_position_in_grid":        "B_TGPIG",
	"thread_position_in_threadgroup":      "B_TPITG",
	"threads_per_threadgroup":             "B_TPTG",
	"dispatch_threads_per_threadgroup":    "B_TPTG",
	"threadgroups_per_grid":               "B_TGPG",
	"threads_per_grid":                    "B_TPG",
	"grid_size":                           "B_TPG",
	"grid_origin":                         "B_ZERO",
	"thread_index_in_threadgroup":         "B_TIITG",
	"thread_index_in_simdgroup":           "B_TIISG",
	"simdgroup_index_in_threadgroup":      "B_SGITG",
	"simdgroups_per_threadgroup":          "B_SGPTG",
	"dispatch_simdgroups_per_threadgroup": "B_SGPTG",
	"thread_execution_width":              "B_WIDTH",
	"threads_per_simdgroup":               "B_WIDTH",
	"quadgroup_index_in_threadgroup":      "B_QGITG",
	"thread_index_in_quadgroup":           "B_TIIQG",
}

// tgDecl is one threadgroup variable declared in a function body.
type tgDecl struct {
	tok  int    // token index of the threadgroup keyword
	typ  string // its C++ type: the element type and the dimensions, "float[256]"
	line int
}

// rewriteResult is one source after rewriting.
type rewriteResult struct {
	Text    string
	Kernels []kernelDecl
}

type rewriter struct {
	tgDecls []tgDecl
	doubles []int // lines that use double
	file    string
	src     string
	toks    []token
	edits   []edit
	groups  map[int]*attrGroup // by the token index of the first '['
	byLast  map[int]int        // the first '[' of a group by the token index of its last ']'
	tgID    *int
}

func parseAttrGroup(toks []token, src string, i int) (*attrGroup, bool) {
	if i+1 >= len(toks) || toks[i].s != "[" || toks[i+1].s != "[" || toks[i+1].pos != toks[i].end {
		return nil, false
	}
	depth := 0
	j := i
	for ; j < len(toks); j++ {
		switch toks[j].s {
		case "[":
			depth++
		case "]":
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if j >= len(toks) || j-1 <= i+1 || toks[j-1].s != "]" {
		return nil, false
	}
	inner := toks[i+2 : j-1]
	g := &attrGroup{first: i, last: j}
	for _, part := range splitTop(inner, ",") {
		if len(part) == 0 {
			continue
		}
		a := attribute{name: part[0].s}
		// scoped attributes (gnu::x) keep the last name
		k := 1
		for k+1 < len(part) && part[k].s == "::" {
			a.name = part[k+1].s
			k += 2
		}
		if k < len(part) && part[k].s == "(" && part[len(part)-1].s == ")" {
			a.args = strings.TrimSpace(src[part[k].end:part[len(part)-1].pos])
		}
		g.attrs = append(g.attrs, a)
	}
	return g, true
}

// splitTop splits tokens at sep outside (), [], {} and template <>.
func splitTop(toks []token, sep string) [][]token {
	var out [][]token
	depth, angle := 0, 0
	start := 0
	for i, t := range toks {
		switch t.s {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
		case "<":
			if i > 0 && toks[i-1].kind == tIdent && depth == 0 {
				angle++
			}
		case ">":
			if angle > 0 && depth == 0 {
				angle--
			}
		}
		if t.s == sep && depth == 0 && angle == 0 {
			out = append(out, toks[start:i])
			start = i + 1
		}
	}
	out = append(out, toks[start:])
	return out
}

func blank(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c != '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

// rewriteSource rewrites one MSL source; tgID numbers threadgroup variables across sources.
func rewriteSource(file, src string, tgID *int) (*rewriteResult, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	r := &rewriter{file: file, src: src, toks: toks, groups: map[int]*attrGroup{}, byLast: map[int]int{}, tgID: tgID}
	for i := 0; i < len(toks); i++ {
		if g, ok := parseAttrGroup(toks, src, i); ok {
			r.groups[i] = g
			r.byLast[g.last] = i
			i = g.last
		}
	}
	var kernels []kernelDecl
	braces, parens, brackets := 0, 0, 0
	type ns struct {
		depth int
		name  string
	}
	var namespaces []ns
	pendingNS := ""
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if g, ok := r.groups[i]; ok {
			r.edits = append(r.edits, edit{t.pos, toks[g.last].end, blank(src[t.pos:toks[g.last].end])})
			i = g.last
			continue
		}
		switch t.kind {
		case tDirective:
			if e, ok := r.directive(t); ok {
				r.edits = append(r.edits, e)
			}
			continue
		case tNumber:
			if s, ok := floatLiteral(t.s); ok {
				r.edits = append(r.edits, edit{t.pos, t.end, s})
			}
			continue
		case tIdent:
			switch t.s {
			case "threadgroup":
				if braces > 0 && parens == 0 && brackets == 0 && r.statementStart(i) {
					next, e, ok, err := r.threadgroupDecl(i)
					if err != nil {
						return nil, err
					}
					if ok {
						r.edits = append(r.edits, e)
						i = next
						continue
					}
				}
			case "namespace":
				// namespace A { or namespace A::B {: kernels inside are called qualified
				name := ""
				j := i + 1
				for j < len(toks) && (toks[j].kind == tIdent || toks[j].s == "::") {
					name += toks[j].s
					j++
				}
				if j < len(toks) && toks[j].s == "{" {
					pendingNS = name
					if name == "" {
						pendingNS = "-"
					}
				}
			case "kernel":
				if parens == 0 {
					k, _, err := r.kernel(i)
					if err != nil {
						return nil, err
					}
					if k != nil {
						var prefix string
						for _, n := range namespaces {
							if n.name != "-" {
								prefix += n.name + "::"
							}
						}
						k.Call = "::" + prefix + k.Call
						k.Namespaced = prefix != ""
						kernels = append(kernels, *k)
					}
				}
			}
		case tPunct:
			switch t.s {
			case "{":
				braces++
				if pendingNS != "" {
					namespaces = append(namespaces, ns{braces, pendingNS})
					pendingNS = ""
				}
			case "}":
				if len(namespaces) > 0 && namespaces[len(namespaces)-1].depth == braces {
					namespaces = namespaces[:len(namespaces)-1]
				}
				braces--
			case "(":
				parens++
			case ")":
				parens--
			case "[":
				brackets++
			case "]":
				brackets--
			}
		}
	}
	for ki := range kernels {
		k := &kernels[ki]
		for _, d := range r.tgDecls {
			if k.bodyStart > 0 && d.tok > k.bodyStart && d.tok < k.bodyEnd {
				k.Threadgroup = append(k.Threadgroup, d.typ)
			}
		}
	}
	if err := lintSource(file, toks); err != nil {
		return nil, err
	}
	sort.Slice(r.edits, func(a, b int) bool { return r.edits[a].start < r.edits[b].start })
	var b strings.Builder
	last := 0
	for _, e := range r.edits {
		if e.start < last {
			continue // overlapping (cannot happen for well-formed input)
		}
		b.WriteString(src[last:e.start])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(src[last:])
	return &rewriteResult{Text: b.String(), Kernels: kernels}, nil
}

// directive rewrites floating literals in #define bodies; other directives stay.
func (r *rewriter) directive(t token) (edit, bool) {
	s := t.s
	body := strings.TrimLeft(s[1:], " \t")
	if !strings.HasPrefix(body, "define") {
		return edit{}, false
	}
	inner, err := lex(s[1:])
	if err != nil {
		return edit{}, false
	}
	var b strings.Builder
	b.WriteString("#")
	last := 0
	changed := false
	for _, it := range inner {
		if it.kind != tNumber {
			continue
		}
		if ns, ok := floatLiteral(it.s); ok {
			b.WriteString(s[1+last : 1+it.pos])
			b.WriteString(ns)
			last = it.end
			changed = true
		}
	}
	if !changed {
		return edit{}, false
	}
	b.WriteString(s[1+last:])
	return edit{t.pos, t.end, b.String()}, true
}

func (r *rewriter) prevSignificant(i int) int {
	for j := i - 1; j >= 0; j-- {
		if r.toks[j].kind == tDirective {
			return -1
		}
		// skip attribute groups
		if k, ok := r.byLast[j]; ok {
			j = k
			continue
		}
		return j
	}
	return -1
}

func (r *rewriter) statementStart(i int) bool {
	j := r.prevSignificant(i)
	if j < 0 {
		return true
	}
	switch r.toks[j].s {
	case ";", "{", "}", ":":
		return true
	}
	return false
}

// threadgroupDecl rewrites `threadgroup T a[N], b;` inside a function body into
// references to per-threadgroup storage. Declarations of pointers or references (to
// threadgroup memory) are left alone: the macro erases the keyword.
func (r *rewriter) threadgroupDecl(i int) (int, edit, bool, error) {
	toks := r.toks
	j := i + 1
	depth := 0
	for ; j < len(toks); j++ {
		s := toks[j].s
		if s == "(" || s == "[" || s == "{" {
			depth++
		} else if s == ")" || s == "]" || s == "}" {
			depth--
		}
		if depth == 0 && s == ";" {
			break
		}
		if depth < 0 {
			return 0, edit{}, false, nil
		}
	}
	if j >= len(toks) {
		return 0, edit{}, false, nil
	}
	// drop attribute groups inside the declaration
	var decl []token
	for k := i + 1; k < j; k++ {
		if g, ok := r.groups[k]; ok {
			k = g.last
			continue
		}
		decl = append(decl, toks[k])
	}
	d := 0
	for _, t := range decl {
		switch t.s {
		case "(", "[", "{":
			d++
		case ")", "]", "}":
			d--
		case "*", "&", "=":
			if d == 0 {
				return 0, edit{}, false, nil
			}
		}
		if t.s == "(" && d == 1 {
			// a function declaration or a constructor call: not a plain threadgroup array
			return 0, edit{}, false, nil
		}
	}
	parts := splitTop(decl, ",")
	var typeText string
	var b strings.Builder
	for pi, part := range parts {
		// the declarator's name is the last identifier before the first top-level '['
		end := len(part)
		for k, t := range part {
			if t.s == "[" {
				end = k
				break
			}
		}
		if end == 0 || part[end-1].kind != tIdent {
			return 0, edit{}, false, fmt.Errorf("%s:%d: cannot parse threadgroup declaration", r.file, toks[i].line)
		}
		name := part[end-1].s
		if pi == 0 {
			if end < 2 {
				return 0, edit{}, false, fmt.Errorf("%s:%d: threadgroup declaration without a type", r.file, toks[i].line)
			}
			typeText = r.text(part[0], part[end-2])
		}
		dims := ""
		if end < len(part) {
			dims = r.text(part[end], part[len(part)-1])
		}
		*r.tgID++
		id := *r.tgID
		r.tgDecls = append(r.tgDecls, tgDecl{tok: i, typ: typeText + dims, line: toks[i].line})
		// the key (one per variable: its address tells the variables apart) holds the
		// name, which the runtime's reports quote
		fmt.Fprintf(&b, "static char mslemu_tgk_%d[] = %q; typedef %s mslemu_tgt_%d%s; mslemu_tgt_%d& %s = ::mslemu::tg_static<mslemu_tgt_%d>(mslemu_tgk_%d); ",
			id, name, typeText, id, dims, id, name, id, id)
	}
	span := r.src[toks[i].pos:toks[j].end]
	b.WriteString(strings.Repeat("\n", strings.Count(span, "\n")))
	return j, edit{toks[i].pos, toks[j].end, b.String()}, true, nil
}

// text returns the source text from token a to token b, with float literals rewritten.
func (r *rewriter) text(a, b token) string {
	s := r.src[a.pos:b.end]
	inner, err := lex(s)
	if err != nil {
		return s
	}
	var out strings.Builder
	last := 0
	for _, t := range inner {
		if t.kind == tNumber {
			if ns, ok := floatLiteral(t.s); ok {
				out.WriteString(s[last:t.pos])
				out.WriteString(ns)
				last = t.end
			}
		}
	}
	out.WriteString(s[last:])
	return strings.Join(strings.Fields(out.String()), " ")
}

// attrsBefore collects the attribute groups immediately before token i.
func (r *rewriter) attrsBefore(i int) ([]attribute, int) {
	var attrs []attribute
	j := i - 1
	for j >= 0 {
		k, ok := r.byLast[j]
		if !ok {
			break
		}
		attrs = append(append([]attribute{}, r.groups[k].attrs...), attrs...)
		j = k - 1
	}
	return attrs, j
}

// kernel parses `kernel void name(params)` at token i. Template definitions return nil
// (their explicit instantiations with [[host_name]] are the kernels).
func (r *rewriter) kernel(i int) (*kernelDecl, int, error) {
	toks := r.toks
	attrs, prev := r.attrsBefore(i)
	isTemplateDef := prev >= 0 && toks[prev].s == ">"
	isInstantiation := prev >= 0 && toks[prev].s == "template"
	typedefForm := false
	switch {
	case i+2 < len(toks) && toks[i+1].s == "void" && toks[i+2].kind == tIdent:
	case isInstantiation && i+3 < len(toks) && toks[i+1].kind == tIdent && toks[i+2].kind == tIdent && toks[i+3].s == "<":
		// template [[host_name("x")]] kernel k_t name<T>;  (k_t: decltype(name<T>))
		typedefForm = true
	default:
		return nil, i, nil
	}
	k := &kernelDecl{Name: toks[i+2].s, Call: toks[i+2].s, File: r.file, Line: toks[i].line, Template: isTemplateDef}
	j := i + 3
	// attributes between the name and the parameters
	for {
		if g, ok := r.groups[j]; ok {
			attrs = append(attrs, g.attrs...)
			j = g.last + 1
			continue
		}
		break
	}
	if j < len(toks) && toks[j].s == "<" {
		depth := 0
		start := j
		for ; j < len(toks); j++ {
			if toks[j].s == "<" {
				depth++
			} else if toks[j].s == ">" {
				depth--
				if depth == 0 {
					break
				}
			}
		}
		if j >= len(toks) {
			return nil, i, fmt.Errorf("%s:%d: cannot parse kernel template arguments", r.file, toks[i].line)
		}
		k.Call = k.Name + r.text(toks[start], toks[j])
		j++
	}
	hostName := ""
	for _, a := range attrs {
		switch a.name {
		case "host_name":
			hostName = strings.Trim(a.args, "\" ")
		case "max_total_threads_per_threadgroup":
			fmt.Sscanf(a.args, "%d", &k.MaxThreads)
		}
	}
	if isTemplateDef {
		hostName = ""
	}
	if typedefForm {
		if j >= len(toks) || toks[j].s != ";" {
			return nil, i, fmt.Errorf("%s:%d: cannot parse kernel instantiation %s", r.file, toks[i].line, k.Call)
		}
		k.Base = toks[i+2].s
		if hostName == "" {
			return nil, i, fmt.Errorf("%s:%d: kernel template instantiation %s without [[host_name(\"...\")]]", r.file, toks[i].line, k.Call)
		}
		k.Name = hostName
		return k, j, nil
	}
	if hostName != "" {
		k.Name = hostName
	} else if isInstantiation {
		return nil, i, fmt.Errorf("%s:%d: kernel template instantiation %s without [[host_name(\"...\")]]", r.file, toks[i].line, k.Call)
	}
	if j >= len(toks) || toks[j].s != "(" {
		return nil, i, nil
	}
	open := j
	depth := 0
	for ; j < len(toks); j++ {
		if toks[j].s == "(" {
			depth++
		} else if toks[j].s == ")" {
			depth--
			if depth == 0 {
				break
			}
		}
	}
	if j >= len(toks) {
		return nil, i, fmt.Errorf("%s:%d: unbalanced kernel parameter list", r.file, toks[i].line)
	}
	inner := toks[open+1 : j]
	if len(inner) == 1 && inner[0].s == "void" {
		inner = nil
	}
	if len(inner) > 0 {
		for _, part := range splitTop(inner, ",") {
			p, err := r.param(k, part)
			if err != nil {
				if isInstantiation {
					// an instantiation may leave the attributes (and names) to the
					// template's definition
					k.Params = nil
					k.Base = toks[i+2].s
					return k, j, nil
				}
				return nil, i, err
			}
			k.Params = append(k.Params, p)
		}
	}
	// the body: the next '{' after the parameters (attributes may come between)
	b := j + 1
	for {
		if g, ok := r.groups[b]; ok {
			b = g.last + 1
			continue
		}
		break
	}
	if b < len(toks) && toks[b].s == "{" {
		depth := 0
		for e := b; e < len(toks); e++ {
			switch toks[e].s {
			case "{":
				depth++
			case "}":
				depth--
			}
			if depth == 0 {
				k.bodyStart, k.bodyEnd = b, e
				break
			}
		}
	}
	return k, j, nil
}

func (r *rewriter) param(k *kernelDecl, part []token) (kernelParam, error) {
	if len(part) == 0 {
		return kernelParam{}, fmt.Errorf("%s:%d: kernel %s: empty parameter", r.file, k.Line, k.Name)
	}
	var attrs []attribute
	var plain []token
	for idx := 0; idx < len(part); idx++ {
		t := part[idx]
		if g, ok := r.groups[r.indexOf(t)]; ok {
			attrs = append(attrs, g.attrs...)
			for idx < len(part) && part[idx].pos < r.toks[g.last].end {
				idx++
			}
			idx--
			continue
		}
		plain = append(plain, t)
	}
	if len(plain) < 2 || plain[len(plain)-1].kind != tIdent {
		return kernelParam{}, fmt.Errorf("%s:%d: kernel %s: cannot parse parameter %q", r.file, k.Line, k.Name, r.text(part[0], part[len(part)-1]))
	}
	p := kernelParam{Name: plain[len(plain)-1].s, Type: r.text(plain[0], plain[len(plain)-2])}
	found := false
	for _, a := range attrs {
		switch a.name {
		case "buffer":
			p.Kind, p.Index, found = paramBuffer, a.args, true
		case "threadgroup":
			p.Kind, p.Index, found = paramThreadgroup, a.args, true
		default:
			if _, ok := builtinAttrs[a.name]; ok {
				p.Kind, p.Attr, found = paramBuiltin, a.name, true
			}
		}
		if found {
			break
		}
	}
	if !found {
		names := make([]string, len(attrs))
		for i, a := range attrs {
			names[i] = a.name
		}
		if len(attrs) == 0 {
			return p, fmt.Errorf("%s:%d: kernel %s: parameter %s has no [[buffer(i)]], [[threadgroup(i)]] or builtin attribute", r.file, k.Line, k.Name, p.Name)
		}
		return p, fmt.Errorf("%s:%d: kernel %s: parameter %s: unsupported attribute [[%s]] (mslemu models buffers, threadgroup memory and compute builtins)", r.file, k.Line, k.Name, p.Name, strings.Join(names, ", "))
	}
	if (p.Kind == paramBuffer || p.Kind == paramThreadgroup) && strings.TrimSpace(p.Index) == "" {
		return p, fmt.Errorf("%s:%d: kernel %s: parameter %s: missing index", r.file, k.Line, k.Name, p.Name)
	}
	return p, nil
}

func (r *rewriter) indexOf(t token) int {
	i := sort.Search(len(r.toks), func(i int) bool { return r.toks[i].pos >= t.pos })
	return i
}
