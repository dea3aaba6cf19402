package qwen35

import "fmt"

// Kind is the storage class a tensor must have in a Bonsai file.
type Kind uint8

const (
	KindTernary Kind = iota + 1 // PQ2_0 or PTQ1_0
	KindF32
	KindBF16
)

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

// LayerTensor returns the GGUF name of a per-layer tensor, e.g. "blk.3.attn_q.weight".
func LayerTensor(layer int, suffix string) string { return fmt.Sprintf("blk.%d.%s", layer, suffix) }

// TensorSpec is what a Bonsai file must hold under one name.
type TensorSpec struct {
	Name  string
	Layer int // -1 for the global tensors
	Kind  Kind
	Shape []int64 // GGUF ne order: Shape[0] is the input width K
	Role  Role
}

// Tensors lists every tensor of a Bonsai model of this configuration, in the order the
// vendor's converter writes them: the embedding, the layers, the output norm and head.
// Norm gains are stored +1 (except ssm_norm), ssm_a as −exp(A_log), the GDN V heads
// tiled; those are conventions of the values, not of the list.
func (c *Config) Tensors() []TensorSpec {
	e, ff := int64(c.Embedding), int64(c.FeedForward)
	specs := []TensorSpec{{Name: NameTokenEmbedding, Layer: -1, Kind: KindTernary, Shape: []int64{e, int64(c.Vocab)}, Role: RoleInverse}}
	for i := 0; i < c.Layers; i++ {
		add := func(suffix string, kind Kind, role Role, shape ...int64) {
			specs = append(specs, TensorSpec{Name: LayerTensor(i, suffix), Layer: i, Kind: kind, Shape: shape, Role: role})
		}
		add(SuffixAttnNorm, KindF32, RoleNone, e)
		if c.IsAttention(i) {
			hd := int64(c.HeadDim)
			kv := int64(c.KVHeads) * hd
			add(SuffixAttnQ, KindTernary, RoleFolded, e, 2*int64(c.Heads)*hd)
			add(SuffixAttnK, KindTernary, RoleFolded, e, kv)
			add(SuffixAttnV, KindTernary, RoleFolded, e, kv)
			add(SuffixAttnOut, KindTernary, RoleFolded, int64(c.AttentionWidth()), e)
			add(SuffixAttnQNorm, KindF32, RoleNone, hd)
			add(SuffixAttnKNorm, KindF32, RoleNone, hd)
		} else {
			nv := int64(c.VHeads)
			add(SuffixQKV, KindTernary, RoleFolded, e, int64(c.QKVWidth()))
			add(SuffixGate, KindTernary, RoleFolded, e, int64(c.InnerSize))
			add(SuffixSSMConv, KindF32, RoleNone, int64(c.ConvKernel), int64(c.QKVWidth()))
			add(SuffixSSMDT, KindF32, RoleNone, nv)
			add(SuffixSSMA, KindF32, RoleNone, nv)
			add(SuffixSSMBeta, KindBF16, RoleNone, e, nv)
			add(SuffixSSMAlpha, KindBF16, RoleNone, e, nv)
			add(SuffixSSMNorm, KindF32, RoleNone, int64(c.StateSize))
			add(SuffixSSMOut, KindTernary, RoleFolded, int64(c.InnerSize), e)
		}
		add(SuffixPostAttnNorm, KindF32, RoleNone, e)
		add(SuffixFFNGate, KindTernary, RoleFolded, e, ff)
		add(SuffixFFNUp, KindTernary, RoleFolded, e, ff)
		add(SuffixFFNDown, KindTernary, RoleFolded, ff, e)
	}
	specs = append(specs,
		TensorSpec{Name: NameOutputNorm, Layer: -1, Kind: KindF32, Shape: []int64{e}},
		TensorSpec{Name: NameOutput, Layer: -1, Kind: KindTernary, Shape: []int64{e, int64(c.Vocab)}, Role: RoleFolded},
	)
	return specs
}
