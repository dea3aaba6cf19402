package ternary

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ReadBandwidth measures the machine's streaming read bandwidth in bytes per second:
// threads goroutines xor-reduce disjoint 1 MiB chunks of a size-byte buffer with the
// widest SIMD reader this CPU has (the vector width the matrix kernels load with), pass
// after pass for at least d, and the median pass rate is returned. size should be many
// times the last-level cache so that the buffer streams from memory; the buffer is
// allocated and touched once before timing.
func ReadBandwidth(threads, size int, d time.Duration) float64 {
	const chunk = 1 << 20
	threads = max(threads, 1)
	n := max(size/chunk, 2*threads)
	buf := make([]byte, n*chunk)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = byte(i >> 12) // fault every page in before timing
	}
	var sink atomic.Uint64
	pass := func() time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var x uint64
				for {
					c := int(next.Add(1)) - 1
					if c >= n {
						break
					}
					x ^= ReadMemory(buf[c*chunk : (c+1)*chunk])
				}
				sink.Add(x)
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	pass() // warm up
	var rates []float64
	for start := time.Now(); len(rates) < 3 || time.Since(start) < d; {
		rates = append(rates, float64(len(buf))/pass().Seconds())
	}
	slices.Sort(rates)
	return rates[len(rates)/2]
}

// ReadMemory reads p with the reader ReadBandwidth times — the widest SIMD loads this
// CPU has — and returns the xor of its whole 64-bit words (little-endian; a tail of
// fewer than 8 bytes is not read). It is the loads-only twin of a computation over the
// same bytes: timing it over the memory a kernel streams gives that kernel's ceiling on
// those very pages (their huge pages or small ones), which a fresh buffer does not.
func ReadMemory(p []byte) uint64 {
	rd := memReaders[len(memReaders)-1]
	n := len(p) / rd.align * rd.align
	var x uint64
	if n > 0 {
		x = rd.read(&p[0], n)
	}
	for p = p[n:]; len(p) >= 8; p = p[8:] {
		x ^= binary.LittleEndian.Uint64(p)
	}
	return x
}
