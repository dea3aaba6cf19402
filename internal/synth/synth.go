// Package synth writes synthetic Bonsai-format models: GGUF files laid out exactly as
// PrismML's converter lays out Ternary Bonsai 2 (qwen35 architecture, ternary weights
// folded with the prism.hadamard contract, tiled GDN V heads, +1 norm gains,
// ssm_a = −exp(A_log), BF16 alpha/beta), filled with seeded random values, plus a small
// byte-level BPE vocabulary with Qwen's special tokens and a ChatML template, so that the
// files load in llama.cpp and in our tokenizer.
//
// Every tensor's content depends only on the seed and the tensor's name, so a file can be
// written in one streaming pass and any tensor regenerated on its own.
//
// WriteTwin writes the same model unfolded to F32, in the layout upstream llama.cpp runs
// unchanged, which makes upstream a reference for the packed model's logits.
package synth

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/floatconv"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/x448/float16"
)

// FileTypePQ2_0 is the general.file_type the vendor writes for a PQ2_0 model.
const FileTypePQ2_0 = 141

// Options describe one synthetic model.
type Options struct {
	Config qwen35.Config
	Format ternary.Format // PQ2_0 when zero
	Seed   uint64
	// HadamardBlock is the contract's block size; 0 picks the largest power of four
	// ≤ 1024 that divides every rotated width (1024 for the real widths).
	HadamardBlock int
	Name          string // general.name; a descriptive default when empty
}

// Presets returns the names Preset accepts, smallest first.
func Presets() []string { return []string{"tiny", "small", "real-widths", "27b"} }

// Preset returns a named configuration:
//   - tiny: a few hundred kilobytes, every structural feature (GQA, V-head repeat 3,
//     partial RoPE, one attention layer after three GDN layers) at toy widths;
//   - small: tiny's structure, wider, with more layers;
//   - real-widths: the 27B model's widths and heads with four layers (3 GDN + 1
//     attention) and a 4096-token vocabulary;
//   - 27b: the full Ternary Bonsai 2 27B shape (about 7.2 GB as PQ2_0).
func Preset(name string) (qwen35.Config, error) {
	real := qwen35.Config{
		Layers: 64, Embedding: 5120, FeedForward: 17408, Heads: 24, KVHeads: 4, HeadDim: 256,
		RMSEpsilon: 1e-6, RopeBase: 1e7, RopeDims: 64, RopeSections: [4]int{11, 11, 10, 0},
		ConvKernel: 4, StateSize: 128, InnerSize: 6144, VHeads: 48, KHeads: 16,
		FullAttentionInterval: 4, ContextLength: 262144, Vocab: 248320,
	}
	switch name {
	case "27b":
		return real, nil
	case "real-widths":
		c := real
		c.Layers, c.Vocab = 4, 4096
		return c, nil
	case "tiny":
		return qwen35.Config{
			Layers: 4, Embedding: 256, FeedForward: 512, Heads: 4, KVHeads: 2, HeadDim: 64,
			RMSEpsilon: 1e-6, RopeBase: 1e7, RopeDims: 16, RopeSections: [4]int{3, 3, 2, 0},
			ConvKernel: 4, StateSize: 32, InnerSize: 384, VHeads: 12, KHeads: 4,
			FullAttentionInterval: 4, ContextLength: 4096, Vocab: 512,
		}, nil
	case "small":
		return qwen35.Config{
			Layers: 8, Embedding: 1024, FeedForward: 2048, Heads: 8, KVHeads: 2, HeadDim: 128,
			RMSEpsilon: 1e-6, RopeBase: 1e7, RopeDims: 32, RopeSections: [4]int{6, 5, 5, 0},
			ConvKernel: 4, StateSize: 64, InnerSize: 1536, VHeads: 24, KHeads: 8,
			FullAttentionInterval: 4, ContextLength: 32768, Vocab: 2048,
		}, nil
	}
	return qwen35.Config{}, fmt.Errorf("synth: unknown preset %q (have %s)", name, strings.Join(Presets(), ", "))
}

func (o *Options) normalize() error {
	if o.Format == 0 {
		o.Format = ternary.PQ2_0
	}
	if o.Format != ternary.PQ2_0 && o.Format != ternary.PTQ1_0 {
		return fmt.Errorf("synth: unsupported format %v", o.Format)
	}
	if err := o.Config.Validate(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	widths := o.Config.RotationWidths()
	if o.HadamardBlock == 0 {
		// A power of four, so that √n is a power of two and the unfolded weights
		// signs ⊙ FWHT(row′)/√n are exact in float32: the float reference then sees the
		// very same weights the folded model holds.
		o.HadamardBlock = 1024
		for _, w := range widths {
			for w%o.HadamardBlock != 0 {
				o.HadamardBlock /= 4
			}
		}
	}
	if o.Name == "" {
		o.Name = fmt.Sprintf("synthetic qwen35 %dL %d %s seed %d", o.Config.Layers, o.Config.Embedding, o.Format, o.Seed)
		if o.Config.NextN > 0 {
			o.Name += " with MTP head"
		}
	}
	return nil
}

// Contract returns the Hadamard contract of the model: one random sign vector per
// rotated width, and the folded and inverse tensor lists.
func Contract(opt Options) (*hadamard.Contract, error) {
	if err := opt.normalize(); err != nil {
		return nil, err
	}
	c := &hadamard.Contract{
		Version:   hadamard.SupportedVersion,
		BlockSize: opt.HadamardBlock,
		Transform: hadamard.TransformName,
		Axis:      hadamard.AxisInputLast,
		SignMode:  hadamard.SignModeExplicit,
		Widths:    opt.Config.RotationWidths(),
	}
	for _, w := range c.Widths {
		rng := newRNG(opt.Seed, fmt.Sprintf("prism.hadamard.signs.%d", w))
		s := make([]int8, w)
		for i := range s {
			s[i] = int8(1 - 2*int(rng.Uint64()&1))
		}
		c.Signs = append(c.Signs, s)
	}
	for _, t := range opt.Config.Tensors() {
		switch t.Role {
		case qwen35.RoleFolded:
			c.WeightNames = append(c.WeightNames, t.Name)
		case qwen35.RoleInverse:
			c.InverseWeightNames = append(c.InverseWeightNames, t.Name)
		}
	}
	c.GDNVGrouped = true
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	return c, nil
}

// Metadata returns the key/value pairs of the model file, in the order they are written.
func Metadata(opt Options) ([]gguf.KV, error) {
	if err := opt.normalize(); err != nil {
		return nil, err
	}
	c := opt.Config
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.MustValue(qwen35.Architecture)},
		{Key: "general.name", Value: gguf.MustValue(opt.Name)},
		{Key: "general.alignment", Value: gguf.MustValue(uint32(32))},
	}
	if opt.Format == ternary.PQ2_0 {
		kv = append(kv, gguf.KV{Key: "general.file_type", Value: gguf.MustValue(uint32(FileTypePQ2_0))})
	}
	add := func(key string, v any) { kv = append(kv, gguf.KV{Key: key, Value: gguf.MustValue(v)}) }
	add(qwen35.KeyBlockCount, uint32(c.BlockCount()))
	if c.NextN > 0 {
		add(qwen35.KeyNextNPredictLayers, uint32(c.NextN))
	}
	add(qwen35.KeyContextLength, uint32(c.ContextLength))
	add(qwen35.KeyEmbeddingLength, uint32(c.Embedding))
	add(qwen35.KeyFeedForwardLength, uint32(c.FeedForward))
	add(qwen35.KeyHeadCount, uint32(c.Heads))
	add(qwen35.KeyHeadCountKV, uint32(c.KVHeads))
	add(qwen35.KeyKeyLength, uint32(c.HeadDim))
	add(qwen35.KeyValueLength, uint32(c.HeadDim))
	add(qwen35.KeyRMSEpsilon, float32(c.RMSEpsilon))
	add(qwen35.KeyRopeFreqBase, float32(c.RopeBase))
	add(qwen35.KeyRopeDimensionCount, uint32(c.RopeDims))
	s := c.RopeSections
	add(qwen35.KeyRopeDimensionSections, []int32{int32(s[0]), int32(s[1]), int32(s[2]), int32(s[3])})
	add(qwen35.KeyConvKernel, uint32(c.ConvKernel))
	add(qwen35.KeyStateSize, uint32(c.StateSize))
	add(qwen35.KeyInnerSize, uint32(c.InnerSize))
	add(qwen35.KeyTimeStepRank, uint32(c.VHeads))
	add(qwen35.KeyGroupCount, uint32(c.KHeads))
	add(qwen35.KeyFullAttentionInterval, uint32(c.FullAttentionInterval))
	vocab, err := NewVocabulary(c.Vocab)
	if err != nil {
		return nil, err
	}
	kv = append(kv, vocab.metadata()...)
	contract, err := Contract(opt)
	if err != nil {
		return nil, err
	}
	for _, p := range contract.KeyValues() {
		v, err := gguf.ValueOf(p.Value)
		if err != nil {
			return nil, fmt.Errorf("synth: key %q: %w", p.Key, err)
		}
		kv = append(kv, gguf.KV{Key: p.Key, Value: v})
	}
	return kv, nil
}

// TensorInfos returns the tensor table of the model file (offsets are the writer's).
func TensorInfos(opt Options) ([]gguf.TensorInfo, error) {
	if err := opt.normalize(); err != nil {
		return nil, err
	}
	specs := opt.Config.Tensors()
	infos := make([]gguf.TensorInfo, len(specs))
	for i, s := range specs {
		infos[i] = gguf.TensorInfo{Name: s.Name, Type: tensorType(s.Kind, opt.Format), Shape: s.Shape}
	}
	return infos, nil
}

func tensorType(k qwen35.Kind, f ternary.Format) gguf.TensorType {
	switch k {
	case qwen35.KindTernary:
		return f.TensorType()
	case qwen35.KindBF16:
		return gguf.TypeBF16
	}
	return gguf.TypeF32
}

// Progress is called after each tensor with the bytes of tensor data written so far and
// the total.
type Progress func(done, total int64)

// Write streams the model file to w. It stops with ctx's error when ctx is cancelled.
func Write(ctx context.Context, w io.Writer, opt Options, progress Progress) error {
	if err := opt.normalize(); err != nil {
		return err
	}
	kv, err := Metadata(opt)
	if err != nil {
		return err
	}
	infos, err := TensorInfos(opt)
	if err != nil {
		return err
	}
	return writeModel(ctx, w, opt, kv, infos, progress, writeTensor)
}

// writeModel writes the header and then each tensor's data with tensor, reporting
// progress after each.
func writeModel(ctx context.Context, w io.Writer, opt Options, kv []gguf.KV, infos []gguf.TensorInfo, progress Progress,
	tensor func(context.Context, io.Writer, Options, qwen35.TensorSpec) error) error {
	gw, err := gguf.NewWriter(w, kv, infos)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	var total, done int64
	for _, t := range infos {
		n, _ := t.Size()
		total += n
	}
	specs := opt.Config.Tensors()
	for i, s := range specs {
		if err := ctx.Err(); err != nil {
			return err
		}
		tw, err := gw.BeginTensor(s.Name)
		if err != nil {
			return fmt.Errorf("synth: %w", err)
		}
		if err := tensor(ctx, tw, opt, s); err != nil {
			return fmt.Errorf("synth: tensor %q: %w", s.Name, err)
		}
		n, _ := infos[i].Size()
		done += n
		if progress != nil {
			progress(done, total)
		}
	}
	if err := gw.Close(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

// WriteFile writes the model to path, removing the partial file on failure.
func WriteFile(ctx context.Context, path string, opt Options, progress Progress) error {
	return writeFile(ctx, path, opt, progress, Write)
}

func writeFile(ctx context.Context, path string, opt Options, progress Progress,
	write func(context.Context, io.Writer, Options, Progress) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("synth: %w", cerr)
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(ctx, bw, opt, progress); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	return nil
}

func writeTensor(ctx context.Context, w io.Writer, opt Options, s qwen35.TensorSpec) error {
	switch s.Kind {
	case qwen35.KindTernary:
		return packTernary(ctx, opt, s, func(packed []byte, _ int) error {
			_, err := w.Write(packed)
			return err
		})
	case qwen35.KindBF16:
		vals := FloatValues(opt, s)
		buf := make([]byte, 2*len(vals))
		for i, v := range vals {
			b := floatconv.Float32ToBF16(v)
			buf[2*i], buf[2*i+1] = byte(b), byte(b>>8)
		}
		_, err := w.Write(buf)
		return err
	default:
		_, err := w.Write(appendF32(nil, FloatValues(opt, s)))
		return err
	}
}

// appendF32 appends vals to buf as little-endian float32.
func appendF32(buf []byte, vals []float32) []byte {
	for _, v := range vals {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
	}
	return buf
}

// ScaleFor returns the typical ternary scale of a tensor: a dot product of a ternary row
// (two thirds of it non-zero) with a unit-RMS input then has unit RMS, which is the
// scale the real model's scales sit at (median 0.015 at K = 5120). The head is made
// four times larger so the synthetic logits have a realistic spread.
func ScaleFor(s qwen35.TensorSpec) float64 {
	k := float64(s.Shape[0])
	d := math.Sqrt(1.5 / k)
	switch {
	case s.Name == qwen35.NameOutput:
		d *= 4
	case s.Name == qwen35.NameTokenEmbedding:
		// Embedding rows are used as they are: unit-RMS entries after the inverse rotation.
		d = math.Sqrt(1.5)
	}
	return d
}

// packTernary generates the packed blocks of a ternary tensor, some whole rows at a
// time, and hands each run of rows to emit (the slice is reused after emit returns). It
// is the one source of every ternary tensor's content: Write stores the bytes and
// WriteTwin decodes and unfolds the very same bytes.
func packTernary(ctx context.Context, opt Options, s qwen35.TensorSpec, emit func(packed []byte, rows int) error) error {
	k, n := int(s.Shape[0]), int(s.Shape[1])
	rng := newRNG(opt.Seed, s.Name)
	blocks := k / ternary.BlockSize
	bb := opt.Format.BlockBytes()
	d := ScaleFor(s)
	const chunkRows = 256
	buf := make([]byte, chunkRows*blocks*bb)
	var codes [ternary.BlockSize]uint8
	var pool tritPool
	for r0 := 0; r0 < n; r0 += chunkRows {
		if err := ctx.Err(); err != nil {
			return err
		}
		rows := min(chunkRows, n-r0)
		out := buf[:rows*blocks*bb]
		for b := 0; b < rows*blocks; b++ {
			pool.fill(rng, codes[:])
			// Scales spread over [0.5d, 1.5d), like a trained model's per-block magnitudes.
			scale := float16.Fromfloat32(float32(d * (0.5 + rng.Float64()))).Bits()
			blk := out[b*bb : (b+1)*bb]
			if opt.Format == ternary.PQ2_0 {
				ternary.PackPQ2_0(blk, &codes, scale)
			} else if err := ternary.PackPTQ1_0(blk, &codes, scale); err != nil {
				return err
			}
		}
		if err := emit(out, rows); err != nil {
			return err
		}
	}
	return nil
}

// FloatValues returns the values of a non-ternary tensor: as stored in the file for F32
// tensors, before the rounding to bfloat16 for BF16 ones.
func FloatValues(opt Options, s qwen35.TensorSpec) []float32 {
	rng := newRNG(opt.Seed, s.Name)
	n := 1
	for _, d := range s.Shape {
		n *= int(d)
	}
	v := make([]float32, n)
	uniform := func(lo, hi float64) float32 { return float32(lo + (hi-lo)*rng.Float64()) }
	switch {
	case strings.HasSuffix(s.Name, qwen35.SuffixSSMNorm):
		// Stored raw: the gain itself.
		for i := range v {
			v[i] = uniform(0.8, 1.2)
		}
	case strings.HasSuffix(s.Name, "norm.weight"):
		// Stored as w + 1 by the converter, so the stored gain is near one.
		for i := range v {
			v[i] = 1 + uniform(-0.2, 0.2)
		}
	case strings.HasSuffix(s.Name, qwen35.SuffixSSMA):
		// −exp(A_log) with A in [1, 16), as Qwen3-Next initialises A_log.
		for i := range v {
			v[i] = float32(-math.Exp(math.Log(1) + (math.Log(16)-math.Log(1))*rng.Float64()))
		}
	case strings.HasSuffix(s.Name, qwen35.SuffixSSMDT):
		// dt_bias = softplus⁻¹(dt) with dt log-uniform in [1e-3, 1e-1].
		for i := range v {
			dt := math.Exp(math.Log(1e-3) + (math.Log(1e-1)-math.Log(1e-3))*rng.Float64())
			v[i] = float32(dt + math.Log(-math.Expm1(-dt)))
		}
	case strings.HasSuffix(s.Name, qwen35.SuffixSSMConv):
		lim := 1 / math.Sqrt(float64(s.Shape[0]))
		for i := range v {
			v[i] = uniform(-lim, lim)
		}
	case strings.HasSuffix(s.Name, qwen35.SuffixSSMAlpha), strings.HasSuffix(s.Name, qwen35.SuffixSSMBeta):
		// Unit-variance outputs for a unit-RMS input: U(−a, a) has variance a²/3.
		lim := math.Sqrt(3 / float64(s.Shape[0]))
		for i := range v {
			v[i] = uniform(-lim, lim)
		}
	default:
		panic(fmt.Sprintf("synth: no value rule for tensor %q", s.Name))
	}
	return v
}

// newRNG returns the generator of one named stream of the model.
func newRNG(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// tritPool hands out uniform values in {0, 1, 2}, five per random byte below 243.
type tritPool struct {
	trits [5 * 8]uint8
	n     int
}

func (p *tritPool) fill(rng *rand.Rand, dst []uint8) {
	for i := range dst {
		if p.n == 0 {
			p.refill(rng)
		}
		p.n--
		dst[i] = p.trits[p.n]
	}
}

func (p *tritPool) refill(rng *rand.Rand) {
	for p.n == 0 {
		x := rng.Uint64()
		for j := 0; j < 8; j++ {
			b := uint8(x >> (8 * j))
			if b >= 243 {
				continue // rejection keeps the five trits uniform
			}
			for t := 0; t < 5; t++ {
				p.trits[p.n] = b % 3
				b /= 3
				p.n++
			}
		}
	}
}
