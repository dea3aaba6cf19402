//go:build !linux

package bonsai

// adviseWillNeed is a no-op where madvise is not used: the read pass alone warms the
// pages.
func adviseWillNeed([]byte) {}
