//go:build !linux

package gguf

func allocData(size int) ([]byte, func([]byte) error) { return make([]byte, size), nil }
