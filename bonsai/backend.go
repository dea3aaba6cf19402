package bonsai

import (
	"context"

	"github.com/bonsai-go/sdk/qwen35"
)

// Backend is where a model's computation runs: the pure-Go CPU backend (CPU) or a GPU
// backend such as the metal package's. A backend loads a model's weights, which stay
// where the file is mapped (the CPU reads the mapped pages directly; a GPU backend wraps
// the same pages), and returns an Engine that runs forward passes.
//
// The seam sits at the level of a forward pass over a chunk of tokens, so that a GPU
// backend can encode a whole decode step into one command buffer, fuse what it likes, and
// read back only the logits it was asked for.
type Backend interface {
	// Name identifies the backend in messages ("cpu", "metal").
	Name() string
	// Load binds the weights. They are valid until the Engine is closed.
	Load(ctx context.Context, w *qwen35.Weights, opt LoadOptions) (Engine, error)
}

// LoadOptions are the model-wide settings a backend receives.
type LoadOptions struct {
	// Threads is the number of CPU threads to use (≥ 1).
	Threads int
	// Progress, when set, receives the backend's load progress.
	Progress func(Progress)
}

// StateOptions size one sequence's state.
type StateOptions struct {
	// ContextSize is the most tokens the sequence may hold.
	ContextSize int
	// KVCache is the precision of the attention layers' key/value cache.
	KVCache qwen35.KVPrecision
}

// Engine runs forward passes of one loaded model. Its methods are safe for concurrent
// use with distinct States.
type Engine interface {
	// NewState allocates one sequence's state: the attention layers' KV caches, which
	// grow with use up to the context size, and the GDN layers' recurrent and
	// convolution states.
	NewState(opt StateOptions) (State, error)
	// Forward feeds tokens to the sequence at its current position and advances it. When
	// logits is not nil it receives the logits of the last token (Vocab values), or, with
	// all set, of every token (len(tokens) × Vocab values, row by row). It checks ctx
	// between chunks of tokens; on cancellation the state holds the chunks completed so
	// far, all of them consistent.
	Forward(ctx context.Context, st State, tokens []int32, logits []float32, all bool) error
	// Close releases the engine. States must not be used afterwards.
	Close() error
}

// State is one sequence's state on a backend.
type State interface {
	// Len returns the number of tokens the sequence holds.
	Len() int
	// Reset empties the sequence, keeping its memory.
	Reset()
	// Clone returns an independent deep copy.
	Clone() (State, error)
	// Bytes returns the memory the state holds.
	Bytes() int64
	// Close releases the state's memory.
	Close() error
}
