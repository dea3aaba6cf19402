package metal

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Metal programs do not carry the emulator: package metal's dependencies, as the go tool
// lists them for darwin/arm64 and linux/amd64, hold neither it nor metal/kernelcheck
// (metal/emulator imports metal, kernelcheck the engine; TestKernelChecksUncalled says
// why the checks in the engine stay out of a program too). Nor does it import bonsai,
// the package above the seam: only bonsai/backend.
func TestDepsLeaveOutEmulator(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		if gr := os.Getenv("GOROOT"); gr != "" {
			goTool, err = exec.LookPath(gr + "/bin/go")
		}
	}
	if err != nil {
		t.Skip("no go tool to list the dependencies with")
	}
	const root = "github.com/bonsai-go/sdk/"
	const mod = root + "metal/"
	banned := []string{root + "internal/gpu/mslemu", mod + "emulator", mod + "kernelcheck"}
	for _, target := range [][2]string{{"darwin", "arm64"}, {"linux", "amd64"}} {
		cmd := exec.Command(goTool, "list", "-deps", ".")
		cmd.Env = append(os.Environ(), "GOOS="+target[0], "GOARCH="+target[1], "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("go list -deps for %s/%s: %v\n%s", target[0], target[1], err, ee.Stderr)
			}
			t.Fatalf("go list -deps for %s/%s: %v", target[0], target[1], err)
		}
		deps := strings.Fields(string(out))
		if bad := bannedDeps(deps, banned); len(bad) > 0 {
			t.Errorf("%s/%s: package metal depends on %v", target[0], target[1], bad)
		}
		for _, d := range deps {
			if d == "github.com/bonsai-go/sdk/bonsai" {
				t.Errorf("%s/%s: package metal depends on %s, above the seam", target[0], target[1], d)
			}
		}
		// The check can fail: the list is the real one (it holds the device layer and
		// the seam).
		for _, want := range []string{root + "internal/gpu", "github.com/bonsai-go/sdk/bonsai/backend"} {
			if len(bannedDeps(deps, []string{want})) == 0 {
				t.Errorf("%s/%s: the dependency list has no %s: %q", target[0], target[1], want, deps)
			}
		}
	}
}

// bannedDeps returns the packages of deps that are one of banned or below one.
func bannedDeps(deps, banned []string) []string {
	var bad []string
	for _, d := range deps {
		for _, b := range banned {
			if d == b || strings.HasPrefix(d, b+"/") {
				bad = append(bad, d)
			}
		}
	}
	return bad
}

func TestBannedDeps(t *testing.T) {
	deps := []string{"fmt", "example.com/m/internal/gpu/mslemu", "example.com/m/internal/gpu/mslemuX", "example.com/m/metal/emulator/sub"}
	got := bannedDeps(deps, []string{"example.com/m/internal/gpu/mslemu", "example.com/m/metal/emulator"})
	want := []string{"example.com/m/internal/gpu/mslemu", "example.com/m/metal/emulator/sub"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("bannedDeps = %q, want %q", got, want)
	}
}

// The kernel checks live in the engine, beside the dispatch helpers they drive, and a
// program links them only if it calls them (through metal/kernelcheck): no init function
// of package metal or the engine registers them, and no code of either but the checks'
// own files names them.
func TestKernelChecksUncalled(t *testing.T) {
	own := map[string]bool{"kernels_check.go": true, "kernels_bench.go": true}
	entry := map[string]bool{"RunChecks": true, "Bench": true}
	files := 0
	for _, dir := range []string{".", "../internal/gpu/engine"} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files++
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
					t.Errorf("%s has an init function", path)
				}
			}
			if own[filepath.Base(path)] {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && entry[id.Name] {
					t.Errorf("%s names the kernel checks' %s", path, id.Name)
				}
				return true
			})
		}
	}
	if files < 10 {
		t.Fatalf("parsed %d files of package metal and the engine; the test no longer sees them", files)
	}
}
