// Package alloctest counts heap allocations exactly, for the tests that hold a decode
// step to zero: testing.AllocsPerRun averages and rounds down, which hides one
// allocation in a hundred steps. It also reads the kernel's account of a mapping's
// resident pages, for the tests of memory given back to the OS.
package alloctest

import (
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// Count returns the heap allocations f makes, counted exactly (runtime.MemStats.Mallocs
// around it), and the OS threads the runtime started meanwhile: starting one allocates
// (7 objects: its m, g0 and signal goroutine), which is the runtime's doing, not f's, so
// callers leave such a measurement out. f must not call testify (its helpers allocate).
func Count(f func()) (mallocs uint64, threads int) {
	tc := pprof.Lookup("threadcreate")
	th := tc.Count()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.Mallocs
	f()
	runtime.ReadMemStats(&ms)
	return ms.Mallocs - before, tc.Count() - th
}

// Settle collects garbage and then fills the runtime's caches of channel waiters
// (sudogs), so that an exact count of allocations sees the SDK's own. A worker pool's
// goroutines park on a channel between loops; the runtime gives a parked goroutine a
// waiter from a per-P cache and, when that is empty and the central cache too, allocates
// one. A worker that parks on one P and wakes on another moves waiters between the
// caches, and until they balance (about 128 waiters, after the first garbage collection
// and after every one, which empties the central cache) parking allocates: measured, 110
// allocations over 2000 loops of a bare two-worker pool with 300 µs between loops, 0
// once the caches are filled. 1024 goroutines parked at once and released fill them.
func Settle() {
	runtime.GC() // the first collection also starts the mark workers (goroutines: allocations)
	const n = 1024
	ch := make(chan struct{})
	var wg sync.WaitGroup
	var parked atomic.Int32
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parked.Add(1)
			<-ch
		}()
	}
	for parked.Load() < n {
		runtime.Gosched()
	}
	time.Sleep(10 * time.Millisecond) // let the last ones reach the receive
	close(ch)
	wg.Wait()
}
