//go:build !linux

package alloctest

import (
	"errors"
	"runtime"
)

// MappingResident is measured on Linux only.
func MappingResident(b []byte) (int64, error) {
	return 0, errors.New("alloctest: MappingResident: no /proc/self/smaps on " + runtime.GOOS)
}

// Anonymous is measured on Linux only.
func Anonymous(b []byte) (int64, error) {
	return 0, errors.New("alloctest: Anonymous: no /proc/self/smaps on " + runtime.GOOS)
}
