package qwen35_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func tinyFile(t *testing.T, format ternary.Format) *gguf.File {
	t.Helper()
	cfg, err := synth.Preset("tiny")
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, synth.Write(context.Background(), &buf, synth.Options{Config: cfg, Seed: 1, Format: format}, nil))
	f, err := gguf.Parse(buf.Bytes())
	require.NoError(t, err)
	return f
}

func TestBindTiny(t *testing.T) {
	for _, format := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		f := tinyFile(t, format)
		w, err := qwen35.Bind(f)
		require.NoError(t, err)
		c := w.Config
		assert.Equal(t, 4, len(w.Layers))
		assert.Equal(t, format, w.Output.Format)
		assert.Equal(t, c.Vocab, w.TokenEmbedding.N)
		for i, l := range w.Layers {
			assert.Equal(t, i == 3, l.Attention)
			assert.Len(t, l.AttnNorm, c.Embedding)
			assert.Len(t, l.PostAttnNorm, c.Embedding)
			assert.Equal(t, c.FeedForward, l.FFNDown.K)
			if l.Attention {
				assert.Equal(t, 2*c.Heads*c.HeadDim, l.Q.N)
				assert.Len(t, l.QNorm, c.HeadDim)
				assert.Nil(t, l.QKV.Data)
			} else {
				assert.Equal(t, c.QKVWidth(), l.QKV.N)
				assert.Len(t, l.Conv, c.QKVWidth()*c.ConvKernel)
				assert.Len(t, l.A, c.VHeads)
				assert.Equal(t, c.VHeads, l.Alpha.N)
				assert.Len(t, l.Alpha.Data, 2*c.VHeads*c.Embedding)
				assert.Equal(t, c.InnerSize, l.SSMOut.K)
			}
		}
		for _, width := range []int{256, 384, 512} {
			require.NotNil(t, w.Rotation(width), width)
			assert.Equal(t, width, w.Rotation(width).Width())
		}
		// Zero copy: the matrix bytes are the file's bytes.
		data, err := f.TensorData(qwen35.NameOutput)
		require.NoError(t, err)
		assert.Same(t, &data[0], &w.Output.Data[0])
	}
}

// rewrite re-writes a file after edit changes its tensor table (and data) or metadata.
func rewrite(t *testing.T, f *gguf.File, edit func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo)) *gguf.File {
	t.Helper()
	infos := make([]gguf.TensorInfo, len(f.Tensors))
	data := map[string][]byte{}
	for i, ti := range f.Tensors {
		infos[i] = ti
		infos[i].Shape = append([]int64(nil), ti.Shape...)
		d, err := f.TensorData(ti.Name)
		require.NoError(t, err)
		data[ti.Name] = d
	}
	kv := append([]gguf.KV(nil), f.KV...)
	kv, infos = edit(kv, infos, data)
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, kv, infos)
	require.NoError(t, err)
	for _, ti := range infos {
		require.NoError(t, w.WriteTensor(ti.Name, data[ti.Name]))
	}
	require.NoError(t, w.Close())
	g, err := gguf.Parse(buf.Bytes())
	require.NoError(t, err)
	return g
}

func TestBindRefuses(t *testing.T) {
	f := tinyFile(t, ternary.PQ2_0)
	find := func(infos []gguf.TensorInfo, name string) int {
		for i := range infos {
			if infos[i].Name == name {
				return i
			}
		}
		t.Fatalf("no tensor %s", name)
		return -1
	}
	cases := []struct {
		name string
		edit func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo)
		want string
	}{
		{"missing", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := find(infos, "blk.1.ssm_a")
			return kv, append(infos[:i:i], infos[i+1:]...)
		}, `tensor "blk.1.ssm_a": missing`},
		{"shape", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := find(infos, "blk.0.ssm_norm.weight")
			infos[i].Shape = []int64{16}
			data[infos[i].Name] = data[infos[i].Name][:64]
			return kv, infos
		}, `tensor "blk.0.ssm_norm.weight": shape [16], want [32]`},
		{"type", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := find(infos, "blk.2.ssm_beta.weight")
			infos[i].Type = gguf.TypeF16
			return kv, infos
		}, `tensor "blk.2.ssm_beta.weight": type F16, want BF16`},
		{"ternary type", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := find(infos, "blk.3.attn_k.weight")
			infos[i].Type = gguf.TypeF32
			data[infos[i].Name] = make([]byte, 4*256*128)
			return kv, infos
		}, `tensor "blk.3.attn_k.weight": type F32, want PQ2_0 or PTQ1_0`},
		{"not folded", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			for i := range kv {
				if kv[i].Key == hadamard.KeyWeightNames {
					names := kv[i].Value.Interface().([]string)
					var keep []string
					for _, n := range names {
						if n != "blk.0.ffn_up.weight" {
							keep = append(keep, n)
						}
					}
					kv[i].Value = gguf.MustValue(keep)
				}
			}
			return kv, infos
		}, `tensor "blk.0.ffn_up.weight": not in prism.hadamard.weight_names`},
		{"extra ternary", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			data["mtp.weight"] = make([]byte, 34*2)
			return kv, append(infos, gguf.TensorInfo{Name: "mtp.weight", Type: gguf.TypePQ2_0, Shape: []int64{128, 2}})
		}, `tensor "mtp.weight": ternary but not in`},
		{"no contract", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			var keep []gguf.KV
			for _, e := range kv {
				if e.Key != hadamard.KeyVersion {
					keep = append(keep, e)
				}
			}
			return keep, infos
		}, `prism.hadamard`},
		{"no sign vector", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			// Drop width 384 (the GDN inner width) and its signs: the contract stays
			// valid on its own, but the model needs that width.
			c, err := hadamard.ParseContract(f)
			require.NoError(t, err)
			i := slices.Index(c.Widths, 384)
			require.GreaterOrEqual(t, i, 0)
			c.Widths = slices.Delete(c.Widths, i, i+1)
			c.Signs = slices.Delete(c.Signs, i, i+1)
			require.NoError(t, c.Validate())
			for _, e := range c.KeyValues() {
				for j := range kv {
					if kv[j].Key == e.Key && (e.Key == hadamard.KeySignWidths || e.Key == hadamard.KeySignValues) {
						kv[j].Value = gguf.MustValue(e.Value)
					}
				}
			}
			return kv, infos
		}, `prism.hadamard.sign_widths: no sign vector for width 384`},
		{"config", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			for i := range kv {
				if kv[i].Key == qwen35.KeyGroupCount {
					kv[i].Value = gguf.MustValue(uint32(5))
				}
			}
			return kv, infos
		}, `"qwen35.ssm.time_step_rank"`},
		{"non-finite norm", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			d := append([]byte(nil), data["output_norm.weight"]...)
			copy(d[8:], []byte{0, 0, 0xc0, 0x7f}) // NaN
			data["output_norm.weight"] = d
			return kv, infos
		}, `tensor "output_norm.weight": element 2 is NaN`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := rewrite(t, f, c.edit)
			_, err := qwen35.Bind(g)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, errors.Is(err, qwen35.ErrWeights) || errors.Is(err, qwen35.ErrConfig), "%v", err)
			if c.name == "no sign vector" {
				var ce *hadamard.ContractError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, hadamard.KeySignWidths, ce.Key)
				assert.ErrorIs(t, err, hadamard.ErrInvalid)
				t.Logf("%v", err)
			}
		})
	}
}

func TestHeadOrder(t *testing.T) {
	c, err := synth.Preset("27b")
	require.NoError(t, err)
	// SPEC §4: grouped position (k, r, d) reads tiled index d + 128·(k + nk·r).
	src := make([]float32, c.InnerSize)
	for i := range src {
		src[i] = float32(i)
	}
	dst := make([]float32, c.InnerSize)
	c.PermuteTiledToGrouped(dst, src)
	for k := 0; k < c.KHeads; k++ {
		for r := 0; r < c.HeadRepeat(); r++ {
			for d := 0; d < c.StateSize; d++ {
				grouped := (k*c.HeadRepeat()+r)*c.StateSize + d
				require.Equal(t, float32(d+128*(k+16*r)), dst[grouped])
			}
		}
	}
	for h := 0; h < c.VHeads; h++ {
		assert.Equal(t, h, c.TiledHead(c.GroupedHead(h)))
		// Tiled V head h reads q/k head h mod 16; grouped head g = k·3 + r reads k.
		assert.Equal(t, h%16, c.KeyHead(h))
		assert.Equal(t, c.GroupedHead(h)/3, c.KeyHead(h))
	}
}
