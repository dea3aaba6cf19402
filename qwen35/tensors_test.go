package qwen35

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeclarationCoversFields checks that every field of Layer and Weights that holds a
// tensor is declared exactly once, so that Bind leaves none of them empty.
func TestDeclarationCoversFields(t *testing.T) {
	holdsTensor := func(f reflect.StructField) bool {
		switch f.Type {
		case reflect.TypeOf(Matrix{}), reflect.TypeOf(BF16Matrix{}), reflect.TypeOf([]float32(nil)):
			return true
		}
		return false
	}
	check := func(v any, decls []declared) {
		typ := reflect.TypeOf(v)
		declaredAs := map[string][]string{}
		for _, d := range decls {
			declaredAs[d.field] = append(declaredAs[d.field], d.name)
		}
		var fields []string
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if !holdsTensor(f) {
				assert.Empty(t, declaredAs[f.Name], "%s.%s holds no tensor", typ, f.Name)
				continue
			}
			fields = append(fields, f.Name)
			assert.Len(t, declaredAs[f.Name], 1, "%s.%s is declared as %v", typ, f.Name, declaredAs[f.Name])
		}
		assert.Len(t, decls, len(fields), "%s: %d declarations for fields %v", typ, len(decls), fields)
	}
	check(Layer{}, layerTensors)
	check(MTPHead{}, mtpTensors)
	check(Weights{}, append(append([]declared(nil), embedTensors...), headTensors...))
}

// TestTensorsTiny checks Config.Tensors against the list written out by hand for a
// configuration whose sizes all differ, so that a dimension read from the wrong size
// shows. Layer 0 is Gated DeltaNet, layer 1 full attention.
func TestTensorsTiny(t *testing.T) {
	c := &Config{
		Layers: 2, FullAttentionInterval: 2, Vocab: 10,
		Embedding: 8, FeedForward: 16,
		Heads: 4, KVHeads: 2, HeadDim: 7, // q|gate 56, k and v 14, attention width 28
		KHeads: 1, VHeads: 3, StateSize: 5, InnerSize: 15, // qkv 5+5+15 = 25
		ConvKernel: 4,
	}
	const (
		T  = KindTernary
		F  = KindF32
		BF = KindBF16
		no = RoleNone
		fo = RoleFolded
	)
	want := []TensorSpec{
		{"token_embd.weight", -1, T, []int64{8, 10}, RoleInverse},

		{"blk.0.attn_norm.weight", 0, F, []int64{8}, no},
		{"blk.0.attn_qkv.weight", 0, T, []int64{8, 25}, fo},
		{"blk.0.attn_gate.weight", 0, T, []int64{8, 15}, fo},
		{"blk.0.ssm_conv1d.weight", 0, F, []int64{4, 25}, no},
		{"blk.0.ssm_dt.bias", 0, F, []int64{3}, no},
		{"blk.0.ssm_a", 0, F, []int64{3}, no},
		{"blk.0.ssm_beta.weight", 0, BF, []int64{8, 3}, no},
		{"blk.0.ssm_alpha.weight", 0, BF, []int64{8, 3}, no},
		{"blk.0.ssm_norm.weight", 0, F, []int64{5}, no},
		{"blk.0.ssm_out.weight", 0, T, []int64{15, 8}, fo},
		{"blk.0.post_attention_norm.weight", 0, F, []int64{8}, no},
		{"blk.0.ffn_gate.weight", 0, T, []int64{8, 16}, fo},
		{"blk.0.ffn_up.weight", 0, T, []int64{8, 16}, fo},
		{"blk.0.ffn_down.weight", 0, T, []int64{16, 8}, fo},

		{"blk.1.attn_norm.weight", 1, F, []int64{8}, no},
		{"blk.1.attn_q.weight", 1, T, []int64{8, 56}, fo},
		{"blk.1.attn_k.weight", 1, T, []int64{8, 14}, fo},
		{"blk.1.attn_v.weight", 1, T, []int64{8, 14}, fo},
		{"blk.1.attn_output.weight", 1, T, []int64{28, 8}, fo},
		{"blk.1.attn_q_norm.weight", 1, F, []int64{7}, no},
		{"blk.1.attn_k_norm.weight", 1, F, []int64{7}, no},
		{"blk.1.post_attention_norm.weight", 1, F, []int64{8}, no},
		{"blk.1.ffn_gate.weight", 1, T, []int64{8, 16}, fo},
		{"blk.1.ffn_up.weight", 1, T, []int64{8, 16}, fo},
		{"blk.1.ffn_down.weight", 1, T, []int64{16, 8}, fo},

		{"output_norm.weight", -1, F, []int64{8}, no},
		{"output.weight", -1, T, []int64{8, 10}, fo},
	}
	got := c.Tensors()
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i], got[i], "tensor %d", i)
	}
}
