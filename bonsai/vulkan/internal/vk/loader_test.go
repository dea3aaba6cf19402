//go:build (linux || darwin) && (amd64 || arm64) && !novulkan

package vk

import (
	"errors"
	"strings"
	"testing"
)

// Without a loader the error is one line, wraps ErrUnavailable and names what was
// tried.
func TestNoLoader(t *testing.T) {
	_, err := openLoaderFrom([]string{"libvulkan-missing-for-test.so.1"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("error %v does not wrap ErrUnavailable", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "libvulkan-missing-for-test.so.1") || !strings.Contains(msg, "no Vulkan loader") {
		t.Errorf("error %q: want one line naming the library tried", msg)
	}
}
