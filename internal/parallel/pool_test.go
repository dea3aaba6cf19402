package parallel

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type countBody struct {
	hits []atomic.Int32
}

func (b *countBody) Run(lo, hi int) {
	for i := lo; i < hi; i++ {
		b.hits[i].Add(1)
	}
}

func TestForCoversEachIndexOnce(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 8} {
		p := NewPool(workers)
		for _, n := range []int{0, 1, 2, 7, 64, 1000, 4097} {
			for _, grain := range []int{0, 1, 16, 5000} {
				b := &countBody{hits: make([]atomic.Int32, n)}
				p.For(n, grain, b)
				for i := range b.hits {
					require.Equal(t, int32(1), b.hits[i].Load(), "workers %d n %d grain %d index %d", workers, n, grain, i)
				}
			}
		}
		p.Close()
	}
}

func TestConcurrentCallers(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 200; r++ {
				b := &countBody{hits: make([]atomic.Int32, 333)}
				p.For(len(b.hits), 4, b)
				for i := range b.hits {
					if b.hits[i].Load() != 1 {
						t.Errorf("index %d ran %d times", i, b.hits[i].Load())
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// After an idle spell longer than spinFor the workers are parked; a loop must still
// cover every index once. A slow body makes the caller run out of chunks while handles
// may still be queued, the case where it takes them back: none may be left behind.
func TestForAfterIdleAndTakeBack(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	for r := range 6 {
		if r%2 == 0 {
			time.Sleep(2 * spinFor)
		}
		b := &countBody{hits: make([]atomic.Int32, 64)}
		p.For(len(b.hits), 1, Func(func(lo, hi int) {
			time.Sleep(50 * time.Microsecond)
			b.Run(lo, hi)
		}))
		for i := range b.hits {
			require.Equal(t, int32(1), b.hits[i].Load(), "round %d index %d", r, i)
		}
		require.Zero(t, len(p.tasks), "round %d: loop handles left queued", r)
	}
}

type noop struct{ sum atomic.Int64 }

func (b *noop) Run(lo, hi int) { b.sum.Add(int64(hi - lo)) }

func TestForDoesNotAllocate(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	b := &noop{}
	p.For(1000, 1, b) // warm the free list
	calls := 1
	allocs := testing.AllocsPerRun(100, func() { p.For(1000, 1, b); calls++ })
	require.Zero(t, allocs)
	require.Equal(t, int64(1000*calls), b.sum.Load())
}

func BenchmarkFor(b *testing.B) {
	p := NewPool(2)
	defer p.Close()
	body := &noop{}
	for b.Loop() {
		p.For(1024, 64, body)
	}
}

type rangeBody struct {
	mu     sync.Mutex
	ranges [][2]int
}

func (b *rangeBody) Run(lo, hi int) {
	b.mu.Lock()
	b.ranges = append(b.ranges, [2]int{lo, hi})
	b.mu.Unlock()
}

// TestForChunksShrink checks the guided split: claimed in order, each chunk is
// max(grain, left/(2·workers)) of what was left when it was claimed (the last one cut at
// n), so the chunks never grow and the loop ends with chunks of the grain.
func TestForChunksShrink(t *testing.T) {
	for _, workers := range []int{2, 3} {
		p := NewPool(workers)
		for _, c := range []struct{ n, grain int }{{34816, 16}, {1000, 1}, {5000, 64}} {
			b := &rangeBody{}
			p.For(c.n, c.grain, b)
			rs := b.ranges
			// Sort by start: workers append in completion order.
			for i := 1; i < len(rs); i++ {
				for j := i; j > 0 && rs[j][0] < rs[j-1][0]; j-- {
					rs[j], rs[j-1] = rs[j-1], rs[j]
				}
			}
			lo := 0
			for i, r := range rs {
				require.Equal(t, lo, r[0], "workers %d %+v chunk %d starts after a gap", workers, c, i)
				want := min(max(c.grain, (c.n-lo)/(2*workers)), c.n-lo)
				require.Equal(t, want, r[1]-r[0], "workers %d %+v chunk %d at %d", workers, c, i, lo)
				lo = r[1]
			}
			require.Equal(t, c.n, lo)
			last := rs[len(rs)-1]
			require.LessOrEqual(t, last[1]-last[0], c.grain, "workers %d %+v: the last chunk is the grain or less", workers, c)
			require.Equal(t, c.n/(2*workers), rs[0][1]-rs[0][0], "workers %d %+v: the first chunk", workers, c)
		}
		p.Close()
	}
}
