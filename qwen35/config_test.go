package qwen35

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeMetadata is a map-backed Metadata with the typing rules of a GGUF file: integers
// are int64, floats float64, integer arrays []int64.
type fakeMetadata map[string]any

func (m fakeMetadata) Has(key string) bool { _, ok := m[key]; return ok }

func (m fakeMetadata) Int(key string) (int64, error) {
	switch v := m[key].(type) {
	case int64:
		return v, nil
	case nil:
		return 0, fmt.Errorf("key %q: not found", key)
	default:
		return 0, fmt.Errorf("key %q: want integer, have %T", key, v)
	}
}

func (m fakeMetadata) Float(key string) (float64, error) {
	switch v := m[key].(type) {
	case float64:
		return v, nil
	case int64:
		return float64(v), nil
	default:
		return 0, fmt.Errorf("key %q: want float, have %T", key, v)
	}
}

func (m fakeMetadata) Ints(key string) ([]int64, error) {
	if v, ok := m[key].([]int64); ok {
		return v, nil
	}
	return nil, fmt.Errorf("key %q: want integer array, have %T", key, m[key])
}

func (m fakeMetadata) String(key string) (string, error) {
	if v, ok := m[key].(string); ok {
		return v, nil
	}
	return "", fmt.Errorf("key %q: want string, have %T", key, m[key])
}

// real27B is the metadata of Ternary Bonsai 2 27B (the values in Config's comments).
func real27B() fakeMetadata {
	return fakeMetadata{
		"general.architecture":                    "qwen35",
		"qwen35.block_count":                      int64(64),
		"qwen35.context_length":                   int64(262144),
		"qwen35.embedding_length":                 int64(5120),
		"qwen35.feed_forward_length":              int64(17408),
		"qwen35.attention.head_count":             int64(24),
		"qwen35.attention.head_count_kv":          int64(4),
		"qwen35.attention.key_length":             int64(256),
		"qwen35.attention.value_length":           int64(256),
		"qwen35.attention.layer_norm_rms_epsilon": 1e-6,
		"qwen35.rope.freq_base":                   1e7,
		"qwen35.rope.dimension_count":             int64(64),
		"qwen35.rope.dimension_sections":          []int64{11, 11, 10, 0},
		"qwen35.ssm.conv_kernel":                  int64(4),
		"qwen35.ssm.state_size":                   int64(128),
		"qwen35.ssm.inner_size":                   int64(6144),
		"qwen35.ssm.time_step_rank":               int64(48),
		"qwen35.ssm.group_count":                  int64(16),
		"qwen35.full_attention_interval":          int64(4),
	}
}

func TestReadConfig27B(t *testing.T) {
	c, err := ReadConfig(real27B(), 248320)
	require.NoError(t, err)
	assert.Equal(t, Config{
		Layers: 64, Embedding: 5120, FeedForward: 17408, Heads: 24, KVHeads: 4, HeadDim: 256,
		RMSEpsilon: 1e-6, RopeBase: 1e7, RopeDims: 64, RopeSections: [4]int{11, 11, 10, 0},
		ConvKernel: 4, StateSize: 128, InnerSize: 6144, VHeads: 48, KHeads: 16,
		FullAttentionInterval: 4, ContextLength: 262144, Vocab: 248320,
	}, *c)
	assert.Equal(t, 16, c.AttentionLayers())
	assert.Equal(t, 10240, c.QKVWidth())
	assert.Equal(t, 3, c.HeadRepeat())
	assert.Equal(t, 6144, c.AttentionWidth())
	assert.Equal(t, []int{5120, 6144, 17408}, c.RotationWidths())
	var attn []int
	for i := 0; i < c.Layers; i++ {
		if c.IsAttention(i) {
			attn = append(attn, i)
		}
	}
	assert.Equal(t, []int{3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63}, attn)
}

func TestTensors27B(t *testing.T) {
	c, err := ReadConfig(real27B(), 248320)
	require.NoError(t, err)
	specs := c.Tensors()
	// Package doc, § Tensors: 851 tensors, 401 folded (all ternary but the embedding),
	// one inverse.
	assert.Len(t, specs, 851)
	count := map[Kind]int{}
	roles := map[Role]int{}
	var bytes int64
	for _, s := range specs {
		count[s.Kind]++
		roles[s.Role]++
		n := int64(1)
		for _, d := range s.Shape {
			n *= d
		}
		switch s.Kind {
		case KindTernary:
			bytes += n / 128 * 34
			assert.NotEqual(t, RoleNone, s.Role, s.Name)
		default:
			assert.Equal(t, RoleNone, s.Role, s.Name)
		}
	}
	assert.Equal(t, 402, count[KindTernary])
	assert.Equal(t, 96, count[KindBF16])
	assert.Equal(t, 401, roles[RoleFolded])
	assert.Equal(t, 1, roles[RoleInverse])
	// "PQ2_0 7.137 GB"
	assert.InDelta(t, 7.137e9, float64(bytes), 0.0005e9)

	byName := map[string]TensorSpec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	shape := func(name string) []int64 { return byName[name].Shape }
	assert.Equal(t, []int64{5120, 10240}, shape("blk.0.attn_qkv.weight"))
	assert.Equal(t, []int64{5120, 6144}, shape("blk.0.attn_gate.weight"))
	assert.Equal(t, []int64{6144, 5120}, shape("blk.0.ssm_out.weight"))
	assert.Equal(t, []int64{5120, 48}, shape("blk.0.ssm_alpha.weight"))
	assert.Equal(t, []int64{4, 10240}, shape("blk.0.ssm_conv1d.weight"))
	assert.Equal(t, []int64{48}, shape("blk.0.ssm_a"))
	assert.Equal(t, []int64{48}, shape("blk.0.ssm_dt.bias"))
	assert.Equal(t, []int64{128}, shape("blk.0.ssm_norm.weight"))
	assert.Equal(t, []int64{5120, 12288}, shape("blk.3.attn_q.weight"))
	assert.Equal(t, []int64{5120, 1024}, shape("blk.3.attn_k.weight"))
	assert.Equal(t, []int64{6144, 5120}, shape("blk.3.attn_output.weight"))
	assert.Equal(t, []int64{256}, shape("blk.3.attn_q_norm.weight"))
	assert.Equal(t, []int64{17408, 5120}, shape("blk.63.ffn_down.weight"))
	assert.Equal(t, []int64{5120, 248320}, shape("output.weight"))
	_, gdnInAttn := byName["blk.3.attn_qkv.weight"]
	assert.False(t, gdnInAttn)
}

func TestReadConfigErrors(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(m fakeMetadata)
		vocab  int
		substr string
	}{
		{"missing block_count", func(m fakeMetadata) { delete(m, "qwen35.block_count") }, 10, `"qwen35.block_count": not found`},
		{"wrong type", func(m fakeMetadata) { m["qwen35.embedding_length"] = "5120" }, 10, `"qwen35.embedding_length"`},
		{"kv heads do not divide", func(m fakeMetadata) { m["qwen35.attention.head_count_kv"] = int64(5) }, 10, `"qwen35.attention.head_count_kv": 5 does not divide`},
		{"V/K ratio not whole", func(m fakeMetadata) { m["qwen35.ssm.group_count"] = int64(20) }, 10, `"qwen35.ssm.time_step_rank"`},
		{"inner size", func(m fakeMetadata) { m["qwen35.ssm.inner_size"] = int64(6000) }, 10, `"qwen35.ssm.inner_size"`},
		{"width not whole blocks", func(m fakeMetadata) { m["qwen35.feed_forward_length"] = int64(17400) }, 10, `"qwen35.feed_forward_length": input width 17400`},
		{"rope sections", func(m fakeMetadata) { m["qwen35.rope.dimension_sections"] = []int64{11, 11, 11, 0} }, 10, `"qwen35.rope.dimension_sections"`},
		{"rope dims odd", func(m fakeMetadata) { m["qwen35.rope.dimension_count"] = int64(63) }, 10, `"qwen35.rope.dimension_count"`},
		{"value length differs", func(m fakeMetadata) { m["qwen35.attention.value_length"] = int64(128) }, 10, `"qwen35.attention.value_length"`},
		{"huge", func(m fakeMetadata) { m["qwen35.block_count"] = int64(1) << 40 }, 10, `"qwen35.block_count": value 1099511627776 out of range`},
		{"negative", func(m fakeMetadata) { m["qwen35.block_count"] = int64(-1) }, 10, `"qwen35.block_count"`},
		{"eps", func(m fakeMetadata) { m["qwen35.attention.layer_norm_rms_epsilon"] = 0.0 }, 10, `"qwen35.attention.layer_norm_rms_epsilon"`},
		{"architecture", func(m fakeMetadata) { m["general.architecture"] = "llama" }, 10, `"llama"`},
		{"no vocab", func(m fakeMetadata) {}, 0, `"qwen35.vocab_size": not found`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := real27B()
			c.edit(m)
			_, err := ReadConfig(m, c.vocab)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrConfig), "%v", err)
			assert.Contains(t, err.Error(), c.substr)
		})
	}
}

func TestReadConfigDefaults(t *testing.T) {
	m := real27B()
	for _, k := range []string{"qwen35.attention.head_count_kv", "qwen35.attention.key_length",
		"qwen35.attention.value_length", "qwen35.rope.dimension_count", "qwen35.full_attention_interval",
		"qwen35.rope.dimension_sections"} {
		delete(m, k)
	}
	m["qwen35.attention.head_count"] = int64(20) // 5120/20 = 256
	c, err := ReadConfig(m, 100)
	require.NoError(t, err)
	assert.Equal(t, 20, c.KVHeads)
	assert.Equal(t, 256, c.HeadDim)
	assert.Equal(t, 256, c.RopeDims)
	assert.Equal(t, 4, c.FullAttentionInterval)
	assert.Equal(t, [4]int{}, c.RopeSections)
}
