// Package backend is the seam between the bonsai package and the places a model's
// computation runs, in the manner of database/sql/driver: bonsai is written against
// these interfaces, and a backend (bonsai/cpu, metal, or one outside this module)
// implements them. Programs that only run models never import it; they pass a Backend to
// bonsai.WithBackend.
//
// # What a new backend writes
//
//  1. A Backend: a Name ("cuda") and Load, which takes the bound weights of one
//     architecture (a Model; type-assert it to the architecture's own type, such as
//     *qwen35.Weights, and refuse one it does not run with an error that names both) and
//     returns an Engine. Load honours ctx, reports LoadOptions.Progress, and must not
//     keep a reference to the file beyond the weights' views.
//  2. An Engine: NewState, Forward over a batch of sequences, Close. Forward follows the
//     model's layer plan (qwen35.Weights.Plan for qwen35) with whatever fusion suits the
//     device; it may run the sequences one after another or together.
//  3. A State per sequence: Len, Reset, Layer (the per-layer view the snapshot codec
//     reads and writes; see Layer), SetLen, Bytes, Close.
//  4. Optionally, the capabilities below, each an interface the caller tests for:
//     StateCopier (copy a state in place, reusing its memory), Greedy (choose the greedy
//     token on the device), Profiler (account time per kind of operation), Rewinder
//     (take a state back to any position of a kept pass, for speculative decoding),
//     HiddenStates (keep each position's last hidden state, for an MTP head), Workers
//     (lend the engine's worker pool to work between passes), WeightReader (stream the
//     weights a decode step reads, for benchmarks).
//  5. A run of backendtest.Run in its tests: the conformance suite checks batches against
//     sequences run alone, snapshots through the shared codec, cancellation and closing.
//
// What a backend does not write, because bonsai does it once above the seam: checking
// token ids, context room and logits buffer sizes (Check), the snapshot encoding (over
// Layer views), the chunking of a prompt into calls, sampling, and the ErrClosed and
// ErrContextFull errors callers test (a backend returns these sentinels unwrapped or
// wrapped once, and prefixes none of its errors with "bonsai:").
package backend

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors a backend returns, and callers test with errors.Is.
var (
	// ErrClosed: the engine or the state was closed.
	ErrClosed = errors.New("closed")
	// ErrContextFull: a sequence would grow past its context size.
	ErrContextFull = errors.New("context full")
	// ErrNotKept: a Rewinder was asked for a position its last kept pass does not
	// cover.
	ErrNotKept = errors.New("position not kept")
)

// Model is the bound weights of one architecture: what an Architecture's Bind returns
// and Backend.Load receives. Backends type-assert it to the architecture's own type.
type Model interface {
	// Architecture is the GGUF general.architecture the weights were bound for.
	Architecture() string
	// Vocab is the number of logits per token.
	Vocab() int
	// ContextLength is the most positions the model was trained for.
	ContextLength() int
}

// Backend is where a model's computation runs.
type Backend interface {
	// Name identifies the backend in messages ("cpu", "metal").
	Name() string
	// Load prepares the weights for forward passes. They stay valid until the Engine
	// is closed.
	Load(ctx context.Context, m Model, opt LoadOptions) (Engine, error)
}

// LoadOptions are the model-wide settings a backend receives.
type LoadOptions struct {
	// Threads is the number of CPU threads to use (≥ 1).
	Threads int
	// Progress, when set, receives the backend's load progress in its own units.
	Progress func(done, total int64)
	// Activations is the precision of the activations fed to the ternary products.
	Activations Activations
	// Profile asks the engine to account the time of each kind of operation (Profiler).
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

// String returns "int8" or "float32", as the command lines spell them.
func (a Activations) String() string {
	switch a {
	case ActivationsInt8:
		return "int8"
	case ActivationsFloat32:
		return "float32"
	}
	return fmt.Sprintf("Activations(%d)", uint8(a))
}

// StateOptions size one sequence's state.
type StateOptions struct {
	// ContextSize is the most tokens the sequence may hold (≥ 1).
	ContextSize int
	// KVCache is the precision of the attention layers' key/value cache.
	KVCache KVPrecision
}

// Engine runs forward passes of one loaded model. Its methods are safe for concurrent
// use, as long as no State is in two calls at once.
type Engine interface {
	// NewState allocates one sequence's state.
	NewState(opt StateOptions) (State, error)
	// Forward feeds each sequence of the batch its tokens at its current position and
	// advances it, writing the logits each asked for into its Out. The batch has been
	// checked (Check): each state is open and distinct, has room for its tokens, and
	// each Out has the length its Logits asks for. Forward checks ctx between chunks
	// of tokens; on cancellation each state holds the chunks completed so far, all of
	// them consistent, and its Len says how far it got.
	Forward(ctx context.Context, batch []Sequence) error
	// Close releases the engine. States must not be used afterwards.
	Close() error
}

// Logits says which logits a sequence of a batch wants.
type Logits uint8

const (
	LogitsNone Logits = iota // none: a prompt chunk whose logits nobody reads
	LogitsLast               // the last token's: Vocab values
	LogitsAll                // every token's: len(Tokens) × Vocab values, row by row
)

// Sequence is one sequence's part of a batch.
type Sequence struct {
	State  State     // the sequence's state, which the pass advances by len(Tokens)
	Tokens []int32   // the tokens this pass feeds, at least one
	Logits Logits    // which logits to compute
	Out    []float32 // receives the logits Logits asks for; nil for LogitsNone
	// Keep asks a Rewinder state to keep, during this pass, what Rewind needs to take
	// it back to any position of the pass: the pass verifies drafted tokens. A kept
	// pass may come in several calls (bonsai's batcher cuts a long request into parts
	// that share steps with other sequences): a call with Keep continues the state's
	// kept pass when the state's previous call was kept too and no Rewind, Reset,
	// SetLen or CopyFrom came between; otherwise it starts a new one. What an engine
	// keeps grows with the pass's tokens (the CPU's: about 2 MB a token at the 27B's
	// widths), so Keep is meant for passes of a few tokens. A state that is not a
	// Rewinder ignores it.
	Keep bool
}

// State is one sequence's state on a backend. Its methods are called by one goroutine at
// a time.
type State interface {
	// Len returns the number of tokens the sequence holds.
	Len() int
	// Reset empties the sequence, keeping its memory.
	Reset()
	// Layers returns the number of decoder layers, and Layer the view of layer i's
	// state, through which the snapshot codec above the seam saves and loads it. The
	// views stay valid until the state is closed; they may be written only between
	// forward passes.
	Layers() int
	Layer(i int) Layer
	// SetLen sets the number of tokens the sequence holds, after a load has written
	// every layer through its view. It is an error beyond the context size.
	SetLen(n int) error
	// Bytes returns the memory the state holds.
	Bytes() int64
	// Close releases the state's memory. Closing twice is not an error.
	Close() error
}

// Layer is the view of one layer's state: a recurrent layer's float32 arrays, or an
// attention layer's KV cache. Exactly one of the two is set.
type Layer struct {
	// Recurrent holds a recurrent layer's state arrays in the architecture's order (a
	// Gated DeltaNet layer: its convolution state, then its recurrent state), as views
	// of the state's memory.
	Recurrent [][]float32
	// KV is an attention layer's cache.
	KV KVCache
}

// KVCache is the view of one attention layer's key/value cache. Rows cross it encoded
// at the cache's precision, as the snapshot stores them (KVPrecision.RowBytes).
type KVCache interface {
	// Precision is the encoding of the rows.
	Precision() KVPrecision
	// Heads and HeadDim give a row's shape: Heads × HeadDim values, head-major.
	Heads() int
	HeadDim() int
	// Len returns the positions held, MaxLen the most it may hold.
	Len() int
	MaxLen() int
	// ReadRow copies position pos's key and value rows into k and v, each
	// RowBytes(Heads, HeadDim) bytes.
	ReadRow(pos int, k, v []byte)
	// AppendRow adds one position from encoded rows; past MaxLen it returns an error
	// wrapping ErrContextFull.
	AppendRow(k, v []byte) error
	// Truncate keeps the first n positions.
	Truncate(n int)
}

// StateCopier is a State that can make itself a copy of another state of its engine,
// reusing its own memory. Without it, bonsai copies states through their Layer views.
type StateCopier interface {
	State
	// CopyFrom makes the state a copy of src: its positions and every layer's
	// contents. src is a state of the same engine; it is left unchanged.
	CopyFrom(src State) error
}

// Rewinder is a State that can be taken back to any position of its last kept pass
// (Sequence.Keep). A speculative decoder feeds the last accepted token and k drafted
// ones in one kept pass with LogitsAll, reads which drafts the model agrees with, and
// rewinds to keep only those. Attention layers rewind by truncating their KV cache; a
// recurrent layer's state cannot be truncated, so the engine keeps, during the pass,
// what it needs to rebuild the state at each position (the CPU backend keeps the state
// before the pass and each position's inputs to the recurrence, and replays them).
//
// A kept pass computes each position as a decode step of one token would: its logits
// are, bit for bit, those of feeding its tokens one per pass (to the suite's tolerance,
// for an engine whose arithmetic depends on the batch), and so is the state after a
// Rewind.
type Rewinder interface {
	State
	// Rewind sets the state to hold its first n tokens, where start ≤ n ≤ Len() and
	// start is Len() before the last kept pass: the state feeding the tokens up to n
	// would have left. It ends the kept pass (the next kept call starts a new one, at
	// the length rewound to), which stays rewindable: a later Rewind down to start is
	// valid too. Any other n, or a state whose last call was not kept, or that was
	// Reset, SetLen or CopyFrom since, is refused with an error wrapping ErrNotKept,
	// leaving the state as it was; a closed state returns ErrClosed. A speculative
	// decoder rewinds after every verification, to Len() when it accepts every token.
	Rewind(n int) error
}

// Greedy is an Engine that can choose the greedy token itself: a GPU backend takes the
// argmax on the device, so that a greedy decode step reads back one integer instead of
// the logits. bonsai uses it when sampling is greedy with no penalties and no
// log-probabilities are asked for.
type Greedy interface {
	Engine
	// ForwardGreedy runs the batch as Forward does, ignoring Logits and Out, and stores
	// in next[i] the index of the largest logit of batch[i]'s last token (the lowest
	// index among equal ones; NaN never chosen). Every sequence has at least one token.
	ForwardGreedy(ctx context.Context, batch []Sequence, next []int32) error
}

// HiddenStates is a State that can keep the main model's hidden state at each position
// it feeds: the residual stream after the last decoder layer, before the output norm
// (Embedding values), which a multi-token-prediction head drafts from (bonsai's
// MTPDrafter). Keeping is off until KeepHidden turns it on; it costs a copy of a row per
// position fed.
type HiddenStates interface {
	State
	// KeepHidden keeps, from now on, the hidden state of every position fed from
	// position from on, and drops those kept for positions before it. A negative from
	// stops keeping and drops them all. Rewind, Reset, SetLen and CopyFrom drop the
	// rows of positions the state no longer holds.
	KeepHidden(from int)
	// Hidden copies the hidden state of position pos into dst (Embedding values) and
	// reports whether it was kept.
	Hidden(pos int, dst []float32) bool
}

// Workers is an Engine that lends its worker pool to loops outside its forward passes:
// a drafter that runs between passes (bonsai's MTPDrafter) splits its products over the
// same workers, which are idle then, rather than over a pool of its own that would
// compete with them for the cores.
type Workers interface {
	Engine
	// For calls body.Run over ranges that cover [0, n) once, each of about grain
	// indices or more, and returns when every call has; calls run concurrently.
	For(n, grain int, body interface{ Run(lo, hi int) })
}

// Profiler is a State that accounts the time its forward passes spend in each kind of
// operation, when the model was loaded with LoadOptions.Profile. bonsai reads and resets
// it after every pass, into the model's total.
type Profiler interface {
	State
	// Profile returns the time accounted since the last ResetProfile, and
	// ResetProfile zeroes it.
	Profile() OpProfile
	ResetProfile()
}

// WeightReader is an Engine that can read, without computing, the weight bytes a decode
// step of one token reads: the same memory (copies made at load included, in their
// pages) on the same workers. A benchmark pairs each decode step with such a read right
// after it, so that the step is rated against the ceiling of the memory it actually
// streams at that moment, not against a buffer of its own.
type WeightReader interface {
	Engine
	// ReadWeights reads those bytes once and returns how many it read. It runs on the
	// engine's workers like a forward pass and returns ctx's error, having read nothing,
	// if ctx is done.
	ReadWeights(ctx context.Context) (int64, error)
}

// OpProfile is the time a state's forward passes spent in each kind of operation.
type OpProfile struct {
	Ternary    time.Duration // ternary matrix products, their int8 activation quantisation, and the small BF16 GDN projections
	Transforms time.Duration // Hadamard rotations (activation sites and the embedding)
	GDN        time.Duration // the Gated DeltaNet mixer core (conv, recurrence, gated norm)
	Attention  time.Duration // q/k norms, RoPE, the KV cache and attention
	Other      time.Duration // RMSNorm, residual adds, SwiGLU, the embedding lookup
	Tokens     int           // tokens processed
}

// Total returns the sum of the durations.
func (p OpProfile) Total() time.Duration {
	return p.Ternary + p.Transforms + p.GDN + p.Attention + p.Other
}

// Add returns p and q summed, field by field.
func (p OpProfile) Add(q OpProfile) OpProfile {
	return OpProfile{
		Ternary:    p.Ternary + q.Ternary,
		Transforms: p.Transforms + q.Transforms,
		GDN:        p.GDN + q.GDN,
		Attention:  p.Attention + q.Attention,
		Other:      p.Other + q.Other,
		Tokens:     p.Tokens + q.Tokens,
	}
}

// Sub returns p less q, field by field: the profile of what ran between two readings q
// and p of a running total.
func (p OpProfile) Sub(q OpProfile) OpProfile {
	return OpProfile{
		Ternary:    p.Ternary - q.Ternary,
		Transforms: p.Transforms - q.Transforms,
		GDN:        p.GDN - q.GDN,
		Attention:  p.Attention - q.Attention,
		Other:      p.Other - q.Other,
		Tokens:     p.Tokens - q.Tokens,
	}
}

// Check verifies a batch for a model of vocab logits, as bonsai does before every
// Forward: states set, open to the caller's knowledge and distinct, token ids in
// [0, vocab), room in each state's context (contextSize(st), the size it was made
// with), and each Out as long as its Logits asks. Engines may rely on it.
func Check(batch []Sequence, vocab int, contextSize func(State) int) error {
	for i := range batch {
		if err := checkOne(batch, i, vocab, contextSize); err != nil {
			if len(batch) == 1 {
				return err // a batch of one: the sequence needs no number
			}
			return fmt.Errorf("sequence %d: %w", i, err)
		}
	}
	return nil
}

func checkOne(batch []Sequence, i int, vocab int, contextSize func(State) int) error {
	s := batch[i]
	if s.State == nil {
		return errors.New("no state")
	}
	for j := range i {
		if batch[j].State == s.State {
			return fmt.Errorf("shares its state with sequence %d", j)
		}
	}
	for k, t := range s.Tokens {
		if t < 0 || int(t) >= vocab {
			return fmt.Errorf("token %d at index %d out of range [0, %d)", t, k, vocab)
		}
	}
	if n, max := s.State.Len()+len(s.Tokens), contextSize(s.State); n > max {
		return fmt.Errorf("%w: %d tokens held + %d new > context size %d", ErrContextFull, s.State.Len(), len(s.Tokens), max)
	}
	want := 0
	switch s.Logits {
	case LogitsNone:
	case LogitsLast:
		if len(s.Tokens) > 0 {
			want = vocab
		}
	case LogitsAll:
		want = len(s.Tokens) * vocab
	default:
		return fmt.Errorf("unknown Logits %d", s.Logits)
	}
	if len(s.Out) < want {
		return fmt.Errorf("logits buffer holds %d values, want %d", len(s.Out), want)
	}
	return nil
}
