//go:build novulkan

package vk

import (
	"errors"
	"testing"
)

// With the novulkan tag the binding is left out: opening the loader fails with
// ErrUnavailable, whatever the machine has installed.
func TestNoVulkanTag(t *testing.T) {
	if _, err := openLoader(); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("openLoader under novulkan: %v, want ErrUnavailable", err)
	}
}
