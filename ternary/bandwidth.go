package ternary

import (
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
	rd := memReaders[len(memReaders)-1]
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
					x ^= rd.read(&buf[c*chunk], chunk)
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
