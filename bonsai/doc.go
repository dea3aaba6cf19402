// Package bonsai loads and runs Ternary Bonsai models: the package a program imports.
//
// Open maps a model file, checks it and reads its tokenizer and chat template; a Model
// is shared by any number of Sessions, each one conversation whose state (the attention
// layers' KV cache, the Gated DeltaNet layers' recurrent state) lives on the model's
// Backend. Prepare checks a request and makes its prompt once (rendering, tokens,
// grammar), failing at once on a bad input or option; Generate runs it on a session and
// streams text:
//
//	m, err := bonsai.Open("Ternary-Bonsai-2-27B-PQ2_0.gguf")
//	if err != nil { ... }
//	defer m.Close()
//	s, err := m.NewSession()
//	p, err := m.Prepare(bonsai.Chat(bonsai.Message{Role: "user", Content: "Hello"}),
//		bonsai.GenerateOptions{MaxTokens: 512, SamplerOptions: bonsai.SamplerOptions{Temperature: 0.7, TopP: 0.8, TopK: 20}})
//	if err != nil { ... } // ErrInvalidInput, ErrInvalidOptions, ErrContextFull
//	g := s.Generate(ctx, p)
//	for tok, err := range g.Tokens() {
//		if err != nil { ... }
//		fmt.Print(tok.Thinking, tok.Text)
//	}
//	res, err := g.Result() // the answer, the thinking, the finish reason, the usage
//
// Sessions of one model running at once are batched: their decode steps share forward
// passes, which read the weights (what bounds a decode step) once for all of them, and a
// long prompt is fed a chunk per pass between the others' steps (WithBatchTokens). With
// WithPrefixCache the model keeps the states at the ends of system prompts and turns for
// every session to start from. Model.Stats counts both.
//
// A session remembers its tokens, so the next turn of a conversation prefills only the
// new messages; Save and LoadSession keep a conversation across runs. Below Generate,
// Prefill, Step and Logits drive the model token by token, and a Sampler draws from the
// logits.
//
// Agents: a generation takes tools (GenerateOptions.Tools) and a tool choice; what the
// model writes in Qwen's tool-call markup is parsed (package bonsai/toolcall) into
// Result.ToolCalls and streamed as Token.ToolCallFragments and Token.ToolCalls. With a
// required or named tool choice, a JSON ResponseFormat or a GBNF Grammar, the output is
// constrained (package bonsai/grammar): the vocabulary is masked each step to the
// tokens that keep it valid, so that even a weak model writes well-formed calls and
// JSON. A think block before such an answer is closed after GenerateOptions.ThinkingBudget
// tokens (by default half of MaxTokens, or of the context's room), so that the answer
// always comes within MaxTokens. tools.go states the contract.
//
// Pull fetches a model file from the Hugging Face Hub into huggingface_hub's cache,
// resuming an interrupted download and checking its sha256, and returns its path for
// Open; PullRef takes a reference, hf:ORG/NAME/FILE.
//
// The computation runs on a Backend (package bonsai/backend states the seam): CPU() is
// the pure-Go backend of package bonsai/cpu (the default), and the metal package provides
// Apple GPUs. The weights are never copied: the CPU backend reads the ternary codes in
// place from the memory-mapped file. Open finds the model's family by the file's
// general.architecture among those registered with bonsai/backend (qwen35, imported
// here); a file of another architecture is refused with an error that lists them.
package bonsai
