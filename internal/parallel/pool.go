// Package parallel runs loop bodies on a fixed set of worker goroutines started once, so
// that the many small parallel loops of a decode step neither spawn goroutines nor
// allocate.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Body is a loop body over an index range. Run is called concurrently on disjoint ranges.
// It is an alias of an unnamed interface so that packages outside this module can state
// the same method set (qwen35.Runner) without importing an internal package.
type Body = interface {
	Run(lo, hi int)
}

// Func adapts a function to Body (it allocates when the closure escapes; hot paths use a
// preallocated struct instead).
type Func func(lo, hi int)

// Run calls f.
func (f Func) Run(lo, hi int) { f(lo, hi) }

// Pool is a set of workers. Its methods are safe for concurrent use: several callers
// may run loops at once, each using whichever workers are idle plus its own goroutine.
//
// A decode step runs hundreds of short loops (a few hundred microseconds each) with a
// little serial work between them. Handing a loop to a parked goroutine costs a
// futex wake-up, tens of microseconds on a virtual machine, which would be paid on every
// loop; so a worker that has just finished a loop polls for the next one for a while
// (spinFor) before it parks, and a caller that has run out of chunks takes back the
// loop handles no worker has picked up instead of waiting for a worker to wake.
type Pool struct {
	workers int
	tasks   chan *task // buffered: workers−1 handles at most are ever queued
	mu      sync.Mutex
	free    []*task
	closed  bool
	stopped sync.WaitGroup
}

// spinFor is how long an idle worker polls for work before it parks.
const spinFor = 200 * time.Microsecond

type task struct {
	body    Body
	n       int
	grain   int // the smallest chunk
	div     int // a claim takes about 1/div of what is left
	next    atomic.Int64
	pending atomic.Int32 // handles sent and not yet finished
}

// NewPool returns a pool of n workers (at least 1). The caller of For counts as one of
// them, so n−1 goroutines are started.
func NewPool(n int) *Pool {
	if n < 1 {
		n = 1
	}
	p := &Pool{workers: n, tasks: make(chan *task, n-1)}
	p.stopped.Add(n - 1)
	for i := 1; i < n; i++ {
		go p.work()
	}
	return p
}

// Workers returns the pool's size.
func (p *Pool) Workers() int { return p.workers }

func (p *Pool) work() {
	defer p.stopped.Done()
	for {
		t, ok := p.poll()
		if !ok {
			return
		}
		t.run()
		t.pending.Add(-1)
	}
}

// poll returns the next loop handle, spinning for spinFor before it blocks; ok is false
// once the pool is closed.
func (p *Pool) poll() (t *task, ok bool) {
	var start time.Time
	for i := 0; ; i++ {
		select {
		case t, ok = <-p.tasks:
			return t, ok
		default:
		}
		if i%64 == 0 {
			if i == 0 {
				start = time.Now()
			} else if time.Since(start) > spinFor {
				break
			}
			runtime.Gosched()
		}
	}
	t, ok = <-p.tasks
	return t, ok
}

// run claims chunks until none is left. A claim takes a share of what is left (guided
// scheduling): large chunks first, so that a worker streams long runs of rows, and
// chunks shrinking to the grain at the end, so that the workers finish together. With
// equal chunks of n/16 per worker the last chunk left one worker idle for half a chunk
// on average, about 70 µs of every product loop of a 27B decode step; guided chunks
// took a 27B decode step from 369 to 352 ms on two cores (examples/bench).
func (t *task) run() {
	for {
		lo := int(t.next.Load())
		if lo >= t.n {
			return
		}
		size := max(t.grain, (t.n-lo)/t.div)
		if !t.next.CompareAndSwap(int64(lo), int64(lo+size)) {
			continue
		}
		t.body.Run(lo, min(lo+size, t.n))
	}
}

// For runs body over [0, n) in chunks of at least grain indices, spread over the idle
// workers and the calling goroutine, and returns when every chunk is done. Busy workers
// are not waited for: a loop started while another caller's loop occupies them runs on
// fewer workers instead.
func (p *Pool) For(n, grain int, body Body) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	if p.workers == 1 || chunks == 1 {
		body.Run(0, n)
		return
	}
	t := p.get()
	// Each claim takes 1/(2·workers) of what is left: on two workers the first chunk is a
	// quarter of the loop and the last ones are grain-sized, so the workers end within a
	// small chunk of each other. (A worker descheduled in the middle of an early, large
	// chunk still holds the loop up by the rest of that chunk.)
	t.body, t.n, t.grain, t.div = body, n, grain, 2*p.workers
	t.next.Store(0)
	helpers := min(p.workers-1, chunks-1)
	t.pending.Store(int32(helpers))
	sent := 0
send:
	for sent < helpers {
		select {
		case p.tasks <- t:
			sent++
		default: // the queue holds other callers' handles: use fewer workers
			break send
		}
	}
	t.pending.Add(int32(sent - helpers))
	t.run()
	// Handles still queued were not picked up in time: take them back (they may be
	// another caller's; running one is correct, and its chunks are gone anyway once
	// that caller has run out).
	for t.pending.Load() > 0 {
		select {
		case u := <-p.tasks:
			if u == nil { // closed: For after Close is a misuse, but do not spin forever
				return
			}
			u.run()
			u.pending.Add(-1)
			continue
		default:
		}
		// The rest are running their last chunk.
		runtime.Gosched()
	}
	t.body = nil
	p.put(t)
}

func (p *Pool) get() *task {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		t := p.free[n-1]
		p.free = p.free[:n-1]
		return t
	}
	return new(task)
}

func (p *Pool) put(t *task) {
	p.mu.Lock()
	p.free = append(p.free, t)
	p.mu.Unlock()
}

// Close stops the workers after the loops in progress. For must not be called after.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	close(p.tasks)
	p.stopped.Wait()
}
