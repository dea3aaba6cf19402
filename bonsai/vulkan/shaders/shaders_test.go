package shaders

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vktest"
)

// generateCommands returns the glslc commands of the package's go:generate lines.
func generateCommands(t *testing.T) [][]string {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(src), "\n") {
			if args, ok := strings.CutPrefix(line, "//go:generate glslc "); ok {
				cmds = append(cmds, strings.Fields(args))
			}
		}
	}
	if len(cmds) == 0 {
		t.Fatal("no go:generate glslc line")
	}
	return cmds
}

// The committed SPIR-V is what glslc makes of the sources now, and valid for Vulkan 1.2.
func TestGenerated(t *testing.T) {
	glslc, err := exec.LookPath("glslc")
	if err != nil {
		vktest.Missing(t, "no glslc: the SPIR-V cannot be remade")
	}
	dir := t.TempDir()
	for _, args := range generateCommands(t) {
		out := ""
		for i := range args {
			if args[i] == "-o" && i+1 < len(args) {
				out = args[i+1]
				args[i+1] = filepath.Join(dir, out)
			}
		}
		if msg, err := exec.Command(glslc, args...).CombinedOutput(); err != nil {
			t.Fatalf("glslc %s: %v\n%s", strings.Join(args, " "), err, msg)
		}
		fresh, err := os.ReadFile(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s is stale: run go generate ./bonsai/vulkan/...", out)
		}
		if val, err := exec.LookPath("spirv-val"); err != nil {
			t.Errorf("no spirv-val (spirv-tools) to validate %s", out)
		} else if msg, err := exec.Command(val, "--target-env", "vulkan1.2", out).CombinedOutput(); err != nil {
			t.Errorf("spirv-val %s: %v\n%s", out, err, msg)
		}
	}
	if len(RMSNorm) < 20 || !bytes.Equal(RMSNorm[:4], []byte{0x03, 0x02, 0x23, 0x07}) {
		t.Fatalf("RMSNorm is not SPIR-V (magic % x)", RMSNorm[:min(4, len(RMSNorm))])
	}
}
