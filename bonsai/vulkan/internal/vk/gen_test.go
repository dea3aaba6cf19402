package vk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vktest"
)

// The committed ztypes.go and ztypes_test.go are what gen.go makes of the system's
// vulkan_core.h now.
func TestGeneratedTypes(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		vktest.Missing(t, "no clang: the types cannot be regenerated")
	}
	dir := t.TempDir()
	out, err := exec.Command("go", "run", "gen.go", "-dir", dir).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("vulkan_core.h")) || bytes.Contains(out, []byte("file not found")) {
			vktest.Missing(t, "no Vulkan headers (libvulkan-dev): %s", out)
		}
		t.Fatalf("go run gen.go: %v\n%s", err, out)
	}
	for _, name := range []string{"ztypes.go", "ztypes_test.go"} {
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s is stale: run go generate ./bonsai/vulkan/internal/vk", name)
		}
	}
}
