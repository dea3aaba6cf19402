package bonsai

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// Session is one conversation: the state of one token sequence (the attention layers' KV
// cache and the GDN layers' recurrent and convolution states), the tokens it holds and
// the logits of the last. Generate runs on it; Prefill and Step feed it directly.
//
// Each method runs whole under the session's lock, so a Session may be shared between
// goroutines: concurrent calls are serialised, never interleaved. A conversation is a
// sequence, though, so calls from two goroutines see each other's tokens; a Generate in
// progress takes the lock once per step and shares the session with nobody else's
// calls only by convention. Distinct sessions of one model run concurrently, and their
// forward passes are batched together (see WithBatchTokens).
type Session struct {
	m  *Model
	mu sync.Mutex
	st backend.State
	// logits of the last token fed, valid when hasLogits.
	logits    []float32
	hasLogits bool
	one       []int32  // Step's token, kept so a step allocates nothing
	req       *request // the session's forward pass as the batcher runs it, likewise

	// tokens are the tokens the state holds, in order: what Generate compares a new
	// prompt with. It is allocated for the context size (up to 65536 tokens), so that a
	// step allocates nothing.
	tokens []int32
	// ckpt is a copy of the state at the end of the last chat prompt before the
	// assistant's reply, or nil (see Generate).
	ckpt *checkpoint
	// smp is Generate's sampler, kept for its vocabulary-sized buffers.
	smp *Sampler
}

// checkpoint is a saved state with its tokens and last logits.
type checkpoint struct {
	st        backend.State
	tokens    []int32
	logits    []float32
	hasLogits bool
}

func newSession(m *Model, st backend.State) *Session {
	m.batch.sessions.Add(1)
	return &Session{m: m, st: st, logits: make([]float32, m.weights.Vocab()), one: make([]int32, 1),
		req:    &request{wake: make(chan bool, 1)},
		tokens: make([]int32, 0, min(m.opts.ctxSize, 1<<16))}
}

// Len returns the number of tokens the session holds.
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return 0
	}
	return s.st.Len()
}

// Prefill feeds tokens (a prompt, or the next part of one) and keeps the logits of the
// last. Tokens are processed a chunk at a time, the weights read once per chunk.
func (s *Session) Prefill(ctx context.Context, tokens []int32) error {
	if len(tokens) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.forward(ctx, tokens, backend.LogitsLast, s.logits)
}

// PrefillAll is Prefill that also returns the logits of every position: one row of Vocab
// values per token, in newly allocated memory.
func (s *Session) PrefillAll(ctx context.Context, tokens []int32) ([][]float32, error) {
	if len(tokens) == 0 {
		return nil, nil
	}
	vocab := s.m.weights.Vocab()
	flat := make([]float32, len(tokens)*vocab)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.forward(ctx, tokens, backend.LogitsAll, flat); err != nil {
		return nil, err
	}
	rows := logitRows(flat, len(tokens), vocab)
	copy(s.logits, rows[len(rows)-1])
	s.hasLogits = true
	return rows, nil
}

// Step feeds one token, the decode step of generation. It allocates nothing, except
// when the step fills the KV cache's allocated pages: the cache then adds its next page,
// one allocation per attention layer (two with the 8-bit cache). Pages hold 16
// positions, then double up to 1024, so this happens at positions 16, 48, 112, 240, …
// and then once every 1024 tokens: amortised, a handful of allocations per thousand
// steps (TestStepAllocatesNothing counts them exactly).
func (s *Session) Step(ctx context.Context, token int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.one[0] = token
	return s.forward(ctx, s.one, backend.LogitsLast, s.logits)
}

// stepGreedy feeds one token and returns the greedy choice of the next one: on a
// backend.Greedy engine the device chooses, so that the logits need not be read back.
// The session then holds no logits.
func (s *Session) stepGreedy(ctx context.Context, token int32) (int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return 0, errClosed
	}
	if s.req.logits == nil {
		s.req.logits = make([]float32, s.m.weights.Vocab())
	}
	s.one[0] = token
	err := s.run(ctx, s.one, backend.LogitsNone, nil, true)
	s.hasLogits = false
	return s.req.next, err
}

// forward runs one forward pass of the session's sequence. s.mu is held.
func (s *Session) forward(ctx context.Context, tokens []int32, want backend.Logits, out []float32) error {
	if s.st == nil {
		return errClosed
	}
	err := s.run(ctx, tokens, want, out, false)
	if want == backend.LogitsLast {
		// The shared buffer holds the last token's logits only if the pass got that far.
		s.hasLogits = err == nil
	}
	return err
}

// run hands the pass to the model's batcher and records the tokens the state took. s.mu
// is held and s.st is open.
func (s *Session) run(ctx context.Context, tokens []int32, want backend.Logits, out []float32, greedy bool) error {
	return s.runSeq(ctx, backend.Sequence{State: s.st, Tokens: tokens, Logits: want, Out: out}, greedy)
}

// runSeq is run of a sequence of s.st that the caller built (Verify's is kept).
func (s *Session) runSeq(ctx context.Context, seq backend.Sequence, greedy bool) error {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	tokens := seq.Tokens
	before := s.st.Len()
	r := s.req
	r.ctx, r.seq, r.greedy = ctx, seq, greedy
	err := s.m.forward(r)
	r.ctx, r.seq = nil, backend.Sequence{} // drop the references
	// On cancellation the state keeps the chunks it completed.
	if done := s.st.Len() - before; done > 0 && done <= len(tokens) {
		s.tokens = append(s.tokens, tokens[:done]...)
	}
	return err
}

// Logits returns the logits of the last token fed (Vocab values), or nil before the
// first. The slice is the session's and is overwritten by the next call.
func (s *Session) Logits() []float32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hasLogits {
		return nil
	}
	return s.logits
}

// Reset empties the session, keeping its memory for reuse, and drops its chat
// checkpoint.
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
}

// lockOpen locks the session and keeps the model from closing until unlock, or fails
// with errClosed when either is closed: the start of a call on the session's state.
func (s *Session) lockOpen() (unlock func(), err error) {
	s.mu.Lock()
	if s.st == nil {
		s.mu.Unlock()
		return nil, errClosed
	}
	s.m.mu.RLock()
	if s.m.closed {
		s.m.mu.RUnlock()
		s.mu.Unlock()
		return nil, errClosed
	}
	return func() { s.m.mu.RUnlock(); s.mu.Unlock() }, nil
}

// clear empties the session and drops its checkpoint. s.mu is held.
func (s *Session) clear() {
	if s.st != nil {
		s.st.Reset()
	}
	s.hasLogits = false
	s.tokens = s.tokens[:0]
	s.dropCheckpoint()
}

func (s *Session) dropCheckpoint() {
	if s.ckpt != nil {
		s.ckpt.st.Close()
		s.ckpt = nil
	}
}

// Tokens returns a copy of the tokens the session holds, in order.
func (s *Session) Tokens() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokens)
}

// Clone returns an independent copy of the session — a fork of the conversation. The
// copy has the state and the tokens, not the chat checkpoint (see Generate).
func (s *Session) Clone() (*Session, error) {
	unlock, err := s.lockOpen()
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := s.m.cloneState(s.st)
	if err != nil {
		return nil, err
	}
	c := newSession(s.m, st)
	copy(c.logits, s.logits)
	c.hasLogits = s.hasLogits
	c.tokens = append(c.tokens, s.tokens...)
	return c, nil
}

// MemoryBytes returns the memory the session's state holds.
func (s *Session) MemoryBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return 0
	}
	return s.st.Bytes()
}

// Close releases the session's memory.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return nil
	}
	err := s.st.Close()
	s.st = nil
	s.m.batch.sessions.Add(-1)
	s.dropCheckpoint()
	if err != nil && !errors.Is(err, ErrClosed) {
		return s.m.backendErr(err)
	}
	return nil
}

// prefillPrompt brings the session to the end of prompt p, reusing what it holds: its
// state when its tokens are a prefix of the prompt, else its checkpoint when that is one,
// else nothing (a reset). It returns the number of prompt tokens reused. When p has a
// boundary beyond the reused part, the state there is saved as the new checkpoint.
func (s *Session) prefillPrompt(ctx context.Context, p *Prompt) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return 0, errClosed
	}
	if hs, ok := s.st.(backend.HiddenStates); ok {
		// Stop keeping the hidden states a previous generation's MTPDrafter asked for.
		// A speculative one keeps the prompt's last position's, so that a drafter that
		// reads them (SessionDrafter) drafts from the first token on; the generation
		// stops keeping it for any other drafter.
		hs.KeepHidden(-1)
		if p.opt.Speculative != nil {
			hs.KeepHidden(len(p.ids) - 1)
		}
	}
	// A prefix is usable if it leaves tokens to feed, or if the logits of its last token
	// are at hand.
	usable := func(held []int32, hasLogits bool) int {
		if len(held) == 0 || len(held) > len(p.ids) || !slices.Equal(held, p.ids[:len(held)]) {
			return -1
		}
		if len(held) == len(p.ids) && !hasLogits {
			return -1
		}
		return len(held)
	}
	own := usable(s.tokens, s.hasLogits)
	saved := -1
	if s.ckpt != nil {
		saved = usable(s.ckpt.tokens, s.ckpt.hasLogits)
	}
	switch {
	case own >= saved && own > 0:
	case saved > 0:
		if err := s.restore(s.ckpt); err != nil {
			return 0, err
		}
	default:
		s.st.Reset()
		s.tokens = s.tokens[:0]
		s.hasLogits = false
	}
	cached := len(s.tokens)
	ids := p.ids
	if c := s.m.prefix; c != nil {
		// The longest boundary past what the session holds that the model's cache has.
		found := false
		for i := len(p.boundaries) - 1; i >= 0 && p.boundaries[i] > cached; i-- {
			b := p.boundaries[i]
			ok, err := s.restorePrefix(c, ids[:b])
			if err != nil {
				return 0, err
			}
			if ok {
				cached, found = b, true
				break
			}
		}
		if !found && len(p.boundaries) > 0 && p.boundaries[len(p.boundaries)-1] > cached {
			c.miss()
		}
	}
	reused := cached
	// Feed the prompt boundary by boundary, keeping the state at each: in the model's
	// cache, and at the last (the prompt without the generation prompt) as the session's
	// own checkpoint.
	for _, b := range p.boundaries {
		if b <= cached || b >= len(ids) {
			continue
		}
		if s.m.prefix == nil && b != p.checkpoint {
			continue
		}
		if err := s.forward(ctx, ids[cached:b], backend.LogitsLast, s.logits); err != nil {
			return reused, err
		}
		cached = b
		if c := s.m.prefix; c != nil && !c.has(ids[:b]) {
			if err := s.cachePrefix(c); err != nil {
				return reused, err
			}
		}
		if b == p.checkpoint {
			if err := s.checkpoint(); err != nil {
				return reused, err
			}
		}
	}
	if cached == len(ids) {
		return reused, nil
	}
	return reused, s.forward(ctx, ids[cached:], backend.LogitsLast, s.logits)
}

// restorePrefix makes the session hold the cached state of tokens, if there is one. A
// copy that fails leaves the session empty. s.mu is held.
func (s *Session) restorePrefix(c *prefixCache, tokens []int32) (bool, error) {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	if s.m.closed {
		return false, errClosed
	}
	ok, err := c.restore(s.st, tokens, s.logits)
	if err != nil {
		s.st.Reset()
		s.tokens, s.hasLogits = s.tokens[:0], false
		return false, s.m.backendErr(err)
	}
	if !ok {
		return false, nil
	}
	s.tokens = append(s.tokens[:0], tokens...)
	s.hasLogits = true
	return true, nil
}

// cachePrefix puts a copy of the session's state in the model's prefix cache. s.mu is
// held.
func (s *Session) cachePrefix(c *prefixCache) error {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	if s.m.closed {
		return errClosed
	}
	st, err := s.m.cloneState(s.st)
	if err != nil {
		return err
	}
	c.insert(s.tokens, st, s.logits)
	return nil
}

// copyState makes dst a copy of src, in place where the backend can, through the seam's
// views otherwise.
func copyState(dst, src backend.State) error {
	if cp, ok := dst.(backend.StateCopier); ok {
		if err := cp.CopyFrom(src); err == nil {
			return nil
		}
	}
	return backend.CopyState(dst, src)
}

// cloneState returns a new state holding a copy of st. m.mu is held for reading.
func (m *Model) cloneState(st backend.State) (backend.State, error) {
	c, err := m.newState()
	if err != nil {
		return nil, err
	}
	if err := copyState(c, st); err != nil {
		c.Close()
		return nil, m.backendErr(err)
	}
	return c, nil
}

// restore makes the session's state a copy of c. s.mu is held.
func (s *Session) restore(c *checkpoint) error {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	if s.m.closed {
		return errClosed
	}
	if err := copyState(s.st, c.st); err != nil {
		return s.m.backendErr(err)
	}
	s.tokens = append(s.tokens[:0], c.tokens...)
	copy(s.logits, c.logits)
	s.hasLogits = c.hasLogits
	return nil
}

// checkpoint saves the session's state as its checkpoint. s.mu is held.
func (s *Session) checkpoint() error {
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	if s.st == nil || s.m.closed {
		return errClosed
	}
	if c := s.ckpt; c != nil {
		if copyState(c.st, s.st) == nil {
			c.tokens = append(c.tokens[:0], s.tokens...)
			copy(c.logits, s.logits)
			c.hasLogits = s.hasLogits
			return nil
		}
		s.dropCheckpoint()
	}
	st, err := s.m.cloneState(s.st)
	if err != nil {
		return err
	}
	s.ckpt = &checkpoint{st: st, tokens: slices.Clone(s.tokens), logits: slices.Clone(s.logits), hasLogits: s.hasLogits}
	return nil
}

// sampler returns the session's sampler, reset to opt, which Prepare checked.
func (s *Session) sampler(opt SamplerOptions) *Sampler {
	if s.smp == nil {
		s.smp = newSampler(s.m.weights.Vocab(), opt)
	} else {
		s.smp.reset(opt)
	}
	return s.smp
}

// logitRows cuts n tokens' logits, laid out row by row in flat, into a row per token,
// each capped at its end so that an append cannot run into the next.
func logitRows(flat []float32, n, vocab int) [][]float32 {
	rows := make([][]float32, n)
	for i := range rows {
		rows[i] = flat[i*vocab : (i+1)*vocab : (i+1)*vocab]
	}
	return rows
}
