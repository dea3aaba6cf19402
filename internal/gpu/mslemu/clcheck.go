package mslemu

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// AddressSpaceCheck compiles MSL sources (file name → text; headers are included by
// name, other files compiled as one program in name order) a second time, as C++ for
// OpenCL 2021 (clang -x clcpp -cl-std=clc++2021, -fsyntax-only), with MSL's address
// spaces mapped onto OpenCL's — device → __global, threadgroup → __local, constant →
// __constant, thread → __private — and the generic address space disabled. OpenCL's
// address spaces are part of the type, as MSL's are: passing a device pointer where a
// thread or threadgroup pointer is expected, binding a threadgroup array to a device
// reference, dropping constant, or any other conversion between spaces is an error
// here, as it is for Apple's compiler — the emulator's C++ build, which #defines the
// keywords away, cannot see it. The result wraps ErrCompile with clang's diagnostics.
//
// The prelude (shim/opencl_msl.h) declares the part of the Metal standard library the
// kernels use; a kernel calling something it lacks fails with "use of undeclared
// identifier" and the declaration belongs there.
func AddressSpaceCheck(sources map[string]string, macros map[string]string) error {
	ci, err := findCompiler("")
	if err != nil {
		return err
	}
	// The OpenCL driver is clang itself, beside clang++.
	cc := ci.path
	if dir, base := filepath.Split(cc); strings.HasPrefix(base, "clang++") {
		cand := filepath.Join(dir, "clang"+strings.TrimPrefix(base, "clang++"))
		if _, err := os.Stat(cand); err == nil {
			cc = cand
		}
	}
	dir, err := os.MkdirTemp("", "mslemu-cl-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	inc := filepath.Join(dir, "shim")
	src := filepath.Join(dir, "src")
	for _, d := range []string{inc, src} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	prelude, err := assets.ReadFile("shim/opencl_msl.h")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(inc, "opencl_msl.h"), prelude, 0o644); err != nil {
		return err
	}
	for _, h := range metalHeaders {
		if err := os.WriteFile(filepath.Join(inc, h), []byte("#include \"opencl_msl.h\"\n"), 0o644); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(sources))
	for n := range sources {
		if strings.ContainsAny(n, "\"\n\\") || strings.HasPrefix(n, "/") || strings.Contains(n, "..") {
			return fmt.Errorf("mslemu: bad source name %q", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var tu strings.Builder
	tu.WriteString("#include \"opencl_msl.h\"\n")
	for _, n := range names {
		text, err := rewriteOpenCL(n, sources[n])
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCompile, err)
		}
		text = fmt.Sprintf("#line 1 %q\n%s\n", n, text)
		if isHeader(n) {
			dst := filepath.Join(src, filepath.FromSlash(n))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(dst, []byte(text), 0o644); err != nil {
				return err
			}
			continue
		}
		tu.WriteString(text)
	}
	if err := os.WriteFile(filepath.Join(src, "tu.clcpp"), []byte(tu.String()), 0o644); err != nil {
		return err
	}
	args := append([]string{}, clFlags...)
	args = append(args, macroFlags(macros)...)
	args = append(args, "src/tu.clcpp")
	return runClang(&compilerInfo{path: cc, version: ci.version}, dir, args)
}

// clFlags: C++ for OpenCL 2021 without the generic address space (pipes and device-side
// enqueue depend on it and go too), no fp64, errors only.
var clFlags = []string{
	"-x", "clcpp", "-cl-std=clc++2021", "-fsyntax-only", "-Ishim",
	"-Xclang", "-cl-ext=-__opencl_c_generic_address_space,-__opencl_c_pipes,-__opencl_c_device_enqueue,-__opencl_c_fp64,-cl_khr_fp64",
	"-w",
}

// clKeywords are OpenCL keywords that MSL code may use as names.
var clKeywords = map[string]bool{
	"local": true, "global": true, "private": true, "read_only": true, "write_only": true, "read_write": true,
	"__local": true, "__global": true, "__private": true, "__constant": true, "__generic": true, "generic": true,
	"pipe": true, "image1d_t": true, "image2d_t": true, "image3d_t": true, "sampler_t": true, "event_t": true,
}

var clVecType = regexp.MustCompile(`^(bool|u?char|u?short|u?int|u?long|half|float)[234]$`)

// rewriteOpenCL turns MSL into C++ for OpenCL without moving a line: attributes are
// blanked, unsuffixed float literals get an f (OpenCL's are double, as C++'s), h
// literals become (half) casts, and MSL's vector constructors become OpenCL's: T(a, b)
// the vector literal (T)(a, b), T(x) a splat or conversion (mslcl_cvt<T>(x)).
// Threadgroup variables stay as they are: __local at kernel scope is what OpenCL allows.
func rewriteOpenCL(file, src string) (string, error) {
	toks, err := lex(src)
	if err != nil {
		return "", fmt.Errorf("%s: %v", file, err)
	}
	var edits []edit
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if g, ok := parseAttrGroup(toks, src, i); ok {
			edits = append(edits, edit{t.pos, toks[g.last].end, blank(src[t.pos:toks[g.last].end])})
			i = g.last
			continue
		}
		switch t.kind {
		case tDirective:
			r := &rewriter{file: file, src: src}
			if e, ok := r.directive(t); ok {
				edits = append(edits, e)
			}
		case tNumber:
			if s, ok := floatLiteral(t.s); ok {
				if strings.HasPrefix(s, "::half(") {
					s = "((half)" + strings.TrimPrefix(s, "::half")
				}
				edits = append(edits, edit{t.pos, t.end, s})
			}
		case tIdent:
			if clKeywords[t.s] {
				edits = append(edits, edit{t.pos, t.end, "mslcl_" + t.s})
				continue
			}
			if !clVecType.MatchString(t.s) || i+1 >= len(toks) || toks[i+1].s != "(" {
				continue
			}
			if i > 0 && (toks[i-1].s == "<" || toks[i-1].s == "::" || toks[i-1].s == ".") {
				continue
			}
			// count the top-level arguments
			depth, commas := 0, 0
			for j := i + 1; j < len(toks); j++ {
				switch toks[j].s {
				case "(", "[", "{":
					depth++
				case ")", "]", "}":
					depth--
				case ",":
					if depth == 1 {
						commas++
					}
				}
				if depth == 0 {
					break
				}
			}
			if commas > 0 {
				edits = append(edits, edit{t.pos, t.end, "(" + t.s + ")"})
			} else {
				edits = append(edits, edit{t.pos, t.end, "metal::mslcl_cvt<" + t.s + ">"})
			}
		}
	}
	sort.Slice(edits, func(a, b int) bool { return edits[a].start < edits[b].start })
	var b strings.Builder
	last := 0
	for _, e := range edits {
		if e.start < last {
			continue
		}
		b.WriteString(src[last:e.start])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(src[last:])
	return b.String(), nil
}
