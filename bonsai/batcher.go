package bonsai

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// The batcher runs the forward passes of every session of a model together: continuous
// batching. Each Session call (Prefill, Step, a Generate's steps) becomes a request; the
// requests pending at a step boundary run as one Engine.Forward of at most maxRows
// tokens, so that the weights, which bound a decode step, are read once for all the
// streams. Decode steps (one token) go first; prompts share the rows left, a chunk each
// per step in arrival order, so a long prompt delays the running streams by at most one
// step's worth of rows at a time. Requests join and leave at step boundaries; a cancelled
// one leaves at the next boundary with the tokens it completed, the others untouched.
//
// The steps run on the callers' goroutines: the first caller to find no step running
// leads, running steps until its own request is done, then hands the lead to a caller
// still waiting. A lone session thus runs its passes itself, with no hand-off between
// goroutines (and so no allocation in a decode step); concurrent ones wait on a channel
// while the leader runs their part.
type batcher struct {
	m       *Model
	maxRows int
	greedyE backend.Greedy // the engine, when it chooses greedy tokens itself; asked once

	// sessions counts the model's open sessions (a session dropped without Close stays
	// counted): with one, no one else can join a step, and the leader does not gather.
	sessions atomic.Int64

	mu      sync.Mutex
	pending []*request // submitted, not yet taken into a step
	leading bool       // a caller is running steps
	submits int64      // requests submitted, ever
	// arrived is signalled (without blocking) at each submission while a leader runs,
	// for its linger.
	arrived chan struct{}
	timer   *time.Timer // the linger's, reused
	// lingerMin is the shortest linger: lingerMin, or longer in tests on a loaded
	// machine, where a goroutine may wait longer than that for a core.
	lingerMin time.Duration
	woken     int // requests the last step finished, the leader's own among them
	lastStep  time.Duration
	// decodeTime and rowCost are promptRows' estimates; rotBuf is rotate's scratch.
	decodeTime, rowCost time.Duration
	rotBuf              []*request

	// The leader's own, reused every step so that a step allocates nothing.
	active []*request
	batch  []backend.Sequence
	owners []*request
	greedy []int32

	statsMu sync.Mutex
	stats   BatchStats
	profile backend.OpProfile // the states' profiles, gathered after each step
}

// request is one Session call's forward pass, owned by the session and reused.
type request struct {
	ctx    context.Context
	seq    backend.Sequence // the whole call's tokens, logits wish and output
	greedy bool             // choose the argmax of the last token's logits (into next)
	next   int32
	off    int   // tokens already run
	done   bool  // retired, with result
	result error //
	// wake tells a waiting caller that its request is done, or (lead) that it now runs
	// the steps.
	wake chan bool
	// scratch logits for a greedy request on an engine that cannot choose itself
	logits []float32
}

// BatchStats counts the work of a model's batcher since it was opened.
type BatchStats struct {
	Steps        int64         // forward passes run
	Sequences    int64         // sequence-steps: the sum over steps of the sequences in each
	Tokens       int64         // tokens run
	StepTime     time.Duration // the steps' total time
	MaxBatch     int           // the most sequences one step held
	Active       int           // requests in the last step or waiting for the next
	LastStepTime time.Duration // the last step's time
}

func newBatcher(m *Model, maxRows int) *batcher {
	b := &batcher{m: m, maxRows: maxRows, arrived: make(chan struct{}, 1), timer: time.NewTimer(time.Hour), lingerMin: lingerMin}
	b.timer.Stop()
	// Asked once: a type assertion's cache can allocate as it grows, and a decode step
	// allocates nothing.
	b.greedyE, _ = m.engine.(backend.Greedy)
	return b
}

// run submits r and returns when it is done. The caller holds the model's lock for
// reading, so the model outlives the call.
func (b *batcher) run(r *request) error {
	r.off, r.done, r.result = 0, false, nil
	b.mu.Lock()
	b.pending = append(b.pending, r)
	b.submits++
	if b.leading {
		b.mu.Unlock()
		select {
		case b.arrived <- struct{}{}:
		default:
		}
		if lead := <-r.wake; !lead {
			return r.result
		}
	} else {
		b.leading = true
		b.mu.Unlock()
	}
	return b.lead(r)
}

// lead runs steps until me is done, then hands the lead on to a waiting request's caller
// or, with none left, gives it up.
func (b *batcher) lead(me *request) error {
	for {
		b.linger(me)
		b.mu.Lock()
		b.active = append(b.active, b.pending...)
		clear(b.pending)
		b.pending = b.pending[:0]
		if me.done {
			if len(b.active) == 0 {
				b.leading = false
				b.mu.Unlock()
				return me.result
			}
			b.mu.Unlock()
			b.active[0].wake <- true
			return me.result
		}
		b.mu.Unlock()
		b.step(me)
	}
}

// retire ends r with err, waking its caller unless it is the leader's own.
func (b *batcher) retire(r *request, err error, leader *request) {
	r.done, r.result = true, err
	// The leader's own counts too: its caller submits its next request like the others,
	// and the next linger counts every request pending, that one among them.
	if err == nil {
		b.woken++
	}
	if r != leader {
		r.wake <- false
	}
}

// linger gives the callers the last step answered a moment to submit their next
// request — a generation samples its next token in its own goroutine between two steps
// — so that a stream does not miss every other step: the leader waits until as many
// requests are pending as the last step finished, or for a tenth of the last step's time
// (between 100 µs and lingerMax), whichever comes first. It does not wait when its own
// request is done. When the last step answered no one but the leader (a lone stream, or
// the first step after a pause) and the model has other sessions open, it gathers a
// burst instead (see gather).
func (b *batcher) linger(me *request) {
	if me.done {
		return // the count is the next leader's, who waits for this caller too
	}
	k := b.woken
	b.woken = 0
	if k <= 1 {
		if b.sessions.Load() > 1 {
			b.gather()
		}
		return
	}
	b.mu.Lock()
	base := b.submits - int64(len(b.pending))
	b.mu.Unlock()
	d := min(max(b.lastStep/10, b.lingerMin), lingerMax)
	b.timer.Reset(d)
	defer b.timer.Stop()
	for {
		b.mu.Lock()
		n := b.submits - base
		b.mu.Unlock()
		if n >= int64(k) {
			return
		}
		select {
		case <-b.arrived:
		case <-b.timer.C:
			return
		}
	}
}

// lingerMax is the longest the leader waits for the callers the last step answered. Each
// chooses its next token between two steps — over a 248,320-token vocabulary a scan of
// a few hundred microseconds, and eight streams share two cores — so 2 ms left the last
// of 8 streams no margin. (The 7.53 sequences a pass loadbench measured for 8 streams
// on the 27B came from the first pass instead: see gather.) The wait ends as soon as they
// are all back; it runs to the end only for a stream that ended, at most 1% of a 27B
// batched step.
const lingerMax = 20 * time.Millisecond

// lingerMin is the shortest linger, for the small models whose steps take less than a
// millisecond.
const lingerMin = 100 * time.Microsecond

// Gathering a burst: the leader waits while requests keep arriving less than half the
// window apart, for at most the window, a fiftieth of the last step's time (gatherMin to
// gatherMax).
const (
	gatherMin = 100 * time.Microsecond
	gatherMax = 10 * time.Millisecond
)

// gather lets callers released together (a server's simultaneous requests, streams
// started at once) join the first step: they are runnable, but may not have submitted
// yet when the first of them takes the lead — each may first choose a token over the
// whole vocabulary, a few hundred microseconds, and eight of them share two cores.
// Without it that one ran its first step alone and the others started a whole step
// later (17 passes for 8 streams of 16 tokens instead of 16; with a window of at most
// 1 ms, still 17 for 8 streams on the 27B). It costs a step that nobody joins half the
// window, 1% of that step at most; the only session of a model never waits.
func (b *batcher) gather() {
	window := min(max(b.lastStep/50, gatherMin), gatherMax)
	end := time.Now().Add(window)
	defer b.timer.Stop()
	for {
		left := time.Until(end)
		if left <= 0 {
			return
		}
		b.timer.Reset(min(window/2, left))
		select {
		case <-b.arrived:
		case <-b.timer.C:
			return
		}
	}
}

// step runs one forward pass over the active requests and retires those it finished.
func (b *batcher) step(leader *request) {
	// Cancelled requests leave first, with what they completed.
	kept := b.active[:0]
	for _, r := range b.active {
		if err := r.ctx.Err(); err != nil {
			b.retire(r, err, leader)
			continue
		}
		kept = append(kept, r)
	}
	clear(b.active[len(kept):])
	b.active = kept
	if len(b.active) == 0 {
		b.statsMu.Lock()
		b.stats.Active = 0
		b.statsMu.Unlock()
		return
	}
	b.batch, b.owners = b.batch[:0], b.owners[:0]
	decodes, prompts := 0, 0
	for _, r := range b.active {
		if len(r.seq.Tokens)-r.off == 1 {
			decodes++
		} else {
			prompts++
		}
	}
	// Decode steps first, but never all the rows while a prompt waits (it would starve);
	// then prompt chunks in arrival order, as many rows as keep the streams' step within
	// its bound (promptRows).
	decodeCap := b.maxRows
	if prompts > 0 {
		decodeCap = max(b.maxRows-1, 1)
	}
	taken := 0
	for _, r := range b.active {
		if taken == decodeCap {
			break
		}
		if len(r.seq.Tokens)-r.off == 1 {
			b.batch = append(b.batch, b.part(r, 1))
			b.owners = append(b.owners, r)
			taken++
		}
	}
	rows := b.maxRows - taken
	if taken > 0 {
		rows = min(rows, b.promptRows())
	}
	promptRows := 0
	for _, r := range b.active {
		left := len(r.seq.Tokens) - r.off
		if left == 1 || rows == 0 {
			continue
		}
		n := min(left, rows)
		rows -= n
		promptRows += n
		b.batch = append(b.batch, b.part(r, n))
		b.owners = append(b.owners, r)
	}
	start := time.Now()
	err := b.forward()
	elapsed := time.Since(start)
	b.lastStep = elapsed
	b.learn(taken, promptRows, elapsed)
	b.gatherProfiles()
	tokens := 0
	for i, r := range b.owners {
		n := len(b.batch[i].Tokens)
		tokens += n
		b.batch[i] = backend.Sequence{}
		if err != nil {
			r.off = -1 // failed: retired below
			continue
		}
		r.off += n
	}
	kept = b.active[:0]
	for _, r := range b.active {
		switch {
		case r.off < 0:
			b.retire(r, err, leader)
		case r.off == len(r.seq.Tokens):
			b.retire(r, nil, leader)
		default:
			kept = append(kept, r)
		}
	}
	clear(b.active[len(kept):])
	b.active = kept
	if decodes > taken {
		b.rotate()
	}
	b.statsMu.Lock()
	s := &b.stats
	s.Steps++
	s.Sequences += int64(len(b.owners))
	s.Tokens += int64(tokens)
	s.StepTime += elapsed
	s.LastStepTime = elapsed
	s.MaxBatch = max(s.MaxBatch, len(b.owners))
	s.Active = len(b.active)
	b.statsMu.Unlock()
}

// stepBound is how much longer than a decode-only step a step that also feeds a prompt
// may take: the running streams' inter-token latency while a long prompt is fed stays
// within this factor of their unloaded one.
const stepBound = 1.8

// promptRows is the most prompt rows a step that carries decode rows takes: on a machine
// where a decode step is bound by reading the weights, a few prompt rows ride along
// almost free, and each row past that costs compute. It is learnt from the steps' times
// — the decode-only step's (decodeTime) and the cost of a prompt row on top (rowCost),
// both moving averages — and starts small.
func (b *batcher) promptRows() int {
	if b.decodeTime <= 0 || b.rowCost <= 0 {
		return max(1, b.maxRows/16)
	}
	n := int((stepBound - 1) * float64(b.decodeTime) / float64(b.rowCost))
	return min(max(n, 1), b.maxRows)
}

// learn updates decodeTime and rowCost from a step of decodes decode rows and prompt
// prompt rows that took d.
func (b *batcher) learn(decodes, prompt int, d time.Duration) {
	const w = 0.25 // the weight of the newest step
	ewma := func(old, v time.Duration) time.Duration {
		if old <= 0 {
			return v
		}
		return time.Duration((1-w)*float64(old) + w*float64(v))
	}
	switch {
	case decodes > 0 && prompt == 0:
		b.decodeTime = ewma(b.decodeTime, d)
	case decodes > 0 && b.decodeTime > 0:
		extra := max(d-b.decodeTime, 0) / time.Duration(prompt)
		b.rowCost = ewma(b.rowCost, max(extra, time.Microsecond))
	}
}

// rotate moves the requests the last step served behind those it left waiting, so that
// streams beyond one step's rows take turns.
func (b *batcher) rotate() {
	served := func(r *request) bool { return slices.Contains(b.owners, r) }
	b.rotBuf = b.rotBuf[:0]
	for _, r := range b.active {
		if !served(r) {
			b.rotBuf = append(b.rotBuf, r)
		}
	}
	for _, r := range b.active {
		if served(r) {
			b.rotBuf = append(b.rotBuf, r)
		}
	}
	copy(b.active, b.rotBuf)
	clear(b.rotBuf)
}

// part is the next n tokens of r as a sequence of this step's batch: the logits it
// wants for those tokens, written where the whole call's go.
func (b *batcher) part(r *request, n int) backend.Sequence {
	// A kept pass cut into parts stays one pass: each part is kept, and continues it.
	seq := backend.Sequence{State: r.seq.State, Tokens: r.seq.Tokens[r.off : r.off+n], Keep: r.seq.Keep}
	last := r.off+n == len(r.seq.Tokens)
	v := b.m.weights.Vocab()
	switch {
	case r.greedy && last:
		seq.Logits, seq.Out = backend.LogitsLast, r.logits
	case r.seq.Logits == backend.LogitsAll:
		seq.Logits, seq.Out = backend.LogitsAll, r.seq.Out[r.off*v:(r.off+n)*v]
	case r.seq.Logits == backend.LogitsLast && last:
		seq.Logits, seq.Out = backend.LogitsLast, r.seq.Out
	}
	return seq
}

// forward runs the step's batch: through the engine's own greedy choice when every
// sequence of it wants only that, else through Forward, the greedy ones' argmax taken
// here.
func (b *batcher) forward() error {
	ctx := context.Background() // each request's own context is checked between steps
	if g := b.greedyE; g != nil && b.allGreedy() {
		b.greedy = b.greedy[:0]
		for range b.batch {
			b.greedy = append(b.greedy, 0)
		}
		if err := g.ForwardGreedy(ctx, b.batch, b.greedy); err != nil {
			return err
		}
		for i, r := range b.owners {
			r.next = b.greedy[i]
		}
		return nil
	}
	if err := b.m.engine.Forward(ctx, b.batch); err != nil {
		return err
	}
	for i, r := range b.owners {
		if r.greedy && r.off+len(b.batch[i].Tokens) == len(r.seq.Tokens) {
			r.next = int32(argmax(r.logits))
		}
	}
	return nil
}

// allGreedy reports whether every sequence of the step ends a greedy request.
func (b *batcher) allGreedy() bool {
	for i, r := range b.owners {
		if !r.greedy || r.off+len(b.batch[i].Tokens) != len(r.seq.Tokens) {
			return false
		}
	}
	return true
}

// gatherProfiles moves the profile each state of the step's batch accounted into the
// model's, so that the model's counts every pass, including those of states since
// closed. Read and reset after every pass, a state's holds only the last pass's.
func (b *batcher) gatherProfiles() {
	if !b.m.opts.profile {
		return
	}
	var sum backend.OpProfile
	for _, seq := range b.batch {
		if p, ok := seq.State.(backend.Profiler); ok {
			sum = sum.Add(p.Profile())
			p.ResetProfile()
		}
	}
	b.statsMu.Lock()
	b.profile = b.profile.Add(sum)
	b.statsMu.Unlock()
}

// snapshot returns the batcher's counters and the profile gathered.
func (b *batcher) snapshot() (BatchStats, backend.OpProfile) {
	b.statsMu.Lock()
	defer b.statsMu.Unlock()
	return b.stats, b.profile
}
