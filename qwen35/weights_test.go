package qwen35_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"unsafe"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBindTiny(t *testing.T) {
	for _, format := range []ternary.Format{ternary.PQ2_0, ternary.PTQ1_0} {
		f := synthtest.File(t, "tiny", 1, format)
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
// fileEdit changes a file's keys, tensor table and tensor bytes (by name) for rewrite.
type fileEdit = func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo)

// findTensor returns the index of the tensor called name in infos.
func findTensor(t *testing.T, infos []gguf.TensorInfo, name string) int {
	t.Helper()
	for i := range infos {
		if infos[i].Name == name {
			return i
		}
	}
	require.FailNow(t, "no tensor "+name)
	return -1
}

func rewrite(t *testing.T, f *gguf.File, edit fileEdit) *gguf.File {
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
	f := synthtest.File(t, "tiny", 1, ternary.PQ2_0)
	cases := []struct {
		name string
		edit fileEdit
		want string
	}{
		{"missing", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := findTensor(t, infos, "blk.1.ssm_a")
			return kv, append(infos[:i:i], infos[i+1:]...)
		}, `tensor "blk.1.ssm_a": missing`},
		{"shape", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := findTensor(t, infos, "blk.0.ssm_norm.weight")
			infos[i].Shape = []int64{16}
			data[infos[i].Name] = data[infos[i].Name][:64]
			return kv, infos
		}, `tensor "blk.0.ssm_norm.weight": shape [16], want [32]`},
		{"type", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := findTensor(t, infos, "blk.2.ssm_beta.weight")
			infos[i].Type = gguf.TypeF16
			return kv, infos
		}, `tensor "blk.2.ssm_beta.weight": type F16, want BF16`},
		{"ternary type", func(kv []gguf.KV, infos []gguf.TensorInfo, data map[string][]byte) ([]gguf.KV, []gguf.TensorInfo) {
			i := findTensor(t, infos, "blk.3.attn_k.weight")
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
	c := synthtest.Config(t, "27b")
	// Package doc, § Stored values: grouped position (k, r, d) reads tiled index
	// d + 128·(k + nk·r).
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

// TestBindFieldsByName checks that every field holds the tensor of its own name, as a
// view of the file's bytes: tensors of equal shape (ssm_alpha and ssm_beta, ssm_a and
// ssm_dt.bias, attn_k and attn_v, ffn_gate and ffn_up) would pass every shape check if
// they were bound to each other's fields.
func TestBindFieldsByName(t *testing.T) {
	f := synthtest.File(t, "tiny", 1, ternary.PQ2_0)
	w, err := qwen35.Bind(f)
	require.NoError(t, err)
	view := func(name string, p unsafe.Pointer, n int) {
		t.Helper()
		d, err := f.TensorData(name)
		require.NoError(t, err, name)
		assert.Equal(t, len(d), n, name)
		assert.Equal(t, unsafe.Pointer(unsafe.SliceData(d)), p, "%s is bound to another tensor's bytes", name)
	}
	mat := func(name string, m qwen35.Matrix) {
		t.Helper()
		assert.Equal(t, name, m.Name)
		view(name, unsafe.Pointer(unsafe.SliceData(m.Data)), len(m.Data))
	}
	bf := func(name string, m qwen35.BF16Matrix) {
		t.Helper()
		assert.Equal(t, name, m.Name)
		view(name, unsafe.Pointer(unsafe.SliceData(m.Data)), len(m.Data))
	}
	f32 := func(name string, v []float32) {
		t.Helper()
		view(name, unsafe.Pointer(unsafe.SliceData(v)), 4*len(v))
	}
	mat("token_embd.weight", w.TokenEmbedding)
	mat("output.weight", w.Output)
	f32("output_norm.weight", w.OutputNorm)
	for i, l := range w.Layers {
		n := func(suffix string) string { return fmt.Sprintf("blk.%d.%s", i, suffix) }
		f32(n("attn_norm.weight"), l.AttnNorm)
		f32(n("post_attention_norm.weight"), l.PostAttnNorm)
		mat(n("ffn_gate.weight"), l.FFNGate)
		mat(n("ffn_up.weight"), l.FFNUp)
		mat(n("ffn_down.weight"), l.FFNDown)
		if l.Attention {
			mat(n("attn_q.weight"), l.Q)
			mat(n("attn_k.weight"), l.K)
			mat(n("attn_v.weight"), l.V)
			mat(n("attn_output.weight"), l.O)
			f32(n("attn_q_norm.weight"), l.QNorm)
			f32(n("attn_k_norm.weight"), l.KNorm)
			assert.Nil(t, l.QKV.Data)
			assert.Nil(t, l.Alpha.Data)
			assert.Nil(t, l.A)
			continue
		}
		mat(n("attn_qkv.weight"), l.QKV)
		mat(n("attn_gate.weight"), l.Gate)
		mat(n("ssm_out.weight"), l.SSMOut)
		bf(n("ssm_alpha.weight"), l.Alpha)
		bf(n("ssm_beta.weight"), l.Beta)
		f32(n("ssm_conv1d.weight"), l.Conv)
		f32(n("ssm_dt.bias"), l.DTBias)
		f32(n("ssm_a"), l.A)
		f32(n("ssm_norm.weight"), l.SSMNorm)
		assert.Nil(t, l.Q.Data)
		assert.Nil(t, l.QNorm)
	}
}

// TestBindProgress checks the progress calls: (0, n) first, then one per tensor, n being
// every tensor of the model (the tiny model's 4 layers: 3 GDN of 14, 1 attention of 11,
// and the embedding, the output norm and the head).
func TestBindProgress(t *testing.T) {
	f := synthtest.File(t, "tiny", 1, ternary.PQ2_0)
	const n = 3 + 3*14 + 11
	var calls [][2]int
	_, err := qwen35.BindProgress(f, func(done, total int) { calls = append(calls, [2]int{done, total}) })
	require.NoError(t, err)
	require.Len(t, calls, n+1)
	for i, c := range calls {
		assert.Equal(t, [2]int{i, n}, c)
	}
}
