package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// residentMemory returns the process's resident bytes as the kernel counts them
// (/proc/self/status): in all, of mapped files, and anonymous (the heap and copies).
func residentMemory() (total, file, anon int64, ok bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	found := 0
	for sc.Scan() {
		key, val, _ := strings.Cut(sc.Text(), ":")
		var dst *int64
		switch key {
		case "VmRSS":
			dst = &total
		case "RssFile":
			dst = &file
		case "RssAnon":
			dst = &anon
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, 0, 0, false
		}
		*dst = kb << 10
		found++
	}
	return total, file, anon, found == 3
}
