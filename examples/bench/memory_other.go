//go:build !linux

package main

// residentMemory is not measured here.
func residentMemory() (total, file, anon int64, ok bool) { return 0, 0, 0, false }
