package deploy

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// repoRoot is the SDK's module root, the image's build context.
const repoRoot = "../../.."

// dockerfile is what the tests read from the Dockerfile, parsed by BuildKit's own parser
// (frontend/dockerfile/parser and instructions: what docker build runs).
type dockerfile struct {
	args      map[string]string // ARG defaults: global, and of the build stages
	build     []*instructions.Stage
	buildName string // the first stage's name, which COPY --from names
	rt        runtimeStage
}

// runtimeStage is the last stage, the image shipped.
type runtimeStage struct {
	from            string
	user            string
	expose          []string
	entrypoint, cmd *instructions.ShellDependantCmdLine
	env             map[string]string
	volumes         []string
	copies          []*instructions.CopyCommand
}

func parseDockerfile(src string) (*dockerfile, error) {
	res, err := parser.Parse(strings.NewReader(src))
	if err != nil {
		return nil, err
	}
	stages, meta, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return nil, err
	}
	if len(stages) < 2 {
		return nil, fmt.Errorf("%d stages: want a build stage and a runtime stage", len(stages))
	}
	d := &dockerfile{args: map[string]string{}, buildName: stages[0].Name}
	addArgs := func(args []instructions.KeyValuePairOptional) {
		for _, kv := range args {
			if kv.Value != nil {
				d.args[kv.Key] = *kv.Value
			}
		}
	}
	for _, m := range meta {
		addArgs(m.Args)
	}
	for i := range stages[:len(stages)-1] {
		for _, c := range stages[i].Commands {
			if a, ok := c.(*instructions.ArgCommand); ok {
				addArgs(a.Args)
			}
		}
		d.build = append(d.build, &stages[i])
	}
	last := stages[len(stages)-1]
	rt := runtimeStage{from: os.Expand(last.BaseName, func(k string) string { return d.args[k] }), env: map[string]string{}}
	for _, c := range last.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			rt.user = c.User
		case *instructions.ExposeCommand:
			rt.expose = append(rt.expose, c.Ports...)
		case *instructions.EntrypointCommand:
			rt.entrypoint = &c.ShellDependantCmdLine
		case *instructions.CmdCommand:
			rt.cmd = &c.ShellDependantCmdLine
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				rt.env[kv.Key] = kv.Value
			}
		case *instructions.VolumeCommand:
			rt.volumes = append(rt.volumes, c.Volumes...)
		case *instructions.CopyCommand:
			rt.copies = append(rt.copies, c)
		}
	}
	d.rt = rt
	return d, nil
}

// shellWords splits a shell command line: blanks separate words, quotes group them.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// goBuild is the Dockerfile's go build command: its environment, its arguments, and the
// output path it writes.
type goBuild struct {
	env  []string
	args []string // after "go build", without -o
	out  string
}

func (d *dockerfile) goBuild() (*goBuild, error) {
	var found []goBuild
	for _, st := range d.build {
		for _, c := range st.Commands {
			r, ok := c.(*instructions.RunCommand)
			if !ok {
				continue
			}
			run := strings.Join(r.CmdLine, " ")
			if !strings.Contains(run, "go build") {
				continue
			}
			if !r.PrependShell {
				return nil, fmt.Errorf("RUN %s: the exec form; the test reads the shell form", run)
			}
			words, err := shellWords(run)
			if err != nil {
				return nil, err
			}
			i := slices.Index(words, "go")
			if i < 0 || i+1 >= len(words) || words[i+1] != "build" {
				return nil, fmt.Errorf("RUN %s: not a plain go build", run)
			}
			var b goBuild
			for _, e := range words[:i] {
				if !strings.Contains(e, "=") {
					return nil, fmt.Errorf("RUN %s: %q before go is not an assignment", run, e)
				}
				b.env = append(b.env, os.Expand(e, func(k string) string { return d.args[k] }))
			}
			rest := words[i+2:]
			for j := 0; j < len(rest); j++ {
				if rest[j] == "-o" && j+1 < len(rest) {
					b.out = rest[j+1]
					j++
					continue
				}
				if strings.Contains(rest[j], "$") {
					return nil, fmt.Errorf("RUN %s: %q depends on the shell", run, rest[j])
				}
				b.args = append(b.args, rest[j])
			}
			if b.out == "" {
				return nil, fmt.Errorf("RUN %s: no -o", run)
			}
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%d go build commands in the build stages, want 1", len(found))
	}
	return &found[0], nil
}

// execForm gives an ENTRYPOINT's or CMD's words, which must be in the exec (JSON) form:
// the shell form needs a shell, which the image has not.
func execForm(c *instructions.ShellDependantCmdLine, what string) ([]string, error) {
	if c == nil {
		return nil, fmt.Errorf("no %s", what)
	}
	if c.PrependShell {
		return nil, fmt.Errorf("%s %s: not the exec (JSON) form", what, strings.Join(c.CmdLine, " "))
	}
	return c.CmdLine, nil
}

// checkRuntime checks the runtime stage: a distroless or scratch base, a numeric non-root
// user, the port, the entrypoint running the built binary on 0.0.0.0 at that port, and
// HF_HOME on a volume.
func (d *dockerfile) checkRuntime(b *goBuild) error {
	rt := &d.rt
	var errs []error
	if !strings.HasPrefix(rt.from, "gcr.io/distroless/") && rt.from != "scratch" {
		errs = append(errs, fmt.Errorf("runtime image %s: want gcr.io/distroless/... or scratch", rt.from))
	}
	uid, _, _ := strings.Cut(rt.user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		errs = append(errs, fmt.Errorf("USER %q: want a numeric non-root uid (runAsNonRoot can verify only a number)", rt.user))
	}
	if len(rt.expose) != 1 || rt.expose[0] != strconv.Itoa(servePort) {
		errs = append(errs, fmt.Errorf("EXPOSE %v, want %d", rt.expose, servePort))
	}
	// The binary the build wrote is the one the entrypoint runs.
	var bin string
	for _, c := range rt.copies {
		if c.From == d.buildName && len(c.SourcePaths) == 1 && c.SourcePaths[0] == b.out {
			bin = c.DestPath
		}
	}
	entry, err := execForm(rt.entrypoint, "ENTRYPOINT")
	switch {
	case err != nil:
		errs = append(errs, err)
	case bin == "" || len(entry) == 0 || entry[0] != bin:
		errs = append(errs, fmt.Errorf("ENTRYPOINT %v does not run the binary built at %s (copied to %q)", entry, b.out, bin))
	default:
		addr := ""
		for i := 1; i < len(entry); i++ {
			if entry[i] == "-addr" && i+1 < len(entry) {
				addr = entry[i+1]
			} else if v, ok := strings.CutPrefix(entry[i], "-addr="); ok {
				addr = v
			}
		}
		if addr != fmt.Sprintf("0.0.0.0:%d", servePort) {
			errs = append(errs, fmt.Errorf("ENTRYPOINT's -addr %q: want 0.0.0.0:%d (serve's default listens on loopback only)", addr, servePort))
		}
	}
	if _, err := execForm(rt.cmd, "CMD"); err != nil {
		errs = append(errs, err)
	}
	hf := rt.env["HF_HOME"]
	if hf == "" || !slices.ContainsFunc(rt.volumes, func(v string) bool { return hf == v || strings.HasPrefix(hf, v+"/") }) {
		errs = append(errs, fmt.Errorf("HF_HOME %q is on no VOLUME (%v)", hf, rt.volumes))
	}
	if !slices.Contains(b.env, "CGO_ENABLED=0") {
		errs = append(errs, fmt.Errorf("go build's environment %v lacks CGO_ENABLED=0", b.env))
	}
	return errors.Join(errs...)
}

// glibc's libraries and loaders, which distroless/base and distroless/cc hold.
var (
	glibcLibs    = []string{"libc.so.6", "libdl.so.2", "libpthread.so.0", "libm.so.6"}
	glibcLoaders = []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"}
)

// checkBinaryFits says whether an executable with this interpreter and these NEEDED
// libraries runs on the runtime image: on static or scratch only a static one; on base or
// cc (glibc) one that needs glibc at most.
func checkBinaryFits(image, interp string, needed []string) error {
	static := interp == "" && len(needed) == 0
	switch {
	case image == "scratch" || strings.HasPrefix(image, "gcr.io/distroless/static"):
		if !static {
			return fmt.Errorf("%s has no libc, but the binary is dynamic (interpreter %q, needs %v)", image, interp, needed)
		}
	case strings.HasPrefix(image, "gcr.io/distroless/base"), strings.HasPrefix(image, "gcr.io/distroless/cc"):
		if static {
			return nil
		}
		if !slices.Contains(glibcLoaders, interp) {
			return fmt.Errorf("interpreter %q is not glibc's", interp)
		}
		for _, lib := range needed {
			if !slices.Contains(glibcLibs, lib) {
				return fmt.Errorf("the binary needs %s, which %s lacks", lib, image)
			}
		}
	default:
		return fmt.Errorf("runtime image %s: not one this check knows", image)
	}
	return nil
}

func elfDeps(file string) (interp string, needed []string, err error) {
	f, err := elf.Open(file)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return "", nil, err
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if f.Section(".dynamic") != nil || slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_DYNAMIC }) {
		if needed, err = f.ImportedLibraries(); err != nil {
			return "", nil, err
		}
		if len(needed) == 0 && interp == "" {
			needed = []string{"(a dynamic section)"}
		}
	}
	return interp, needed, nil
}

// readIgnoreFile reads the Dockerfile's own ignore file with Docker's reader and matcher
// (github.com/moby/patternmatcher, as BuildKit uses them).
func readIgnoreFile() (*patternmatcher.PatternMatcher, error) {
	f, err := os.Open("Dockerfile.dockerignore")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pats, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return patternmatcher.New(pats)
}

func ignored(pm *patternmatcher.PatternMatcher, file string) bool {
	m, err := pm.MatchesOrParentMatches(file)
	return err == nil && m
}

// buildContext copies the repository's tracked files that the ignore file keeps into dir.
func buildContext(t *testing.T, dir string, pm *patternmatcher.PatternMatcher) (kept, left int) {
	t.Helper()
	out, err := exec.Command("git", "-C", repoRoot, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		if ignored(pm, f) {
			left++
			continue
		}
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(f)))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		kept++
	}
	return kept, left
}

func readDockerfile(t *testing.T) *dockerfile {
	t.Helper()
	src, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseDockerfile(string(src))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return d
}

// The image: the Dockerfile's go build, run on the files its build context keeps, gives a
// binary its runtime image can run; serve's flags, from that binary, take every argument
// the manifest passes.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short leaves out the image test: it compiles the serve binary, tens of seconds on a cold cache")
	}
	d := readDockerfile(t)
	b, err := d.goBuild()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.checkRuntime(b); err != nil {
		t.Fatal(err)
	}
	pm, err := readIgnoreFile()
	if err != nil {
		t.Fatal(err)
	}
	ctxDir := filepath.Join(t.TempDir(), "context")
	kept, left := buildContext(t, ctxDir, pm)
	t.Logf("build context: %d files kept, %d left out", kept, left)

	bin := filepath.Join(t.TempDir(), "serve")
	cmd := exec.Command("go", append([]string{"build", "-o", bin}, b.args...)...)
	cmd.Dir = ctxDir
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly"), b.env...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s (in the build context): %v\n%s", cmd, err, out)
	}
	t.Logf("%v: %v", cmd.Args, time.Since(start).Round(time.Millisecond))

	interp, needed, err := elfDeps(bin)
	if err != nil {
		t.Fatal(err)
	}
	rt := d.rt.from
	t.Logf("runtime image %s; binary: interpreter %q, needs %v", rt, interp, needed)
	if err := checkBinaryFits(rt, interp, needed); err != nil {
		t.Error(err)
	}

	t.Run("serve flags", func(t *testing.T) {
		out, err := exec.Command(bin, "-h").CombinedOutput()
		if err != nil {
			t.Fatalf("serve -h: %v\n%s", err, out)
		}
		flags, err := parseUsage(string(out))
		if err != nil {
			t.Fatal(err)
		}
		bnd := loadBundle(t)
		_, c, err := bnd.serveContainer()
		if err != nil {
			t.Fatal(err)
		}
		if err := checkServeFlags(flags, c.Args); err != nil {
			t.Error(err)
		}
		// The image's own arguments too.
		entry, _ := execForm(d.rt.entrypoint, "ENTRYPOINT")
		cmdArgs, _ := execForm(d.rt.cmd, "CMD")
		if err := checkServeFlags(flags, append(slices.Clone(entry[1:]), cmdArgs...)); err != nil {
			t.Errorf("Dockerfile ENTRYPOINT and CMD: %v", err)
		}
	})

	t.Run("routing metrics", func(t *testing.T) { scrapeServe(t, bin) })
}

// parseUsage reads the flag names and value kinds from serve -h (flag.PrintDefaults: a
// line "  -name kind", the kind absent for a bool).
func parseUsage(out string) (map[string]string, error) {
	re := regexp.MustCompile(`(?m)^  -(\S+)(?: (\S+))?$`)
	flags := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		kind := m[2]
		if kind == "" {
			kind = "bool"
		}
		flags[m[1]] = kind
	}
	if len(flags) < 5 {
		return nil, fmt.Errorf("%d flags in serve -h: not the usage expected\n%s", len(flags), out)
	}
	return flags, nil
}

// checkServeFlags checks args against serve's flags: each is one of them, with a value of
// its kind.
func checkServeFlags(flags map[string]string, args []string) error {
	var errs []error
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			errs = append(errs, fmt.Errorf("%q: not a flag (serve takes no arguments)", a))
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		kind, ok := flags[name]
		if !ok {
			errs = append(errs, fmt.Errorf("-%s: serve has no such flag", name))
			continue
		}
		if kind != "bool" && !hasValue {
			if i+1 >= len(args) {
				errs = append(errs, fmt.Errorf("-%s: no value", name))
				continue
			}
			i++
			value = args[i]
		}
		var perr error
		switch kind {
		case "bool":
			if hasValue {
				_, perr = strconv.ParseBool(value)
			}
		case "int", "bytes":
			_, perr = strconv.ParseInt(value, 10, 64)
		case "float":
			_, perr = strconv.ParseFloat(value, 64)
		case "duration":
			_, perr = time.ParseDuration(value)
		case "size":
			_, perr = parseSize(value)
		}
		if perr != nil {
			errs = append(errs, fmt.Errorf("-%s %q: not a %s: %v", name, value, kind, perr))
		}
	}
	return errors.Join(errs...)
}

// The Dockerfile's checks fail when it is wrong in their way.
func TestDockerfileChecksFail(t *testing.T) {
	src, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"root user", "USER 65532:65532", "USER root", "USER"},
		{"uid 0", "USER 65532:65532", "USER 0", "USER"},
		{"other base", "ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot", "ARG RUNTIME_IMAGE=debian:12", "runtime image debian:12"},
		{"cgo", "CGO_ENABLED=0 ", "CGO_ENABLED=1 ", "CGO_ENABLED=0"},
		{"port", "EXPOSE 8080", "EXPOSE 80", "EXPOSE"},
		{"loopback", `"-addr", "0.0.0.0:8080"`, `"-addr", "127.0.0.1:8080"`, "-addr"},
		{"other binary", `ENTRYPOINT ["/usr/local/bin/serve"`, `ENTRYPOINT ["/serve"`, "does not run the binary"},
		{"HF_HOME off the volume", "ENV HF_HOME=/data/hf", "ENV HF_HOME=/home/hf", "HF_HOME"},
		{"shell form", `ENTRYPOINT ["/usr/local/bin/serve", "-addr", "0.0.0.0:8080"]`, "ENTRYPOINT /usr/local/bin/serve -addr 0.0.0.0:8080", "exec (JSON) form"},
		{"unknown instruction", "EXPOSE 8080", "EXPOZE 8080", "unknown instruction"},
		{"bad flag", "COPY --from=build --chown", "COPY --form=build --chown", "unknown flag"},
		{"one stage", "FROM ${RUNTIME_IMAGE}\n", "", "1 stages"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(string(src), c.old, c.new, 1)
			if bad == string(src) {
				t.Fatalf("the Dockerfile no longer contains %q", c.old)
			}
			d, err := parseDockerfile(bad)
			if err == nil {
				var b *goBuild
				if b, err = d.goBuild(); err == nil {
					err = d.checkRuntime(b)
				}
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
	t.Run("two builds", func(t *testing.T) {
		bad := strings.Replace(string(src), "RUN mkdir -p /out/data/hf", "RUN go build -o /out/other ./examples/chat", 1)
		d, err := parseDockerfile(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.goBuild(); err == nil || !strings.Contains(err.Error(), "2 go build") {
			t.Errorf("got %v, want two builds refused", err)
		}
	})
}

// The binary/image fit is decided as the loader would: a dynamic binary on a static
// image, or one that needs more than glibc, is refused.
func TestBinaryFits(t *testing.T) {
	dyn := []string{"libdl.so.2", "libpthread.so.0", "libc.so.6"}
	for _, c := range []struct {
		image, interp string
		needed        []string
		ok            bool
	}{
		{"gcr.io/distroless/static-debian12:nonroot", "", nil, true},
		{"scratch", "", nil, true},
		{"gcr.io/distroless/static-debian12:nonroot", "/lib64/ld-linux-x86-64.so.2", dyn, false},
		{"scratch", "", []string{"libc.so.6"}, false},
		{"gcr.io/distroless/base-debian12:nonroot", "/lib64/ld-linux-x86-64.so.2", dyn, true},
		{"gcr.io/distroless/base-debian12:nonroot", "", nil, true},
		{"gcr.io/distroless/base-debian12:nonroot", "/lib64/ld-linux-x86-64.so.2", append(slices.Clone(dyn), "libvulkan.so.1"), false},
		{"gcr.io/distroless/base-debian12:nonroot", "/lib/ld-musl-x86_64.so.1", []string{"libc.musl-x86_64.so.1"}, false},
		{"alpine:3", "", nil, false},
	} {
		err := checkBinaryFits(c.image, c.interp, c.needed)
		if (err == nil) != c.ok {
			t.Errorf("%s, interpreter %q, needs %v: got %v, want ok=%v", c.image, c.interp, c.needed, err, c.ok)
		}
	}
}

// The ignore file keeps what the build reads (go.mod, the sources, their embedded files)
// and leaves out the rest, as Docker's matcher reads it.
func TestIgnoreFile(t *testing.T) {
	pm, err := readIgnoreFile()
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]bool{
		"go.mod":                            false,
		"go.sum":                            false,
		"examples/serve/main.go":            false,
		"examples/serve/page.html":          false, // go:embed
		"internal/synth/corpus.txt":         false, // go:embed
		"bonsai/vulkan/shaders/rmsnorm.spv": false, // go:embed
		"gguf/reader.go":                    false,
		".git/HEAD":                         true,
		"Ternary-Bonsai-2-27B-PQ2_0.gguf":   true,
		"models/a.gguf":                     true,
		"gguf/testdata/x.bin":               true,
		"bonsai/bonsai_test.go":             true,
		"examples/serve/deploy/Dockerfile":  true,
		"examples/serve/deploy/k8s/a.yaml":  true,
		"examples/serve/deployment/main.go": false,
	} {
		if got := ignored(pm, file); got != want {
			t.Errorf("left out %s: %v, want %v", file, got, want)
		}
	}
}

// Serve's flags against a manifest: an unknown flag and a value of the wrong kind fail.
func TestServeFlagsCheck(t *testing.T) {
	flags := map[string]string{"parallel": "int", "warmup": "bool", "prefix-cache": "size", "drain": "duration"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-paralel=4"}, "no such flag"},
		{[]string{"-parallel=four"}, "not a int"},
		{[]string{"-warmup=maybe"}, "not a bool"},
		{[]string{"-prefix-cache=2Gb"}, "not a size"},
		{[]string{"-drain=30"}, "not a duration"},
		{[]string{"model.gguf"}, "not a flag"},
	} {
		if err := checkServeFlags(flags, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
	if err := checkServeFlags(flags, []string{"-parallel=4", "-warmup", "-prefix-cache=2GiB", "-drain=30s"}); err != nil {
		t.Errorf("good flags refused: %v", err)
	}
}

// checkImageMatchesManifest: the Deployment runs the image as the user it declares, with
// HF_HOME where the image keeps it, on the port it exposes.
func checkImageMatchesManifest(d *dockerfile, b *bundle) error {
	rt := &d.rt
	dep, c, err := b.serveContainer()
	if err != nil {
		return err
	}
	var errs []error
	uid, _, _ := strings.Cut(rt.user, ":")
	sc := dep.Spec.Template.Spec.SecurityContext
	if sc == nil || sc.RunAsUser == nil || strconv.FormatInt(*sc.RunAsUser, 10) != uid || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		errs = append(errs, fmt.Errorf("the pod does not run as the image's non-root user %s with runAsNonRoot", uid))
	}
	if v := rt.env["HF_HOME"]; envValue(c, "HF_HOME") != v {
		errs = append(errs, fmt.Errorf("HF_HOME %q in the manifest, %q in the image", envValue(c, "HF_HOME"), v))
	}
	if !slices.Equal(rt.expose, []string{strconv.Itoa(servePort)}) {
		errs = append(errs, fmt.Errorf("the image exposes %v, the manifests use %d", rt.expose, servePort))
	}
	return errors.Join(errs...)
}

func TestImageMatchesManifest(t *testing.T) {
	d := readDockerfile(t)
	if err := checkImageMatchesManifest(d, loadBundle(t)); err != nil {
		t.Fatal(err)
	}
	b := loadBundle(t)
	u := int64(0)
	b.deployments[serveName].Spec.Template.Spec.SecurityContext.RunAsUser = &u
	if err := checkImageMatchesManifest(d, b); err == nil || !strings.Contains(err.Error(), "non-root user 65532") {
		t.Errorf("runAsUser 0: got %v", err)
	}
	b = loadBundle(t)
	_, c, _ := b.serveContainer()
	for i := range c.Env {
		if c.Env[i].Name == "HF_HOME" {
			c.Env[i].Value = "/data/huggingface"
		}
	}
	if err := checkImageMatchesManifest(d, b); err == nil || !strings.Contains(err.Error(), "HF_HOME") {
		t.Errorf("HF_HOME elsewhere: got %v", err)
	}
}
