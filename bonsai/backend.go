package bonsai

import (
	"context"
	"fmt"
	"io"

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
	// Activations is the precision of the activations fed to the ternary products.
	Activations Activations
	// Profile asks the engine to account the time of each kind of operation, for
	// Session.Profile.
	Profile bool
}

// Activations is the precision in which activations meet the ternary weights.
type Activations uint8

const (
	// ActivationsInt8 quantises each activation once per site to int8 (one scale per
	// 128 values) and multiplies with integer kernels, as llama.cpp's CPU backend does
	// with Q8_0: the fast default.
	ActivationsInt8 Activations = iota
	// ActivationsFloat32 multiplies in float32: slower, and within float32 rounding of
	// the float64 reference.
	ActivationsFloat32
)

func (a Activations) String() string {
	switch a {
	case ActivationsInt8:
		return "int8"
	case ActivationsFloat32:
		return "float32"
	}
	return fmt.Sprintf("Activations(%d)", uint8(a))
}

// Profiler is implemented by states that account the time of each kind of operation
// (the CPU backend's, when the model was opened WithProfiling).
type Profiler interface {
	Profile() OpProfile
	ResetProfile()
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

// GreedyEngine is an Engine that can choose the greedy token itself: a GPU backend takes
// the argmax on the device, so that a greedy decode step reads back one integer instead
// of the logits. Generate uses it when the sampling is greedy with no penalties and no
// log-probabilities are asked for.
type GreedyEngine interface {
	Engine
	// ForwardGreedy feeds tokens as Forward does and returns the index of the largest
	// logit of the last token (the lowest index among equal ones; NaN never chosen)
	// without producing the logits.
	ForwardGreedy(ctx context.Context, st State, tokens []int32) (int32, error)
}

// State is one sequence's state on a backend. A State may also have a method
// CopyFrom(State) error that makes it a copy of another state of its engine in place;
// the chat checkpoints of Generate then reuse their memory instead of cloning.
type State interface {
	// Len returns the number of tokens the sequence holds.
	Len() int
	// Reset empties the sequence, keeping its memory.
	Reset()
	// Clone returns an independent deep copy.
	Clone() (State, error)
	// Save writes the state in the snapshot encoding that every backend shares, so that
	// a snapshot saved on one backend loads on another (see the state encoding in
	// statecodec.go): the token count, then per layer the GDN convolution and recurrent
	// states, or the KV cache at its precision and length.
	Save(w io.Writer) error
	// Load replaces the state with one Save wrote for the same model. It allocates
	// nothing beyond what the state's context size allows, and on error leaves the
	// state empty.
	Load(r io.Reader) error
	// Bytes returns the memory the state holds.
	Bytes() int64
	// Close releases the state's memory.
	Close() error
}
