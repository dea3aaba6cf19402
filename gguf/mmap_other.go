//go:build !linux && !darwin

package gguf

import "os"

func mmapFile(*os.File, int) ([]byte, error) { return nil, errNoMmap }

func munmap([]byte) error { return nil }

func dropPages([]byte) error { return nil }

const canRemap = false

func remapPages(*os.File, []byte) func([]byte) error { return nil }
