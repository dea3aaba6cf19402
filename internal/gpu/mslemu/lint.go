package mslemu

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The attribute linter: rules of the Metal Shading Language that Apple's compiler
// enforces and clang, compiling the same source as C++ against the shim, cannot see
// (the attributes are blanked before clang runs). Each is checked when the sources are
// parsed, so CompileCheck, Compile and everything built on them refuse a kernel that
// Metal would refuse:
//
//   - the position and size attributes of one kernel ([[thread_position_in_grid]],
//     [[threads_per_threadgroup]], ...) are all scalars or all vectors of one width, of
//     uint or ushort components (MSL spec 5.2.3.6);
//   - the index attributes ([[thread_index_in_threadgroup]], [[thread_index_in_simdgroup]],
//     [[simdgroup_index_in_threadgroup]], ...) are scalar uint or ushort;
//   - [[buffer(n)]] and [[threadgroup(n)]] indices are unique per kernel and at most 30
//     (the argument table has 31 entries);
//   - no double: Apple GPUs have no 64-bit float, and MSL rejects the type;
//   - the static threadgroup memory of a kernel is at most 32 KiB (Apple GPUs' limit,
//     maxThreadgroupMemoryLength); its size depends on the macros the host compiles
//     with, so clang evaluates it, through a static_assert the entry point carries.

// ErrRule is wrapped (together with ErrCompile) by the errors of sources that break one
// of the MSL rules above.
var ErrRule = errors.New("mslemu: MSL rule violated")

// MaxThreadgroupMemory is the static threadgroup memory a kernel may declare: 32 KiB,
// what every Apple GPU family offers.
const MaxThreadgroupMemory = 32 << 10

// maxArgIndex is the largest [[buffer(n)]] / [[threadgroup(n)]] index.
const maxArgIndex = 30

// positionAttrs are the attributes bound by the matching-width rule.
var positionAttrs = map[string]bool{
	"thread_position_in_grid":          true,
	"threads_per_grid":                 true,
	"grid_size":                        true,
	"grid_origin":                      true,
	"thread_position_in_threadgroup":   true,
	"threads_per_threadgroup":          true,
	"dispatch_threads_per_threadgroup": true,
	"threadgroup_position_in_grid":     true,
	"threadgroups_per_grid":            true,
}

func ruleErr(file string, line int, format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s:%d: %s", ErrCompile, ErrRule, file, line, fmt.Sprintf(format, args...))
}

// attrType splits a builtin's parameter type into its component type and width:
// "uint2" → ("uint", 2), "const ushort" → ("ushort", 1). ok is false for anything
// that is not an unsigned integer scalar or vector.
func attrType(typ string) (comp string, width int, ok bool) {
	t := strings.TrimSpace(typ)
	for _, q := range []string{"const ", "thread ", "metal::"} {
		t = strings.TrimSpace(strings.TrimPrefix(t, q))
	}
	for _, c := range []string{"ushort", "uint"} {
		if rest, found := strings.CutPrefix(t, c); found {
			switch rest {
			case "":
				return c, 1, true
			case "2", "3":
				return c, int(rest[0] - '0'), true
			}
		}
	}
	return "", 0, false
}

// lintKernel checks a kernel's parameters.
func lintKernel(k *kernelDecl) error {
	width, widthParam := 0, ""
	bufIdx := map[int64]string{}
	tgIdx := map[int64]string{}
	for _, p := range k.Params {
		switch p.Kind {
		case paramBuiltin:
			comp, w, ok := attrType(p.Type)
			if positionAttrs[p.Attr] {
				if !ok {
					return ruleErr(k.File, k.Line, "kernel %s: parameter %s [[%s]] has type %s; position and size attributes are uint, ushort or their 2- and 3-vectors", k.Name, p.Name, p.Attr, p.Type)
				}
				if width == 0 {
					width, widthParam = w, p.Name
				} else if w != width {
					return ruleErr(k.File, k.Line, "kernel %s: parameter %s [[%s]] is %s (%d components) but %s is %d-component: MSL requires all position and size attributes of a kernel to be scalars or vectors of one width", k.Name, p.Name, p.Attr, p.Type, w, widthParam, width)
				}
				_ = comp
				continue
			}
			if !ok || w != 1 {
				return ruleErr(k.File, k.Line, "kernel %s: parameter %s [[%s]] has type %s; index attributes are uint or ushort", k.Name, p.Name, p.Attr, p.Type)
			}
		case paramBuffer, paramThreadgroup:
			seen, what := bufIdx, "buffer"
			if p.Kind == paramThreadgroup {
				seen, what = tgIdx, "threadgroup"
			}
			n, err := strconv.ParseInt(strings.TrimSpace(p.Index), 0, 64)
			if err != nil {
				// a macro or an expression: checked by clang (indexAsserts)
				continue
			}
			if n < 0 || n > maxArgIndex {
				return ruleErr(k.File, k.Line, "kernel %s: parameter %s: [[%s(%d)]] is outside 0..%d", k.Name, p.Name, what, n, maxArgIndex)
			}
			if prev, dup := seen[n]; dup {
				return ruleErr(k.File, k.Line, "kernel %s: parameters %s and %s both use [[%s(%d)]]", k.Name, prev, p.Name, what, n)
			}
			seen[n] = p.Name
		}
	}
	return nil
}

// lintSource checks what holds for a whole source: no double, written as a type
// (double, double2, ...) or as a long-double literal (1.0L).
func lintSource(file string, toks []token) error {
	for _, t := range toks {
		switch t.kind {
		case tIdent:
			if t.s == "double" || (strings.HasPrefix(t.s, "double") && len(t.s) == 7 && strings.ContainsRune("234", rune(t.s[6]))) {
				return ruleErr(file, t.line, "%s: MSL has no double (Apple GPUs have no 64-bit float); use float", t.s)
			}
		case tNumber:
			if _, ok := floatLiteral(t.s); !ok && strings.ContainsAny(t.s, "lL") && !strings.HasPrefix(strings.ToLower(t.s), "0x") &&
				strings.ContainsAny(t.s, ".eE") {
				return ruleErr(file, t.line, "%s: a long double literal; MSL has no double", t.s)
			}
		case tDirective:
			inner, err := lex(t.s[1:])
			if err != nil {
				continue
			}
			for i := range inner {
				inner[i].line += t.line - 1
			}
			if err := lintSource(file, inner); err != nil {
				return err
			}
		}
	}
	return nil
}

// kernelAsserts returns C++ static_asserts for a kernel, placed after its entry point:
// its static threadgroup memory (each variable rounded up to 16 bytes, Metal's
// granularity) at most 32 KiB, and the [[buffer]] and [[threadgroup]] indices the Go
// linter could not read (macros, expressions) in range and distinct. A failure names
// the kernel and, for the threadgroup memory, the byte count (in the instantiation of
// mslemu::tg_limit<N, ...>).
func kernelAsserts(k *kernelDecl) string {
	var b strings.Builder
	if len(k.Threadgroup) > 0 && !k.Namespaced && !k.Template && k.Base == "" {
		var sum []string
		for _, t := range k.Threadgroup {
			sum = append(sum, "::mslemu::tg_round(sizeof(typename ::mslemu::tg_type<void("+tgDeclarator(t)+")>::type))")
		}
		fmt.Fprintf(&b, "static_assert(::mslemu::tg_limit<%s, %d>::ok, \"kernel %s: static threadgroup memory over %d bytes (see the instantiation above for the size)\");\n",
			strings.Join(sum, " + "), MaxThreadgroupMemory, k.Name, MaxThreadgroupMemory)
	}
	var exprs []struct{ kind, idx, name string }
	for _, p := range k.Params {
		if p.Kind == paramBuiltin {
			continue
		}
		kind := "buffer"
		if p.Kind == paramThreadgroup {
			kind = "threadgroup"
		}
		exprs = append(exprs, struct{ kind, idx, name string }{kind, strings.TrimSpace(p.Index), p.Name})
	}
	for i, e := range exprs {
		if _, err := strconv.ParseInt(e.idx, 0, 64); err != nil {
			fmt.Fprintf(&b, "static_assert((%s) >= 0 && (%s) <= %d, \"kernel %s: parameter %s: [[%s(n)]] outside 0..%d\");\n", e.idx, e.idx, maxArgIndex, k.Name, e.name, e.kind, maxArgIndex)
		}
		for _, f := range exprs[i+1:] {
			_, err1 := strconv.ParseInt(e.idx, 0, 64)
			_, err2 := strconv.ParseInt(f.idx, 0, 64)
			if e.kind == f.kind && (err1 != nil || err2 != nil) {
				fmt.Fprintf(&b, "static_assert((%s) != (%s), \"kernel %s: parameters %s and %s share a [[%s(n)]] index\");\n", e.idx, f.idx, k.Name, e.name, f.name, e.kind)
			}
		}
	}
	return b.String()
}

// tgDeclarator turns "float[32][2]" into "float[32][2]" as an abstract declarator usable
// in a function type (void(float[32][2]) would decay the array, so tg_type takes the
// type through a pointer to it: void(float(*)[32][2])).
func tgDeclarator(t string) string {
	if i := strings.IndexByte(t, '['); i >= 0 {
		return t[:i] + "(*)" + t[i:]
	}
	return t + "*"
}

// Kernels parses MSL sources and returns the host names of their kernels, sorted,
// after the linter's checks that need no macros (all but the threadgroup
// memory, which CompileCheck adds).
func Kernels(sources map[string]string) ([]string, error) {
	p, err := generate(sources)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(p.kernels))
	for n := range p.kernels {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}
