package mslemu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bonsai-go/sdk/internal/gpu"
)

//go:generate go run gen_swizzle.go

//go:embed shim/metal_stdlib.h shim/mslemu_abi.h shim/swizzle.inc shim/opencl_msl.h runtime/runtime.cpp
var assets embed.FS

// ErrNoCompiler is returned (wrapped, together with gpu.ErrUnavailable) by New,
// Compile and CompileCheck when no clang++ is found. On Debian or Ubuntu, `apt-get
// install clang` provides it; MSLEMU_CXX names a particular compiler.
var ErrNoCompiler = errors.New("mslemu: no clang++ found (install clang, or set MSLEMU_CXX)")

// ErrCompile is wrapped by the errors of Compile and CompileCheck for MSL sources that do
// not compile; the message carries clang's diagnostics with MSL file names and lines.
var ErrCompile = errors.New("mslemu: MSL compile error")

// The flags every translation unit is compiled with: C++14, the language MSL 3 is based
// on, so that a kernel written with a later C++ feature fails here as on Apple's
// compiler; warnings on and fatal (-Wall -Wextra -Werror), less the ones listed in
// cxxWarningExceptions; no fast math and no FMA contraction, so a kernel's float
// arithmetic is what the source says, operation by operation; no strict aliasing,
// since MSL code reinterprets buffers freely.
var cxxFlags = append([]string{
	"-std=c++14", "-O2", "-fno-strict-aliasing", "-fno-fast-math", "-ffp-contract=off", "-fno-math-errno",
	"-fdeclspec", "-fsigned-char", "-fPIC", "-fvisibility=hidden", "-fstack-clash-protection",
	"-Wall", "-Wextra", "-Werror",
}, cxxWarningExceptions...)

// cxxWarningExceptions are -Wno-... flags for warnings of -Wall -Wextra that MSL kernels
// would trigger by design, each with its reason. None is needed today: the shipped
// kernels and the emulator's test kernels compile clean with every warning on.
var cxxWarningExceptions = []string{}

// strictFlags are added in the strict alignment mode (WithStrictAlignment): the
// runtime's padded placement of threadgroup variables and the shim's checked copies
// (MSLEMU_STRICT_ALIGN), and clang's alignment sanitizer, not recoverable, without its
// runtime library: the kernel library's runtime handles the sanitizer's one report
// (__ubsan_handle_type_mismatch_v1_abort) by failing the dispatch.
var strictFlags = []string{
	"-DMSLEMU_STRICT_ALIGN=1", "-fsanitize=alignment", "-fno-sanitize-recover=alignment", "-fno-sanitize-link-runtime",
}

// flags returns cxxFlags, strictFlags when strict, then $MSLEMU_CXXFLAGS (extra flags,
// space-separated: for example -DMSLEMU_UCONTEXT to run on the ucontext fallback).
func flags(strict bool) []string {
	f := append([]string{}, cxxFlags...)
	if strict {
		f = append(f, strictFlags...)
	}
	return append(f, strings.Fields(os.Getenv("MSLEMU_CXXFLAGS"))...)
}

// linkFlags are the flags of a library's link. In the strict mode, every sanitizer report
// the kernels call must be one the runtime handles: an unresolved __ubsan_* is a link
// error (-z defs), not a failure to load.
func linkFlags(strict bool) []string {
	if strict {
		return []string{"-shared", "-Wl,-z,defs"}
	}
	return []string{"-shared"}
}

// Headers MSL sources include that all mean the shim.
var metalHeaders = []string{
	"metal_stdlib", "metal_math", "metal_compute", "metal_atomic", "metal_simdgroup", "metal_integer",
	"metal_common", "metal_geometric", "metal_relational", "metal_numeric", "metal_pack", "metal_types",
	"metal_graphics", "metal_texture", "metal_matrix", "metal_array", "metal_limits", "metal_config",
}

type compilerInfo struct {
	path    string
	version string
}

var (
	compilerMu    sync.Mutex
	compilerCache = map[string]*compilerInfo{}
)

// findCompiler returns the C++ compiler to use: explicit, else $MSLEMU_CXX, else clang++
// (or a versioned clang++-N) on the PATH.
func findCompiler(explicit string) (*compilerInfo, error) {
	candidates := []string{}
	if explicit != "" {
		candidates = append(candidates, explicit)
	} else if env := os.Getenv("MSLEMU_CXX"); env != "" {
		candidates = append(candidates, env)
	} else {
		candidates = append(candidates, "clang++")
		for v := 21; v >= 14; v-- {
			candidates = append(candidates, fmt.Sprintf("clang++-%d", v))
		}
	}
	compilerMu.Lock()
	defer compilerMu.Unlock()
	for _, c := range candidates {
		if ci, ok := compilerCache[c]; ok {
			return ci, nil
		}
		path, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		out, err := exec.Command(path, "--version").Output()
		if err != nil {
			continue
		}
		ci := &compilerInfo{path: path, version: strings.TrimSpace(string(out))}
		compilerCache[c] = ci
		return ci, nil
	}
	return nil, fmt.Errorf("%w: %w", gpu.ErrUnavailable, ErrNoCompiler)
}

// program is the generated C++ for one set of MSL sources.
type program struct {
	tu      string            // the translation unit: shim, sources, entry points
	headers map[string]string // rewritten headers (*.h sources), by name
	kernels map[string]*kernelDecl
}

// isHeader reports whether a source is a header: written beside the translation unit for
// #include "name", not compiled on its own.
func isHeader(name string) bool {
	return strings.HasSuffix(name, ".h") || strings.HasSuffix(name, ".hpp")
}

// symbol makes a C identifier of a kernel's host name.
func symbol(name string) string {
	ok := name != ""
	for i := 0; i < len(name); i++ {
		if !isIdentChar(name[i]) {
			ok = false
		}
	}
	if ok {
		return name
	}
	return "x" + hex.EncodeToString([]byte(name))
}

// generate rewrites the sources and builds the translation unit. The non-header sources
// are compiled as one translation unit in name order (as one Metal library from their
// concatenation); entry points are generated for every kernel found.
func generate(sources map[string]string) (*program, error) {
	names := make([]string, 0, len(sources))
	for n := range sources {
		names = append(names, n)
	}
	sort.Strings(names)
	p := &program{headers: map[string]string{}, kernels: map[string]*kernelDecl{}}
	var tu strings.Builder
	tu.WriteString("#include \"metal_stdlib.h\"\n")
	tgID := 0
	var kernels []*kernelDecl
	templates := map[string]*kernelDecl{}
	for _, n := range names {
		if strings.ContainsAny(n, "\"\n\\") || strings.HasPrefix(n, "/") || strings.Contains(n, "..") {
			return nil, fmt.Errorf("mslemu: bad source name %q", n)
		}
		res, err := rewriteSource(n, sources[n], &tgID)
		if errors.Is(err, ErrRule) {
			return nil, err // already an ErrCompile
		} else if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCompile, err)
		}
		if isHeader(n) {
			p.headers[n] = fmt.Sprintf("#line 1 %q\n%s\n", n, res.Text)
		} else {
			fmt.Fprintf(&tu, "#line 1 %q\n%s\n", n, res.Text)
		}
		for i := range res.Kernels {
			k := &res.Kernels[i]
			if k.Template {
				if _, dup := templates[k.Name]; !dup {
					templates[k.Name] = k
				}
				continue
			}
			if isHeader(n) {
				return nil, fmt.Errorf("%w: %s:%d: kernel %s is defined in a header; define kernels in .metal sources", ErrCompile, n, k.Line, k.Name)
			}
			if prev, dup := p.kernels[k.Name]; dup {
				return nil, fmt.Errorf("%w: kernel %s defined twice (%s:%d and %s:%d)", ErrCompile, k.Name, prev.File, prev.Line, k.File, k.Line)
			}
			p.kernels[k.Name] = k
			kernels = append(kernels, k)
		}
	}
	for _, k := range kernels {
		if k.Base != "" {
			t, ok := templates[k.Base]
			if !ok {
				return nil, fmt.Errorf("%w: %s:%d: kernel %s: no kernel template %s in the sources", ErrCompile, k.File, k.Line, k.Name, k.Base)
			}
			k.Params = t.Params
			if k.MaxThreads == 0 {
				k.MaxThreads = t.MaxThreads
			}
		}
		if err := lintKernel(k); err != nil {
			return nil, err
		}
		writeEntry(&tu, k)
	}
	p.tu = tu.String()
	return p, nil
}

// writeEntry writes a kernel's entry point (mslemu_k_*: called on each thread's fiber,
// binds the arguments from the runtime and calls the kernel) and its description
// (mslemu_i_*: per parameter its index, the size and alignment of what it points at,
// and whether it is a reference). The parameter types come from the kernel's function
// type in C++; the attributes give the bindings.
func writeEntry(b *strings.Builder, k *kernelDecl) {
	sym := symbol(k.Name)
	var descs strings.Builder
	for _, p := range k.Params {
		switch p.Kind {
		case paramBuffer:
			fmt.Fprintf(&descs, ", ::mslemu::buf_desc{(int64_t)(%s)}", p.Index)
		case paramThreadgroup:
			fmt.Fprintf(&descs, ", ::mslemu::tg_desc{(int64_t)(%s)}", p.Index)
		case paramBuiltin:
			fmt.Fprintf(&descs, ", ::mslemu::bi_desc<::mslemu::%s>{}", builtinAttrs[p.Attr])
		}
	}
	fmt.Fprintf(b, "#line %d %q\n", k.Line, k.File)
	fmt.Fprintf(b, "extern \"C\" MSLEMU_EXPORT void mslemu_k_%s(void) { ::mslemu::invoke(&%s%s); }\n", sym, k.Call, descs.String())
	fmt.Fprintf(b, "extern \"C\" MSLEMU_EXPORT void mslemu_i_%s(int64_t* o) { ::mslemu::describe(&%s, o%s); }\n", sym, k.Call, descs.String())
	b.WriteString(kernelAsserts(k))
}

func macroFlags(macros map[string]string) []string {
	keys := make([]string, 0, len(macros))
	for k := range macros {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if macros[k] == "" {
			out = append(out, "-D"+k)
		} else {
			out = append(out, "-D"+k+"="+macros[k])
		}
	}
	return out
}

// writeTree lays out a build directory: shim/ (the shim and the <metal_*> aliases),
// src/ (the rewritten headers and the translation unit) and the runtime.
func writeTree(dir string, p *program) error {
	shim := filepath.Join(dir, "shim")
	src := filepath.Join(dir, "src")
	for _, d := range []string{shim, src} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for _, f := range []string{"shim/metal_stdlib.h", "shim/mslemu_abi.h", "shim/swizzle.inc", "runtime/runtime.cpp"} {
		data, err := assets.ReadFile(f)
		if err != nil {
			return err
		}
		dst := filepath.Join(shim, filepath.Base(f))
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
	}
	for _, h := range metalHeaders {
		if err := os.WriteFile(filepath.Join(shim, h), []byte("#include \"metal_stdlib.h\"\n"), 0o644); err != nil {
			return err
		}
	}
	for name, text := range p.headers {
		dst := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(src, "mslemu_tu.cpp"), []byte(p.tu), 0o644)
}

// runClang runs the compiler in dir and turns a failure into an ErrCompile with its
// diagnostics (paths inside the build directory shortened).
func runClang(ci *compilerInfo, dir string, args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ci.path, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Run(); err != nil {
		msg := stderr.String()
		msg = strings.ReplaceAll(msg, dir+string(filepath.Separator), "")
		msg = filterDiagnostics(msg)
		if len(msg) > 16<<10 {
			msg = msg[:16<<10] + "\n... (diagnostics truncated)"
		}
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%w:\n%s", ErrCompile, strings.TrimRight(msg, "\n"))
	}
	return nil
}

// CompileCheck compiles MSL sources (file name → text) with the given preprocessor
// macros against the shim, syntax and types only (clang -fsyntax-only), including every
// kernel's argument bindings. It is meant for CI: a syntax or type error in any source
// fails it with clang's diagnostics (wrapping ErrCompile). It needs clang++ but no
// emulator runtime, so it works on every platform with a compiler.
func CompileCheck(sources map[string]string, macros map[string]string) error {
	ci, err := findCompiler("")
	if err != nil {
		return err
	}
	p, err := generate(sources)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "mslemu-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeTree(dir, p); err != nil {
		return err
	}
	opts, err := defaultOptions()
	if err != nil {
		return err
	}
	args := append(flags(opts.strict), "-fsyntax-only", "-Ishim")
	args = append(args, macroFlags(macros)...)
	args = append(args, "src/mslemu_tu.cpp")
	return runClang(ci, dir, args)
}

// defaultCacheDir is os.UserCacheDir()/bonsai-mslemu, or a directory under the system
// temporary directory when there is no user cache directory.
func defaultCacheDir() string {
	if d := os.Getenv("MSLEMU_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "bonsai-mslemu")
	}
	return filepath.Join(os.TempDir(), "bonsai-mslemu")
}

var buildMu sync.Mutex

// buildLibrary compiles the program into a shared library in cacheDir, named by a hash
// of everything that goes into it (sources, shim, runtime, macros, flags, compiler
// version), and returns its path. A library already in the cache is reused.
func buildLibrary(ci *compilerInfo, cacheDir string, p *program, macros map[string]string, strict bool) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "mslemu abi %d\n", abiVersion)
	fmt.Fprintf(h, "%s\n%s %s\n", ci.version, strings.Join(flags(strict), " "), strings.Join(linkFlags(strict), " "))
	for _, f := range []string{"shim/metal_stdlib.h", "shim/mslemu_abi.h", "shim/swizzle.inc", "runtime/runtime.cpp"} {
		data, _ := assets.ReadFile(f)
		fmt.Fprintf(h, "%s %d\n", f, len(data))
		h.Write(data)
	}
	fmt.Fprintf(h, "tu %d\n%s", len(p.tu), p.tu)
	hnames := make([]string, 0, len(p.headers))
	for n := range p.headers {
		hnames = append(hnames, n)
	}
	sort.Strings(hnames)
	for _, n := range hnames {
		fmt.Fprintf(h, "header %q %d\n%s", n, len(p.headers[n]), p.headers[n])
	}
	fmt.Fprintf(h, "macros %q\n", macroFlags(macros))
	key := hex.EncodeToString(h.Sum(nil))[:40]
	out := filepath.Join(cacheDir, key+".so")
	if _, err := os.Stat(out); err == nil {
		now := time.Now()
		os.Chtimes(out, now, now) // in use: keep it from pruning
		return out, nil
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("mslemu: cache directory: %w", err)
	}
	dir, err := os.MkdirTemp(cacheDir, "build-")
	if err != nil {
		return "", fmt.Errorf("mslemu: cache directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := writeTree(dir, p); err != nil {
		return "", err
	}
	args := append(flags(strict), linkFlags(strict)...)
	args = append(args, "-Ishim")
	args = append(args, macroFlags(macros)...)
	args = append(args, "-o", "lib.so", "src/mslemu_tu.cpp", "shim/runtime.cpp", "-lpthread")
	if err := runClang(ci, dir, args); err != nil {
		return "", err
	}
	// rename within the cache directory: atomic, so concurrent builders of the same key
	// (parallel test binaries) never see a partial file
	if err := os.Rename(filepath.Join(dir, "lib.so"), out); err != nil {
		return "", fmt.Errorf("mslemu: %w", err)
	}
	pruneCache(cacheDir)
	return out, nil
}

// pruneCache removes libraries unused for 30 days (a library is touched when reused)
// and build directories left by killed builds.
func pruneCache(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue
		}
		age := time.Since(info.ModTime())
		switch {
		case strings.HasSuffix(e.Name(), ".so") && age > 30*24*time.Hour:
			os.Remove(filepath.Join(dir, e.Name()))
		case e.IsDir() && strings.HasPrefix(e.Name(), "build-") && age > 24*time.Hour:
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// abiVersion must match MSLEMU_ABI_VERSION in shim/mslemu_abi.h.
const abiVersion = 1

// filterDiagnostics keeps clang's errors and the notes that point into the MSL sources
// (such as "in instantiation of ... requested here"), and drops the notes inside the shim
// (lists of overload candidates), which are long and rarely help.
func filterDiagnostics(msg string) string {
	lines := strings.Split(msg, "\n")
	var out []string
	keep := true
	for _, l := range lines {
		if kind, file, ok := diagnostic(l); ok {
			keep = kind != "note" || !(strings.HasPrefix(file, "shim/") || strings.HasPrefix(file, "shim\\"))
		} else if strings.HasSuffix(l, " generated.") {
			keep = true
		}
		if keep {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// diagnostic parses "file:line:col: kind: ..." (and "In file included from" lines,
// which belong to the following diagnostic and are kept).
func diagnostic(l string) (kind, file string, ok bool) {
	if strings.HasPrefix(l, "In file included from") {
		return "error", "", true
	}
	for _, k := range []string{": error: ", ": fatal error: ", ": warning: ", ": note: "} {
		if i := strings.Index(l, k); i > 0 {
			loc := l[:i]
			if j := strings.Index(loc, ":"); j > 0 {
				return strings.Trim(k, ": "), loc[:j], true
			}
		}
	}
	return "", "", false
}
