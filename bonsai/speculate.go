package bonsai

import (
	"context"
	"errors"
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// ErrNotKept is the error of a Rewind to a position that the session's last Verify does
// not cover.
var ErrNotKept = backend.ErrNotKept

// Verify feeds tokens, the last accepted token and the tokens a drafter proposes after
// it, in one pass that reads the weights once for all of them, and returns the logits
// of every position (one row of Vocab values per token, in newly allocated memory),
// each bit for bit what Step would give at that position. Rewind then keeps as many of
// them as the model agrees with. Like PrefillAll it leaves the last row as the
// session's Logits.
//
// The session's backend must be able to rewind its states (the CPU backend can);
// otherwise Verify returns an error wrapping errors.ErrUnsupported and feeds nothing.
func (s *Session) Verify(ctx context.Context, tokens []int32) ([][]float32, error) {
	if len(tokens) == 0 {
		return nil, nil
	}
	vocab := s.m.weights.Vocab()
	flat := make([]float32, len(tokens)*vocab)
	if err := s.verify(ctx, tokens, flat); err != nil {
		return nil, err
	}
	return logitRows(flat, len(tokens), vocab), nil
}

// verify is Verify writing the logits, row by row, into flat (len(tokens) × Vocab
// values): a generation verifies into one buffer of its own, instead of megabytes
// allocated a pass (nine rows of the 27B's 248,320 logits are 8.9 MB).
func (s *Session) verify(ctx context.Context, tokens []int32, flat []float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return errClosed
	}
	if err := s.rewinder(); err != nil {
		return err
	}
	err := s.runSeq(ctx, backend.Sequence{State: s.st, Tokens: tokens, Logits: backend.LogitsAll, Out: flat, Keep: true}, false)
	if err != nil {
		s.hasLogits = false
		return err
	}
	vocab := len(s.logits)
	copy(s.logits, flat[(len(tokens)-1)*vocab:])
	s.hasLogits = true
	return nil
}

// Rewind sets the session to hold its first n tokens, anywhere from its length before
// the last Verify to its length now: bit for bit as if only the tokens up to n had been
// fed. It ends that Verify's pass, which stays rewindable down to its start. After a
// rewind that drops tokens the session holds no Logits (the row Verify returned for
// position n−1 has them). A position the last Verify does not cover, or a session fed
// otherwise since (Prefill, Step, Generate, Reset, Load), is refused with an error
// wrapping ErrNotKept, the session unchanged.
func (s *Session) Rewind(n int) error {
	unlock, err := s.lockOpen()
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.rewinder(); err != nil {
		return err
	}
	held := s.st.Len()
	if err := s.st.(backend.Rewinder).Rewind(n); err != nil {
		return fmt.Errorf("bonsai: %w", err)
	}
	s.tokens = s.tokens[:n]
	if n != held {
		s.hasLogits = false
	}
	return nil
}

// rewinder says why the session's state cannot rewind, or nil when it can. s.mu is held
// and s.st is open.
func (s *Session) rewinder() error {
	if _, ok := s.st.(backend.Rewinder); !ok {
		return fmt.Errorf("bonsai: the %s backend's states cannot rewind: %w", s.m.backend.Name(), errors.ErrUnsupported)
	}
	return nil
}
