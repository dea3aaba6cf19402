package qwen35

import (
	"fmt"
	"reflect"
)

// Kind is the storage class a tensor must have in a Bonsai file.
type Kind uint8

const (
	KindTernary Kind = iota + 1 // PQ2_0 or PTQ1_0
	KindF32                     // float32: the norms, the convolution, A and the time-step bias
	KindBF16                    // bfloat16: the GDN alpha and beta projections
)

// String returns "ternary", "F32" or "BF16".
func (k Kind) String() string {
	switch k {
	case KindTernary:
		return "ternary"
	case KindF32:
		return "F32"
	case KindBF16:
		return "BF16"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Role says how the Hadamard rotation touches a tensor.
type Role uint8

const (
	RoleNone    Role = iota // read as stored
	RoleFolded              // W′ = W·Rᵀ: the activation is rotated before the product
	RoleInverse             // rows stored rotated: inverse-rotate after the lookup (the embedding)
)

// Global tensor names.
const (
	NameTokenEmbedding = "token_embd.weight"
	NameOutput         = "output.weight"
	NameOutputNorm     = "output_norm.weight"
)

// Per-layer tensor names, without the "blk.N." prefix.
const (
	SuffixAttnNorm     = "attn_norm.weight"
	SuffixPostAttnNorm = "post_attention_norm.weight"
	SuffixFFNGate      = "ffn_gate.weight"
	SuffixFFNUp        = "ffn_up.weight"
	SuffixFFNDown      = "ffn_down.weight"

	// Gated DeltaNet layers.
	SuffixQKV      = "attn_qkv.weight"
	SuffixGate     = "attn_gate.weight"
	SuffixSSMOut   = "ssm_out.weight"
	SuffixSSMAlpha = "ssm_alpha.weight"
	SuffixSSMBeta  = "ssm_beta.weight"
	SuffixSSMConv  = "ssm_conv1d.weight"
	SuffixSSMA     = "ssm_a"
	SuffixSSMDT    = "ssm_dt.bias"
	SuffixSSMNorm  = "ssm_norm.weight"

	// Full-attention layers.
	SuffixAttnQ     = "attn_q.weight"
	SuffixAttnK     = "attn_k.weight"
	SuffixAttnV     = "attn_v.weight"
	SuffixAttnOut   = "attn_output.weight"
	SuffixAttnQNorm = "attn_q_norm.weight"
	SuffixAttnKNorm = "attn_k_norm.weight"
)

// The MTP ("nextn") head of Qwen3.5, without the "blk.N." prefix of its block, N =
// Config.NextNLayer(0) = block_count − 1. The names are llama.cpp's (gguf-py
// MODEL_TENSOR.NEXTN_*; convert_hf_to_gguf.py, _Qwen35MtpMixin, maps the checkpoint's
// mtp.fc, mtp.pre_fc_norm_embedding, mtp.pre_fc_norm_hidden and mtp.norm onto them). The
// same block holds one full-attention decoder layer under the usual suffixes (the
// checkpoint's mtp.layers.0): attn_norm, attn_q/k/v/output, attn_q_norm, attn_k_norm,
// post_attention_norm and the SwiGLU MLP. Qwen3.5 shares the embedding and the output
// head with the main model (mtp_use_dedicated_embeddings is false), so the block has no
// nextn.embed_tokens or nextn.shared_head_head.
//
// The norms are stored +1 like every other gain but ssm_norm: the converter adds one to
// each tensor whose name ends in "norm.weight", which the remapped enorm, hnorm and
// shared_head.norm do. eh_proj is the checkpoint's fc, Linear(2·E → E) over the
// concatenation [enorm(embedding); hnorm(hidden)], embedding first: GGUF ne [2·E, E].
// Its linears are ternary and folded like the decoder's (W′ = W·Rᵀ, R of width 2·E for
// eh_proj), and listed in the prism.hadamard contract like them.
const (
	SuffixNextNEHProj         = "nextn.eh_proj.weight"
	SuffixNextNENorm          = "nextn.enorm.weight"
	SuffixNextNHNorm          = "nextn.hnorm.weight"
	SuffixNextNSharedHeadNorm = "nextn.shared_head_norm.weight"
)

// LayerTensor returns the GGUF name of a per-layer tensor, e.g. "blk.3.attn_q.weight".
func LayerTensor(layer int, suffix string) string { return fmt.Sprintf("blk.%d.%s", layer, suffix) }

// TensorSpec is what a Bonsai file must hold under one name.
type TensorSpec struct {
	Name  string  // the GGUF name, e.g. "blk.3.attn_q.weight"
	Layer int     // -1 for the global tensors
	Kind  Kind    // the storage class the file must use
	Shape []int64 // GGUF ne order: Shape[0] is the input width K
	Role  Role    // how the Hadamard rotation touches it
}

// The declaration below is the one statement of the model's tensors: each row names a
// tensor, the field of Weights or Layer it binds to, the layers that have it, its shape
// in sizes of the Config and its role. The field's Go type gives the storage kind:
// Matrix is ternary, BF16Matrix is BF16, []float32 is F32. Config.Tensors lists the rows
// and Bind fills the fields from them.

// dim is a tensor dimension, named for what it measures and sized by a Config.
type dim uint8

const (
	dimEmbd   dim = iota + 1 // Embedding
	dimVocab                 // Vocab
	dimFFN                   // FeedForward
	dimQGate                 // 2·Heads·HeadDim: per head, the query rows, then its gate rows
	dimKV                    // KVHeads·HeadDim
	dimAttn                  // AttentionWidth, Heads·HeadDim
	dimHead                  // HeadDim
	dimQKV                   // QKVWidth: q and k (KHeads·StateSize each), then v (InnerSize)
	dimInner                 // InnerSize, VHeads·StateSize
	dimConv                  // ConvKernel
	dimVHeads                // VHeads
	dimState                 // StateSize
	dimEmbd2                 // 2·Embedding: the MTP head's [e; h]
)

func (d dim) size(c *Config) int64 {
	switch d {
	case dimEmbd:
		return int64(c.Embedding)
	case dimVocab:
		return int64(c.Vocab)
	case dimFFN:
		return int64(c.FeedForward)
	case dimQGate:
		return 2 * int64(c.Heads) * int64(c.HeadDim)
	case dimKV:
		return int64(c.KVHeads) * int64(c.HeadDim)
	case dimAttn:
		return int64(c.AttentionWidth())
	case dimHead:
		return int64(c.HeadDim)
	case dimQKV:
		return int64(c.QKVWidth())
	case dimInner:
		return int64(c.InnerSize)
	case dimConv:
		return int64(c.ConvKernel)
	case dimVHeads:
		return int64(c.VHeads)
	case dimState:
		return int64(c.StateSize)
	case dimEmbd2:
		return 2 * int64(c.Embedding)
	}
	panic(fmt.Sprintf("qwen35: dim %d has no size", d))
}

// scope says where a tensor occurs: once in the model, or in which layers.
type scope uint8

const (
	global     scope = iota // once, a field of Weights
	everyLayer              // a field of Layer, in every layer
	gdnLayers               // a field of Layer, in the Gated DeltaNet layers
	attnLayers              // a field of Layer, in the full-attention layers
	mtpHead                 // a field of MTPHead, in each MTP block
)

// has reports whether the tensor is in block layer. An MTP block (layer ≥ c.Layers) is a
// full-attention layer whatever full_attention_interval says.
func (s scope) has(c *Config, layer int) bool {
	attention := c.IsAttention(layer) || layer >= c.Layers
	switch s {
	case gdnLayers:
		return !attention
	case attnLayers:
		return attention
	case mtpHead:
		return layer >= c.Layers
	}
	return true
}

// tensorDecl declares one tensor.
type tensorDecl struct {
	field string // the field of Weights (global) or Layer it binds to
	name  string // the GGUF name; a layer tensor's is the suffix after "blk.N."
	in    scope
	shape []dim // GGUF ne order: shape[0] is the input width K
	role  Role
}

// The model's tensors, in the order the vendor's converter writes them: the embedding,
// each layer's (the GDN and attention rows apply to different layers, so each kind of
// layer keeps this order), then the output norm and head.
var (
	embedTensors = declare[Weights]([]tensorDecl{
		{"TokenEmbedding", NameTokenEmbedding, global, []dim{dimEmbd, dimVocab}, RoleInverse},
	})
	layerTensors = declare[Layer]([]tensorDecl{
		{"AttnNorm", SuffixAttnNorm, everyLayer, []dim{dimEmbd}, RoleNone},

		{"QKV", SuffixQKV, gdnLayers, []dim{dimEmbd, dimQKV}, RoleFolded},
		{"Gate", SuffixGate, gdnLayers, []dim{dimEmbd, dimInner}, RoleFolded},
		{"Conv", SuffixSSMConv, gdnLayers, []dim{dimConv, dimQKV}, RoleNone},
		{"DTBias", SuffixSSMDT, gdnLayers, []dim{dimVHeads}, RoleNone},
		{"A", SuffixSSMA, gdnLayers, []dim{dimVHeads}, RoleNone},
		{"Beta", SuffixSSMBeta, gdnLayers, []dim{dimEmbd, dimVHeads}, RoleNone},
		{"Alpha", SuffixSSMAlpha, gdnLayers, []dim{dimEmbd, dimVHeads}, RoleNone},
		{"SSMNorm", SuffixSSMNorm, gdnLayers, []dim{dimState}, RoleNone},
		{"SSMOut", SuffixSSMOut, gdnLayers, []dim{dimInner, dimEmbd}, RoleFolded},

		{"Q", SuffixAttnQ, attnLayers, []dim{dimEmbd, dimQGate}, RoleFolded},
		{"K", SuffixAttnK, attnLayers, []dim{dimEmbd, dimKV}, RoleFolded},
		{"V", SuffixAttnV, attnLayers, []dim{dimEmbd, dimKV}, RoleFolded},
		{"O", SuffixAttnOut, attnLayers, []dim{dimAttn, dimEmbd}, RoleFolded},
		{"QNorm", SuffixAttnQNorm, attnLayers, []dim{dimHead}, RoleNone},
		{"KNorm", SuffixAttnKNorm, attnLayers, []dim{dimHead}, RoleNone},

		{"PostAttnNorm", SuffixPostAttnNorm, everyLayer, []dim{dimEmbd}, RoleNone},
		{"FFNGate", SuffixFFNGate, everyLayer, []dim{dimEmbd, dimFFN}, RoleFolded},
		{"FFNUp", SuffixFFNUp, everyLayer, []dim{dimEmbd, dimFFN}, RoleFolded},
		{"FFNDown", SuffixFFNDown, everyLayer, []dim{dimFFN, dimEmbd}, RoleFolded},
	})
	mtpTensors = declare[MTPHead]([]tensorDecl{
		{"EHProj", SuffixNextNEHProj, mtpHead, []dim{dimEmbd2, dimEmbd}, RoleFolded},
		{"ENorm", SuffixNextNENorm, mtpHead, []dim{dimEmbd}, RoleNone},
		{"HNorm", SuffixNextNHNorm, mtpHead, []dim{dimEmbd}, RoleNone},
		{"SharedHeadNorm", SuffixNextNSharedHeadNorm, mtpHead, []dim{dimEmbd}, RoleNone},
	})
	headTensors = declare[Weights]([]tensorDecl{
		{"OutputNorm", NameOutputNorm, global, []dim{dimEmbd}, RoleNone},
		{"Output", NameOutput, global, []dim{dimEmbd, dimVocab}, RoleFolded},
	})
)

// declared is a tensorDecl resolved against the struct it binds to.
type declared struct {
	tensorDecl
	kind  Kind
	index int // of the field in its struct
}

// fieldKinds are the Go types a tensor binds to, and the storage kind each holds.
var fieldKinds = map[reflect.Type]Kind{
	reflect.TypeFor[Matrix]():     KindTernary,
	reflect.TypeFor[BF16Matrix](): KindBF16,
	reflect.TypeFor[[]float32]():  KindF32,
}

// declare resolves the declarations of the tensors bound to fields of T. A declaration
// that does not fit its field is a mistake in this file, caught when the package loads.
func declare[T any](decls []tensorDecl) []declared {
	t := reflect.TypeFor[T]()
	out := make([]declared, len(decls))
	for i, d := range decls {
		f, ok := t.FieldByName(d.field)
		kind, isTensor := fieldKinds[f.Type]
		matrix := kind == KindTernary || kind == KindBF16
		switch {
		case !ok || len(f.Index) != 1:
			panic(fmt.Sprintf("qwen35: tensor %s: %s has no field %s", d.name, t, d.field))
		case !isTensor:
			panic(fmt.Sprintf("qwen35: tensor %s: field %s.%s of type %s holds no tensor", d.name, t, d.field, f.Type))
		case (d.in == global) != (t == reflect.TypeFor[Weights]()),
			(d.in == mtpHead) != (t == reflect.TypeFor[MTPHead]()):
			panic(fmt.Sprintf("qwen35: tensor %s: scope %d does not fit a field of %s", d.name, d.in, t))
		case matrix && len(d.shape) != 2, len(d.shape) == 0:
			panic(fmt.Sprintf("qwen35: tensor %s: %d dims for a field of type %s", d.name, len(d.shape), f.Type))
		case (kind == KindTernary) != (d.role != RoleNone):
			panic(fmt.Sprintf("qwen35: tensor %s: role %d for a %s tensor", d.name, d.role, kind))
		}
		out[i] = declared{tensorDecl: d, kind: kind, index: f.Index[0]}
	}
	return out
}

// specOf is one tensor of a configuration with the declaration it comes from.
type specOf struct {
	TensorSpec
	decl *declared
}

// specs lists the tensors of c in file order.
func (c *Config) specs() []specOf {
	var out []specOf
	add := func(d *declared, layer int) {
		name := d.name
		if layer >= 0 {
			name = LayerTensor(layer, d.name)
		}
		shape := make([]int64, len(d.shape))
		for i, s := range d.shape {
			shape[i] = s.size(c)
		}
		out = append(out, specOf{TensorSpec{Name: name, Layer: layer, Kind: d.kind, Shape: shape, Role: d.role}, d})
	}
	for i := range embedTensors {
		add(&embedTensors[i], -1)
	}
	for layer := 0; layer < c.Layers; layer++ {
		for i := range layerTensors {
			if layerTensors[i].in.has(c, layer) {
				add(&layerTensors[i], layer)
			}
		}
	}
	// Each MTP block: its decoder layer's tensors (the attention rows apply, see has),
	// then the head's own.
	for i := 0; i < c.NextN; i++ {
		layer := c.NextNLayer(i)
		for j := range layerTensors {
			if layerTensors[j].in.has(c, layer) {
				add(&layerTensors[j], layer)
			}
		}
		for j := range mtpTensors {
			add(&mtpTensors[j], layer)
		}
	}
	for i := range headTensors {
		add(&headTensors[i], -1)
	}
	return out
}

// Tensors lists every tensor of a Bonsai model of this configuration, in the order the
// vendor's converter writes them: the embedding, the layers, the output norm and head.
// A configuration with an MTP head (NextN > 0) lists its block after the decoder layers
// and before the output norm; the order is a convention of this list, not a rule of the
// file, which binds by name.
// Norm gains are stored +1 (except ssm_norm), ssm_a as −exp(A_log), the GDN V heads
// tiled; those are conventions of the values, not of the list.
func (c *Config) Tensors() []TensorSpec {
	specs := c.specs()
	out := make([]TensorSpec, len(specs))
	for i, s := range specs {
		out[i] = s.TensorSpec
	}
	return out
}
