package sdk

import (
	"os/exec"
	"strings"
	"testing"
)

// layer ranks the module's packages bottom-up: a package may import only packages of
// its own rank or below, and the backends (rank 3) not each other. The longest matching
// prefix decides.
var layer = map[string]int{
	"gguf": 0, "ternary": 0, "hadamard": 0, "internal/floatconv": 0, "internal/parallel": 0, "internal/hfvocab": 0,
	"internal/alloctest": 0, "internal/prepcount": 0, "internal/hugemem": 0, "internal/hub": 0,
	"bonsai/tokenizer": 0, "bonsai/grammar": 0, "bonsai/toolcall": 0, "internal/sse": 0,
	"bonsai/backend":   1, // the seam: formats and interfaces only
	"qwen35":           2, // an architecture: registers with the seam
	"internal/synth":   2,
	"bonsai/synthetic": 2,                                 // the public face of internal/synth
	"bonsai/cpu":       3, "metal": 3, "bonsai/vulkan": 3, // the backends
	"internal/gpu":               3, // the GPU backends' engine and device layer
	"bonsai/backend/backendtest": 3,
	"bonsai":                     4, // the user API, on top of the backends
	"internal":                   5, "examples": 5,
	"internal/gpu/enginetest": 5, // session tests through bonsai's API
}

// peers are packages of one rank that must not import each other.
var peers = [][2]string{{"bonsai/cpu", "metal"}, {"metal", "bonsai/cpu"},
	{"bonsai/vulkan", "bonsai/cpu"}, {"bonsai/vulkan", "metal"}, {"metal", "bonsai/vulkan"},
	{"internal/gpu", "metal"}, {"internal/gpu", "bonsai/vulkan"}, {"internal/gpu", "bonsai/cpu"}}

const module = "github.com/bonsai-go/sdk"

func rankOf(pkg string) (string, int, bool) {
	best, rank, found := "", 0, false
	for p, r := range layer {
		if (pkg == p || strings.HasPrefix(pkg, p+"/")) && len(p) > len(best) {
			best, rank, found = p, r, true
		}
	}
	return best, rank, found
}

// No package imports one above it: the graph runs gguf/ternary/hadamard → the seam →
// qwen35 → the backends → bonsai → the programs (go list's imports, tests left out, for
// linux and for darwin, where the Metal device layer is compiled).
func TestImportLayers(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool: %v", err)
	}
	edges := 0
	for _, goos := range []string{"linux", "darwin"} {
		cmd := exec.Command(goTool, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "GOARCH=arm64", "CGO_ENABLED=0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (%s): %v", goos, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			from := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
			if from == "" {
				continue // the root package, which holds only the docs
			}
			fp, fr, ok := rankOf(from)
			if !ok {
				t.Errorf("package %s has no layer: add it to the table", from)
				continue
			}
			for _, imp := range f[1:] {
				if !strings.HasPrefix(imp, module+"/") {
					continue
				}
				to := strings.TrimPrefix(imp, module+"/")
				tp, tr, ok := rankOf(to)
				if !ok {
					t.Errorf("package %s has no layer: add it to the table", to)
					continue
				}
				edges++
				if tr > fr {
					t.Errorf("%s (%s, layer %d) imports %s (%s, layer %d), a layer above it", from, fp, fr, to, tp, tr)
				}
				for _, p := range peers {
					if fp == p[0] && tp == p[1] {
						t.Errorf("%s imports %s: the backends are peers", from, to)
					}
				}
			}
		}
	}
	if edges < 20 {
		t.Fatalf("only %d edges inside the module: the listing is not the real graph", edges)
	}
}

// The check can fail: a graph with an upward edge is caught by the rank table.
func TestImportLayersCatchUpward(t *testing.T) {
	_, low, _ := rankOf("qwen35")
	_, high, _ := rankOf("bonsai")
	if !(high > low) {
		t.Fatalf("bonsai (%d) must rank above qwen35 (%d)", high, low)
	}
	if p, r, _ := rankOf("internal/gpu/engine"); p != "internal/gpu" || r != 3 {
		t.Fatalf("internal/gpu/engine ranks as %s/%d", p, r)
	}
}
