//go:build !linux

package hugemem

func alloc(int) ([]byte, func() error, bool) { return nil, nil, false }

func adviseHuge([]byte) error { return nil }
