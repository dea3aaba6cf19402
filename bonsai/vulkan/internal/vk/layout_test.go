package vk

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/bonsai-go/sdk/bonsai/vulkan/internal/vktest"
)

// layoutTargets are the 64-bit targets whose C layout the Go structs must match. Go lays
// a struct out alike on all of them (natural alignment, 8-byte pointers), so this
// machine's unsafe.Sizeof and Offsetof stand for each; the C side is checked per target,
// where LLP64 Windows could differ from LP64 Linux.
var layoutTargets = []string{"x86_64-linux-gnu", "aarch64-linux-gnu", "x86_64-windows-msvc", "arm64-apple-macos"}

// Every mirrored struct has the C struct's size and alignment, and every field the C
// member's offset: the Go layouts are written into a C file as static assertions, which
// clang compiles against the system's vulkan.h for each target.
func TestLayout(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		vktest.Missing(t, "no clang: the C layout cannot be read")
	}
	// Where the host finds vulkan/vulkan.h, for targets whose default search path
	// does not hold it (clang -M lists the headers a file includes).
	probe := exec.Command(clang, "-M", "-x", "c", "-")
	probe.Stdin = strings.NewReader("#include <vulkan/vulkan.h>\n")
	out, err := probe.CombinedOutput()
	if err != nil {
		vktest.Missing(t, "no Vulkan headers (libvulkan-dev): %s", firstLine(out))
	}
	var include string
	for _, f := range strings.Fields(string(out)) {
		if dir, ok := strings.CutSuffix(f, "/vulkan/vulkan.h"); ok {
			include = dir
		}
	}
	if include == "" {
		t.Fatalf("clang -M does not name vulkan/vulkan.h:\n%s", out)
	}

	var c strings.Builder
	c.WriteString("#include <stddef.h>\n#include <vulkan/vulkan.h>\n")
	checks := 0
	for _, v := range mirrored {
		typ := reflect.TypeOf(v)
		cname := "Vk" + typ.Name()
		fmt.Fprintf(&c, "_Static_assert(sizeof(%s) == %d, \"sizeof(%[1]s)\");\n", cname, typ.Size())
		fmt.Fprintf(&c, "_Static_assert(_Alignof(%s) == %d, \"_Alignof(%[1]s)\");\n", cname, typ.Align())
		for i := range typ.NumField() {
			f := typ.Field(i)
			member := string(unicode.ToLower(rune(f.Name[0]))) + f.Name[1:]
			fmt.Fprintf(&c, "_Static_assert(offsetof(%s, %s) == %d, \"offsetof(%[1]s, %[2]s)\");\n", cname, member, f.Offset)
			fmt.Fprintf(&c, "_Static_assert(sizeof(((%s*)0)->%s) == %d, \"sizeof %[1]s.%[2]s\");\n", cname, member, f.Type.Size())
			checks += 2
		}
	}
	if len(mirrored) < 40 || checks < 400 {
		t.Fatalf("only %d structs and %d field checks: the list is not ztypes.go's", len(mirrored), checks)
	}
	src := filepath.Join(t.TempDir(), "layout.c")
	if err := os.WriteFile(src, []byte(c.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, target := range layoutTargets {
		// Freestanding, and the host's headers searched last: clang's own stddef.h and
		// stdint.h, so no target sysroot is needed.
		out, err := exec.Command(clang, "--target="+target, "-ffreestanding", "-idirafter", include,
			"-fsyntax-only", "-Werror", src).CombinedOutput()
		if err != nil {
			t.Errorf("%s: the Go layout differs from C's:\n%s", target, out)
		}
	}
}

// The check can fail: a wrong offset is a compile error.
func TestLayoutCatchesAMismatch(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		vktest.Missing(t, "no clang")
	}
	cmd := exec.Command(clang, "-ffreestanding", "-fsyntax-only", "-x", "c", "-")
	cmd.Stdin = strings.NewReader("#include <stddef.h>\n#include <vulkan/vulkan.h>\n" +
		"_Static_assert(offsetof(VkBufferCreateInfo, size) == 16, \"wrong\");\n")
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "vulkan.h' file not found") {
		vktest.Missing(t, "no Vulkan headers")
	}
	if err == nil || !strings.Contains(string(out), "wrong") {
		t.Fatalf("a wrong offset compiled: %v\n%s", err, out)
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}
