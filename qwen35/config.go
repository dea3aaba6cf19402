package qwen35

import (
	"errors"
	"fmt"
	"math"
)

// Architecture is the value of general.architecture for the models this package runs.
const Architecture = "qwen35"

// ErrConfig is wrapped by every error about a model's hyperparameters.
var ErrConfig = errors.New("qwen35: invalid config")

// Metadata is the view of a model file's key/value metadata that ReadConfig needs.
// *gguf.File implements it; its errors already name the key.
type Metadata interface {
	// Has reports whether the file has key; the getters fail for a key it lacks or of
	// another type, and accept any integer type (any number, for Float).
	Has(key string) bool
	Int(key string) (int64, error)
	Float(key string) (float64, error)
	Ints(key string) ([]int64, error)
	String(key string) (string, error)
}

// Config holds the hyperparameters of a Qwen3.5 hybrid decoder, every size read from the
// file. Names follow the GGUF keys; the comments give the 27B values.
type Config struct {
	Layers                int     // block_count: 64
	Embedding             int     // embedding_length: 5120
	FeedForward           int     // feed_forward_length: 17408
	Heads                 int     // attention.head_count: 24
	KVHeads               int     // attention.head_count_kv: 4
	HeadDim               int     // attention.key_length (= value_length): 256
	RMSEpsilon            float64 // attention.layer_norm_rms_epsilon: 1e-6
	RopeBase              float64 // rope.freq_base: 1e7
	RopeDims              int     // rope.dimension_count: 64 (the rotated prefix of each head)
	RopeSections          [4]int  // rope.dimension_sections: [11 11 10 0]
	ConvKernel            int     // ssm.conv_kernel: 4
	StateSize             int     // ssm.state_size: 128 (GDN head dim of q, k and v)
	InnerSize             int     // ssm.inner_size: 6144 (VHeads × StateSize)
	VHeads                int     // ssm.time_step_rank: 48
	KHeads                int     // ssm.group_count: 16
	FullAttentionInterval int     // full_attention_interval: 4
	ContextLength         int     // context_length: 262144
	Vocab                 int     // rows of token_embd.weight: 248320

	// NextN is the number of multi-token-prediction ("nextn") layers the file carries
	// after the decoder layers: nextn_predict_layers, 0 in the published Bonsai 2
	// file, 1 in a file that re-bundles Qwen3.5's MTP head. block_count counts them,
	// so Layers is block_count − NextN; see [MTPHead].
	NextN int
}

// Key returns the architecture-qualified GGUF key for suffix, e.g. Key("block_count").
func Key(suffix string) string { return Architecture + "." + suffix }

// The GGUF keys of the hyperparameters.
var (
	KeyBlockCount            = Key("block_count")
	KeyContextLength         = Key("context_length")
	KeyEmbeddingLength       = Key("embedding_length")
	KeyFeedForwardLength     = Key("feed_forward_length")
	KeyHeadCount             = Key("attention.head_count")
	KeyHeadCountKV           = Key("attention.head_count_kv")
	KeyKeyLength             = Key("attention.key_length")
	KeyValueLength           = Key("attention.value_length")
	KeyRMSEpsilon            = Key("attention.layer_norm_rms_epsilon")
	KeyRopeFreqBase          = Key("rope.freq_base")
	KeyRopeDimensionCount    = Key("rope.dimension_count")
	KeyRopeDimensionSections = Key("rope.dimension_sections")
	KeyConvKernel            = Key("ssm.conv_kernel")
	KeyStateSize             = Key("ssm.state_size")
	KeyInnerSize             = Key("ssm.inner_size")
	KeyTimeStepRank          = Key("ssm.time_step_rank")
	KeyGroupCount            = Key("ssm.group_count")
	KeyFullAttentionInterval = Key("full_attention_interval")
	KeyVocabSize             = Key("vocab_size")

	// KeyNextNPredictLayers is the number of MTP layers, which block_count includes
	// (llama.cpp's convert_hf_to_gguf.py, _Qwen35MtpMixin: block_count =
	// num_hidden_layers + mtp_num_hidden_layers). Absent means none.
	KeyNextNPredictLayers = Key("nextn_predict_layers")
)

// maxDim bounds every size read from a file, so that products of a few of them cannot
// overflow an int and a hostile header cannot make us size buffers in the terabytes.
const maxDim = 1 << 24

// ReadConfig reads and checks the hyperparameters. vocab is the number of rows of the
// embedding table (the file's tensor shape is the authority; pass 0 to read
// qwen35.vocab_size instead). Optional keys default as llama.cpp defaults them:
// head_count_kv to head_count, key_length to embedding_length/head_count, value_length to
// key_length, rope.dimension_count to key_length, full_attention_interval to 4.
func ReadConfig(md Metadata, vocab int) (*Config, error) {
	if md.Has("general.architecture") {
		arch, err := md.String("general.architecture")
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		if arch != Architecture {
			return nil, fmt.Errorf("%w: general.architecture is %q, want %q", ErrConfig, arch, Architecture)
		}
	}
	r := reader{md: md}
	blocks := r.int(KeyBlockCount, -1)
	c := &Config{
		NextN:       r.int(KeyNextNPredictLayers, 0),
		Embedding:   r.int(KeyEmbeddingLength, -1),
		FeedForward: r.int(KeyFeedForwardLength, -1),
		Heads:       r.int(KeyHeadCount, -1),
		ConvKernel:  r.int(KeyConvKernel, -1),
		StateSize:   r.int(KeyStateSize, -1),
		InnerSize:   r.int(KeyInnerSize, -1),
		VHeads:      r.int(KeyTimeStepRank, -1),
		KHeads:      r.int(KeyGroupCount, -1),
		RMSEpsilon:  r.float(KeyRMSEpsilon, math.NaN()),
	}
	// block_count counts the MTP layers: the decoder proper is what precedes them.
	if r.err == nil && c.NextN >= blocks {
		r.err = fmt.Errorf("key %q: %d MTP layers leave none of %q %d to the decoder", KeyNextNPredictLayers, c.NextN, KeyBlockCount, blocks)
	}
	c.Layers = blocks - c.NextN
	c.KVHeads = r.int(KeyHeadCountKV, c.Heads)
	defHead := 0
	if c.Heads > 0 {
		defHead = c.Embedding / c.Heads
	}
	c.HeadDim = r.int(KeyKeyLength, defHead)
	valueLength := r.int(KeyValueLength, c.HeadDim)
	c.RopeBase = r.float(KeyRopeFreqBase, 10000)
	c.RopeDims = r.int(KeyRopeDimensionCount, c.HeadDim)
	c.FullAttentionInterval = r.int(KeyFullAttentionInterval, 4)
	c.ContextLength = r.int(KeyContextLength, -1)
	if md.Has(KeyRopeDimensionSections) && r.err == nil {
		s, err := md.Ints(KeyRopeDimensionSections)
		switch {
		case err != nil:
			r.err = err
		case len(s) > 4:
			r.err = fmt.Errorf("key %q: %d sections, want at most 4", KeyRopeDimensionSections, len(s))
		default:
			for i, v := range s {
				if v < 0 || v > maxDim {
					r.err = fmt.Errorf("key %q: section %d is %d", KeyRopeDimensionSections, i, v)
					break
				}
				c.RopeSections[i] = int(v)
			}
		}
	}
	if vocab > 0 {
		c.Vocab = vocab
	} else {
		c.Vocab = r.int(KeyVocabSize, -1)
	}
	if r.err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, r.err)
	}
	if valueLength != c.HeadDim {
		return nil, fmt.Errorf("%w: key %q is %d but %q is %d; this architecture needs them equal",
			ErrConfig, KeyValueLength, valueLength, KeyKeyLength, c.HeadDim)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// reader keeps the first error so ReadConfig reads like a table of keys.
type reader struct {
	md  Metadata
	err error
}

// int reads an integer key; def < 0 marks the key required.
func (r *reader) int(key string, def int) int {
	if r.err != nil {
		return 0
	}
	if !r.md.Has(key) {
		if def < 0 {
			r.err = fmt.Errorf("key %q: not found", key)
		}
		return def
	}
	v, err := r.md.Int(key)
	if err != nil {
		r.err = err
		return 0
	}
	if v < 0 || v > maxDim {
		r.err = fmt.Errorf("key %q: value %d out of range [0, %d]", key, v, maxDim)
		return 0
	}
	return int(v)
}

// float reads a float key; a NaN default marks the key required.
func (r *reader) float(key string, def float64) float64 {
	if r.err != nil {
		return 0
	}
	if !r.md.Has(key) {
		if math.IsNaN(def) {
			r.err = fmt.Errorf("key %q: not found", key)
		}
		return def
	}
	v, err := r.md.Float(key)
	if err != nil {
		r.err = err
	}
	return v
}

// Validate checks the relations between the sizes that the blocks rely on. Each error
// names the key at fault.
func (c *Config) Validate() error {
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("%w: key %q: %s", ErrConfig, key, fmt.Sprintf(format, args...))
	}
	positive := []struct {
		key string
		v   int
	}{
		{KeyBlockCount, c.Layers}, {KeyEmbeddingLength, c.Embedding}, {KeyFeedForwardLength, c.FeedForward},
		{KeyHeadCount, c.Heads}, {KeyHeadCountKV, c.KVHeads}, {KeyKeyLength, c.HeadDim},
		{KeyConvKernel, c.ConvKernel}, {KeyStateSize, c.StateSize}, {KeyInnerSize, c.InnerSize},
		{KeyTimeStepRank, c.VHeads}, {KeyGroupCount, c.KHeads}, {KeyFullAttentionInterval, c.FullAttentionInterval},
		{KeyContextLength, c.ContextLength}, {KeyVocabSize, c.Vocab},
	}
	for _, p := range positive {
		if p.v <= 0 || p.v > maxDim {
			return bad(p.key, "value %d out of range [1, %d]", p.v, maxDim)
		}
	}
	if c.NextN < 0 || c.NextN > MaxNextN {
		return bad(KeyNextNPredictLayers, "%d MTP layers; this package runs 0 or %d (Qwen3.5 has one)", c.NextN, MaxNextN)
	}
	if !(c.RMSEpsilon > 0 && c.RMSEpsilon < 1) {
		return bad(KeyRMSEpsilon, "value %g not in (0, 1)", c.RMSEpsilon)
	}
	if !(c.RopeBase > 1) || math.IsInf(c.RopeBase, 0) {
		return bad(KeyRopeFreqBase, "value %g must be finite and > 1", c.RopeBase)
	}
	if c.Heads%c.KVHeads != 0 {
		return bad(KeyHeadCountKV, "%d does not divide %s %d", c.KVHeads, KeyHeadCount, c.Heads)
	}
	if c.RopeDims <= 0 || c.RopeDims > c.HeadDim || c.RopeDims%2 != 0 {
		return bad(KeyRopeDimensionCount, "%d must be even and in [2, %s %d]", c.RopeDims, KeyKeyLength, c.HeadDim)
	}
	if s := c.RopeSections; s != [4]int{} && 2*(s[0]+s[1]+s[2]+s[3]) != c.RopeDims {
		return bad(KeyRopeDimensionSections, "%v sum to %d pairs, want %s/2 = %d", s, s[0]+s[1]+s[2]+s[3], KeyRopeDimensionCount, c.RopeDims/2)
	}
	if c.VHeads%c.KHeads != 0 {
		return bad(KeyTimeStepRank, "%d V heads is not a whole multiple of %s %d", c.VHeads, KeyGroupCount, c.KHeads)
	}
	if c.InnerSize != c.VHeads*c.StateSize {
		return bad(KeyInnerSize, "%d, want %s × %s = %d × %d", c.InnerSize, KeyTimeStepRank, KeyStateSize, c.VHeads, c.StateSize)
	}
	if c.ConvKernel < 2 {
		return bad(KeyConvKernel, "%d, want at least 2", c.ConvKernel)
	}
	// Every folded linear's input width must hold whole ternary blocks.
	for _, w := range []struct {
		key string
		v   int
	}{
		{KeyEmbeddingLength, c.Embedding},
		{KeyFeedForwardLength, c.FeedForward},
		{KeyInnerSize, c.InnerSize},
		{KeyHeadCount, c.AttentionWidth()},
	} {
		if w.v%TernaryBlock != 0 {
			return bad(w.key, "input width %d is not a multiple of the ternary block %d", w.v, TernaryBlock)
		}
	}
	return nil
}

// TernaryBlock is the number of weights per PQ2_0/PTQ1_0 block, which every folded
// linear's input width must be a multiple of.
const TernaryBlock = 128

// MaxNextN is the most MTP layers a configuration may declare: Qwen3.5 trains one, and
// a deeper chain is drafted by feeding that one its own output.
const MaxNextN = 1

// BlockCount is the value of block_count: the decoder layers and the MTP layers.
func (c *Config) BlockCount() int { return c.Layers + c.NextN }

// NextNLayer returns the block number of MTP layer i (i < NextN): the MTP layers
// follow the decoder's, so the one MTP layer of Qwen3.5 27B is blk.64.
func (c *Config) NextNLayer(i int) int { return c.Layers + i }

// IsAttention reports whether layer i is a full-attention layer; the others are Gated
// DeltaNet layers.
func (c *Config) IsAttention(i int) bool { return (i+1)%c.FullAttentionInterval == 0 }

// AttentionLayers returns the number of full-attention layers.
func (c *Config) AttentionLayers() int { return c.Layers / c.FullAttentionInterval }

// AttentionWidth is the input width of attn_output: Heads × HeadDim.
func (c *Config) AttentionWidth() int { return c.Heads * c.HeadDim }

// QKVWidth is the number of rows of a GDN layer's attn_qkv: q and k (KHeads × StateSize
// each) then v (InnerSize).
func (c *Config) QKVWidth() int { return 2*c.KHeads*c.StateSize + c.InnerSize }

// HeadRepeat is how many V heads share one q/k head in a GDN layer (3 in the 27B model).
func (c *Config) HeadRepeat() int { return c.VHeads / c.KHeads }

// RotationWidths returns the input widths of the folded linears, each of which needs a
// sign vector in the Hadamard contract, without duplicates and in ascending order.
func (c *Config) RotationWidths() []int {
	ws := []int{c.Embedding}
	more := []int{c.InnerSize, c.AttentionWidth(), c.FeedForward}
	if c.NextN > 0 {
		more = append(more, 2*c.Embedding) // the MTP head's eh_proj reads [e; h]
	}
	for _, w := range more {
		dup := false
		for _, x := range ws {
			dup = dup || x == w
		}
		if !dup {
			ws = append(ws, w)
		}
	}
	for i := 1; i < len(ws); i++ {
		for j := i; j > 0 && ws[j] < ws[j-1]; j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
	return ws
}
