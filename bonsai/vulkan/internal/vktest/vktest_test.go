package vktest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Missing skips without BONSAI_VULKAN_REQUIRE and fails with it: each case runs this
// test binary again with the variable set or not, on a test that calls Missing.
func TestMissing(t *testing.T) {
	if os.Getenv("VKTEST_CHILD") == "1" {
		Missing(t, "no such tool")
		return
	}
	for _, c := range []struct {
		require  string
		fails    bool
		contains string
	}{
		{"", false, "SKIP: TestMissing"},
		{"1", true, "BONSAI_VULKAN_REQUIRE=1 makes this a failure"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "VKTEST_CHILD=1", "BONSAI_VULKAN_REQUIRE="+c.require)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != c.fails {
			t.Errorf("BONSAI_VULKAN_REQUIRE=%q: failed %v, want %v\n%s", c.require, failed, c.fails, out)
		}
		if !strings.Contains(string(out), c.contains) {
			t.Errorf("BONSAI_VULKAN_REQUIRE=%q: the output lacks %q:\n%s", c.require, c.contains, out)
		}
	}
}
