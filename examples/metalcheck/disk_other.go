//go:build !darwin && !linux

package main

// diskFree is -1 (unknown) where statfs's fields are not those of darwin and linux; the
// Metal device runs on darwin only, and the emulator's default model is tiny.
func diskFree(dir string) int64 { return -1 }
