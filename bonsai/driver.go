package bonsai

import (
	"errors"
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
)

// Driver is the escape hatch to the layers below a model, for tools and benchmarks; a
// program that runs a model needs none of it.
type Driver struct{ m *Model }

// Driver returns the layers below the model.
func (m *Model) Driver() Driver { return Driver{m} }

// File returns the model file, closed with the model.
func (d Driver) File() *gguf.File { return d.m.file }

// Weights returns the architecture's bound weights: for qwen35 a *qwen35.Weights (its
// Config holds the hyperparameters; its String describes the model in a line).
func (d Driver) Weights() backend.Model { return d.m.weights }

// Engine returns the engine the model runs on, for the optional capabilities a tool
// tests for (backend.WeightReader). Its Forward bypasses the model's checks and
// sessions: call it only on states of its own.
func (d Driver) Engine() backend.Engine { return d.m.engine }

// Fill empties s, a session of the model, and has write fill its backend state and set
// its length (as backendtest.FillSynthetic does) without running the model: s then holds
// that many tokens, all 0, and the next Step runs there. A failed write leaves s empty.
func (d Driver) Fill(s *Session, write func(backend.State) error) error {
	if s.m != d.m {
		return errors.New("bonsai: Fill: the session is another model's")
	}
	unlock, err := s.lockOpen()
	if err != nil {
		return err
	}
	defer unlock()
	s.clear()
	err = write(s.st)
	if n := s.st.Len(); err == nil && n > s.m.opts.ctxSize {
		err = fmt.Errorf("%w: %d tokens, the context holds %d", ErrContextFull, n, s.m.opts.ctxSize)
	}
	if err != nil {
		s.clear()
		return fmt.Errorf("bonsai: Fill: %w", err)
	}
	s.tokens = append(s.tokens, make([]int32, s.st.Len())...)
	return nil
}
