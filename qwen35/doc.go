// Package qwen35 describes the Qwen3.5 hybrid decoder that Ternary Bonsai 2 is built on
// (GGUF general.architecture "qwen35"): its configuration, read and checked from the
// qwen35.* keys of a file, and the tensor inventory and storage conventions of a Bonsai
// file — which tensors exist, their shapes, which are ternary and folded with the
// Hadamard rotation.
//
// Layer i is full attention when (i+1) is a multiple of full_attention_interval, and
// Gated DeltaNet otherwise. Every size is read from the file; ReadConfig names the key at
// fault when the sizes do not fit together.
//
//	cfg, err := qwen35.ReadConfig(file, vocab)
//	for _, t := range cfg.Tensors() { ... }
package qwen35
