package bonsai

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Session is one conversation: the state of one token sequence (the attention layers' KV
// cache and the GDN layers' recurrent and convolution states) and the logits of its last
// token. A session is not for concurrent use, but distinct sessions of one model run
// concurrently.
type Session struct {
	m  *Model
	mu sync.Mutex
	st State
	// logits of the last token fed, valid when hasLogits.
	logits    []float32
	hasLogits bool
	one       []int32 // Step's token, kept so a step allocates nothing
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

// ContextSize returns the most tokens the session may hold.
func (s *Session) ContextSize() int { return s.m.opts.ctxSize }

// Prefill feeds tokens (a prompt, or the next part of one) and keeps the logits of the
// last. Tokens are processed a chunk at a time, the weights read once per chunk.
func (s *Session) Prefill(ctx context.Context, tokens []int32) error {
	if len(tokens) == 0 {
		return nil
	}
	return s.forward(ctx, tokens, s.logits, false)
}

// PrefillAll is Prefill that also returns the logits of every position: one row of Vocab
// values per token, in newly allocated memory.
func (s *Session) PrefillAll(ctx context.Context, tokens []int32) ([][]float32, error) {
	if len(tokens) == 0 {
		return nil, nil
	}
	vocab := s.m.weights.Config.Vocab
	flat := make([]float32, len(tokens)*vocab)
	if err := s.forward(ctx, tokens, flat, true); err != nil {
		return nil, err
	}
	rows := make([][]float32, len(tokens))
	for i := range rows {
		rows[i] = flat[i*vocab : (i+1)*vocab : (i+1)*vocab]
	}
	s.mu.Lock()
	copy(s.logits, rows[len(rows)-1])
	s.hasLogits = true
	s.mu.Unlock()
	return rows, nil
}

// Step feeds one token, the decode step of generation. It allocates nothing.
func (s *Session) Step(ctx context.Context, token int32) error {
	s.mu.Lock()
	s.one[0] = token
	s.mu.Unlock()
	return s.forward(ctx, s.one, s.logits, false)
}

func (s *Session) forward(ctx context.Context, tokens []int32, logits []float32, all bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return ErrClosed
	}
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	if s.m.closed {
		return ErrClosed
	}
	err := s.m.engine.Forward(ctx, s.st, tokens, logits, all)
	if !all {
		// The shared buffer holds the last token's logits only if the pass got that far.
		s.hasLogits = err == nil
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

// Reset empties the session, keeping its memory for reuse.
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st != nil {
		s.st.Reset()
	}
	s.hasLogits = false
}

// Clone returns an independent copy of the session — a fork of the conversation.
func (s *Session) Clone() (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return nil, ErrClosed
	}
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	if s.m.closed {
		return nil, ErrClosed
	}
	st, err := s.st.Clone()
	if err != nil {
		return nil, fmt.Errorf("bonsai: %w", err)
	}
	c := &Session{m: s.m, st: st, logits: append([]float32(nil), s.logits...), hasLogits: s.hasLogits, one: make([]int32, 1)}
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
	if err != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("bonsai: %w", err)
	}
	return nil
}
