//go:build !linux && !darwin

package gguf

import "os"

func mmapFile(*os.File, int) ([]byte, error) { return nil, errNoMmap }

func munmap([]byte) error { return nil }

func dropPages([]byte) error { return nil }

// remapPages has no mapping to give back here (hugemem does not map either).
func remapPages(*os.File, []byte) func([]byte) error { return nil }
