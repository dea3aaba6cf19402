package bonsai

import (
	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/cpu"
)

// Backend is where a model's computation runs (package bonsai/backend defines the seam a
// backend implements). CPU() is the default; the metal package provides Apple GPUs.
type Backend = backend.Backend

// CPU returns the pure-Go backend (package bonsai/cpu), the default, with the options
// given (such as cpu.WithWeightFormat).
func CPU(opts ...cpu.Option) Backend { return cpu.New(opts...) }

// Activations is the precision in which activations meet the ternary weights.
type Activations = backend.Activations

const (
	// ActivationsInt8 quantises each activation once per site to int8 (one scale per
	// 128 values) and multiplies with integer kernels, as llama.cpp's CPU backend does
	// with Q8_0: the fast default.
	ActivationsInt8 = backend.ActivationsInt8
	// ActivationsFloat32 multiplies in float32: slower, and within float32 rounding of
	// the float64 reference.
	ActivationsFloat32 = backend.ActivationsFloat32
)

// KVPrecision is how the attention KV cache stores keys and values.
type KVPrecision = backend.KVPrecision

// KVCache precisions for WithKVCache.
const (
	KVFloat16 = backend.KVFloat16 // the default: 64 KiB per token for the 27B model
	KVFloat32 = backend.KVFloat32 // exact; twice the memory
	KVInt8    = backend.KVInt8    // 8-bit blocks: about half of fp16's memory
	KVQ4      = backend.KVQ4      // 4-bit blocks (q4_0): about 28% of fp16's memory, at the most drift
)

// OpProfile is the time forward passes spent in each kind of operation (Stats.Profile).
type OpProfile = backend.OpProfile
