// Package vktest holds what the Vulkan packages' tests share: the rule that a missing
// tool (clang, glslc, the Vulkan headers, a loader) skips a test on a developer's machine
// but fails it where BONSAI_VULKAN_REQUIRE=1, as CI sets it, so that CI cannot pass by
// skipping.
package vktest

import (
	"fmt"
	"os"
	"testing"
)

// Required reports whether the environment requires Vulkan and its tools
// (BONSAI_VULKAN_REQUIRE=1).
func Required() bool { return os.Getenv("BONSAI_VULKAN_REQUIRE") == "1" }

// Missing skips t for want of what the message names, or fails it when Required.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (BONSAI_VULKAN_REQUIRE=1 makes this a failure)", msg)
	}
	t.Skip(msg)
}
