package qwen35

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"unsafe"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/ternary"
)

// ErrWeights is wrapped by every error about a file's tensors.
var ErrWeights = errors.New("qwen35: invalid weights")

// Matrix is one ternary weight matrix: N rows of K weights, stored in place (a view of
// the mapped file). Rows are the outputs; K is the input width.
type Matrix struct {
	Name   string         // the tensor's GGUF name
	Format ternary.Format // PQ2_0 or PTQ1_0
	K, N   int            // the input width and the row count
	Data   []byte         // N × Format.RowBytes(K) bytes
}

// Row returns the bytes of row i.
func (m *Matrix) Row(i int) []byte {
	rb := m.Format.RowBytes(m.K)
	return m.Data[i*rb : (i+1)*rb]
}

// BF16Matrix is a dense bfloat16 weight matrix of N rows of K weights, stored in place.
type BF16Matrix struct {
	Name string // the tensor's GGUF name
	K, N int    // the input width and the row count
	Data []byte // N × K × 2 bytes, little endian
}

// Layer holds the weights of one decoder layer. Attention layers fill the attention
// fields, GDN layers the GDN fields; both have the norms and the MLP. The tensor each
// field holds is declared once, in tensors.go.
type Layer struct {
	Index     int  // the layer's number, from 0
	Attention bool // a full-attention layer; otherwise Gated DeltaNet

	AttnNorm     []float32 // stored +1: multiply as is
	PostAttnNorm []float32 // the MLP's input norm, stored +1 as well

	// Gated DeltaNet (V heads tiled; see heads.go).
	QKV, Gate, SSMOut Matrix
	Alpha, Beta       BF16Matrix
	Conv              []float32 // QKVWidth channels × ConvKernel taps, tap 0 oldest
	DTBias            []float32 // VHeads
	A                 []float32 // VHeads, −exp(A_log)
	SSMNorm           []float32 // StateSize, stored raw

	// Full attention.
	Q, K, V, O   Matrix // Q rows per head: [query HeadDim | gate HeadDim]
	QNorm, KNorm []float32

	// SwiGLU MLP.
	FFNGate, FFNUp, FFNDown Matrix
}

// MTPHead is Qwen3.5's multi-token-prediction ("nextn") head: from the main model's
// hidden state h_t at position t (the residual stream after the last decoder layer,
// before output_norm) and the embedding of the token at t+1, it predicts the token at
// t+2:
//
//	x = EHProj · [rmsnorm(embed(tok_{t+1}))·ENorm ; rmsnorm(h_t)·HNorm]
//	x = Layer(x)          one full-attention decoder layer with its own KV cache
//	logits = Output · rmsnorm(x)·SharedHeadNorm
//
// The embedding and Output are the main model's. A chain drafts further by feeding
// the layer's output x (before SharedHeadNorm) back as the next step's h. The tensor
// names and conventions are declared in tensors.go (SuffixNextN*).
type MTPHead struct {
	Layer          Layer     // the decoder layer of the block: Attention is true
	EHProj         Matrix    // 2·Embedding → Embedding, folded with the rotation of width 2·Embedding
	ENorm          []float32 // the embedding's norm, stored +1
	HNorm          []float32 // the hidden state's norm, stored +1
	SharedHeadNorm []float32 // the norm before the shared output head, stored +1
}

// Weights are every tensor of a Bonsai model, bound to fields by GGUF name (from the
// declaration in tensors.go) and checked for type and shape. Nothing is copied but the
// small F32 tensors of a file whose data are not 4-byte aligned in memory.
type Weights struct {
	Config   Config             // the hyperparameters read from the file
	Contract *hadamard.Contract // the file's prism.hadamard contract: which tensors are folded

	TokenEmbedding Matrix    // rows stored rotated: inverse-rotate after the lookup
	Output         Matrix    // the LM head: Vocab rows
	OutputNorm     []float32 // the final norm before the head, stored +1
	Layers         []Layer   // the decoder layers, in order
	MTP            *MTPHead  // the multi-token-prediction head; nil when the file has none

	rotations map[int]*hadamard.Rotation
	mapped    bool
	file      *gguf.File // the file bound from, for Release
}

// Mapped reports whether the tensor data are views of a read-only mapping of the file
// (gguf.File.Mapped), which a GPU backend may wrap page by page without copying.
func (w *Weights) Mapped() bool { return w.mapped }

// Release tells the file the weights were bound from that the bytes b, a part of its
// tensors (a matrix's rows, say), will not be read for a long while: a backend keeps them
// in a layout of its own. Their whole pages then leave the process's resident memory,
// whether the file is mapped or was read into memory by gguf.Open ([gguf.File.Release]).
// It cannot change what the tensors hold: a later read faults the pages back in from the
// file. For weights bound from data in Go's heap (gguf.Parse) it does nothing.
func (w *Weights) Release(b []byte) error {
	if w.file == nil {
		return nil
	}
	return w.file.Release(b)
}

// Rotation returns the rotation of input width k (5120, 6144 or 17408 in the 27B model).
func (w *Weights) Rotation(k int) *hadamard.Rotation { return w.rotations[k] }

// TernaryBytes returns the bytes of ternary weights a decode step reads: every ternary
// matrix but the embedding table.
func (w *Weights) TernaryBytes() int64 {
	n := ternaryBytes(reflect.ValueOf(w).Elem(), headTensors)
	for i := range w.Layers {
		n += ternaryBytes(reflect.ValueOf(&w.Layers[i]).Elem(), layerTensors)
	}
	return n
}

// ternaryBytes sums the bytes of the ternary tensors decls declares in the struct v.
func ternaryBytes(v reflect.Value, decls []declared) int64 {
	var n int64
	for _, d := range decls {
		if d.kind == KindTernary {
			n += int64(len(v.Field(d.index).Addr().Interface().(*Matrix).Data))
		}
	}
	return n
}

// Bind reads the configuration and the Hadamard contract of a Bonsai file and binds
// every tensor of [Config.Tensors], checking its type and shape. A missing, wrongly
// typed or wrongly shaped tensor, or a ternary tensor the contract does not cover, is an
// error naming the tensor; an input width the contract has no sign vector for is a
// [*hadamard.ContractError] naming prism.hadamard.sign_widths and the width. Tensors
// beyond the model's (a multimodal projector, say) are ignored.
func Bind(f *gguf.File) (*Weights, error) { return BindProgress(f, nil) }

// BindProgress is Bind that calls progress, when not nil, after each tensor it binds
// with the number bound so far and the number it binds in all.
func BindProgress(f *gguf.File, progress func(done, total int)) (*Weights, error) {
	vocab := 0
	if t, ok := f.Tensor(NameTokenEmbedding); ok && len(t.Shape) == 2 && t.Shape[1] > 0 && t.Shape[1] <= maxDim {
		vocab = int(t.Shape[1])
	}
	cfg, err := ReadConfig(f, vocab)
	if err != nil {
		return nil, err
	}
	contract, err := hadamard.ParseContract(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrWeights, err)
	}
	w := &Weights{Config: *cfg, Contract: contract, rotations: map[int]*hadamard.Rotation{}, mapped: f.Mapped(), file: f}
	for _, width := range cfg.RotationWidths() {
		if !slices.Contains(contract.Widths, width) {
			// The error names the key to fix: the contract must carry a sign vector
			// for every input width of a folded linear.
			return nil, fmt.Errorf("%w: %w", ErrWeights, &hadamard.ContractError{
				Key:    hadamard.KeySignWidths,
				Reason: fmt.Sprintf("no sign vector for width %d, an input width of the model's folded linears (it has %v)", width, contract.Widths),
				Kind:   hadamard.ErrInvalid,
			})
		}
		r, err := contract.Rotation(width)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: width %d: %w", ErrWeights, hadamard.KeySignWidths, width, err)
		}
		w.rotations[width] = r
	}
	b := binder{f: f, contract: contract}
	specs := cfg.specs()
	w.Layers = make([]Layer, cfg.Layers)
	for i := range w.Layers {
		w.Layers[i].Index = i
		w.Layers[i].Attention = cfg.IsAttention(i)
	}
	if cfg.NextN > 0 {
		w.MTP = &MTPHead{Layer: Layer{Index: cfg.NextNLayer(0), Attention: true}}
	}
	if progress != nil {
		progress(0, len(specs))
	}
	model := reflect.ValueOf(w).Elem()
	for i, s := range specs {
		v := b.bind(s.TensorSpec)
		if b.err != nil {
			return nil, b.err
		}
		dst := model
		switch {
		case s.decl.in == mtpHead:
			dst = reflect.ValueOf(w.MTP).Elem()
		case s.Layer >= cfg.Layers:
			dst = reflect.ValueOf(&w.MTP.Layer).Elem()
		case s.Layer >= 0:
			dst = reflect.ValueOf(&w.Layers[s.Layer]).Elem()
		}
		dst.Field(s.decl.index).Set(reflect.ValueOf(v))
		if progress != nil {
			progress(i+1, len(specs))
		}
	}
	// Every ternary tensor of the file must be one the contract covers: an unrotated
	// ternary weight would silently produce wrong logits.
	for _, t := range f.Tensors {
		if _, ok := ternary.FormatOf(t.Type); ok && !contract.IsFolded(t.Name) && !contract.IsInverse(t.Name) {
			return nil, fmt.Errorf("%w: tensor %q: ternary but not in %s or %s", ErrWeights, t.Name,
				hadamard.KeyWeightNames, hadamard.KeyInverseWeightNames)
		}
	}
	return w, nil
}

type binder struct {
	f        *gguf.File
	contract *hadamard.Contract
	err      error
}

func (b *binder) fail(name, format string, args ...any) any {
	if b.err == nil {
		b.err = fmt.Errorf("%w: tensor %q: %s", ErrWeights, name, fmt.Sprintf(format, args...))
	}
	return nil
}

func (b *binder) bind(s TensorSpec) any {
	if b.err != nil {
		return nil
	}
	t, ok := b.f.Tensor(s.Name)
	if !ok {
		return b.fail(s.Name, "missing")
	}
	if !sameShape(t.Shape, s.Shape) {
		return b.fail(s.Name, "shape %v, want %v", t.Shape, s.Shape)
	}
	data, err := b.f.TensorData(s.Name)
	if err != nil {
		return b.fail(s.Name, "%v", err)
	}
	switch s.Kind {
	case KindTernary:
		format, ok := ternary.FormatOf(t.Type)
		if !ok {
			return b.fail(s.Name, "type %s, want PQ2_0 or PTQ1_0", t.Type)
		}
		switch s.Role {
		case RoleFolded:
			if !b.contract.IsFolded(s.Name) {
				return b.fail(s.Name, "not in %s: its activations would not be rotated", hadamard.KeyWeightNames)
			}
		case RoleInverse:
			if !b.contract.IsInverse(s.Name) {
				return b.fail(s.Name, "not in %s: its rows would not be rotated back", hadamard.KeyInverseWeightNames)
			}
		}
		return Matrix{Name: s.Name, Format: format, K: int(s.Shape[0]), N: int(s.Shape[1]), Data: data}
	case KindBF16:
		if t.Type != gguf.TypeBF16 {
			return b.fail(s.Name, "type %s, want BF16", t.Type)
		}
		return BF16Matrix{Name: s.Name, K: int(s.Shape[0]), N: int(s.Shape[1]), Data: data}
	default:
		if t.Type != gguf.TypeF32 {
			return b.fail(s.Name, "type %s, want F32", t.Type)
		}
		v := float32View(data)
		for i, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return b.fail(s.Name, "element %d is %v", i, x)
			}
		}
		return v
	}
}

func sameShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// float32View returns the little-endian float32s of data without copying when the
// bytes are suitably aligned on a little-endian machine, and a decoded copy otherwise.
func float32View(data []byte) []float32 {
	n := len(data) / 4
	if n == 0 {
		return []float32{}
	}
	if littleEndian && uintptr(unsafe.Pointer(&data[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&data[0])), n)
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return v
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
