//go:build darwin || linux

package main

import "syscall"

// diskFree is the bytes an unprivileged process may still write on the file system that
// holds dir (statfs's f_bavail blocks of f_bsize bytes), or -1 when statfs fails.
func diskFree(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
