// Package bonsai loads and runs Ternary Bonsai models: the package a program imports.
//
// Open maps a model file and checks it; a Model is shared by any number of Sessions, each
// one conversation whose state (the attention layers' KV cache, the Gated DeltaNet layers'
// recurrent state) lives on the model's Backend:
//
//	m, err := bonsai.Open("Ternary-Bonsai-2-27B-PQ2_0.gguf")
//	if err != nil { ... }
//	defer m.Close()
//	s, err := m.NewSession()
//	err = s.Prefill(ctx, promptTokens)
//	next := argmax(s.Logits())
//	err = s.Step(ctx, next)
//
// The computation runs on a Backend: CPU() is the pure-Go backend (the default), and the
// metal package provides Apple GPUs. The weights are never copied: the CPU backend reads
// the ternary codes in place from the memory-mapped file.
package bonsai
