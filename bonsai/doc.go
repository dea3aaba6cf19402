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
//	p, err := m.Prepare(bonsai.Chat(bonsai.Message{Role: bonsai.RoleUser, Content: "Hello"}),
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
//
// # Tools and structured output
//
// A conversation carries tool calls: an assistant Message (RoleAssistant) lists its
// ToolCalls, and a Message of RoleTool answers one of them (ToolCallID, and Name
// optionally). The chat template renders them, with the tool definitions of
// ChatOptions.Tools.
//
// A generation is given tools with GenerateOptions.Tools. What the model writes in a
// tool-call block — Qwen3.5's
//
//	<tool_call>
//	<function=NAME>
//	<parameter=P>
//	VALUE
//	</parameter>
//	</function>
//	</tool_call>
//
// or Qwen3's JSON object inside <tool_call> — is parsed (package bonsai/toolcall) into
// ToolCalls, parameter values converted by the function's schema. The text of a block is
// not answer text: Token.Text is empty inside it, the block is reported in
// Token.ToolCallFragments as it is read and in Token.ToolCalls once it is complete, and
// Result.ToolCalls lists the calls. The answer text is then trimmed of surrounding
// whitespace, in the stream as in Result.Text. A generation that ends with calls
// finishes with FinishToolCalls. A block that cannot be parsed in free (ToolChoiceAuto)
// generation is not dropped: its text is let out as answer text and
// Result.MalformedToolCalls says what was wrong.
//
// With ToolChoiceRequired or ToolChoiceFunction the syntax of the calls and each
// function's argument schema are enforced by constrained decoding (package
// bonsai/grammar): the model's vocabulary is masked at every step to the tokens that
// keep the output valid, with the sampler's other settings intact, so that even a weak
// model writes well-formed calls. A ResponseFormat (ResponseFormatJSONObject,
// ResponseFormatJSONSchema) and a Grammar (GBNF) constrain the answer the same way. The
// mask applies to the answer, not to a think block: thinking stays free, but for its
// length and its end. GenerateOptions.ThinkingBudget closes the block after a budget (by
// default, under an enforced answer, half of MaxTokens or of the context's room), and
// the end-of-generation and stop tokens are masked out of it, so that the calls or the
// JSON always follow within MaxTokens when the schema's answers fit in what is left.
//
// Options are checked, and the grammar compiled, by Model.Prepare: a schema or grammar
// the engine does not accept is its error, an *OptionError (naming the option, and the
// tool) wrapping ErrInvalidSchema, which names the keyword and the JSON path (a
// *SchemaError underneath, from the grammar package, for callers that want the parts).
//
// # Testing
//
// Package bonsai/synthetic writes synthetic models: the real layout, tensor names,
// tokenizer and chat template, with random weights. Their text is noise, but everything
// above runs on them, so a program's tests need not download the real model:
// bonsai.Open(synthetic.Path(t)) opens the tiny one from the test's temporary directory.
package bonsai
