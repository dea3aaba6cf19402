package serve

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bonsai-go/sdk/bonsai"
)

// Errors of Run, for the dialects to answer in their own shapes.
var (
	// ErrQueueFull: every session is busy and the queue is full; retry later.
	ErrQueueFull = errors.New("serve: queue full")
	// ErrShuttingDown: the server is stopping and takes no more generations, or stopped
	// this one.
	ErrShuttingDown = errors.New("serve: the server is shutting down")
)

// slot is one of the pool's sessions, kept between requests.
type slot struct {
	s *bonsai.Session // created on first use
	// tokens is what s holds, and ckpt its chat checkpoint's tokens (see
	// Session.Generate), as of its last release: the prefixes a prompt can reuse.
	tokens, ckpt []int32
	used         uint64 // when last acquired, for least-recently-used order

	// inUse marks a slot a generation holds (guarded by the pool's mu); kv counts the
	// tokens of KV its generation occupies (see Server.kvUsage), 0 while idle.
	inUse bool
	kv    atomic.Int64
}

// reusable returns how many tokens of prompt the slot's session can skip: those of its
// state or of its checkpoint, whichever is a prefix of prompt and longer. A prefix
// shared only in part is worth nothing, since the recurrent layers' state cannot be
// rewound.
func (sl *slot) reusable(prompt []int32) int {
	n := 0
	for _, held := range [][]int32{sl.tokens, sl.ckpt} {
		if len(held) > n && len(held) <= len(prompt) && slices.Equal(held, prompt[:len(held)]) {
			n = len(held)
		}
	}
	return n
}

// finished records what a slot's session holds after a generation on prompt, whose
// chat checkpoint was at boundary (0: none) and of which cached tokens were reused.
func (sl *slot) finished(prompt []int32, boundary, cached int, failed bool) {
	if failed {
		sl.tokens, sl.ckpt = nil, nil
		return
	}
	sl.tokens = sl.s.Tokens()
	if boundary > cached && boundary < len(prompt) {
		sl.ckpt = slices.Clone(prompt[:boundary])
	}
}

// pool hands out sessions: at most len(slots) at once, and up to maxQueue callers wait
// for one, first come first served.
type pool struct {
	m        *bonsai.Model
	maxQueue int

	mu      sync.Mutex
	all     []*slot
	idle    []*slot
	busy    int
	waiters []chan *slot // FIFO; each has room for one slot
	closed  bool
	clock   atomic.Uint64
}

func newPool(m *bonsai.Model, parallel, maxQueue int) *pool {
	p := &pool{m: m, maxQueue: maxQueue}
	for range parallel {
		p.all = append(p.all, &slot{})
	}
	p.idle = slices.Clone(p.all)
	return p
}

// acquire returns an idle session, the one holding the longest prefix of prompt, or
// waits its turn for one until ctx is done. It fails with ErrQueueFull when the queue is
// full, and with ctx's error when ctx ends first.
func (p *pool) acquire(ctx context.Context, prompt []int32) (*slot, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, bonsai.ErrClosed
	}
	if len(p.idle) > 0 && len(p.waiters) == 0 {
		// The session that can reuse most of the prompt; if none can, the one used
		// least recently, which keeps the others' conversations for their next turns.
		best, bestN := 0, -1
		for i, sl := range p.idle {
			n := sl.reusable(prompt)
			if n > bestN || n == bestN && sl.used < p.idle[best].used {
				best, bestN = i, n
			}
		}
		sl := p.idle[best]
		p.idle = append(p.idle[:best], p.idle[best+1:]...)
		p.busy++
		sl.inUse = true
		p.mu.Unlock()
		return p.ready(sl)
	}
	if len(p.waiters) >= p.maxQueue {
		p.mu.Unlock()
		return nil, ErrQueueFull
	}
	ch := make(chan *slot, 1)
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()

	select {
	case sl := <-ch:
		return p.ready(sl)
	case <-ctx.Done():
		p.mu.Lock()
		for i, w := range p.waiters {
			if w == ch {
				p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
				p.mu.Unlock()
				return nil, ctx.Err()
			}
		}
		p.mu.Unlock()
		// A slot was handed over as ctx ended: pass it on.
		p.release(<-ch)
		return nil, ctx.Err()
	}
}

// ready creates the slot's session on its first use.
func (p *pool) ready(sl *slot) (*slot, error) {
	sl.used = p.clock.Add(1)
	if sl.s != nil {
		return sl, nil
	}
	s, err := p.m.NewSession()
	if err != nil {
		p.release(sl)
		return nil, err
	}
	p.mu.Lock()
	sl.s = s
	p.mu.Unlock()
	return sl, nil
}

// release returns a slot: to the first caller waiting, or to the idle ones.
func (p *pool) release(sl *slot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		ch <- sl
		return
	}
	p.busy--
	sl.inUse = false
	sl.kv.Store(0)
	if p.closed && sl.s != nil {
		sl.s.Close()
		sl.s, sl.tokens, sl.ckpt = nil, nil, nil
	}
	p.idle = append(p.idle, sl)
}

// load returns the sessions in use and the callers waiting.
func (p *pool) load() (busy, queued int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy, len(p.waiters)
}

// kvTokens returns the tokens of KV that each generation running holds (slot.kv).
func (p *pool) kvTokens() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n []int
	for _, sl := range p.all {
		if sl.inUse {
			n = append(n, int(sl.kv.Load()))
		}
	}
	return n
}

// sessionLens returns the tokens that the sessions of the generations running hold, read
// from the sessions themselves (for tests: Session.Len waits for a forward pass).
func (p *pool) sessionLens() []int {
	p.mu.Lock()
	var ss []*bonsai.Session
	for _, sl := range p.all {
		if sl.inUse && sl.s != nil {
			ss = append(ss, sl.s)
		}
	}
	p.mu.Unlock()
	n := make([]int, len(ss))
	for i, s := range ss {
		n[i] = s.Len()
	}
	return n
}

// close releases the idle sessions' memory and refuses later acquires; a session in use
// is closed when it comes back.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, sl := range p.idle {
		if sl.s != nil {
			sl.s.Close()
			sl.s = nil
		}
		sl.tokens, sl.ckpt = nil, nil
	}
}
