// Package sdk is the Bonsai Go SDK: a Go library that loads and runs ternary-Hadamard
// language models — first of all PrismML's Ternary Bonsai 2 27B — from plain Go programs,
// on Apple GPUs through Metal and on any CPU in pure Go.
//
// This root package holds no code; the SDK is a set of small packages, each with one job,
// that compose bottom-up:
//
//	gguf      the GGUF file format: read (memory-mapped, zero-copy), validate, write
//	ternary   the PQ2_0 and PTQ1_0 ternary block codecs, the quantiser, the lossless
//	          transcoder, the file scan, and the ternary dot-product kernels
//	hadamard  the blockwise sign + fast Walsh–Hadamard transform and the
//	          prism.hadamard.* metadata contract that says where it applies
//	qwen35    the Qwen3.5 hybrid decoder: its configuration, its tensors declared once,
//	          the layer plan every backend follows, the Gated DeltaNet and
//	          gated-attention blocks and their float64 reference; it registers itself
//	          as an architecture with bonsai/backend
//	bonsai/backend
//	          the seam between bonsai and the backends (database/sql/driver's shape):
//	          Backend, Engine with its batched forward pass, State and its per-layer
//	          views, optional capabilities, the shared snapshot codec, the registry of
//	          architectures
//	bonsai/cpu
//	          the pure-Go backend
//	metal     the backend that runs the model on Apple GPUs through Metal, from pure
//	          Go (purego, no cgo); metal/emulator runs the same backend on Linux over
//	          an MSL emulator, metal/kernelcheck checks its kernels against Go
//	bonsai    what a program imports: Model, Session, generation, tokenizer, tools;
//	          it checks each forward pass once and hands it to a backend
//	bonsai/synthetic
//	          synthetic models for a program's tests: the real layout, tensor names
//	          and tokenizer, random weights, from under a megabyte up
//
// The import graph runs one way: gguf, ternary and hadamard at the bottom; qwen35 and
// bonsai/backend above them; the backends (bonsai/cpu, metal) above those; bonsai on
// top. No package imports one above it.
//
// A Bonsai model stores every linear layer W as ternary codes folded with a Hadamard
// rotation, W′ = W·Rᵀ with R = H·S/√n applied blockwise over the input width. At run
// time each activation is rotated once (signs first, then the transform) and shared by
// every linear that reads it; the embedding rows are stored rotated and turned back after
// the lookup. The gguf package reads the weights in place from the mapped file; ternary
// multiplies them without unpacking; hadamard rotates the activations; qwen35 states
// the layers; a backend runs them; bonsai drives the backend.
//
// The main entry point is [github.com/bonsai-go/sdk/bonsai.Open]:
//
//	m, err := bonsai.Open("Ternary-Bonsai-2-27B-PQ2_0.gguf") // or add bonsai.WithBackend(metal.New())
//	s, err := m.NewSession()
//	p, err := m.Prepare(bonsai.Text("The capital of France is"), bonsai.GenerateOptions{MaxTokens: 32})
//	for tok, err := range s.Generate(ctx, p).Tokens() { fmt.Print(tok.Text) }
//
// The examples directory holds the command-line programs: generate and chat (text in,
// text out), serve (an OpenAI-compatible HTTP server), inspect (the model card of a
// file), tokenize, logits (the logits of a token sequence), bench (speed against the
// machine's bandwidth), metalcheck (the Metal backend checked on a Mac), transcode
// (PQ2_0 ↔ PTQ1_0) and synth (synthetic models).
package sdk
