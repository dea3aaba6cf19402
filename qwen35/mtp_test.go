package qwen35_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mtpOptions is the tiny preset with an MTP head.
func mtpOptions(t testing.TB, format ternary.Format) synth.Options {
	c := synthtest.Config(t, "tiny")
	c.NextN = 1
	return synth.Options{Config: c, Seed: 7, Format: format}
}

// TestMTPTensorNames checks the MTP block's tensors against the list llama.cpp's
// qwen35 loader names (the 15 tensors of blk.N with N = block_count − 1), written out
// here by hand, with the shapes of its create_tensor calls.
func TestMTPTensorNames(t *testing.T) {
	c := synthtest.Config(t, "tiny") // E 256, FFN 512, 4 heads × 64, 2 KV heads
	c.NextN = 1
	require.NoError(t, c.Validate())
	assert.Equal(t, 5, c.BlockCount())
	assert.Equal(t, 4, c.NextNLayer(0))
	want := map[string][]int64{
		"blk.4.attn_norm.weight":              {256},
		"blk.4.attn_q.weight":                 {256, 2 * 4 * 64},
		"blk.4.attn_k.weight":                 {256, 2 * 64},
		"blk.4.attn_v.weight":                 {256, 2 * 64},
		"blk.4.attn_output.weight":            {4 * 64, 256},
		"blk.4.attn_q_norm.weight":            {64},
		"blk.4.attn_k_norm.weight":            {64},
		"blk.4.post_attention_norm.weight":    {256},
		"blk.4.ffn_gate.weight":               {256, 512},
		"blk.4.ffn_up.weight":                 {256, 512},
		"blk.4.ffn_down.weight":               {512, 256},
		"blk.4.nextn.eh_proj.weight":          {512, 256},
		"blk.4.nextn.enorm.weight":            {256},
		"blk.4.nextn.hnorm.weight":            {256},
		"blk.4.nextn.shared_head_norm.weight": {256},
	}
	got := map[string][]int64{}
	for _, s := range c.Tensors() {
		if s.Layer == 4 {
			got[s.Name] = s.Shape
			wantKind := qwen35.KindF32
			if len(s.Shape) == 2 {
				wantKind = qwen35.KindTernary
				assert.Equal(t, qwen35.RoleFolded, s.Role, s.Name)
			}
			assert.Equal(t, wantKind, s.Kind, s.Name)
		}
	}
	assert.Equal(t, want, got)
	base := c
	base.NextN = 0
	assert.Len(t, c.Tensors(), len(base.Tensors())+15)
	assert.Equal(t, []int{256, 384, 512}, base.RotationWidths())
	assert.Equal(t, []int{256, 384, 512}, c.RotationWidths(), "2·E = 512 is the FFN width already")
}

func TestBindMTP(t *testing.T) {
	for _, format := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		opt := mtpOptions(t, format)
		f := synthtest.FileOf(t, opt)
		n, err := f.Int(qwen35.KeyNextNPredictLayers)
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		bc, err := f.Int(qwen35.KeyBlockCount)
		require.NoError(t, err)
		assert.EqualValues(t, 5, bc, "block_count counts the MTP layer")

		w, err := qwen35.Bind(f)
		require.NoError(t, err)
		c := w.Config
		assert.Equal(t, 4, c.Layers)
		assert.Equal(t, 1, c.NextN)
		assert.Len(t, w.Layers, 4)
		require.NotNil(t, w.MTP)
		m := w.MTP
		assert.Equal(t, 4, m.Layer.Index)
		assert.True(t, m.Layer.Attention)
		assert.Equal(t, "blk.4.nextn.eh_proj.weight", m.EHProj.Name)
		assert.Equal(t, 2*c.Embedding, m.EHProj.K)
		assert.Equal(t, c.Embedding, m.EHProj.N)
		assert.Equal(t, format, m.EHProj.Format)
		for _, v := range [][]float32{m.ENorm, m.HNorm, m.SharedHeadNorm, m.Layer.AttnNorm, m.Layer.PostAttnNorm} {
			assert.Len(t, v, c.Embedding)
		}
		assert.Equal(t, 2*c.Heads*c.HeadDim, m.Layer.Q.N)
		assert.Equal(t, "blk.4.attn_q.weight", m.Layer.Q.Name)
		assert.Len(t, m.Layer.QNorm, c.HeadDim)
		assert.Equal(t, c.FeedForward, m.Layer.FFNDown.K)
		assert.Nil(t, m.Layer.QKV.Data, "an MTP layer has no GDN tensors")
		require.NotNil(t, w.Rotation(2*c.Embedding))
		// The stored gains are +1: near one, as the synthetic writer draws them.
		for _, g := range m.ENorm {
			assert.InDelta(t, 1, g, 0.2+1e-6)
		}

		// The config round-trips (the file stores ε as float32), and the file's table
		// is Config.Tensors.
		want := opt.Config
		want.RMSEpsilon = float64(float32(want.RMSEpsilon))
		assert.Equal(t, want, c)
		specs := c.Tensors()
		require.Len(t, f.Tensors, len(specs))
		for i, s := range specs {
			assert.Equal(t, s.Name, f.Tensors[i].Name)
			assert.Equal(t, s.Shape, f.Tensors[i].Shape)
		}
	}
}

// TestBindWithoutMTP checks that a file without a head binds as before: no MTP, the
// same tensor table.
func TestBindWithoutMTP(t *testing.T) {
	f := synthtest.File(t, "tiny", 1, ternary.PQ2_0)
	assert.False(t, f.Has(qwen35.KeyNextNPredictLayers))
	w, err := qwen35.Bind(f)
	require.NoError(t, err)
	assert.Nil(t, w.MTP)
	assert.Zero(t, w.Config.NextN)
	assert.Equal(t, 4, w.Config.BlockCount())
}

func TestBindMTPRefuses(t *testing.T) {
	f := synthtest.FileOf(t, mtpOptions(t, ternary.PQ2_0))
	setKey := func(kv []gguf.KV, key string, v uint32) []gguf.KV {
		for i := range kv {
			if kv[i].Key == key {
				kv[i].Value = gguf.MustValue(v)
				return kv
			}
		}
		return append(kv, gguf.KV{Key: key, Value: gguf.MustValue(v)})
	}
	type edit = fileEdit
	cases := []struct {
		name string
		edit edit
		want string
	}{
		{"missing hnorm", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := findTensor(t, infos, "blk.4.nextn.hnorm.weight")
			return kv, append(infos[:i:i], infos[i+1:]...)
		}, `tensor "blk.4.nextn.hnorm.weight": missing`},
		{"missing layer tensor", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := findTensor(t, infos, "blk.4.attn_k_norm.weight")
			return kv, append(infos[:i:i], infos[i+1:]...)
		}, `tensor "blk.4.attn_k_norm.weight": missing`},
		{"eh_proj shape", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			// E inputs instead of 2·E: half the rows' bytes.
			i := findTensor(t, infos, "blk.4.nextn.eh_proj.weight")
			infos[i].Shape = []int64{256, 256}
			data[infos[i].Name] = data[infos[i].Name][:len(data[infos[i].Name])/2]
			return kv, infos
		}, `tensor "blk.4.nextn.eh_proj.weight": shape [256 256], want [512 256]`},
		{"eh_proj type", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := findTensor(t, infos, "blk.4.nextn.eh_proj.weight")
			infos[i].Type = gguf.TypeF32
			data[infos[i].Name] = make([]byte, 4*512*256)
			return kv, infos
		}, `tensor "blk.4.nextn.eh_proj.weight": type F32, want PQ2_0 or PTQ1_0`},
		{"norm type", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := findTensor(t, infos, "blk.4.nextn.shared_head_norm.weight")
			infos[i].Type = gguf.TypeF16
			data[infos[i].Name] = data[infos[i].Name][:2*256]
			return kv, infos
		}, `tensor "blk.4.nextn.shared_head_norm.weight": type F16, want F32`},
		{"two MTP layers", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			return setKey(setKey(kv, qwen35.KeyNextNPredictLayers, 2), qwen35.KeyBlockCount, 6), infos
		}, `"qwen35.nextn_predict_layers": 2 MTP layers`},
		{"no decoder left", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			return setKey(kv, qwen35.KeyNextNPredictLayers, 5), infos
		}, `"qwen35.nextn_predict_layers": 5 MTP layers leave none`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := rewrite(t, f, c.edit)
			_, err := qwen35.Bind(g)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, isBindError(err), "%v", err)
		})
	}
	// The key without the tensors: the file is refused, naming the first missing one.
	g := rewrite(t, synthtest.File(t, "tiny", 1, ternary.PQ2_0), func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
		return setKey(kv, qwen35.KeyNextNPredictLayers, 1), infos
	})
	_, err := qwen35.Bind(g)
	require.Error(t, err)
	// block_count 4 with one MTP layer leaves 3 decoder layers; blk.3 (an attention
	// layer in the file) is then read as the MTP block, which lacks the nextn tensors.
	assert.Contains(t, err.Error(), fmt.Sprintf("tensor %q: missing", "blk.3.nextn.eh_proj.weight"))
}

func isBindError(err error) bool {
	return errors.Is(err, qwen35.ErrWeights) || errors.Is(err, qwen35.ErrConfig)
}

// mtpTol bounds |Δlogit| between the float32 head and the float64 reference on the
// tiny model: the tolerance the CPU engine's float32 paths are held to (logits span
// about ±20, and float32 sums over a few hundred terms agree to about 1e-5 of that).
const mtpTol = 1e-3

// mtpTolInt8 bounds |Δlogit| between the int8 head (activations quantised per site, as
// the CPU engine's default path) and the float64 reference on the tiny model: the bound
// the engine's int8 path is held to on the same model (bonsai's
// TestTinyInt8MatchesReference: the int8 rounding, about 0.6% of each product's output,
// becomes a few tenths of a logit at worst).
const mtpTolInt8 = 1.0

// mtpOutTolInt8 bounds |Δout| of the int8 head relative to the output's largest value:
// the same int8 rounding, about 0.6% of each product's output (bonsai's
// TestTinyInt8MatchesReference), over the five product sites the output goes through
// (eh_proj, q/k/v, o, gate/up, down), 3%.
const mtpOutTolInt8 = 0.03

func maxDiff(t *testing.T, got []float32, want []float64) float64 {
	t.Helper()
	require.Len(t, got, len(want))
	worst := 0.0
	for i := range got {
		d := math.Abs(float64(got[i]) - want[i])
		require.False(t, math.IsNaN(d), "value %d is %v", i, got[i])
		worst = max(worst, d)
	}
	return worst
}

func narrow(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

// TestMTPStepMatchesReference runs the head step by step (float32 products; int8
// products, on the calling goroutine and on a pool), with its own KV
// cache, along the main model's hidden states of a sequence, and compares every
// position's logits and output with the float64 reference's MTP over the whole
// sequence; then it chains two steps (the second fed the first's output and a token of
// its choosing) and compares with the reference over those rows.
func TestMTPStepMatchesReference(t *testing.T) {
	pool := parallel.NewPool(2)
	defer pool.Close()
	for _, mode := range []struct {
		name        string
		opt         qwen35.MTPOptions
		tol, outTol float64
	}{
		{"float32", qwen35.MTPOptions{Float32: true}, mtpTol, mtpTol},
		{"int8", qwen35.MTPOptions{}, mtpTolInt8, mtpOutTolInt8},
		{"int8 on a pool", qwen35.MTPOptions{Runner: pool}, mtpTolInt8, mtpOutTolInt8},
	} {
		t.Run(mode.name, func(t *testing.T) { testMTPStepMatchesReference(t, mode.opt, mode.tol, mode.outTol) })
	}
}

func testMTPStepMatchesReference(t *testing.T, opt qwen35.MTPOptions, tol, outTol float64) {
	for _, format := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		f := synthtest.FileOf(t, mtpOptions(t, format))
		ref, err := qwen35.NewReference(f)
		require.NoError(t, err)
		w, err := qwen35.Bind(f)
		require.NoError(t, err)
		c := w.Config
		const T = 24
		tokens := make([]int, T)
		for i := range tokens {
			tokens[i] = (i*131 + 17) % c.Vocab
		}
		hidden, err := ref.Hidden(tokens)
		require.NoError(t, err)
		wantLogits, wantOut, err := ref.MTP(hidden[:T-1], tokens[1:])
		require.NoError(t, err)
		// The reference's Forward is Hidden then the output head: the split is exact.
		logits, err := ref.Forward(tokens)
		require.NoError(t, err)
		require.Len(t, logits, T)

		run, err := qwen35.NewMTPRunner(w, opt)
		require.NoError(t, err)
		cache := run.NewKVCache(backend.KVFloat32, 64)
		got := make([]float32, c.Vocab)
		out := make([]float32, c.Embedding)
		worst, worstOut, scale := 0.0, 0.0, 0.0
		for pos := 0; pos < T-1; pos++ {
			require.NoError(t, run.Step(got, out, narrow(hidden[pos]), tokens[pos+1], pos, cache))
			worst = max(worst, maxDiff(t, got, wantLogits[pos]))
			worstOut = max(worstOut, maxDiff(t, out, wantOut[pos]))
			for _, v := range wantOut[pos] {
				scale = max(scale, math.Abs(v))
			}
		}
		assert.Less(t, worst, tol, "%s: head vs float64 reference", format)
		assert.Less(t, worstOut, outTol*scale, "%s: the output hidden state, relative to its largest value %g", format, scale)
		assert.Equal(t, T-1, cache.Len())
		t.Logf("%s: %d positions: max |Δlogit| %.3g, max |Δout| %.3g of max |out| %.3g", format, T-1, worst, worstOut, scale)

		// A chain of two from position 0: step 1 reads step 0's output.
		cache.Reset()
		const draft = 5
		out0 := make([]float32, c.Embedding)
		require.NoError(t, run.Step(got, out0, narrow(hidden[0]), tokens[1], 0, cache))
		require.NoError(t, run.Step(got, out, out0, draft, 1, cache))
		wantChain, _, err := ref.MTP([][]float64{hidden[0], widen64(out0)}, []int{tokens[1], draft})
		require.NoError(t, err)
		assert.Less(t, maxDiff(t, got, wantChain[1]), tol, "%s: chained step", format)
	}
}

func widen64(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func TestMTPWithoutHead(t *testing.T) {
	f := synthtest.File(t, "tiny", 1, ternary.PQ2_0)
	w, err := qwen35.Bind(f)
	require.NoError(t, err)
	_, err = qwen35.NewMTPRunner(w, qwen35.MTPOptions{})
	assert.ErrorIs(t, err, qwen35.ErrNoMTP)
	ref, err := qwen35.NewReference(f)
	require.NoError(t, err)
	_, _, err = ref.MTP([][]float64{make([]float64, w.Config.Embedding)}, []int{1})
	assert.ErrorIs(t, err, qwen35.ErrNoMTP)
}

// TestMTPTwin checks that the unfolded F32 twin of a model with a head (the file
// upstream llama.cpp runs) gives the reference the same head, bit for bit: eh_proj is
// unfolded with the rotation of width 2·E like any folded linear.
func TestMTPTwin(t *testing.T) {
	opt := mtpOptions(t, ternary.PQ2_0)
	var buf bytes.Buffer
	require.NoError(t, synth.WriteTwin(context.Background(), &buf, opt, nil))
	twin, err := gguf.Parse(buf.Bytes())
	require.NoError(t, err)
	tref, err := qwen35.NewReference(twin)
	require.NoError(t, err)
	ref, err := qwen35.NewReference(synthtest.FileOf(t, opt))
	require.NoError(t, err)
	tokens := []int{3, 200, 41, 7, 500, 12}
	for _, r := range []*qwen35.Reference{ref, tref} {
		assert.Equal(t, 1, r.Config().NextN)
	}
	h, err := ref.Hidden(tokens)
	require.NoError(t, err)
	want, _, err := ref.MTP(h[:5], tokens[1:])
	require.NoError(t, err)
	got, _, err := tref.MTP(h[:5], tokens[1:])
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
