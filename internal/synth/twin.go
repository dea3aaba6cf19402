package synth

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/floatconv"
	"github.com/bonsai-go/sdk/qwen35"
)

// The twin is the model that Write's file stands for, in the form upstream llama.cpp's
// qwen35 architecture runs as it is: every tensor F32, the Hadamard rotation folded back
// out of the weights, and the GDN V heads tiled everywhere, ssm_out's input columns
// included (llama.cpp applies no runtime permutation). Running the twin in llama.cpp gives
// reference logits for the packed model that owe nothing to our own code but the
// unfolding below.

// FileTypeF32 is the general.file_type of an all-F32 model (LLAMA_FTYPE_ALL_F32).
const FileTypeF32 = 0

// TwinMetadata returns the key/value pairs of the twin: Metadata's, less the
// prism.hadamard keys (the twin is not rotated), with general.file_type 0.
func TwinMetadata(opt Options) ([]gguf.KV, error) {
	kv, err := Metadata(opt)
	if err != nil {
		return nil, err
	}
	kv = slices.DeleteFunc(kv, func(e gguf.KV) bool {
		return strings.HasPrefix(e.Key, "prism.hadamard.") || e.Key == "general.file_type"
	})
	i := slices.IndexFunc(kv, func(e gguf.KV) bool { return e.Key == "general.alignment" })
	return slices.Insert(kv, i+1, gguf.KV{Key: "general.file_type", Value: gguf.MustValue(uint32(FileTypeF32))}), nil
}

// TwinTensorInfos returns the tensor table of the twin: TensorInfos' names and shapes,
// every tensor F32.
func TwinTensorInfos(opt Options) ([]gguf.TensorInfo, error) {
	infos, err := TensorInfos(opt)
	if err != nil {
		return nil, err
	}
	for i := range infos {
		infos[i].Type = gguf.TypeF32
	}
	return infos, nil
}

// WriteTwin streams to w the unfolded float32 twin of the model Write writes with the
// same options. Each ternary tensor is generated packed exactly as Write generates it,
// decoded, and each row unfolded as row = signs ⊙ FWHT(row′)/√n (the inverse rotation,
// computed in float64 and stored as float32; the token embedding's rows undergo the same
// operation, which is how the packed model reads them). ssm_out's input columns are then
// put in tiled V-head order: twin column (tiled head t, dim d) is the unfolded column
// (grouped head GroupedHead(t), dim d). BF16 tensors are widened to F32 exactly; F32
// tensors are copied.
func WriteTwin(ctx context.Context, w io.Writer, opt Options, progress Progress) error {
	if err := opt.normalize(); err != nil {
		return err
	}
	kv, err := TwinMetadata(opt)
	if err != nil {
		return err
	}
	infos, err := TwinTensorInfos(opt)
	if err != nil {
		return err
	}
	contract, err := Contract(opt)
	if err != nil {
		return err
	}
	rots := map[int]*hadamard.Rotation{}
	for _, width := range contract.Widths {
		r, err := contract.Rotation(width)
		if err != nil {
			return fmt.Errorf("synth: %w", err)
		}
		rots[width] = r
	}
	return writeModel(ctx, w, opt, kv, infos, progress, func(ctx context.Context, w io.Writer, opt Options, s qwen35.TensorSpec) error {
		return writeTwinTensor(ctx, w, opt, s, rots)
	})
}

// WriteTwinFile writes the twin to path, removing the partial file on failure.
func WriteTwinFile(ctx context.Context, path string, opt Options, progress Progress) error {
	return writeFile(ctx, path, opt, progress, WriteTwin)
}

func writeTwinTensor(ctx context.Context, w io.Writer, opt Options, s qwen35.TensorSpec, rots map[int]*hadamard.Rotation) error {
	switch s.Kind {
	case qwen35.KindTernary:
		k := int(s.Shape[0])
		rot := rots[k]
		if rot == nil {
			return fmt.Errorf("no rotation of width %d", k)
		}
		c := opt.Config
		tiled := s.Name == qwen35.LayerTensor(s.Layer, qwen35.SuffixSSMOut)
		var vals []float32
		var buf []byte
		row := make([]float64, k)
		perm := make([]float64, k)
		return packTernary(ctx, opt, s, func(packed []byte, rows int) error {
			vals = slices.Grow(vals[:0], rows*k)[:rows*k]
			if err := opt.Format.Decode(vals, packed); err != nil {
				return err
			}
			buf = buf[:0]
			for r := range rows {
				for i, v := range vals[r*k : (r+1)*k] {
					row[i] = float64(v)
				}
				rot.Inverse64(row)
				out := row
				if tiled {
					d := c.StateSize
					for t := range c.VHeads {
						g := c.GroupedHead(t)
						copy(perm[t*d:(t+1)*d], row[g*d:(g+1)*d])
					}
					out = perm
				}
				for _, v := range out {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(float32(v)))
				}
			}
			_, err := w.Write(buf)
			return err
		})
	case qwen35.KindBF16:
		vals := FloatValues(opt, s)
		for i, v := range vals {
			vals[i] = floatconv.BF16ToFloat32(floatconv.Float32ToBF16(v))
		}
		_, err := w.Write(appendF32(nil, vals))
		return err
	default:
		_, err := w.Write(appendF32(nil, FloatValues(opt, s)))
		return err
	}
}
